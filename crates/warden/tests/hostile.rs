//! Warden in front of an upstream that misbehaves on purpose (`warden_fixture hostile`, a raw
//! JSON-RPC stdio server): floods, blobs, bytes that are not UTF-8, answers too big. Each
//! test runs `warden serve` as a user does and checks what must hold: memory within a stated
//! bound, messages complete and in order, the real cause in the client's answer, the log
//! bounded.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

mod common;

use std::time::Duration;

use common::*;
use serde_json::{Value, json};

/// A project whose upstream `hostile` is the fixture, with `flags`.
fn config(flags: &[&str]) -> String {
    let fixture = warden_testkit::fixture_bin().display().to_string();
    let args: Vec<String> = std::iter::once("hostile")
        .chain(flags.iter().copied())
        .map(|a| format!("{a:?}"))
        .collect();
    format!(
        "kind: Project\nname: p\n---\nkind: Upstream\nname: hostile\nproject: p\nstdio: {{ command: {fixture:?}, args: [{}] }}\n",
        args.join(", ")
    )
}

/// A stateless 2026-07-28 `tools/call` of `tool`, following its progress when `token` is given.
fn call(
    w: &ServedBinary,
    tool: &str,
    arguments: Value,
    token: Option<&str>,
) -> reqwest::RequestBuilder {
    warden_mcp::http_client::install_tls();
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "hostile-test", "version": "1"}
    });
    if let Some(token) = token {
        meta["progressToken"] = json!(token);
        meta["io.modelcontextprotocol/logLevel"] = json!("debug");
    }
    reqwest::Client::new()
        .post(format!("{}/mcp", w.base))
        .bearer_auth(&w.admin)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments, "_meta": meta}}))
}

/// The JSON-RPC messages of an event stream read so far, and what is left of a line.
fn messages(buf: &mut String) -> Vec<Value> {
    let mut out = Vec::new();
    while let Some(end) = buf.find('\n') {
        let line: String = buf.drain(..=end).collect();
        if let Some(data) = line.trim_end().strip_prefix("data:")
            && let Ok(v) = serde_json::from_str::<Value>(data.trim())
        {
            out.push(v);
        }
    }
    out
}

