//! A 2025-11-25 upstream's questions for a 2026-07-28 client (XPORT-1, XPORT-4): the upstream
//! asks by server-to-client request while its call runs; the client, which takes no
//! requests, gets `input_required` with those questions and a `requestState` of Warden's, and
//! its retry answers them — while the upstream's request stays in flight.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

mod common;

use common::*;
use serde_json::{Value, json};

/// A 2026-07-28 `tools/call` over HTTP with `capabilities` and `extra` parameters; the HTTP
/// status and the answer.
async fn call(
    w: &TestWarden,
    tool: &str,
    arguments: Value,
    capabilities: Value,
    extra: Value,
) -> (u16, Value) {
    let mut params = json!({
        "name": tool, "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": capabilities,
            "io.modelcontextprotocol/clientInfo": {"name": "questions", "version": "1"}
        }
    });
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    warden_mcp::http_client::install_tls();
    let response = reqwest::Client::new()
        .post(w.mcp())
        .bearer_auth(&w.admin)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .json(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params}))
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, last_message(&response.text().await.unwrap()))
}

fn everything() -> Value {
    json!({"elicitation": {}, "sampling": {}, "roots": {}})
}

/// The one question of an `input_required` result: its key and the request.
fn one_question(answer: &Value) -> (String, Value) {
    let result = &answer["result"];
    assert_eq!(result["resultType"], "input_required", "{answer}");
    let requests = result["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1, "{answer}");
    let (key, request) = requests.iter().next().unwrap();
    (key.clone(), request.clone())
}

/// A Warden in front of the notes fixture reached in 2025-11-25 only, over stdio (`alpha`)
/// or Streamable HTTP (`web`).
async fn warden_2025(
    http: bool,
) -> (
    TestWarden,
    &'static str,
    tokio_util::sync::CancellationToken,
) {
    let shutdown = tokio_util::sync::CancellationToken::new();
    if !http {
        let w = TestWarden::start(&format!(
            "kind: Project\nname: alpha\n---\n{}",
            stdio_upstream("alpha", "alpha", "protocol: \"2025-11-25\"\n")
        ))
        .await;
        return (w, "alpha", shutdown);
    }
    let addr = warden_testkit::notes::spawn_http_with(
        warden_testkit::notes::NotesServer::new(None),
        "127.0.0.1:0".parse().unwrap(),
        shutdown.clone(),
        false,
    )
    .await
    .unwrap();
    let w = TestWarden::start(&format!(
        "kind: Project\nname: alpha\n---\nkind: Upstream\nname: web\nproject: alpha\n\
         protocol: \"2025-11-25\"\nhttp: {{ url: \"http://{addr}/mcp\" }}\n"
    ))
    .await;
    (w, "web", shutdown)
}

/// The elicitation of a 2025-11-25 upstream reaches a 2026-07-28 client as `input_required`,
/// the retry's answer reaches the upstream's request, and the result is the upstream's; a
/// `requestState` is good for one retry, and a changed one is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2025_upstreams_elicitation_reaches_a_2026_client_as_input_required() {
    for http in [false, true] {
        let (w, prefix, _up) = warden_2025(http).await;
        let tool = format!("{prefix}__ask");
        let args = json!({"question": "Colour?"});
        let (status, first) = call(&w, &tool, args.clone(), everything(), json!({})).await;
        assert_eq!(status, 200, "{first}");
        let (key, request) = one_question(&first);
        assert_eq!(request["method"], "elicitation/create", "{first}");
        assert_eq!(request["params"]["message"], "Colour?", "{first}");
        let state = first["result"]["requestState"].as_str().unwrap().to_owned();

        // A changed requestState, or one for other arguments, is no retry of this call.
        let answers = json!({key.clone(): {"action": "accept", "content": {"answer": "blue"}}});
        for (arguments, bad) in [
            (args.clone(), format!("{state}-TAMPERED")),
            (json!({"question": "Other?"}), state.clone()),
        ] {
            let (_, refused) = call(
                &w,
                &tool,
                arguments,
                everything(),
                json!({"inputResponses": answers, "requestState": bad}),
            )
            .await;
            assert_eq!(refused["error"]["code"], -32602, "http={http}: {refused}");
        }

        let retry = json!({"inputResponses": answers, "requestState": state});
        let (status, done) = call(&w, &tool, args.clone(), everything(), retry.clone()).await;
        assert_eq!(status, 200, "{done}");
        let result = &done["result"];
        assert_eq!(result["resultType"], "complete", "http={http}: {done}");
        assert_eq!(
            result["structuredContent"]["content"]["answer"], "blue",
            "http={http}: {done}"
        );
        assert_eq!(result["_meta"]["warden/decision"]["status"], "executed");
        // The same requestState a second time: the call is over.
        let (_, replayed) = call(&w, &tool, args, everything(), retry).await;
        assert_eq!(replayed["error"]["code"], -32602, "http={http}: {replayed}");
    }
}

