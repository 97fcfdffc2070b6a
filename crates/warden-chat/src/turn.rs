//! One turn: the person's message, then rounds of the model's answer and the governed calls
//! it asks for, until it answers without a tool call, fails, or reaches its Model's
//! `maxToolRounds`. Every message is stored as it is made, so that a failure keeps what was
//! said before it and a retry executes nothing twice.

use std::sync::Arc;

use serde_json::{Map, Value};
use warden_control::Refusal;
use warden_core::authority::Authority;
use warden_core::pipeline::{Governance, RunState};
use warden_mcp::gateway::Gateway;
use warden_store::{MessageRole, Thread, ThreadMessage};

use crate::history::{self, StoredCall};
use crate::model::{Model, ToolCall};
use crate::{ChatEvent, Events, Turn, digest};

/// Keeps a turn's messages: stores each, in order, and remembers what it added.
struct Keeper<'a> {
    gateway: &'a Gateway,
    thread: Thread,
    history: Vec<ThreadMessage>,
    added: Vec<ThreadMessage>,
}

impl Keeper<'_> {
    async fn add(&mut self, mut message: ThreadMessage) -> Result<(), Refusal> {
        let now = self.gateway.clock().now();
        message.at = now;
        let seqs = self
            .gateway
            .store()
            .append_thread_messages(
                &self.thread.id,
                &self.thread.owner,
                std::slice::from_ref(&message),
                now,
            )
            .await?
            // Deleted by its owner while the turn ran.
            .ok_or_else(|| crate::no_thread(&self.thread.id))?;
        message.seq = seqs.first().copied().unwrap_or_default();
        self.thread.updated_at = now;
        self.history.push(message.clone());
        self.added.push(message);
        Ok(())
    }

    fn done(self, failure: Option<String>) -> Turn {
        Turn {
            thread: self.thread,
            added: self.added,
            failure,
        }
    }
}

/// Runs a turn of `thread` (whose messages so far are `history`) for the person's `text`.
pub(crate) async fn run(
    gateway: &Gateway,
    authority: &Arc<Authority>,
    model: &Model,
    thread: Thread,
    history: Vec<ThreadMessage>,
    text: &str,
    on: Events<'_>,
) -> Result<Turn, Refusal> {
    on(ChatEvent::Thread {
        id: thread.id.clone(),
        run_id: thread.run_id.clone(),
    });
    tracing::info!(thread = %thread.id, message = %digest(text), "chat turn");
    let mut keep = Keeper {
        gateway,
        thread,
        history,
        added: Vec::new(),
    };
    keep.add(ThreadMessage::new(
        MessageRole::User,
        text,
        keep.thread.created_at,
    ))
    .await?;
    let system = gateway.instructions(authority);
    let tools = history::tools(&gateway.list_wire_tools(&gateway.list_tools(authority)));
    let run = RunState::new(keep.thread.run_id.clone());
    let rounds = model_rounds(gateway, model);
    let mut round = 0;
    loop {
        let mut messages = vec![history::system(system.clone())];
        messages.extend(history::messages(&keep.history));
        let mut on_text = |piece: &str| {
            on(ChatEvent::Delta {
                text: piece.to_owned(),
            });
        };
        let answer = match model.answer(messages, tools.clone(), &mut on_text).await {
            Ok(answer) => answer,
            Err(e) => {
                let text = e.explain(model.name());
                tracing::warn!(thread = %keep.thread.id, model = model.name(), error = %text, "chat model failed");
                keep.add(ThreadMessage::new(
                    MessageRole::Notice,
                    text.clone(),
                    keep.thread.updated_at,
                ))
                .await?;
                on(ChatEvent::Notice {
                    text: text.clone(),
                    failure: true,
                });
                on(ChatEvent::Done {
                    thread: keep.thread.id.clone(),
                });
                return Ok(keep.done(Some(text)));
            }
        };
        let mut said = ThreadMessage::new(
            MessageRole::Assistant,
            answer.content,
            keep.thread.updated_at,
        );
        if !answer.tool_calls.is_empty() {
            let calls: Vec<StoredCall> = answer.tool_calls.iter().map(StoredCall::from).collect();
            said.tool_calls = serde_json::to_string(&calls).ok();
        }
        keep.add(said).await?;
        if answer.tool_calls.is_empty() {
            break;
        }
        if round == rounds {
            // Every call the model asked for is answered, so that the thread stays one a model
            // accepts; none of these ran.
            for call in &answer.tool_calls {
                on(tool_call_event(call));
                let message = format!(
                    "not run: this turn reached its limit of {rounds} rounds of tool calls"
                );
                let mut result = ThreadMessage::new(
                    MessageRole::Tool,
                    serde_json::json!({"status": "not_run", "message": message}).to_string(),
                    keep.thread.updated_at,
                );
                result.tool_call_id = Some(call.id.clone());
                result.decision = Some("not_run".into());
                keep.add(result).await?;
                on(ChatEvent::Decision {
                    tool_call_id: call.id.clone(),
                    call_id: None,
                    status: "not_run".into(),
                    code: None,
                    approval_id: None,
                    message,
                });
            }
            let text = format!(
                "Stopped after {rounds} rounds of tool calls, the limit of Model `{}` (`maxToolRounds`); send another message to go on",
                model.name()
            );
            keep.add(ThreadMessage::new(
                MessageRole::Notice,
                text.clone(),
                keep.thread.updated_at,
            ))
            .await?;
            on(ChatEvent::Notice {
                text,
                failure: false,
            });
            break;
        }
        round += 1;
        for call in &answer.tool_calls {
            on(tool_call_event(call));
            let result = execute(gateway, authority, &run, call).await;
            let event = ChatEvent::Decision {
                tool_call_id: call.id.clone(),
                call_id: result.call_id.clone(),
                status: result.decision.clone().unwrap_or_default(),
                code: result.code.clone(),
                approval_id: result.message.approval_id.clone(),
                message: result.line.clone(),
            };
            keep.add(result.message).await?;
            on(event);
        }
    }
    on(ChatEvent::Done {
        thread: keep.thread.id.clone(),
    });
    Ok(keep.done(None))
}

