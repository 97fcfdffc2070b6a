//! Tokens over the API: the secret shown once, never listed, revocation at the next use, and
//! never wider than the credential that creates it (AUTH-1, AUTH-2).

use serde_json::json;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_is_never_wider_than_the_credential_that_creates_it() {
    let w = TestWarden::start(&config()).await;
    let api = Api::new(&w);
    let olivia = w.token("olivia", None, None).await;
    // alice holds ledger:write, olivia does not: a token of alice's with all her
    // capabilities would hold more than olivia.
    let (status, body) = api
        .post(&olivia, "/api/v1/tokens", json!({"user": "alice"}))
        .await;
    assert_eq!(
        (status, body),
        refusal(
            403,
            "FORBIDDEN",
            "the token would hold `ledger:write`, which you do not: a token is never wider than the credential that creates it; narrow it with `scopes` or `projects`"
        )
    );
    let (status, body) = api
        .post(
            &olivia,
            "/api/v1/tokens",
            json!({"user": "alice", "scopes": ["run:projects:payments"]}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    // A token bound to a project cannot mint one for the others of its owner.
    let bound = w.token("olivia", Some(&["payments"]), None).await;
    let (status, _) = api
        .post(
            &bound,
            "/api/v1/tokens",
            json!({"user": "olivia", "projects": ["payments"]}),
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