/// SEP-2322 (conformance `input-required-result-validate-input`): a retry whose
/// `inputResponses` holds something other than a result object is invalid params naming the
/// entry, and changes nothing — the upstream's request still waits, and the right answer
/// then completes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_with_a_malformed_answer_is_refused_and_changes_nothing() {
    let (w, prefix, _up) = warden_2025(false).await;
    let tool = format!("{prefix}__ask");
    let args = json!({"question": "Colour?"});
    let (_, first) = call(&w, &tool, args.clone(), everything(), json!({})).await;
    let (key, _) = one_question(&first);
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    for bad in [json!(12345), json!("blue"), json!(null)] {
        let retry = json!({"inputResponses": {key.clone(): bad}, "requestState": state});
        let (_, refused) = call(&w, &tool, args.clone(), everything(), retry).await;
        assert_eq!(refused["error"]["code"], -32602, "{refused}");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(
            message.contains(&format!("`inputResponses.{key}`")),
            "{refused}"
        );
    }
    let answers = json!({key: {"action": "accept", "content": {"answer": "blue"}}});
    let retry = json!({"inputResponses": answers, "requestState": state});
    let (_, done) = call(&w, &tool, args, everything(), retry).await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(
        done["result"]["structuredContent"]["content"]["answer"], "blue",
        "{done}"
    );
}

/// Sampling asked by a 2025-11-25 upstream is a question for the 2026-07-28 client too; a
/// question the client did not declare it can answer is refused to the upstream, which
/// decides what its call does without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampling_is_asked_and_an_undeclared_question_is_refused_to_the_upstream() {
    let (w, _, _up) = warden_2025(false).await;
    let args = json!({"prompt": "Hi"});
    let (_, first) = call(&w, "alpha__sample", args.clone(), everything(), json!({})).await;
    let (key, request) = one_question(&first);
    assert_eq!(request["method"], "sampling/createMessage", "{first}");
    let state = first["result"]["requestState"].clone();
    let sampled =
        json!({"role": "assistant", "model": "m", "content": {"type": "text", "text": "hello"}});
    let (_, done) = call(
        &w,
        "alpha__sample",
        args,
        everything(),
        json!({"inputResponses": {key: sampled}, "requestState": state}),
    )
    .await;
    assert_eq!(
        done["result"]["structuredContent"]["content"]["text"], "hello",
        "{done}"
    );

    let (status, refused) = call(
        &w,
        "alpha__ask",
        json!({"question": "Colour?"}),
        json!({"sampling": {}}),
        json!({}),
    )
    .await;
    assert_eq!(status, 200, "{refused}");
    let result = &refused["result"];
    assert_eq!(result["resultType"], "complete", "{refused}");
    assert_eq!(result["isError"], true, "{refused}");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("does not support elicitation"),
        "{refused}"
    );
}

/// Over Streamable HTTP a question belongs to the request whose response stream it came on
/// (SEP-2260): two calls suspended at once each get their own question, where one
/// connection without streams (stdio) could not tell them apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn questions_of_calls_in_flight_together_reach_their_own_callers() {
    let (w, _, _up) = warden_2025(true).await;
    let (_, one) = call(
        &w,
        "web__ask",
        json!({"question": "One?"}),
        everything(),
        json!({}),
    )
    .await;
    let (_, two) = call(
        &w,
        "web__ask",
        json!({"question": "Two?"}),
        everything(),
        json!({}),
    )
    .await;
    let (k1, q1) = one_question(&one);
    let (k2, q2) = one_question(&two);
    assert_eq!(q1["params"]["message"], "One?");
    assert_eq!(q2["params"]["message"], "Two?");
    for (answer, key, question, text) in [(&two, k2, "Two?", "2"), (&one, k1, "One?", "1")] {
        let retry = json!({
            "inputResponses": {key: {"action": "accept", "content": {"answer": text}}},
            "requestState": answer["result"]["requestState"],
        });
        let (_, done) = call(
            &w,
            "web__ask",
            json!({"question": question}),
            everything(),
            retry,
        )
        .await;
        assert_eq!(
            done["result"]["structuredContent"]["content"]["answer"], text,
            "{done}"
        );
    }
}
