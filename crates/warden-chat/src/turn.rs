//! One turn: the person's message, then rounds of the model's answer and the governed calls
//! it asks for, until it answers without a tool call, fails, or reaches its Model's
//! `maxToolRounds`. Every message is stored as it is made, so that a failure keeps what was
//! said before it and a retry executes nothing twice.

use serde_json::{Map, Value};
use warden_control::Refusal;
use warden_core::audit::RecordKind;
use warden_core::authority::Authority;
use warden_core::pipeline::{Governance, RunState};
use warden_core::principal::Credential;
use warden_mcp::gateway::Gateway;
use warden_store::{AuditFilter, MessageRole, Thread, ThreadMessage};

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

/// Runs a turn of `thread` (whose messages so far are `history`) for the person's `text`,
/// with the authority of `credential` in a caller-mode run of the thread's agent — resolved
/// again before every round, so that a revoked token or a lost membership stops the turn
/// (RUN-8).
pub(crate) async fn run(
    gateway: &Gateway,
    credential: &Credential,
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
    let run = run_state(gateway, &keep.thread.run_id).await?;
    let rounds = model.tool_rounds();
    let mut round = 0;
    loop {
        let authority = match gateway.authority(credential, Some(&keep.thread.agent)) {
            Ok(authority) => authority,
            Err(e) => return stop(&mut keep, on, format!("Stopped: {e}"), true).await,
        };
        let system = gateway.instructions(&authority);
        let tools = history::tools(&gateway.list_wire_tools(&gateway.list_tools(&authority)));
        let mut messages = vec![history::system(system)];
        messages.extend(history::messages(&keep.history));
        // What the person has seen of this answer, kept if the model fails before its end.
        let mut streamed = String::new();
        let mut on_text = |piece: &str| {
            streamed.push_str(piece);
            on(ChatEvent::Delta {
                text: piece.to_owned(),
            });
        };
        let answer = model.answer(messages, tools.clone(), &mut on_text).await;
        let answer = match answer {
            Ok(answer) => answer,
            Err(e) => {
                // The kind only: a model's error text may echo the conversation (AUD-3).
                tracing::warn!(thread = %keep.thread.id, model = model.name(), error = e.kind(), "chat model failed");
                if !streamed.is_empty() {
                    let at = keep.thread.updated_at;
                    keep.add(ThreadMessage::new(MessageRole::Assistant, streamed, at))
                        .await?;
                }
                return stop(&mut keep, on, e.explain(model.name()), true).await;
            }
        };
        if answer.content.is_empty() && answer.tool_calls.is_empty() {
            let text = format!("Model `{}` gave an empty answer", model.name());
            return stop(&mut keep, on, text, false).await;
        }
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
            let result = execute(gateway, &authority, &run, call).await;
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

/// Ends the turn with a notice (`failure`: the model's, which the surface reports as such).
async fn stop(
    keep: &mut Keeper<'_>,
    on: Events<'_>,
    text: String,
    failure: bool,
) -> Result<Turn, Refusal> {
    let at = keep.thread.updated_at;
    keep.add(ThreadMessage::new(MessageRole::Notice, text.clone(), at))
        .await?;
    on(ChatEvent::Notice {
        text: text.clone(),
        failure,
    });
    on(ChatEvent::Done {
        thread: keep.thread.id.clone(),
    });
    Ok(Turn {
        thread: keep.thread.clone(),
        added: std::mem::take(&mut keep.added),
        failure: failure.then_some(text),
    })
}

/// The thread's run: one run record for all its turns.
async fn run_state(gateway: &Gateway, run_id: &str) -> Result<RunState, Refusal> {
    let recorded = gateway
        .store()
        .count_audit(&AuditFilter {
            run_id: Some(run_id.to_owned()),
            kind: Some(RecordKind::Run.as_str().to_owned()),
            ..AuditFilter::default()
        })
        .await?;
    Ok(match recorded {
        0 => RunState::new(run_id),
        _ => RunState::recorded(run_id),
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
