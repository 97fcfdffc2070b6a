//! A hostile stdio MCP server: raw JSON-RPC, written by hand (no SDK) so that it misbehaves
//! exactly as asked — the upstream Warden must survive (issue "bounded under a hostile
//! upstream"). It speaks 2025-11-25 (`server/discover` is not found), and each tool is one way
//! to misbehave:
//!
//! | tool | arguments | what it does |
//! |---|---|---|
//! | `flood_progress` | `count` | `count` progress notifications of the call's token, numbered from 1, then the result |
//! | `flood_log` | `count` | `count` log messages (`data` = their number), then the result |
//! | `stderr_blob` | `bytes` | `bytes` bytes on stderr without a newline, then the result |
//! | `stderr_bad` | — | a line on stderr with a byte that is not UTF-8, then the result |
//! | `stderr_flood` | `lines` | `lines` lines of 1 KB on stderr, then the result |
//! | `stderr_line` | `text` | one line on stderr (to show the pipe is still read), then the result |
//! | `big_answer` | `bytes` | a result whose text is `bytes` long |
//! | `storm` | `count` | `count` `notifications/tools/list_changed`, then the result |
//! | `lists_served` | — | how many `tools/list` it answered so far |
//! | `echo` | `text` | the text |
//!
//! With `--huge-metadata` it also lists a tool with a 5 MB description, one with a 6.5 MB
//! input schema, and `--tools N` fillers (`filler_0`…).

#![allow(
    clippy::indexing_slicing,
    reason = "a fixture: JSON values are indexed as the tests' are"
)]

use std::io::{BufRead as _, Write as _};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Value, json};

/// What the server lists besides its tools.
#[derive(Clone, Copy, Debug, Default)]
pub struct Options {
    /// List a tool with a 5 MB description and one with a 6.5 MB input schema.
    pub huge_metadata: bool,
    /// Filler tools to list.
    pub fillers: usize,
}

/// A tool; every one is a read (Warden refuses a mutation nobody classified).
fn tool(name: &str, description: &str, properties: Value) -> Value {
    json!({"name": name, "description": description,
        "inputSchema": {"type": "object", "properties": properties},
        "annotations": {"readOnlyHint": true}})
}

fn tools(options: Options) -> Vec<Value> {
    let count = json!({"count": {"type": "integer"}});
    let mut tools = vec![
        tool("flood_progress", "progress notifications", count.clone()),
        tool("flood_log", "log messages", count.clone()),
        tool(
            "stderr_blob",
            "stderr without a newline",
            json!({"bytes": {"type": "integer"}}),
        ),
        tool(
            "stderr_bad",
            "a byte that is not UTF-8 on stderr",
            json!({}),
        ),
        tool(
            "stderr_flood",
            "lines on stderr",
            json!({"lines": {"type": "integer"}}),
        ),
        tool(
            "stderr_line",
            "a line on stderr",
            json!({"text": {"type": "string"}}),
        ),
        tool(
            "big_answer",
            "a large result",
            json!({"bytes": {"type": "integer"}}),
        ),
        tool("storm", "list_changed notifications", count),
        tool("lists_served", "tools/list answered", json!({})),
        tool("echo", "the text", json!({"text": {"type": "string"}})),
    ];
    if options.huge_metadata {
        tools.push(tool("long_description", &"d".repeat(5_000_000), json!({})));
        let properties: serde_json::Map<String, Value> = (0..100_000)
            .map(|i| (format!("p{i:06}"), json!({"type": "string", "description": "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"})))
            .collect();
        tools.push(tool("wide_schema", "", Value::Object(properties)));
    }
    for i in 0..options.fillers {
        tools.push(tool(&format!("filler_{i}"), "a filler", json!({})));
    }
    tools
}

fn send(out: &mut impl std::io::Write, message: &Value) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, message)?;
    out.write_all(b"\n")
}

fn text_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}], "isError": false})
}

/// `tools/list` requests answered.
static LISTS: AtomicU64 = AtomicU64::new(0);

/// Serves on stdin/stdout until stdin ends. Every write is checked: a closed stdout ends it.
pub fn serve_stdio(options: Options) -> std::io::Result<()> {
    let stdin = std::io::stdin();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for line in stdin.lock().lines() {
        let line = line?;
        let Ok(request) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(id) = request.get("id").cloned() else {
            continue; // a notification
        };
        let params = request.get("params").cloned().unwrap_or(Value::Null);
        let result = match request["method"].as_str().unwrap_or_default() {
            "initialize" => json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {"listChanged": true}, "logging": {}},
                "serverInfo": {"name": "hostile", "version": "1"}
            }),
            "tools/list" => {
                LISTS.fetch_add(1, Ordering::Relaxed);
                json!({"tools": tools(options)})
            }
            "logging/setLevel" => json!({}),
            "tools/call" => call(&mut out, &params)?,
            _ => {
                send(
                    &mut out,
                    &json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32601, "message": "Method not found"}}),
                )?;
                out.flush()?;
                continue;
            }
        };
        send(
            &mut out,
            &json!({"jsonrpc": "2.0", "id": id, "result": result}),
        )?;
        out.flush()?;
    }
    Ok(())
}

fn call(out: &mut impl std::io::Write, params: &Value) -> std::io::Result<Value> {
    let args = &params["arguments"];
    let number = |key: &str| args[key].as_u64().unwrap_or(0);
    let token = params["_meta"]["progressToken"].clone();
    let mut stderr = std::io::stderr().lock();
    Ok(match params["name"].as_str().unwrap_or_default() {
        "flood_progress" => {
            let count = number("count");
            for i in 1..=count {
                send(
                    out,
                    &json!({"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": token, "progress": i, "total": count}}),
                )?;
            }
            text_result(&format!("sent {count}"))
        }
        "flood_log" => {
            let count = number("count");
            for i in 1..=count {
                send(
                    out,
                    &json!({"jsonrpc": "2.0", "method": "notifications/message",
                        "params": {"level": "info", "data": i}}),
                )?;
            }
            text_result(&format!("sent {count}"))
        }
        "stderr_blob" => {
            let chunk = vec![b'x'; 1 << 20];
            let mut left = number("bytes") as usize;
            while left > 0 {
                let n = left.min(chunk.len());
                stderr.write_all(&chunk[..n])?;
                left -= n;
            }
            stderr.flush()?;
            text_result("blob written")
        }
        "stderr_bad" => {
            stderr.write_all(b"\nbefore \xff after\n")?;
            stderr.flush()?;
            text_result("bad byte written")
        }
        "stderr_flood" => {
            let line = format!("{}\n", "y".repeat(1023));
            for _ in 0..number("lines") {
                stderr.write_all(line.as_bytes())?;
            }
            stderr.flush()?;
            text_result("flood written")
        }
        "stderr_line" => {
            writeln!(stderr, "{}", args["text"].as_str().unwrap_or_default())?;
            stderr.flush()?;
            text_result("line written")
        }
        "big_answer" => text_result(&"z".repeat(number("bytes") as usize)),
        "lists_served" => text_result(&LISTS.load(Ordering::Relaxed).to_string()),
        "storm" => {
            for _ in 0..number("count") {
                send(
                    out,
                    &json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
                )?;
            }
            text_result("stormed")
        }
        _ => text_result(args["text"].as_str().unwrap_or_default()),
    })
}
