//! Tokens over the API: the secret shown once, never listed, revocation at the next use, and
//! never wider than the credential that creates it (AUTH-1, AUTH-2).

use serde_json::{Value, json};

use crate::common::*;
use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_created_token_shows_its_secret_once_is_listed_without_it_and_dies_when_revoked() {
    let w = TestWarden::start(&config()).await;
    let api = Api::new(&w);
    let (status, created) = api
        .post(
            &w.admin,
            "/api/v1/tokens",
            json!({"user": "alice", "projects": ["payments"], "scopes": ["run:projects:*"],
                   "ttl": "1h", "description": "ci"}),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    let secret = created["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("wdn_"), "{secret}");
    let token = &created["token"];
    let id = token["id"].as_str().unwrap().to_owned();
    assert_eq!(token["principal"], "user:alice");
    assert_eq!(token["projects"], json!(["payments"]));
    assert_eq!(token["scopes"], json!(["run:projects:*"]));
    assert_eq!(token["status"], "active");
    assert_eq!(token["kind"], "api_key");
    assert!(token["expiresAt"].as_i64().unwrap() > token["createdAt"].as_i64().unwrap());
    // Listed, never with its secret.
    let listed = api
        .send(reqwest::Method::GET, Some(&w.admin), "/api/v1/tokens", None)
        .await;
    assert_eq!(listed.status, 200);
    assert!(
        !listed.text.contains(&secret),
        "a listing never holds a secret"
    );
    assert!(!listed.text.contains("wdn_"), "{}", listed.text);
    let mine = listed
        .json
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id.as_str())
        .unwrap()
        .clone();
    assert_eq!(&mine, token);
    // The secret works, at once; revoked, it is refused at its next use.
    let (status, me) = api.get(&secret, "/api/v1/whoami").await;
    assert_eq!(
        (status, me["principal"].clone()),
        (200, json!("user:alice"))
    );
    let (status, revoked) = api.delete(&w.admin, &format!("/api/v1/tokens/{id}")).await;
    assert_eq!((status, revoked), (200, json!({ "id": id })));
    assert_eq!(api.get(&secret, "/api/v1/whoami").await.0, 401);
    let (_, listed) = api.get(&w.admin, "/api/v1/tokens").await;
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["id"] == id.as_str() && t["status"] == "revoked")
    );
    assert_eq!(
        api.delete(&w.admin, "/api/v1/tokens/tok_nothing").await,
        refusal(404, "NOT_FOUND", "no token with id `tok_nothing`")
    );
}

/// A user, a role with `tokens:any` but not `ledger:write`, and its binding: one who may mint
/// for others, never wider than itself.
const TOKEN_ADMIN: &str = r#"
kind: User
name: tom
---
kind: Role
name: token-admin
permissions: ["tokens:write", "tokens:any", "run:projects:payments"]
---
kind: RoleBinding
role: token-admin
subject: { user: tom }
"#;

/// The ids of every token, and how many admin records name a token action.
async fn written(api: &Api, w: &TestWarden) -> (Vec<Value>, usize) {
    let (_, tokens) = api.get(&w.admin, "/api/v1/tokens").await;
    let ids = tokens
        .as_array()
        .unwrap()
        .iter()
        .map(|t| json!([t["id"], t["status"]]))
        .collect();
    let (_, records) = api.get(&w.admin, "/api/v1/audit?kind=admin").await;
    let actions = records["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["tool"].as_str().is_some_and(|t| t.starts_with("token.")))
        .count();
    (ids, actions)
}

/// AUTH-2: a `tokens:*` holder mints and revokes for its own principal only; `admin`'s
/// tokens, and anyone else's, need `tokens:any` — refused with 403 naming it, nothing written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_creator_cannot_mint_or_revoke_for_another_principal_without_tokens_any() {
    let w = TestWarden::start(&config()).await;
    let api = Api::new(&w);
    let olivia = w.token("olivia", None, None).await;
    let before = written(&api, &w).await;
    for (body, who) in [
        (
            json!({"user": "admin", "scopes": ["run:projects:payments"], "projects": ["payments"]}),
            "user:admin",
        ),
        (
            json!({"user": "bob", "scopes": ["run:projects:payments"]}),
            "user:bob",
        ),
        // Whether the other principal exists is not told either.
        (json!({"user": "zed"}), "user:zed"),
        (json!({"serviceAccount": "robot"}), "serviceAccount:robot"),
    ] {
        assert_eq!(
            api.post(&olivia, "/api/v1/tokens", body).await,
            refusal(
                403,
                "MISSING_CAPABILITY",
                &format!(
                    "creating a token for `{who}`, another principal, needs the `tokens:any` capability"
                )
            )
        );
    }
    // An admin's token cannot be revoked either; it stays active.
    let (_, admins) = api.get(&w.admin, "/api/v1/tokens").await;
    let admin_id = admins
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["principal"] == "user:admin")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        api.delete(&olivia, &format!("/api/v1/tokens/{admin_id}"))
            .await,
        refusal(
            403,
            "MISSING_CAPABILITY",
            "revoking a token of `user:admin`, another principal, needs the `tokens:any` capability"
        )
    );
    assert_eq!(written(&api, &w).await, before, "nothing was written");
    assert_eq!(api.get(&w.admin, "/api/v1/whoami").await.0, 200);
    // Its own principal's tokens it mints and revokes; with `tokens:write` alone it lists
    // only those.
    let (status, own) = api
        .post(
            &olivia,
            "/api/v1/tokens",
            json!({"user": "olivia", "projects": ["payments"]}),
        )
        .await;
    assert_eq!(status, 201, "{own}");
    let (status, listed) = api.get(&olivia, "/api/v1/tokens").await;
    assert_eq!(status, 200);
    let owners: Vec<&Value> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["principal"])
        .collect();
    assert_eq!(owners, [&json!("user:olivia"), &json!("user:olivia")]);
    let id = own["token"]["id"].as_str().unwrap();
    assert_eq!(
        api.delete(&olivia, &format!("/api/v1/tokens/{id}")).await.0,
        200
    );
}

