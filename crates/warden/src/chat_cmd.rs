//! `warden chat AGENT [MESSAGE] [--thread ID]`: talk to an agent through a running server's
//! chat API (RUN-9, docs/chat.md). The text streams to stdout as it comes; tool calls,
//! Warden's decisions and notices show as they happen; the thread's id goes to stderr, to go
//! on with it later (`--thread`).

use std::io::{BufRead as _, IsTerminal as _, Write as _};

use serde_json::{Value, json};

use crate::api::Api;
use crate::cli::ChatArgs;
use crate::common::usage;
use crate::remote::server;
use crate::views::field as f;

pub(crate) async fn run(args: ChatArgs) -> anyhow::Result<()> {
    let api = server(
        &args.target,
        "chat",
        "the agent's model, its tools and the pipeline run on a server",
    )
    .await?;
    let mut thread = match &args.thread {
        Some(id) => Some(with_agent(&api, id, &args.agent).await?),
        None => None,
    };
    if let Some(message) = &args.message {
        return match turn(&api, &args.agent, &mut thread, message).await? {
            None => Ok(()),
            Some(failure) => Err(anyhow::anyhow!(failure)),
        };
    }
    let prompt = std::io::stdin().is_terminal();
    let mut lines = std::io::stdin().lock().lines();
    loop {
        if prompt {
            eprint!("you> ");
            let _ = std::io::stderr().flush();
        }
        let Some(line) = lines.next() else {
            break;
        };
        let line = line?;
        if line.trim().is_empty() {
            break;
        }
        // A failed or refused turn is shown; the session goes on.
        if let Err(e) = turn(&api, &args.agent, &mut thread, &line).await {
            eprintln!("error: {e:#}");
        }
    }
    Ok(())
}

/// `id`, once it is known to be a thread of the caller's with `agent`.
async fn with_agent(api: &Api, id: &str, agent: &str) -> anyhow::Result<String> {
    let found = api.get(&["threads", id], &[]).await?;
    let with = f(f(&found, "thread"), "agent").as_str().unwrap_or_default();
    if with != agent {
        return Err(usage(format!(
            "thread `{id}` is with agent `{with}`, not `{agent}`"
        )));
    }
    Ok(id.to_owned())
}

/// One turn: a new thread's first, or the next of `thread`. Why the model failed, if it did.
async fn turn(
    api: &Api,
    agent: &str,
    thread: &mut Option<String>,
    message: &str,
) -> anyhow::Result<Option<String>> {
    let body = json!({ "message": message });
    let path: Vec<String> = match thread {
        None => vec!["agents".into(), agent.into(), "threads".into()],
        Some(id) => vec!["threads".into(), id.clone(), "messages".into()],
    };
    let path: Vec<&str> = path.iter().map(String::as_str).collect();
    let mut shown = Shown::default();
    let mut failure = None;
    let mut ended = false;
    api.events(&path, body, |event, data| {
        let s = |key: &str| f(&data, key).as_str().unwrap_or_default().to_owned();
        match event {
            "thread" if thread.is_none() => {
                eprintln!("thread {} (run {})", s("id"), s("runId"));
                *thread = Some(s("id"));
            }
            "delta" => shown.text(&s("text")),
            "tool_call" => shown.line(&format!("→ {}({})", s("name"), s("arguments"))),
            "decision" => shown.line(&decision(&data)),
            "notice" => {
                let text = s("text");
                shown.line(&format!("! {text}"));
                if f(&data, "failure").as_bool() == Some(true) {
                    failure = Some(text);
                }
            }
            "done" => ended = true,
            "error" => return Err(anyhow::anyhow!("{}", s("error"))),
            _ => {}
        }
        Ok(())
    })
    .await?;
    shown.end();
    if !ended {
        return Err(anyhow::anyhow!(
            "the server's answer ended before the turn did; what it added is in the thread (`--thread`)"
        ));
    }
    Ok(failure)
}

fn decision(data: &Value) -> String {
    let s = |key: &str| f(data, key).as_str().unwrap_or_default().to_owned();
    match s("status").as_str() {
        "executed" => "  executed".to_owned(),
        "pending_approval" => format!("  parked as {}: {}", s("approvalId"), s("message")),
        "denied" => format!("  denied {}: {}", s("code"), s("message")),
        other => format!("  {other}: {}", s("message")),
    }
}

/// What the turn printed so far: whether a line of text is open.
#[derive(Default)]
struct Shown {
    open: bool,
}

impl Shown {
    fn text(&mut self, text: &str) {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        self.open = !text.ends_with('\n');
    }

    fn line(&mut self, line: &str) {
        self.end();
        println!("{line}");
    }

    fn end(&mut self) {
        if self.open {
            println!();
            self.open = false;
        }
    }
}
