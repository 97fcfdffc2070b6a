//! Agent chat (RUN-9) and its threads (RUN-7), against a scripted OpenAI-compatible model
//! (`warden_testkit::openai`): the chat service that the API, the console and `warden chat`
//! call.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

mod common;

#[allow(
    dead_code,
    reason = "the console tests use some of the browser's helpers"
)]
#[path = "console/browser.rs"]
mod browser;
#[path = "chat/console.rs"]
mod console;
#[allow(
    dead_code,
    reason = "the console tests use some of the console's helpers"
)]
#[path = "console/plain.rs"]
mod plain;

use common::*;
use serde_json::Value;
use warden_chat::{Chat, ChatEvent, Turn};
use warden_core::principal::Credential;
use warden_store::MessageRole;
use warden_testkit::openai::{Reply, ScriptedModel};

/// Payments with its ledger (a dangerous `add_note`), a handbook project whose tools alice
/// may not use, and the agent `helper` in both, talking through `model`.
pub(crate) fn config(model: &ScriptedModel, extra: &str) -> String {
    format!(
        r#"
kind: Project
name: payments
instructions: "How payments work here."
---
{ledger}
---
kind: Project
name: handbook
instructions: "Refunds over 500 need two people."
---
{handbook}
---
kind: ToolPolicy
project: payments
tool: ledger__add_note
class: mutation
risk: dangerous
---
kind: Model
name: scripted
url: "{url}"
model: test-model
{extra}
---
kind: Agent
name: helper
instructions: "You help with payments."
memberships: [payments, handbook]
model: scripted
---
kind: User
name: alice
---
kind: User
name: bob
---
kind: Role
name: payer
permissions: ["run:projects:payments"]
---
kind: RoleBinding
role: payer
subject: {{ user: alice }}
---
kind: RoleBinding
role: payer
subject: {{ user: bob }}
"#,
        ledger = stdio_upstream("ledger", "payments", ""),
        handbook = stdio_upstream("handbook", "handbook", ""),
        url = model.url,
    )
}

async fn credential(w: &TestWarden, user: &str) -> Credential {
    let token = w.token(user, None, None).await;
    w.gateway.authenticate(&token).unwrap()
}

/// A turn, with the events it told.
async fn turn(
    chat: &Chat,
    who: &Credential,
    thread: Option<&str>,
    text: &str,
) -> (Turn, Vec<ChatEvent>) {
    let mut events = Vec::new();
    let mut on = |e: ChatEvent| events.push(e);
    let turn = match thread {
        None => chat.start(who, "helper", text, &mut on).await,
        Some(id) => chat.send(who, id, text, &mut on).await,
    }
    .unwrap();
    (turn, events)
}

