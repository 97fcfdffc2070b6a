//! Forges (WORK-3) with real git: a GitProvider over a directory of bare repositories, its
//! repositories discovered and imported, a project's ReviewPolicy setting the gate (WORK-2),
//! and the signed webhook — a failed CI report on a merge commit reopens its task; unsigned,
//! wrongly signed, replayed and secretless deliveries change nothing; each is audited. The
//! webhook secret keeps, clears and refuses the same way at every door.

use std::path::{Path, PathBuf};

use reqwest::Method;
use serde_json::{Value, json};

use crate::epics::{PEOPLE, api, work};
use crate::reviews::publish;
use crate::support::*;

/// A directory of bare repositories (`ledger.git`, `site.git`), `ledger` seeded with `main`,
/// and a clone of it to push work from: (directory, ledger, clone).
fn forge(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let seed = dir.join("seed");
    std::fs::create_dir_all(&seed).unwrap();
    git(&seed, &["init", "-q", "-b", "main"]);
    std::fs::write(seed.join("shared.txt"), "one\n").unwrap();
    git(&seed, &["add", "."]);
    git(&seed, &["commit", "-q", "-m", "seed"]);
    let forge = dir.join("forge");
    std::fs::create_dir_all(&forge).unwrap();
    git(dir, &["clone", "-q", "--bare", "seed", "forge/ledger.git"]);
    git(dir, &["clone", "-q", "--bare", "seed", "forge/site.git"]);
    git(dir, &["clone", "-q", "forge/ledger.git", "work"]);
    (forge.clone(), forge.join("ledger.git"), dir.join("work"))
}

/// Applies `yaml` through the admin API as the administrator: (status, answer).
async fn apply(f: &Fixture, yaml: &str) -> (u16, Value) {
    api(
        f,
        &f.w.admin,
        Method::POST,
        "resources",
        Some(json!({"files": [{"name": "provider.yaml", "content": yaml}]})),
    )
    .await
}

/// The GitProvider `forge` as applied.
async fn provider(f: &Fixture) -> Value {
    let (status, got) = api(
        f,
        &f.w.admin,
        Method::GET,
        "resources/gitprovider/forge",
        None,
    )
    .await;
    assert_eq!(status, 200, "{got}");
    got
}

/// A delivery to the webhook of `forge`: (status, answer).
async fn deliver(f: &Fixture, body: &Value, signature: Option<&str>, id: &str) -> (u16, Value) {
    deliver_event(f, body, signature, id, "status").await
}