/// The rounds of tool calls a turn of `model` may take.
fn model_rounds(gateway: &Gateway, model: &Model) -> u32 {
    gateway
        .snapshot()
        .policy
        .model(model.name())
        .map_or(warden_core::config::DEFAULT_MAX_TOOL_ROUNDS, |m| {
            m.tool_rounds()
        })
}

fn tool_call_event(call: &ToolCall) -> ChatEvent {
    ChatEvent::ToolCall {
        id: call.id.clone(),
        name: call.name.clone(),
        arguments: call.arguments.clone(),
    }
}

/// A tool call's result message, and what its decision event says.
struct Executed {
    message: ThreadMessage,
    call_id: Option<String>,
    decision: Option<String>,
    code: Option<String>,
    line: String,
}

/// Executes `call` through the governed pipeline under `authority`, in `run` (GOV-2).
async fn execute(
    gateway: &Gateway,
    authority: &Authority,
    run: &RunState,
    call: &ToolCall,
) -> Executed {
    let now = gateway.clock().now();
    let args: Result<Option<Map<String, Value>>, String> = match call.arguments.trim() {
        "" => Ok(None),
        text => match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(m)) => Ok(Some(m)),
            Ok(_) => Err("the arguments are not a JSON object".into()),
            Err(e) => Err(format!("the arguments are not JSON: {e}")),
        },
    };
    let args = match args {
        Ok(args) => args,
        Err(line) => {
            // Nothing to govern: the call never reaches the pipeline, and the model is told.
            let content = serde_json::json!({"status": "not_run", "message": line}).to_string();
            let mut message = ThreadMessage::new(MessageRole::Tool, content, now);
            message.tool_call_id = Some(call.id.clone());
            message.decision = Some("not_run".into());
            return Executed {
                message,
                call_id: None,
                decision: Some("not_run".into()),
                code: None,
                line,
            };
        }
    };
    let outcome = gateway
        .call(authority, run, &call.name, args, Governance::On, None)
        .await;
    let contract = outcome.contract();
    let (status, code) = outcome.status();
    let mut message = ThreadMessage::new(
        MessageRole::Tool,
        serde_json::to_string(&contract).unwrap_or_default(),
        now,
    );
    message.tool_call_id = Some(call.id.clone());
    message.call_id = Some(outcome.call_id.clone());
    message.decision = Some(status.to_owned());
    message.approval_id = contract.approval_id.clone();
    Executed {
        call_id: Some(outcome.call_id.clone()),
        decision: Some(status.to_owned()),
        code: code.map(|c| c.as_str().to_owned()),
        line: contract.message,
        message,
    }
}