/// The upstream is up (its tools listed) before the test calls it.
async fn started(w: &ServedBinary) {
    for _ in 0..200 {
        let answer: Value = call(w, "hostile__echo", json!({"text": "up"}), None)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap_or(Value::Null);
        if answer["result"]["content"][0]["text"] == "up" {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the hostile upstream did not come up:\n{}", w.log());
}

/// A flood of progress notifications from a stdio upstream to a client that stops reading:
/// Warden stops reading the upstream too (its memory stays within 64 MiB of where it started,
/// where it held 3.8 GB for a million), and once the client reads on, every notification
/// arrives, in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_progress_flood_to_a_slow_client_arrives_whole_in_order_within_bounded_memory() {
    let w = ServedBinary::start(&config(&[]), &[]);
    started(&w).await;
    let count = 50_000;
    let before = w.rss_kib();
    let mut response = call(
        &w,
        "hostile__flood_progress",
        json!({"count": count}),
        Some("flood"),
    )
    .send()
    .await
    .unwrap();
    assert_eq!(response.status(), 200);
    let mut buf = String::new();
    let mut heard = Vec::new();
    // The first events, then the client stops reading while the upstream writes on.
    while heard.is_empty() {
        let chunk = response.chunk().await.unwrap().unwrap();
        buf.push_str(&String::from_utf8_lossy(&chunk));
        heard.extend(messages(&mut buf));
    }
    let mut peak = 0;
    for _ in 0..10 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        peak = peak.max(w.rss_kib());
    }
    while let Some(chunk) = response.chunk().await.unwrap() {
        buf.push_str(&String::from_utf8_lossy(&chunk));
        heard.extend(messages(&mut buf));
    }
    let progress: Vec<u64> = heard
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| m["params"]["progress"].as_f64().unwrap() as u64)
        .collect();
    let missing: Vec<u64> = (1..=count as u64)
        .filter(|i| progress.binary_search(i).is_err())
        .take(10)
        .collect();
    assert_eq!(
        progress.len(),
        count,
        "every notification arrived; missing: {missing:?}; {}",
        w.log()
            .lines()
            .filter(|l| l.contains("dropped") || l.contains("WARN"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(progress.iter().zip(1..).all(|(p, i)| *p == i), "in order");
    let last = heard.last().unwrap();
    assert_eq!(
        last["result"]["content"][0]["text"],
        format!("sent {count}"),
        "{last}"
    );
    eprintln!(
        "resident memory: {before} KiB before, {peak} KiB at most while the client did not read"
    );
    assert!(
        peak < before + 64 * 1024,
        "memory grew from {before} KiB to {peak} KiB while the client did not read"
    );
}

/// The same for log messages, which name no call: the one call in flight gets them all, in
/// order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_flood_arrives_whole_and_in_order() {
    let w = ServedBinary::start(&config(&[]), &[]);
    started(&w).await;
    let count = 20_000;
    let text = call(
        &w,
        "hostile__flood_log",
        json!({"count": count}),
        Some("logs"),
    )
    .send()
    .await
    .unwrap()
    .text()
    .await
    .unwrap();
    let mut buf = text;
    buf.push('\n');
    let logs: Vec<u64> = messages(&mut buf)
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .map(|m| m["params"]["data"].as_u64().unwrap())
        .collect();
    let missing: Vec<u64> = (1..=count)
        .filter(|i| logs.binary_search(i).is_err())
        .take(10)
        .collect();
    assert_eq!(
        logs.len(),
        count as usize,
        "every log message arrived; missing: {missing:?}; {}",
        w.log()
            .lines()
            .filter(|l| l.contains("dropped") || l.contains("WARN"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(logs.iter().zip(1..).all(|(l, i)| *l == i), "in order");
}

/// An answer larger than Warden takes (16 MiB) is refused at once with the reason — the
/// upstream, the size and the limit — where the client waited out the 60 s timeout and was
/// told the upstream did not answer; the upstream serves on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_too_large_is_refused_at_once_naming_the_cause() {
    let w = ServedBinary::start(&config(&[]), &[]);
    started(&w).await;
    let bytes = 20 * 1024 * 1024;
    let answer: Value = call(&w, "hostile__big_answer", json!({"bytes": bytes}), None)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let result = &answer["result"];
    assert_eq!(result["isError"], true, "{answer}");
    let decision = &result["structuredContent"];
    assert_eq!(
        (&decision["status"], &decision["code"]),
        (&json!("denied"), &json!("UNAVAILABLE")),
        "{answer}"
    );
    let text = decision["message"].as_str().unwrap();
    assert!(
        text.contains("upstream `hostile` answered with a message of")
            && text.contains("more than the 16777216 bytes Warden takes from an upstream"),
        "{text}"
    );
    assert_eq!(
        text_of(&w, "hostile__echo", json!({"text": "still here"})).await,
        "still here"
    );
}

/// stderr: a blob without a newline is logged cut to 8 KiB with the rest's length said (1 GiB
/// was held whole and logged as one line), a byte that is not UTF-8 does not stop the reading
/// (the child lived on, where it died of SIGPIPE), and a flood of lines is rate-limited with
/// a count of what was suppressed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stderr_is_read_to_its_end_cut_and_rate_limited() {
    let w = ServedBinary::start(&config(&[]), &[]);
    started(&w).await;
    let before = w.rss_kib();
    let blob = 200 * 1024 * 1024;
    let done = |v: Value| {
        v["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let answer = call(&w, "hostile__stderr_blob", json!({"bytes": blob}), None)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(done(answer), "blob written");
    let after_blob = w.rss_kib();
    let answer = call(&w, "hostile__stderr_bad", json!({}), None)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(done(answer), "bad byte written");
    let answer = call(
        &w,
        "hostile__stderr_line",
        json!({"text": "still read"}),
        None,
    )
    .send()
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(done(answer), "line written");
    let answer = call(&w, "hostile__stderr_flood", json!({"lines": 20_000}), None)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(done(answer), "flood written");
    let answer = call(
        &w,
        "hostile__stderr_line",
        json!({"text": "after the flood"}),
        None,
    )
    .send()
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(done(answer), "line written");
    assert!(
        after_blob < before + 32 * 1024,
        "memory grew from {before} KiB to {after_blob} KiB for a blob on stderr"
    );
    // The log, once the stderr task has caught up with the last line.
    let mut log = String::new();
    for _ in 0..100 {
        log = w.log();
        if log.contains("after the flood") && log.contains("suppressed") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let lines: Vec<Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["fields"]["upstream"] == "hostile")
        .collect();
    let messages: Vec<&str> = lines
        .iter()
        .filter_map(|l| l["fields"]["message"].as_str())
        .collect();
    let cut = messages
        .iter()
        .find(|m| m.ends_with(" more bytes of this line cut)"))
        .unwrap_or_else(|| panic!("no cut line in {messages:?}"));
    assert!(cut.len() < 9 * 1024, "{} bytes", cut.len());
    assert!(messages.contains(&"before \u{fffd} after"), "{messages:?}");
    assert!(messages.contains(&"still read"));
    let flood = messages.iter().filter(|m| m.starts_with("yyyy")).count();
    assert!(
        flood <= 3 * 100,
        "{flood} of 20,000 flood lines were logged"
    );
    assert!(
        messages
            .iter()
            .any(|m| m.contains("stderr lines of the upstream suppressed: more than 100 in 1s")),
        "{messages:?}"
    );
}

/// The text of a call's result.
async fn text_of(w: &ServedBinary, tool: &str, arguments: Value) -> String {
    let answer: Value = call(w, tool, arguments, None)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{answer}"))
        .to_owned()
}

/// A storm of `list_changed` is coalesced: at most one re-fetch of the upstream's tools per
/// 500 ms, where 10,000 a second made 8,733 re-fetches in 30 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_changed_storm_is_coalesced_into_a_refetch_per_half_second() {
    let w = ServedBinary::start(&config(&[]), &[]);
    started(&w).await;
    let before: u64 = text_of(&w, "hostile__lists_served", json!({}))
        .await
        .parse()
        .unwrap();
    let start = std::time::Instant::now();
    assert_eq!(
        text_of(&w, "hostile__storm", json!({"count": 10_000})).await,
        "stormed"
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let after: u64 = text_of(&w, "hostile__lists_served", json!({}))
        .await
        .parse()
        .unwrap();
    let bound = 2 + start.elapsed().as_millis() as u64 / 500;
    assert!(
        after - before <= bound,
        "{} re-fetches in {:?} (at most {bound})",
        after - before,
        start.elapsed()
    );
}

/// Advertised metadata is capped per upstream (`limits`): a tool with a 5 MB description or
/// a 6.5 MB schema is left out with a warning naming it, and past 1000 tools the rest are,
/// where they all went into every client's `tools/list`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_metadata_and_too_many_tools_are_left_out_naming_them() {
    let w = ServedBinary::start(&config(&["--huge-metadata", "--tools", "5000"]), &[]);
    started(&w).await;
    let list: Value = reqwest::Client::new()
        .post(format!("{}/mcp", w.base))
        .bearer_auth(&w.admin)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/list")
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}}}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .filter(|n| n.starts_with("hostile__"))
        .collect();
    assert_eq!(names.len(), 1000, "the first 1000 of the upstream's tools");
    assert!(!names.contains(&"hostile__long_description"));
    assert!(!names.contains(&"hostile__wide_schema"));
    assert!(list.to_string().len() < 4 * 1024 * 1024);
    let log = w.log();
    for expected in [
        "a tool of the upstream is left out: its description has 5000000 bytes, more than 65536 (its `limits`)",
        "the upstream lists more than 1000 tools;",
    ] {
        assert!(log.contains(expected), "`{expected}` not in the log");
    }
    assert!(log.contains("\"tool\":\"wide_schema\""));
}