/// A delivery of the GitHub event `event`.
async fn deliver_event(
    f: &Fixture,
    body: &Value,
    signature: Option<&str>,
    id: &str,
    event: &str,
) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .post(format!("{}/hooks/git/forge", f.w.base))
        .header("content-type", "application/json")
        .header("x-github-delivery", id)
        .header("x-github-event", event)
        .body(body.to_string());
    if let Some(signature) = signature {
        request = request.header("x-hub-signature-256", signature);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// The value of the secret `reference` (`${secret:NAME}`) names in `data_dir`'s secrets.
fn secret_of(data_dir: &Path, reference: &Value) -> String {
    let name = reference
        .as_str()
        .and_then(|r| r.strip_prefix("${secret:"))
        .and_then(|r| r.strip_suffix('}'))
        .unwrap_or_else(|| panic!("not a secret reference: {reference}"));
    assert!(name.starts_with("gitprovider-forge-webhook-"), "{name}");
    std::fs::read_to_string(data_dir.join("secrets").join(name)).unwrap()
}

fn signed(secret: &str, body: &Value) -> String {
    warden_work::forges::hook::sign(secret, body.to_string().as_bytes())
}

fn data_dir(f: &Fixture) -> PathBuf {
    match &f.w.store.location {
        warden_store::Location::DataDir(d) => d.clone(),
        warden_store::Location::Url(_) => unreachable!("sqlite"),
    }
}

const PROVIDER: &str = "kind: GitProvider\nname: forge\nproject: web\ntype: git\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_ci_report_on_a_merge_commit_reopens_its_task_and_nothing_else_gets_in() {
    let dir = tempfile::tempdir().unwrap();
    let (forge_dir, ledger, clone) = forge(dir.path());
    // One review is enough at high risk in `web`: its ReviewPolicy says so.
    let config = format!(
        "{PEOPLE}---\nkind: Workspace\nname: forge\nmode: kanban\nproject: web\n---\n\
         kind: ReviewPolicy\nproject: web\napprovals: {{ high: 1 }}\n"
    );
    let f = Fixture::start_with(&config).await;
    let alice = f.w.token("alice", None, None).await;
    let dave = f.w.token("dave", None, None).await;

    // The provider, its webhook secret given as a value: stored as a secret, shown never.
    let url = forge_dir.display().to_string();
    let (status, answer) = apply(
        &f,
        &format!("{PROVIDER}url: {url:?}\nwebhookSecret: s3cret\n"),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let shown = provider(&f).await;
    assert_eq!(secret_of(&data_dir(&f), &shown["webhookSecret"]), "s3cret");
    assert!(!shown.to_string().contains("s3cret"), "{shown}");

    // Discovery finds both bare repositories; importing adds them to the workspace.
    let (status, found) = api(
        &f,
        &f.w.admin,
        Method::GET,
        "gitproviders/forge/repositories",
        None,
    )
    .await;
    assert_eq!(status, 200, "{found}");
    let names: Vec<&str> = found
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ledger", "site"]);
    let (status, imported) = api(
        &f,
        &f.w.admin,
        Method::POST,
        "gitproviders/forge/import",
        Some(json!({"workspace": "forge", "repositories": ["ledger"]})),
    )
    .await;
    assert_eq!(status, 200, "{imported}");
    assert_eq!(imported["added"], json!(["ledger"]));
    let (status, refused) = api(
        &f,
        &f.w.admin,
        Method::POST,
        "gitproviders/forge/import",
        Some(json!({"workspace": "vault", "repositories": ["ledger"]})),
    )
    .await;
    assert_eq!(status, 422, "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("belongs to project `other`"),
        "{refused}"
    );

    // An epic task at high risk, approved once, accepted and merged into the forge.
    let epic = work(
        &f,
        &alice,
        "create_epic",
        json!({"project": "web", "title": "Ledger", "risk": "high"}),
    )
    .await
    .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    work(
        &f,
        &alice,
        "update_epic",
        json!({"id": epic, "status": "open"}),
    )
    .await
    .unwrap();
    publish(&clone, "fix", "origin/main", "fix.txt", "fix\n");
    let ept = work(
        &f,
        &alice,
        "add_task",
        json!({"epic": epic, "title": "Fix", "workspace": "forge", "repository": "ledger", "branch": "fix"}),
    )
    .await
    .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for to in ["ready", "in_progress", "review"] {
        work(&f, &alice, "move_task", json!({"id": ept, "to": to}))
            .await
            .unwrap();
    }
    work(
        &f,
        &dave,
        "review",
        json!({"id": ept, "verdict": "approve"}),
    )
    .await
    .unwrap();
    let done = work(&f, &alice, "accept", json!({"id": ept}))
        .await
        .unwrap();
    assert_eq!(done["epicTask"]["state"], "merged", "{done}");
    let merge = done["epicTask"]["mergeCommit"].as_str().unwrap().to_owned();
    assert_eq!(git(&ledger, &["rev-parse", "main"]), merge);

    // Unsigned, wrongly signed: 401, nothing changed.
    let failure = json!({"commit": merge, "state": "failure", "url": "https://ci.example/run/7"});
    let before = crate::epics::epics_world(&f).await;
    let (status, answer) = deliver(&f, &failure, None, "d-1").await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (401, Some("UNSIGNED")),
        "{answer}"
    );
    let (status, answer) = deliver(&f, &failure, Some(&signed("guess", &failure)), "d-1").await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (401, Some("BAD_SIGNATURE")),
        "{answer}"
    );
    assert_eq!(crate::epics::epics_world(&f).await, before);

    // A ping when the hook is made is taken and ignored.
    let ping = json!({"zen": "Keep it logically awesome.", "hook_id": 1});
    let (status, answer) =
        deliver_event(&f, &ping, Some(&signed("s3cret", &ping)), "p-1", "ping").await;
    assert_eq!(
        (status, answer["ignored"].as_str()),
        (200, Some("ping")),
        "{answer}"
    );

    // Signed: GitHub's pending status is recorded, a failure reopens the task with its link.
    let pending = json!({
        "sha": merge, "state": "pending", "target_url": "https://ci.example/run/7",
        "commit": {"sha": merge, "commit": {"message": "merge"}}, "context": "ci/build"
    });
    let (status, answer) = deliver(&f, &pending, Some(&signed("s3cret", &pending)), "d-0").await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["recorded"], json!([ept]));
    assert_eq!(answer["reopened"], json!([]));
    let (status, answer) = deliver(&f, &failure, Some(&signed("s3cret", &failure)), "d-1").await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["reopened"], json!([ept]));
    let got = work(&f, &alice, "get_epic", json!({"id": epic}))
        .await
        .unwrap();
    let task = &got["tasks"][0];
    assert_eq!(task["state"], "reopened", "{got}");
    assert_eq!(task["ciState"], "failure");
    assert_eq!(task["ciUrl"], "https://ci.example/run/7");
    let last =
        f.w.store
            .store
            .work_moves(&ept)
            .await
            .unwrap()
            .pop()
            .unwrap();
    assert_eq!(
        (
            last.from.as_deref(),
            last.to.as_str(),
            last.moved_by.as_str()
        ),
        (Some("merged"), "reopened", "gitprovider:forge")
    );

    // The console: the board, the epic's tasks by state, the task with its review, merge and
    // CI report; to a member of another project the task does not exist.
    let console = crate::plain::Plain::sign_in(&f.w, &alice).await;
    let (status, board) = console.get("/epics").await;
    assert_eq!(status, 200, "{board}");
    assert!(
        board.contains(&format!("href=\"/epics/{epic}\"")),
        "{board}"
    );
    let (status, page) = console.get(&format!("/epics/{epic}")).await;
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains(&format!("href=\"/epic-tasks/{ept}\""))
            && page.contains("data-state=\"reopened\""),
        "{page}"
    );
    let (status, page) = console.get(&format!("/epic-tasks/{ept}")).await;
    assert_eq!(status, 200, "{page}");
    for needle in [
        merge.as_str(),
        "https://ci.example/run/7",
        "user:dave",
        "failure",
        "gitprovider:forge",
    ] {
        assert!(page.contains(needle), "`{needle}`: {page}");
    }
    let carol = f.w.token("carol", None, None).await;
    let outsider = crate::plain::Plain::sign_in(&f.w, &carol).await;
    let (status, page) = outsider.get(&format!("/epic-tasks/{ept}")).await;
    assert_eq!(status, 404, "{page}");

    // The pending report delivered again is ignored, under its id or another: the failure
    // stands.
    let before = crate::epics::epics_world(&f).await;
    for id in ["d-0", "d-7"] {
        let (status, answer) = deliver(&f, &pending, Some(&signed("s3cret", &pending)), id).await;
        assert_eq!(
            (status, answer["repeated"].as_bool()),
            (200, Some(true)),
            "{answer}"
        );
    }
    assert_eq!(crate::epics::epics_world(&f).await, before);

    // Without a secret (cleared by an explicit null) the webhook takes nothing.
    let (status, answer) = apply(
        &f,
        &format!("{PROVIDER}url: {url:?}\nwebhookSecret: null\n"),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert!(provider(&f).await.get("webhookSecret").is_none());
    let again = json!({"commit": merge, "state": "error"});
    let (status, answer) = deliver(&f, &again, Some(&signed("s3cret", &again)), "d-2").await;
    assert_eq!(
        (status, answer["code"].as_str()),
        (403, Some("NO_SECRET")),
        "{answer}"
    );
    assert_eq!(crate::epics::epics_world(&f).await, before);

    // Every delivery is one audit record, refused ones with their code.
    let records =
        f.w.store
            .store
            .audit(&warden_store::AuditFilter {
                tool: Some("gitprovider.delivery".into()),
                ..Default::default()
            })
            .await
            .unwrap();
    let seen: Vec<(Option<&str>, Option<&str>)> = records
        .iter()
        .map(|r| (r.record.decision.as_deref(), r.record.code.as_deref()))
        .collect();
    assert_eq!(
        seen,
        [
            (Some("deny"), Some("UNSIGNED")),
            (Some("deny"), Some("BAD_SIGNATURE")),
            (Some("allow"), None),
            (Some("allow"), None),
            (Some("allow"), None),
            (Some("allow"), None),
            (Some("allow"), None),
            (Some("deny"), Some("NO_SECRET")),
        ]
    );
    assert!(
        records
            .iter()
            .all(|r| r.record.principal.as_deref() == Some("gitprovider:forge"))
    );

    // An address sending bad deliveries is answered 429 — but a delivery signed by the
    // provider's secret from it still goes through: forges share addresses.
    let (status, answer) = apply(
        &f,
        &format!("{PROVIDER}url: {url:?}\nwebhookSecret: s3cret\n"),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    // Its two bad deliveries above count too: 30 in all, then 429.
    let mut statuses = Vec::new();
    for i in 0..29 {
        statuses.push(deliver(&f, &ping, None, &format!("bad-{i}")).await.0);
    }
    assert_eq!(statuses[..28], [401; 28], "{statuses:?}");
    assert_eq!(statuses.last(), Some(&429));
    let (status, answer) =
        deliver_event(&f, &ping, Some(&signed("s3cret", &ping)), "p-2", "ping").await;
    assert_eq!(
        (status, answer["ignored"].as_str()),
        (200, Some("ping")),
        "{answer}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_secret_is_kept_when_left_out_cleared_by_null_and_never_empty_at_every_door() {
    let dir = tempfile::tempdir().unwrap();
    let (forge_dir, _, _) = forge(dir.path());
    let f = Fixture::start_with(PEOPLE).await;
    let url = forge_dir.display().to_string();
    let secrets = data_dir(&f);

    // The admin API: create with a value, update without it (kept), with "" (refused,
    // nothing changed), with a reference (kept as is), with null (cleared).
    let (status, answer) =
        apply(&f, &format!("{PROVIDER}url: {url:?}\nwebhookSecret: one\n")).await;
    assert_eq!(status, 200, "{answer}");
    let stored = provider(&f).await["webhookSecret"].clone();
    assert_eq!(secret_of(&secrets, &stored), "one");
    let moved = format!("{url}/");
    let (status, answer) = apply(&f, &format!("{PROVIDER}url: {moved:?}\n")).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        provider(&f).await["webhookSecret"],
        stored,
        "left out: kept"
    );
    // The same value again keeps the secret it has: unchanged.
    let (status, answer) = apply(
        &f,
        &format!("{PROVIDER}url: {moved:?}\nwebhookSecret: one\n"),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["changes"][0]["status"], "unchanged", "{answer}");
    let before = provider(&f).await;
    let (status, answer) = apply(
        &f,
        &format!("{PROVIDER}url: {url:?}\nwebhookSecret: \"\"\n"),
    )
    .await;
    assert_eq!(status, 422, "{answer}");
    let error = answer["error"].as_str().unwrap();
    assert!(
        error.contains("GitProvider `forge`: field `webhookSecret`: is empty"),
        "{answer}"
    );
    assert_eq!(provider(&f).await, before);
    let (status, answer) = apply(
        &f,
        &format!("{PROVIDER}url: {url:?}\nwebhookSecret: \"${{secret:mine}}\"\n"),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(provider(&f).await["webhookSecret"], "${secret:mine}");
    let (status, _) = apply(
        &f,
        &format!("{PROVIDER}url: {url:?}\nwebhookSecret: null\n"),
    )
    .await;
    assert_eq!(status, 200);
    assert!(provider(&f).await.get("webhookSecret").is_none());

    // The CLI through the server: a value is stored, "" refused (exit 2), left out kept.
    let file = dir.path().join("provider.yaml");
    let cli_apply = |args: &[&str]| {
        std::process::Command::new(crate::common::WARDEN)
            .arg("apply")
            .arg("-f")
            .arg(&file)
            .args(args)
            .env("WARDEN_TOKEN", &f.w.admin)
            .env_remove("WARDEN_SERVER")
            .output()
            .unwrap()
    };
    let server = ["--server", f.w.base.as_str()];
    std::fs::write(
        &file,
        format!("{PROVIDER}url: {url:?}\nwebhookSecret: two\n"),
    )
    .unwrap();
    let out = cli_apply(&server);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stored = provider(&f).await["webhookSecret"].clone();
    assert_eq!(secret_of(&secrets, &stored), "two");
    std::fs::write(
        &file,
        format!("{PROVIDER}url: {url:?}\nwebhookSecret: \"\"\n"),
    )
    .unwrap();
    let out = cli_apply(&server);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("webhookSecret"));
    std::fs::write(&file, format!("{PROVIDER}url: {url:?}\n")).unwrap();
    assert!(cli_apply(&server).status.success());
    assert_eq!(provider(&f).await["webhookSecret"], stored);

    // `warden provider discover|import` through the server.
    let provider_cli = |args: &[&str]| {
        let out = std::process::Command::new(crate::common::WARDEN)
            .arg("provider")
            .args(args)
            .args(server)
            .env("WARDEN_TOKEN", &f.w.admin)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let listed = provider_cli(&["discover", "forge"]);
    assert!(
        listed.contains("ledger") && listed.contains("site"),
        "{listed}"
    );
    assert_eq!(
        provider_cli(&[
            "import",
            "forge",
            "--workspace",
            "board",
            "--repository",
            "site"
        ]),
        "workspace/board repository site added\n"
    );
    assert_eq!(
        provider_cli(&[
            "import",
            "forge",
            "--workspace",
            "board",
            "--repository",
            "site"
        ]),
        "workspace/board unchanged: it has them all\n"
    );

    // `warden apply` on a store of its own: the value lands in that data directory's secrets.
    let own = dir.path().join("own");
    let on_store = ["--data-dir", own.to_str().unwrap()];
    std::fs::write(
        &file,
        format!("kind: Project\nname: web\n---\n{PROVIDER}url: {url:?}\nwebhookSecret: three\n"),
    )
    .unwrap();
    let out = cli_apply(&on_store);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = |format: &str| {
        let out = std::process::Command::new(crate::common::WARDEN)
            .args(["get", "gitproviders", "-o", format])
            .args(on_store)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let got: Value = serde_json::from_str(&listed("json")).unwrap();
    let reference = got[0]["webhookSecret"].clone();
    assert_eq!(secret_of(&own, &reference), "three");
    assert!(!listed("yaml").contains("three"));
    std::fs::write(
        &file,
        format!("kind: Project\nname: web\n---\n{PROVIDER}url: {url:?}\nwebhookSecret: null\n"),
    )
    .unwrap();
    assert!(cli_apply(&on_store).status.success());
    let yaml = listed("yaml");
    assert!(yaml.contains("name: forge"), "{yaml}");
    assert!(!yaml.contains("webhookSecret"), "cleared: {yaml}");
    // Its file went with it.
    let name = reference
        .as_str()
        .unwrap()
        .trim_start_matches("${secret:")
        .trim_end_matches('}');
    assert!(!own.join("secrets").join(name).exists());
}