/// A `tokens:any` holder mints for others, never wider than itself, and the audit record names
/// both the creator and the owner.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_for_another_principal_is_never_wider_than_its_creator_and_the_trail_names_both() {
    let w = TestWarden::start(&config()).await;
    let api = Api::new(&w);
    assert_eq!(
        api.post_yaml(&w.admin, "/api/v1/resources", TOKEN_ADMIN)
            .await
            .0,
        200
    );
    w.settle().await;
    let tom = w.token("tom", None, None).await;
    // alice holds ledger:write, tom does not: a token of alice's with all her capabilities
    // would hold more than tom.
    assert_eq!(
        api.post(&tom, "/api/v1/tokens", json!({"user": "alice"}))
            .await,
        refusal(
            403,
            "FORBIDDEN",
            "the token would hold `ledger:write`, which you do not: a token is never wider than the credential that creates it; narrow it with `scopes` or `projects`"
        )
    );
    let (status, body) = api
        .post(
            &tom,
            "/api/v1/tokens",
            json!({"user": "alice", "scopes": ["run:projects:payments"]}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    // `tokens:any` is never handed on by a glob scope: a token of tom's scoped `tokens:*`
    // is back to its own principal.
    let scoped = w
        .token("tom", None, Some(&["tokens:*", "run:projects:*"]))
        .await;
    let (status, body) = api
        .post(
            &scoped,
            "/api/v1/tokens",
            json!({"user": "alice", "scopes": ["run:projects:payments"]}),
        )
        .await;
    assert_eq!(
        (status, body["code"].clone()),
        (403, json!("MISSING_CAPABILITY")),
        "{body}"
    );
    let (_, records) = api.get(&w.admin, "/api/v1/audit?kind=admin").await;
    let created = records["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["tool"] == "token.create" && r["principal"] == "user:tom")
        .unwrap_or_else(|| panic!("{records}"));
    assert_eq!(created["payload"]["principal"], "user:alice", "{created}");
    // A token bound to a project cannot mint one for the others of its owner.
    let bound = w.token("tom", Some(&["payments"]), None).await;
    let (status, _) = api
        .post(
            &bound,
            "/api/v1/tokens",
            json!({"user": "tom", "projects": ["payments"]}),
        )
        .await;
    assert_eq!(status, 201);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_requests_name_the_bad_field_and_need_tokens_read_or_write() {
    let w = TestWarden::start(&config()).await;
    let api = Api::new(&w);
    let post = |body| api.post(&w.admin, "/api/v1/tokens", body);
    assert_eq!(
        post(json!({"user": "alice", "serviceAccount": "x"})).await,
        refusal(
            400,
            "INVALID_INPUT",
            "give exactly one of `user` or `serviceAccount`"
        )
    );
    let (status, body) = post(json!({"user": "alice", "ttl": "soon"})).await;
    assert_eq!(status, 400);
    assert!(
        body["error"].as_str().unwrap().starts_with("`ttl`: "),
        "{body}"
    );
    let (status, body) = post(json!({"user": "alice", "scopes": ["Bad Scope"]})).await;
    assert_eq!(status, 400);
    assert!(
        body["error"].as_str().unwrap().starts_with("`scopes`: "),
        "{body}"
    );
    let (status, body) = post(json!({"user": "alice", "colour": "red"})).await;
    assert_eq!(
        (status, body["code"].clone()),
        (400, json!("INVALID_INPUT"))
    );
    assert!(body["error"].as_str().unwrap().contains("colour"), "{body}");
    assert_eq!(
        post(json!({"user": "zed"})).await,
        refusal(
            422,
            "UNPROCESSABLE",
            "`user`: no User named `zed`; apply it first"
        )
    );
    assert_eq!(
        post(json!({"user": "alice", "projects": ["nowhere"]})).await,
        refusal(
            422,
            "UNPROCESSABLE",
            "`projects`: no Project named `nowhere`"
        )
    );
    let nobody = nobody(&w).await;
    assert_eq!(
        api.get(&nobody, "/api/v1/tokens").await,
        refusal(
            403,
            "MISSING_CAPABILITY",
            "listing tokens needs the `tokens:read` capability"
        )
    );
    assert_eq!(
        api.post(&nobody, "/api/v1/tokens", json!({"user": "nobody"}))
            .await,
        refusal(
            403,
            "MISSING_CAPABILITY",
            "creating tokens needs the `tokens:write` capability"
        )
    );
}