/// An HTTP upstream's event stream is limited per message, not in all: a call whose relayed
/// progress adds up to 70 MB (100 messages of 700 KB) gets its result, where the progress
/// counted toward the result's 64 MiB and the call failed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relayed_progress_does_not_count_toward_an_http_answers_limit() {
    let shutdown = tokio_util::sync::CancellationToken::new();
    let addr = warden_testkit::notes::spawn_http_with(
        warden_testkit::notes::NotesServer::new(None),
        "127.0.0.1:0".parse().unwrap(),
        shutdown.clone(),
        false,
    )
    .await
    .unwrap();
    let w = TestWarden::start(&format!(
        "kind: Project\nname: p\n---\nkind: Upstream\nname: notes\nproject: p\nhttp: {{ url: \"http://{addr}/mcp\" }}\n"
    ))
    .await;
    let meta = json!({
        "progressToken": "big",
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "hostile-test", "version": "1"}
    });
    let text = reqwest::Client::new()
        .post(w.mcp())
        .bearer_auth(&w.admin)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "notes__progress")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "notes__progress",
                "arguments": {"steps": 100, "message_bytes": 700_000}, "_meta": meta}}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let mut buf = text;
    buf.push('\n');
    let heard = messages(&mut buf);
    let progress = heard
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .count();
    assert_eq!(progress, 100);
    let last = heard.last().unwrap();
    assert_eq!(
        last["result"]["structuredContent"]["steps"],
        100,
        "{}",
        &last.to_string()[..last.to_string().len().min(500)]
    );
    shutdown.cancel();
}
