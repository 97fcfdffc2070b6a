//! `token create|list|revoke`, both ways.

use serde_json::Value;

use crate::common::TestWarden;
use crate::support::{Both, config};

/// A created token's JSON without what differs from one token to the next.
fn fields(mut v: Value) -> Value {
    let o = v.as_object_mut().unwrap();
    for key in ["id", "secret", "createdAt", "expiresAt"] {
        assert!(o.remove(key).is_some(), "{key}");
    }
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_created_listed_and_revoked_alike_both_ways() {
    let w = TestWarden::start(&config()).await;
    let cli = Both::new(&w);
    let create = [
        "token",
        "create",
        "--user",
        "alice",
        "--project",
        "alpha",
        "--scope",
        "run:projects:alpha",
        "--ttl",
        "1d",
        "--description",
        "ci",
        "-o",
        "json",
    ];
    let (api, store) = (cli.api(&create).ok().json(), cli.store(&create).ok().json());
    for t in [&api, &store] {
        assert!(t["id"].as_str().unwrap().starts_with("tok_"), "{t}");
        assert!(t["secret"].as_str().unwrap().starts_with("wdn_"), "{t}");
        assert!(t["expiresAt"].is_string(), "{t}");
    }
    assert_eq!(fields(api.clone()), fields(store.clone()));
    assert_eq!(
        fields(api.clone()),
        serde_json::json!({"kind": "api_key", "principal": "user:alice", "projects": ["alpha"],
            "scopes": ["run:projects:alpha"], "revokedAt": null, "description": "ci",
            "status": "active"})
    );
    // The secret alone on stdout, its id on stderr.
    for ran in [
        cli.api(&["token", "create", "--user", "alice"]),
        cli.store(&["token", "create", "--user", "alice"]),
    ] {
        let ran = ran.ok();
        assert!(ran.stdout.starts_with("wdn_") && ran.stdout.lines().count() == 1);
        assert!(
            ran.stderr.starts_with("created tok_") && ran.stderr.ends_with(" (shown once below)\n"),
            "{}",
            ran.stderr
        );
    }
    for format in ["table", "json", "yaml"] {
        let listed = cli.same(&["token", "list", "-o", format]).ok();
        assert!(!listed.stdout.contains("wdn_"), "{}", listed.stdout);
    }
    // Each revoked the other way round.
    let (a, s) = (api["id"].as_str().unwrap(), store["id"].as_str().unwrap());
    assert_eq!(
        cli.store(&["token", "revoke", a]).ok().stdout,
        format!("token {a} revoked\n")
    );
    assert_eq!(
        cli.api(&["token", "revoke", s]).ok().stdout,
        format!("token {s} revoked\n")
    );
    let listed = cli.same(&["token", "list", "-o", "json"]).json();
    for id in [a, s] {
        let t = listed
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .unwrap();
        assert_eq!(t["status"], "revoked", "{t}");
    }

    cli.same_failure(
        &["token", "revoke", "tok_0000"],
        1,
        "error: no token with id `tok_0000`; see `warden token list`\n",
    );
    cli.same_failure(
        &["token", "create", "--user", "nobody"],
        2,
        "error: `user`: no User named `nobody`; apply it first\n",
    );
    cli.same_failure(
        &["token", "create", "--user", "alice", "--project", "nowhere"],
        2,
        "error: `projects`: no Project named `nowhere`\n",
    );
    cli.same_failure(
        &["token", "create", "--user", "alice", "--ttl", "0s"],
        2,
        "error: --ttl: must be greater than zero\n",
    );
    // Only the server knows who asks: a token without `tokens:write` is refused (exit 1), with
    // the server's message.
    let alice = w.token("alice", None, None).await;
    let out = crate::support::warden(cli.home.path(), &["token", "list", "--server", &w.base])
        .env("WARDEN_TOKEN", &alice)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "error: listing tokens needs the `tokens:read` capability\n"
    );
}

/// AUTH-2 at the CLI's door: a `tokens:*` holder's `warden token create --user admin` and
/// `warden token revoke <admin's token>` are refused by the server, naming `tokens:any`, and
/// nothing is written; its own principal's tokens it makes and revokes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_creator_cannot_mint_or_revoke_for_another_principal_from_the_cli() {
    let w = TestWarden::start(&format!(
        "{}---\nkind: Role\nname: token-operator\npermissions: [\"tokens:*\"]\n---\n\
         kind: RoleBinding\nrole: token-operator\nsubject: {{ user: alice }}\n",
        config()
    ))
    .await;
    let cli = Both::new(&w);
    let alice = w.token("alice", None, None).await;
    let as_alice = |args: &[&str]| {
        let out = crate::support::warden(cli.home.path(), args)
            .args(["--server", &w.base])
            .env("WARDEN_TOKEN", &alice)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let listed = || cli.api(&["token", "list", "-o", "json"]).ok().json();
    let before = listed();
    assert_eq!(
        as_alice(&["token", "create", "--user", "admin"]),
        (
            Some(1),
            String::new(),
            "error: creating a token for `user:admin`, another principal, needs the `tokens:any` capability\n".into()
        )
    );
    let admins = before
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["principal"] == "user:admin")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        as_alice(&["token", "revoke", &admins]),
        (
            Some(1),
            String::new(),
            "error: revoking a token of `user:admin`, another principal, needs the `tokens:any` capability\n".into()
        )
    );
    assert_eq!(listed(), before, "nothing was written");
    let (code, secret, stderr) = as_alice(&["token", "create", "--user", "alice"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(secret.starts_with("wdn_"), "{secret}");
}
