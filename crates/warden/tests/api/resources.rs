//! Configuration resources over the API: apply (and its dry run) with the errors of
//! `warden apply`, list, get, delete.

use serde_json::{Value, json};
use warden_core::config::{Config, ConfigError, Kind, parse_documents};

use crate::common::*;
use crate::support::*;

/// The errors of `warden apply`, one per line, for `text` read as `file`.
fn parse_errors(file: &str, text: &str) -> Vec<ConfigError> {
    parse_documents(file, text).unwrap_err()
}

fn lines(errors: &[ConfigError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_writes_nothing_and_an_apply_creates_configures_and_keeps_resources() {
    let w = TestWarden::start(&config()).await;
    let api = Api::new(&w);
    let before = w.store.store.revision().await.unwrap();
    let yaml =
        "kind: User\nname: zoe\n---\nkind: Role\nname: auditor\npermissions: [\"audit:read\"]\n";
    let (status, dry) = api
        .post_yaml(&w.admin, "/api/v1/resources?dryRun=true", yaml)
        .await;
    assert_eq!(
        (status, dry),
        (
            200,
            json!({"dryRun": true, "revision": before, "changes": [
                {"kind": "User", "name": "zoe", "status": "created"},
                {"kind": "Role", "name": "auditor", "status": "created"},
            ]})
        )
    );
    assert_eq!(
        w.store.store.revision().await.unwrap(),
        before,
        "nothing written"
    );
    assert_eq!(
        api.get(&w.admin, "/api/v1/resources/users/zoe").await.0,
        404
    );
    let (status, applied) = api.post_yaml(&w.admin, "/api/v1/resources", yaml).await;
    assert_eq!(status, 200, "{applied}");
    assert_eq!(applied["dryRun"], false);
    assert!(applied["revision"].as_u64().unwrap() > before);
    assert_eq!(applied["changes"][0]["status"], "created");
    let (status, zoe) = api.get(&w.admin, "/api/v1/resources/User/zoe").await;
    assert_eq!((status, zoe), (200, json!({"kind": "User", "name": "zoe"})));
    // The same again is unchanged; a changed one is configured. JSON is accepted too.
    let (_, again) = api.post_yaml(&w.admin, "/api/v1/resources", yaml).await;
    assert_eq!(again["changes"][0]["status"], "unchanged", "{again}");
    let (status, changed) = api
        .post(
            &w.admin,
            "/api/v1/resources",
            json!([{"kind": "Role", "name": "auditor", "permissions": ["audit:read", "runs:read"]}]),
        )
        .await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(
        changed["changes"],
        json!([{"kind": "Role", "name": "auditor", "status": "configured"}])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_apply_refuses_what_warden_apply_refuses_with_the_same_errors_naming_the_field() {
    let w = TestWarden::start(&config()).await;
    let api = Api::new(&w);
    let before = w.store.store.revision().await.unwrap();
    // A misspelt field: 400, naming the file (the `file` parameter), resource and field.
    let yaml = "kind: User\nname: zed\nnmae: typo\n";
    let (status, body) = api
        .post_yaml(&w.admin, "/api/v1/resources?file=users.yaml", yaml)
        .await;
    let errors = parse_errors("users.yaml", yaml);
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["code"], "INVALID_CONFIG");
    assert_eq!(body["error"], lines(&errors));
    assert!(
        body["error"].as_str().unwrap().contains("field `nmae`"),
        "{body}"
    );
    assert_eq!(body["errors"][0]["field"], "nmae");
    assert_eq!(body["errors"][0]["file"], "users.yaml");
    // A JSON array: each item is a document, numbered from 1.
    let (status, body) = api
        .post(
            &w.admin,
            "/api/v1/resources",
            json!([{"kind": "User", "name": "ok"}, {"kind": "Usr", "name": "b"}]),
        )
        .await;
    let mut errors = parse_errors("body", r#"{"kind":"Usr","name":"b"}"#);
    errors[0].document = Some(2);
    assert_eq!(
        (status, body["error"].clone()),
        (400, Value::from(lines(&errors)))
    );
    // Named files, as `warden apply -f A -f B` sends them: the errors name the file.
    let bad = "kind: Role\nname: r\npermissions: [\"Not A Capability\"]\n";
    let (status, body) = api
        .post(
            &w.admin,
            "/api/v1/resources",
            json!({"files": [
                {"name": "a.yaml", "content": "kind: User\nname: fine\n"},
                {"name": "b.yaml", "content": bad},
            ]}),
        )
        .await;
    let (config, _) = w.store.store.load_config().await.unwrap();
    let base = config.resources().cloned().collect();
    let mut docs = parse_documents("a.yaml", "kind: User\nname: fine\n").unwrap();
    docs.extend(parse_documents("b.yaml", bad).unwrap());
    let errors = Config::merge(base, docs).unwrap_err();
    assert_eq!(
        (status, body["code"].clone(), body["error"].clone()),
        (422, json!("CONFIG_REJECTED"), Value::from(lines(&errors)))
    );
    assert!(
        body["error"].as_str().unwrap().starts_with("b.yaml"),
        "{body}"
    );
    // A dangling reference, on a dry run too: 422, and nothing is written.
    let yaml = "kind: RoleBinding\nrole: ghost\nsubject: { user: alice }\n";
    let (status, body) = api
        .post_yaml(&w.admin, "/api/v1/resources?dryRun=true", yaml)
        .await;
    let base = config.resources().cloned().collect();
    let errors = Config::merge(base, parse_documents("body", yaml).unwrap()).unwrap_err();
    assert_eq!(
        (status, body["error"].clone()),
        (422, Value::from(lines(&errors)))
    );
    let (status, body) = api.post_yaml(&w.admin, "/api/v1/resources", "").await;
    assert_eq!(
        (status, body),
        refusal(400, "INVALID_INPUT", "the body holds no resources")
    );
    assert_eq!(w.store.store.revision().await.unwrap(), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_are_listed_got_and_deleted_and_unknown_ones_are_404() {
    let w = TestWarden::start(&config()).await;
    let api = Api::new(&w);
    let (status, users) = api.get(&w.admin, "/api/v1/resources/users").await;
    assert_eq!(status, 200);
    let names: Vec<&str> = users
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["admin", "alice", "bob", "nobody", "olivia"]);
    let (status, policy) = api
        .get(
            &w.admin,
            "/api/v1/resources/toolpolicies/payments%2Fledger__echo",
        )
        .await;
    assert_eq!(status, 200, "{policy}");
    assert_eq!(policy["risk"], "dangerous");
    assert_eq!(
        api.get(&w.admin, "/api/v1/resources/widgets").await,
        refusal(
            404,
            "NOT_FOUND",
            "unknown kind `widgets`; expected one of User, ServiceAccount, Role, RoleBinding, Project, Upstream, Model, Agent, ToolPolicy, Autonomy, WriteBudget, KillSwitch, Workspace, Issuer, ReviewPolicy, GitProvider, Reconciler, Notifier"
        )
    );
    assert_eq!(
        api.get(&w.admin, "/api/v1/resources/user/zed").await,
        refusal(404, "NOT_FOUND", "no User named `zed`")
    );
    // A role still bound is refused, naming what references it.
    let (config, _) = w.store.store.load_config().await.unwrap();
    let errors = config.without(Kind::Role, "writer").unwrap_err();
    let (status, body) = api.delete(&w.admin, "/api/v1/resources/role/writer").await;
    assert_eq!(
        (status, body["code"].clone(), body["error"].clone()),
        (409, json!("IN_USE"), Value::from(lines(&errors)))
    );
    let (status, deleted) = api.delete(&w.admin, "/api/v1/resources/user/nobody").await;
    assert_eq!(status, 200, "{deleted}");
    assert_eq!(deleted["kind"], "User");
    assert_eq!(deleted["name"], "nobody");
    assert_eq!(
        api.get(&w.admin, "/api/v1/resources/user/nobody").await.0,
        404
    );
    assert_eq!(
        api.delete(&w.admin, "/api/v1/resources/user/nobody").await,
        refusal(404, "NOT_FOUND", "no User named `nobody`")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reading_and_writing_resources_need_config_read_and_config_write() {
    let w = TestWarden::start(&config()).await;
    let api = Api::new(&w);
    let nobody = nobody(&w).await;
    assert_eq!(
        api.get(&nobody, "/api/v1/resources/users").await,
        refusal(
            403,
            "MISSING_CAPABILITY",
            "reading resources needs the `config:read` capability"
        )
    );
    assert_eq!(
        api.post_yaml(&nobody, "/api/v1/resources", "kind: User\nname: x\n")
            .await,
        refusal(
            403,
            "MISSING_CAPABILITY",
            "applying resources needs the `config:write` capability"
        )
    );
    assert_eq!(
        api.delete(&nobody, "/api/v1/resources/user/alice").await,
        refusal(
            403,
            "MISSING_CAPABILITY",
            "deleting resources needs the `config:write` capability"
        )
    );
}

/// An upstream URL with credentials in it is refused at apply, naming the field and pointing
/// to `headers` and a secret, without repeating the password (REL-4); nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_url_with_a_password_is_refused_with_a_pointer_to_headers() {
    let w = TestWarden::start(&config()).await;
    let api = Api::new(&w);
    let before = w.store.store.revision().await.unwrap();
    let yaml = "kind: Upstream\nname: svc\nproject: payments\nhttp: { url: \"http://svc:secretproj_pw_777@127.0.0.1:18801/mcp\" }\n";
    let (status, body) = api
        .post_yaml(&w.admin, "/api/v1/resources?file=svc.yaml", yaml)
        .await;
    assert_eq!(
        (status, body["code"].clone()),
        (422, json!("CONFIG_REJECTED")),
        "{body}"
    );
    assert_eq!(
        body["error"],
        "svc.yaml (document 1): Upstream `svc`: field `http.url`: `http://***@127.0.0.1:18801/mcp` carries credentials, which would be shown wherever the URL is; send them as a header whose value comes from a secret instead, e.g. `headers: { Authorization: \"${secret:NAME}\" }`"
    );
    assert!(!body.to_string().contains("secretproj_pw_777"), "{body}");
    assert_eq!(
        w.store.store.revision().await.unwrap(),
        before,
        "nothing was written"
    );
}

/// YAML nested deeper than any configuration needs is refused before the YAML parser sees it
/// (its scanner's time grows with the square of the depth: 200,000 levels, in a body well
/// within the limit, took over a minute), naming the document, line and column.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deeply_nested_yaml_is_refused_at_once_naming_where() {
    let w = TestWarden::start(&config()).await;
    let api = Api::new(&w);
    let depth = 200_000;
    let yaml = format!(
        "kind: User\nname: fine\n---\nkind: User\nname: deep\ndescription: {}{}\n",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let (status, body) = api
        .post_yaml(&w.admin, "/api/v1/resources?file=deep.yaml", &yaml)
        .await;
    assert_eq!(
        (status, body["error"].clone()),
        (
            400,
            json!(
                "deep.yaml (document 2): nested deeper than 128 levels at line 6 column 142; no configuration needs that"
            )
        ),
        "{body}"
    );
    // The CLI's `apply -f` and `config validate` share the parser.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("deep.yaml");
    std::fs::write(&file, &yaml).unwrap();
    let out = cli(&["config", "validate", "-f", file.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("(document 2): nested deeper than 128 levels at line 6 column 142"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A repository URL git would read with a remote helper (`fd::3` made `git clone` wait its
/// full timeout; `ext::` runs a command) or over a transport Warden does not use is refused at
/// apply, naming the field; nothing is written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repository_url_of_another_transport_is_refused_at_apply() {
    let w = TestWarden::start(&config()).await;
    let api = Api::new(&w);
    let before = w.store.store.revision().await.unwrap();
    for (url, problem) in [
        (
            "fd::3",
            "`fd::3` names a git remote helper; give a local path or a file://, https://, ssh:// or git:// URL",
        ),
        (
            "ext::sh -c id",
            "`ext::sh -c id` names a git remote helper; give a local path or a file://, https://, ssh:// or git:// URL",
        ),
        (
            "http://example.com/a.git",
            "`http://` is not a transport Warden uses; give a local path or a file://, https://, ssh:// or git:// URL",
        ),
    ] {
        let yaml = format!(
            "kind: Workspace\nname: w2\nmode: kanban\nproject: payments\nrepositories: [ {{ name: a, url: \"{url}\" }} ]\n"
        );
        let (status, body) = api
            .post_yaml(&w.admin, "/api/v1/resources?file=w.yaml", &yaml)
            .await;
        assert_eq!(
            (status, body["error"].clone()),
            (
                400,
                json!(format!(
                    "w.yaml (document 1): Workspace `w2`: field `repositories[0].url`: {problem}"
                ))
            ),
            "{body}"
        );
    }
    assert_eq!(w.store.store.revision().await.unwrap(), before);
}