fn names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_executes_refuses_and_parks_through_the_pipeline_and_the_outcome_follows() {
    let model = ScriptedModel::start(vec![
        // The arguments arrive in three pieces.
        Reply::call("c1", "ledger__echo", &[r#"{"te"#, r#"xt": "#, r#""hi"}"#]),
        Reply::call("c2", "handbook__echo", &[r#"{"text": "x"}"#]),
        Reply::call("c3", "ledger__add_note", &[r#"{"text": "refund 42"}"#]),
        Reply::Text(vec!["Echoed, ".into(), "and the note waits.".into()]),
    ])
    .await;
    let w = TestWarden::start(&config(&model, "")).await;
    let chat = Chat::new(w.gateway.clone());
    let alice = credential(&w, "alice").await;
    let (turn, events) = turn(&chat, &alice, None, "Echo hi, then note the refund").await;
    assert_eq!(turn.failure, None);
    let thread = &turn.thread;
    assert!(thread.id.starts_with("thr_"), "{thread:?}");
    assert_eq!(thread.owner, "user:alice");

    // What the model was given: the system block a run of alice with helper gets, and
    // exactly the tools tools/list shows that run, with their advertised schemas.
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    let first = &requests[0];
    assert_eq!(first["model"], "test-model");
    assert_eq!(first["stream"], true);
    let system = first["messages"][0]["content"].as_str().unwrap();
    assert_eq!(first["messages"][0]["role"], "system");
    for part in [
        "You help with payments.",
        "How payments work here.",
        "Refunds over 500 need two people.",
        "Context boundary: this run carries knowledge of the project `handbook` but has no tools for it",
    ] {
        assert!(system.contains(part), "{part} in {system}");
    }
    let authority = w.gateway.authority(&alice, Some("helper")).unwrap();
    let listed = w.gateway.list_wire_tools(&w.gateway.list_tools(&authority));
    let mut offered = names(first);
    offered.sort();
    let mut expected: Vec<String> = listed.iter().map(|t| t.name.to_string()).collect();
    expected.sort();
    assert_eq!(offered, expected);
    assert!(
        offered
            .iter()
            .all(|n| n.starts_with("ledger__") || n.starts_with("warden__")),
        "{offered:?}"
    );
    let echo = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "ledger__echo")
        .unwrap();
    let advertised = listed.iter().find(|t| t.name == "ledger__echo").unwrap();
    assert_eq!(
        echo["function"]["parameters"],
        Value::Object((*advertised.input_schema).clone())
    );

    // Each call through the pipeline, in the thread's run.
    let decisions: Vec<(String, String, Option<String>)> = events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::Decision {
                tool_call_id,
                status,
                code,
                ..
            } => Some((tool_call_id.clone(), status.clone(), code.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        decisions,
        [
            ("c1".into(), "executed".into(), None),
            ("c2".into(), "denied".into(), Some("UNKNOWN_TOOL".into())),
            ("c3".into(), "pending_approval".into(), None),
        ]
    );
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::Delta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Echoed, and the note waits.");
    assert!(matches!(events.last(), Some(ChatEvent::Done { .. })));
    // The model got each result as the GOV-3 contract; the unknown tool exactly as one that
    // does not exist.
    let results: Vec<&Value> = requests[3]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(results.len(), 3);
    let denied: Value = serde_json::from_str(results[1]["content"].as_str().unwrap()).unwrap();
    assert_eq!(denied["code"], "UNKNOWN_TOOL");
    assert_eq!(
        denied["message"], "unknown tool `handbook__echo`",
        "{denied}"
    );
    let executed: Value = serde_json::from_str(results[0]["content"].as_str().unwrap()).unwrap();
    assert_eq!(executed["status"], "executed");
    assert_eq!(executed["runId"], thread.run_id.as_str());
    let audited = w
        .store
        .store
        .audit(&warden_store::AuditFilter {
            run_id: Some(thread.run_id.clone()),
            tool: Some("ledger__echo".into()),
            ..warden_store::AuditFilter::default()
        })
        .await
        .unwrap();
    assert!(
        !audited.is_empty(),
        "the call is audited under the thread's run"
    );
    // Content stays in the thread: the audit carries no message text (AUD-3).
    let everything = w
        .store
        .store
        .audit(&warden_store::AuditFilter {
            run_id: Some(thread.run_id.clone()),
            limit: Some(1000),
            ..warden_store::AuditFilter::default()
        })
        .await
        .unwrap();
    assert!(
        everything
            .iter()
            .all(|r| !r.record.payload.contains("note the refund")),
        "{everything:?}"
    );

    // The parked call, approved, runs once and its outcome joins the thread, once.
    let approval = turn
        .added
        .iter()
        .find_map(|m| m.approval_id.clone())
        .expect("the parked call's approval");
    let admin = w.gateway.authenticate(&w.admin).unwrap();
    let decided = w
        .gateway
        .decide_approval(&approval, &admin, warden_mcp::gateway::Verb::Approve, None)
        .await
        .unwrap();
    assert_eq!(decided.status.as_str(), "executed");
    let (_, messages) = chat.thread(&alice, &thread.id).await.unwrap();
    let (_, again) = chat.thread(&alice, &thread.id).await.unwrap();
    assert_eq!(messages.len(), again.len(), "the outcome is added once");
    let notice = messages.last().unwrap();
    assert_eq!(notice.role, MessageRole::Notice);
    assert_eq!(notice.approval_id.as_deref(), Some(approval.as_str()));
    assert_eq!(notice.decision.as_deref(), Some("executed"));
    assert!(
        notice.content.contains("`ledger__add_note`, parked as"),
        "{}",
        notice.content
    );
    let roles: Vec<MessageRole> = messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            MessageRole::User,
            MessageRole::Assistant,
            MessageRole::Tool,
            MessageRole::Assistant,
            MessageRole::Tool,
            MessageRole::Assistant,
            MessageRole::Tool,
            MessageRole::Assistant,
            MessageRole::Notice,
        ]
    );
    let adds = w
        .store
        .store
        .audit(&warden_store::AuditFilter {
            tool: Some("ledger__add_note".into()),
            decision: Some("executed".into()),
            ..warden_store::AuditFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(adds.len(), 1, "executed once: {adds:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_model_is_one_notice_naming_it_and_what_was_said_is_kept() {
    let model = ScriptedModel::start(vec![
        Reply::Status(429),
        Reply::Broken,
        Reply::Status(401),
        Reply::Garbage,
        Reply::text("Here now."),
    ])
    .await;
    let w = TestWarden::start(&config(&model, "")).await;
    let chat = Chat::new(w.gateway.clone());
    let alice = credential(&w, "alice").await;
    let (first, _) = turn(&chat, &alice, None, "first question").await;
    let failure = first.failure.clone().unwrap();
    assert!(
        failure.starts_with("Model `scripted` is rate limited"),
        "{failure}"
    );
    let id = first.thread.id.clone();
    let expectations = [
        "Model `scripted` sent an answer Warden cannot read",
        "Model `scripted` refused Warden's credentials",
        "Model `scripted` sent an answer Warden cannot read",
    ];
    for (i, expected) in expectations.iter().enumerate() {
        let (t, events) = turn(&chat, &alice, Some(&id), &format!("again {i}")).await;
        let failure = t.failure.unwrap();
        assert!(failure.starts_with(expected), "{failure}");
        assert!(events.contains(&ChatEvent::Notice {
            text: failure,
            failure: true
        }));
    }
    let (last, _) = turn(&chat, &alice, Some(&id), "last try").await;
    assert_eq!(last.failure, None);
    // What was said before is kept, and the model is given it.
    let request = model.requests().pop().unwrap();
    let said: Vec<&str> = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        said,
        [
            "first question",
            "again 0",
            "again 1",
            "again 2",
            "last try"
        ]
    );
    let (_, messages) = chat.thread(&alice, &id).await.unwrap();
    assert_eq!(
        messages
            .iter()
            .filter(|m| m.role == MessageRole::Notice)
            .count(),
        4
    );
    assert_eq!(messages.last().unwrap().content, "Here now.");
    // The text a broken stream had sent is kept before its notice.
    let cut = messages
        .iter()
        .position(|m| m.role == MessageRole::Assistant && m.content == "I was about to")
        .expect("the text sent before the stream broke is kept");
    assert_eq!(messages[cut + 1].role, MessageRole::Notice);
    assert_eq!(messages[cut - 1].content, "again 0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_model_says_so_and_names_it() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let model = ScriptedModel::start(vec![]).await;
    let config = config(&model, "").replace(&model.url, &format!("http://127.0.0.1:{port}/v1"));
    let w = TestWarden::start(&config).await;
    let chat = Chat::new(w.gateway.clone());
    let alice = credential(&w, "alice").await;
    let (t, _) = turn(&chat, &alice, None, "hello?").await;
    let failure = t.failure.unwrap();
    assert!(
        failure.starts_with("Model `scripted` cannot be reached"),
        "{failure}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_tool_rounds_stops_a_loop_and_says_so() {
    let model = ScriptedModel::start(vec![
        Reply::call("c1", "ledger__echo", &[r#"{"text": "1"}"#]),
        Reply::call("c2", "ledger__echo", &[r#"{"text": "2"}"#]),
    ])
    .await;
    let w = TestWarden::start(&config(&model, "maxToolRounds: 1")).await;
    let chat = Chat::new(w.gateway.clone());
    let alice = credential(&w, "alice").await;
    let (t, events) = turn(&chat, &alice, None, "loop").await;
    let statuses: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            ChatEvent::Decision { status, .. } => Some(status.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(statuses, ["executed", "not_run"]);
    let last = t.added.last().unwrap();
    assert_eq!(last.role, MessageRole::Notice);
    assert!(
        last.content
            .starts_with("Stopped after 1 rounds of tool calls, the limit of Model `scripted`"),
        "{}",
        last.content
    );
}

/// RUN-7: another principal's thread is exactly a thread that does not exist.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_principals_thread_is_refused_as_one_that_does_not_exist() {
    let model = ScriptedModel::start(vec![Reply::text("Hello alice.")]).await;
    let w = TestWarden::start(&config(&model, "")).await;
    let chat = Chat::new(w.gateway.clone());
    let alice = credential(&w, "alice").await;
    let bob = credential(&w, "bob").await;
    let (t, _) = turn(&chat, &alice, None, "hello").await;
    let id = t.thread.id.clone();
    let made_up = format!("thr_{}", "0".repeat(id.len() - 4));
    let mut ignore = |_: ChatEvent| {};
    for other in [id.as_str(), made_up.as_str()] {
        let read = chat.thread(&bob, other).await.unwrap_err().to_string();
        let sent = chat
            .send(&bob, other, "mine now", &mut ignore)
            .await
            .unwrap_err()
            .to_string();
        let deleted = chat.delete(&bob, other).await.unwrap_err().to_string();
        assert_eq!(
            [read, sent, deleted],
            [
                "no thread with that id",
                "no thread with that id",
                "no thread with that id"
            ]
        );
    }
    assert!(chat.threads(&bob, None).await.unwrap().is_empty());
    assert_eq!(chat.threads(&alice, None).await.unwrap().len(), 1);
    chat.delete(&alice, &id).await.unwrap();
    assert!(chat.threads(&alice, None).await.unwrap().is_empty());
    // A message that says nothing is refused, naming the field.
    let empty = chat
        .start(&alice, "helper", "  ", &mut ignore)
        .await
        .unwrap_err();
    assert_eq!(empty.field(), Some("message"));
    let unknown = chat
        .start(&alice, "ghost", "hi", &mut ignore)
        .await
        .unwrap_err();
    assert_eq!(unknown.field(), Some("agent"));
    assert_eq!(model.requests().len(), 1, "no model asked for a refusal");
}

/// `POST`/`GET`/`DELETE` on the admin API with `token`: the status and the body's bytes.
async fn api(
    w: &TestWarden,
    token: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
    accept: &str,
) -> (u16, String) {
    let mut request = reqwest::Client::new()
        .request(method, format!("{}/api/v1{path}", w.base))
        .bearer_auth(token)
        .header("accept", accept);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_starts_continues_lists_reads_and_deletes_threads_as_json_or_events() {
    let model = ScriptedModel::start(vec![
        Reply::text("Hello."),
        Reply::call("c1", "ledger__echo", &[r#"{"text":"#, r#" "hi"}"#]),
        Reply::Text(vec!["Ech".into(), "oed.".into()]),
    ])
    .await;
    let w = TestWarden::start(&config(&model, "")).await;
    let alice = w.token("alice", None, None).await;
    let json = "application/json";
    let (status, body) = api(
        &w,
        &alice,
        reqwest::Method::POST,
        "/agents/helper/threads",
        Some(serde_json::json!({"message": "hi there"})),
        json,
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let started: Value = serde_json::from_str(&body).unwrap();
    let id = started["thread"]["id"].as_str().unwrap().to_owned();
    assert_eq!(started["thread"]["owner"], "user:alice");
    assert_eq!(started["messages"][0]["role"], "user");
    assert_eq!(started["messages"][1]["content"], "Hello.");
    // The next turn as events, while it runs.
    let (status, stream) = api(
        &w,
        &alice,
        reqwest::Method::POST,
        &format!("/threads/{id}/messages"),
        Some(serde_json::json!({"message": "echo hi"})),
        "text/event-stream",
    )
    .await;
    assert_eq!(status, 200, "{stream}");
    let names: Vec<&str> = stream
        .lines()
        .filter_map(|l| l.strip_prefix("event:"))
        .map(str::trim)
        .collect();
    assert_eq!(
        names,
        ["thread", "tool_call", "decision", "delta", "delta", "done"],
        "{stream}"
    );
    assert!(
        stream.contains(r#""arguments":"{\"text\": \"hi\"}""#),
        "{stream}"
    );
    assert!(stream.contains(r#""status":"executed""#), "{stream}");
    let (status, body) = api(&w, &alice, reqwest::Method::GET, "/threads", None, json).await;
    assert_eq!(status, 200);
    let listed: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    let (status, body) = api(
        &w,
        &alice,
        reqwest::Method::GET,
        &format!("/threads/{id}"),
        None,
        json,
    )
    .await;
    assert_eq!(status, 200);
    let read: Value = serde_json::from_str(&body).unwrap();
    let roles: Vec<&str> = read["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "user",
            "assistant",
            "tool",
            "assistant"
        ]
    );
    assert_eq!(read["messages"][3]["toolCalls"][0]["name"], "ledger__echo");
    let (status, _) = api(
        &w,
        &alice,
        reqwest::Method::DELETE,
        &format!("/threads/{id}"),
        None,
        json,
    )
    .await;
    assert_eq!(status, 200);
    // Bad requests say what is wrong and start nothing.
    let cases = [
        (
            "/agents/helper/threads",
            serde_json::json!({"message": ""}),
            400,
            "`message`: say something",
        ),
        (
            "/agents/helper/threads",
            serde_json::json!({"text": "hi"}),
            400,
            "unknown field `text`",
        ),
        (
            "/agents/ghost/threads",
            serde_json::json!({"message": "hi"}),
            404,
            "no agent named `ghost`",
        ),
    ];
    for (path, body, want, says) in cases {
        let (status, answer) = api(&w, &alice, reqwest::Method::POST, path, Some(body), json).await;
        assert_eq!(status, want, "{answer}");
        assert!(answer.contains(says), "{answer}");
    }
    assert_eq!(
        model.requests().len(),
        3,
        "no refused request reached the model"
    );
}

/// RUN-7 at the API: another principal's thread and a made-up id answer with the same status
/// and the same bytes on every route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_answers_anothers_thread_exactly_as_a_made_up_one() {
    let model = ScriptedModel::start(vec![Reply::text("Hello alice.")]).await;
    let w = TestWarden::start(&config(&model, "")).await;
    let alice = w.token("alice", None, None).await;
    let bob = w.token("bob", None, None).await;
    let (_, body) = api(
        &w,
        &alice,
        reqwest::Method::POST,
        "/agents/helper/threads",
        Some(serde_json::json!({"message": "secret plans"})),
        "application/json",
    )
    .await;
    let id = serde_json::from_str::<Value>(&body).unwrap()["thread"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let made_up = format!("thr_{}", "f".repeat(id.len() - 4));
    let routes = |thread: &str| {
        [
            (reqwest::Method::GET, format!("/threads/{thread}"), None),
            (
                reqwest::Method::POST,
                format!("/threads/{thread}/messages"),
                Some(serde_json::json!({"message": "hi"})),
            ),
            (
                reqwest::Method::POST,
                format!("/threads/{thread}/messages"),
                Some(serde_json::json!({"not": "even a message"})),
            ),
            (reqwest::Method::DELETE, format!("/threads/{thread}"), None),
        ]
    };
    for ((m1, p1, b1), (m2, p2, b2)) in routes(&id).into_iter().zip(routes(&made_up)) {
        let theirs = api(&w, &bob, m1, &p1, b1, "application/json").await;
        let nobodys = api(&w, &bob, m2, &p2, b2, "application/json").await;
        assert_eq!(theirs.0, 404, "{p1}: {}", theirs.1);
        assert_eq!(theirs, nobodys, "{p1}");
    }
    // Alice's thread is untouched.
    let (status, body) = api(
        &w,
        &alice,
        reqwest::Method::GET,
        &format!("/threads/{id}"),
        None,
        "application/json",
    )
    .await;
    assert_eq!(status, 200);
    assert!(body.contains("secret plans"));
    assert_eq!(model.requests().len(), 1);
}

/// `warden chat` as a person runs it, with `WARDEN_TOKEN` set; `server` given by flag or, as
/// a context would, by `WARDEN_SERVER`.
fn warden_chat(w: &TestWarden, token: &str, args: &[&str], by_flag: bool) -> std::process::Command {
    let mut cmd = std::process::Command::new(WARDEN);
    cmd.arg("chat").args(args);
    for (k, _) in std::env::vars() {
        if k.starts_with("WARDEN_") {
            cmd.env_remove(k);
        }
    }
    cmd.env("WARDEN_TOKEN", token).env(
        "XDG_CONFIG_HOME",
        std::env::temp_dir().join("warden-chat-no-context"),
    );
    if by_flag {
        cmd.args(["--server", &w.base]);
    } else {
        cmd.env("WARDEN_SERVER", &w.base);
    }
    cmd
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warden_chat_streams_a_turn_shows_decisions_and_goes_on_with_a_thread() {
    let model = ScriptedModel::start(vec![
        Reply::call("c1", "ledger__echo", &[r#"{"text": "hi"}"#]),
        Reply::Text(vec!["Ech".into(), "oed hi.".into()]),
        Reply::text("Still here."),
        Reply::Status(429),
    ])
    .await;
    let w = TestWarden::start(&config(&model, "")).await;
    let alice = w.token("alice", None, None).await;
    let out = warden_chat(&w, &alice, &["helper", "echo hi"], true)
        .output()
        .unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}{stderr}");
    assert_eq!(
        stdout, "→ ledger__echo({\"text\": \"hi\"})\n  executed\nEchoed hi.\n",
        "{stderr}"
    );
    let id = stderr
        .split_whitespace()
        .find(|w| w.starts_with("thr_"))
        .unwrap()
        .to_owned();
    // The same thread, through the server the environment names.
    let out = warden_chat(
        &w,
        &alice,
        &["helper", "still there?", "--thread", &id],
        false,
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Still here.\n");
    // A model that fails: its notice, and status 1.
    let out = warden_chat(&w, &alice, &["helper", "and now?", "--thread", &id], true)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout).contains("! Model `scripted` is rate limited"),
        "{}",
        text(&out.stdout)
    );
    // Another agent's name for this thread, someone else's thread, no server: each says why.
    let out = warden_chat(&w, &alice, &["analyst", "hi", "--thread", &id], true)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("is with agent `helper`, not `analyst`"));
    let bob = w.token("bob", None, None).await;
    let out = warden_chat(&w, &bob, &["helper", "hi", "--thread", &id], true)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("no thread with that id"));
    assert_eq!(model.requests().len(), 4);
}

/// The interactive session, on a terminal (a pseudo-terminal made by `script`): a prompt, a
/// turn per line, the same thread throughout; an empty line ends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warden_chat_on_a_terminal_takes_a_line_per_turn_in_one_thread() {
    let model = ScriptedModel::start(vec![
        Reply::text("First answer."),
        Reply::text("Second answer."),
    ])
    .await;
    let w = TestWarden::start(&config(&model, "")).await;
    let alice = w.token("alice", None, None).await;
    let command = format!("{WARDEN} chat helper --server {}", w.base);
    let mut script = std::process::Command::new("script");
    script
        .args(["-qec", &command, "/dev/null"])
        .env("WARDEN_TOKEN", &alice)
        .env_remove("WARDEN_SERVER")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = script.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    // Each line once the prompt before it is shown: the terminal's input is not read ahead.
    let reader = std::thread::spawn(move || {
        use std::io::Read as _;
        let mut seen = String::new();
        let mut buf = [0u8; 4096];
        let mut lines = ["first\n", "second\n", "\n"].into_iter();
        let mut prompts = 0;
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.push_str(&String::from_utf8_lossy(&buf[..n]));
            while seen.matches("you> ").count() > prompts {
                prompts += 1;
                if let Some(line) = lines.next() {
                    use std::io::Write as _;
                    stdin.write_all(line.as_bytes()).unwrap();
                    stdin.flush().unwrap();
                }
            }
        }
        seen
    });
    let status = child.wait().unwrap();
    let seen = reader.join().unwrap();
    assert!(status.success(), "{seen}");
    let first = seen.find("First answer.").expect(&seen);
    let second = seen.find("Second answer.").expect(&seen);
    assert!(first < second, "{seen}");
    assert!(seen.contains("thread thr_"), "{seen}");
    // One thread: the second request carries the first exchange.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let users: Vec<&str> = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(users, ["first", "second"]);
}

/// FED-3: a Model's key comes from its `apiKey` only — never from the server's environment
/// (`OPENAI_API_KEY` and the like, which the OpenAI client library would otherwise send to
/// whatever `url` a Model names).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_gets_its_own_key_only_never_the_servers_environment() {
    let model = ScriptedModel::start(vec![Reply::text("one"), Reply::text("two")]).await;
    let keyed = format!(
        "{}---\nkind: Model\nname: keyed\nurl: \"{}\"\nmodel: m\napiKey: \"${{env:CHAT_TEST_MODEL_KEY}}\"\n---\nkind: Agent\nname: keyed-helper\nmemberships: [payments]\nmodel: keyed\n",
        config(&model, ""),
        model.url
    );
    let w = ServedBinary::start_with_env(
        &keyed,
        &[],
        &[
            ("OPENAI_API_KEY", "sk-the-servers-own"),
            ("OPENAI_ORG_ID", "org-the-servers-own"),
            ("OPENAI_PROJECT_ID", "proj-the-servers-own"),
            ("CHAT_TEST_MODEL_KEY", "sk-the-models-key"),
        ],
    );
    warden_mcp::http_client::install_tls();
    for agent in ["helper", "keyed-helper"] {
        let answer = reqwest::Client::new()
            .post(format!("{}/api/v1/agents/{agent}/threads", w.base))
            .bearer_auth(&w.admin)
            .json(&serde_json::json!({"message": "hi"}))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 201, "{}", answer.text().await.unwrap());
    }
    let headers = model.headers();
    assert_eq!(headers.len(), 2);
    let sent = |i: usize, name: &str| {
        headers[i]
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(sent(0, "authorization"), None, "{:?}", headers[0]);
    assert_eq!(sent(0, "openai-organization"), None);
    assert_eq!(sent(0, "openai-project"), None);
    assert_eq!(
        sent(1, "authorization").as_deref(),
        Some("Bearer sk-the-models-key")
    );
    assert!(
        !w.log().contains("sk-the-models-key"),
        "the key is never logged"
    );
}

/// One turn at a time per thread, on every replica: a message sent while a turn runs is
/// refused (409) and changes nothing; an empty answer is a notice, not a message a model
/// would refuse later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_takes_one_turn_at_a_time_and_an_empty_answer_is_said() {
    let model = ScriptedModel::start(vec![Reply::Text(vec![]), Reply::text("ok")]).await;
    let w = TestWarden::start(&config(&model, "")).await;
    let chat = Chat::new(w.gateway.clone());
    let alice = credential(&w, "alice").await;
    let (t, _) = turn(&chat, &alice, None, "hello").await;
    let last = t.added.last().unwrap();
    assert_eq!(last.role, MessageRole::Notice);
    assert_eq!(last.content, "Model `scripted` gave an empty answer");
    assert_eq!(t.failure, None);
    // A turn holds the thread (as another replica's would).
    let now = w.gateway.clock().now();
    assert!(
        w.store
            .store
            .claim_thread(
                &t.thread.id,
                "user:alice",
                now,
                warden_core::time::Millis(now.0 + 60_000)
            )
            .await
            .unwrap()
    );
    let mut ignore = |_: ChatEvent| {};
    let busy = chat
        .send(&alice, &t.thread.id, "are you there?", &mut ignore)
        .await
        .unwrap_err();
    assert!(
        busy.to_string()
            .contains("a turn of this thread is still running"),
        "{busy}"
    );
    let (_, messages) = chat.thread(&alice, &t.thread.id).await.unwrap();
    assert_eq!(messages.len(), 2, "nothing added while the turn runs");
    w.store
        .store
        .release_thread(&t.thread.id, "user:alice")
        .await
        .unwrap();
    let (again, _) = turn(&chat, &alice, Some(&t.thread.id), "are you there?").await;
    assert_eq!(again.added.last().unwrap().content, "ok");
}
