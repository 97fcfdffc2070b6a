//! What the model is given: the system block, a thread's messages as chat messages, and the
//! run's tools as OpenAI function tools — the catalog and schemas `tools/list` shows this run
//! (RUN-6).

use async_openai::types::chat::{
    ChatCompletionMessageToolCall, ChatCompletionMessageToolCalls,
    ChatCompletionRequestAssistantMessage, ChatCompletionRequestAssistantMessageContent,
    ChatCompletionRequestMessage, ChatCompletionRequestSystemMessage,
    ChatCompletionRequestSystemMessageContent, ChatCompletionRequestToolMessage,
    ChatCompletionRequestToolMessageContent, ChatCompletionRequestUserMessage,
    ChatCompletionRequestUserMessageContent, ChatCompletionTool, ChatCompletionTools, FunctionCall,
    FunctionObject,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use warden_store::{MessageRole, ThreadMessage};

use crate::model::ToolCall;

/// A tool call as a thread keeps it (`tool_calls` of an assistant message).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredCall {
    /// The model's id of the call.
    pub id: String,
    /// The tool.
    pub name: String,
    /// Its arguments as the model wrote them.
    pub arguments: String,
}

impl From<&ToolCall> for StoredCall {
    fn from(c: &ToolCall) -> Self {
        Self {
            id: c.id.clone(),
            name: c.name.clone(),
            arguments: c.arguments.clone(),
        }
    }
}

/// The system message.
pub(crate) fn system(text: String) -> ChatCompletionRequestMessage {
    ChatCompletionRequestMessage::System(ChatCompletionRequestSystemMessage {
        content: ChatCompletionRequestSystemMessageContent::Text(text),
        name: None,
    })
}

/// A thread's messages as the model is given them. Warden's notices (a parked call decided, a
/// limit reached) are system messages, so that the model knows what happened. A call that has
/// no result in the thread (its turn was cut short) gets one saying so, so that the thread
/// stays one a model accepts, and the model is told not to assume either way.
pub(crate) fn messages(thread: &[ThreadMessage]) -> Vec<ChatCompletionRequestMessage> {
    let mut out = Vec::with_capacity(thread.len());
    let mut unanswered: Vec<String> = Vec::new();
    for m in thread {
        if m.role != MessageRole::Tool {
            close(&mut out, &mut unanswered);
        }
        if m.role == MessageRole::Assistant {
            unanswered = calls(m).into_iter().map(|c| c.id).collect();
        }
        if let Some(id) = &m.tool_call_id {
            unanswered.retain(|c| c != id);
        }
        out.push(message(m));
    }
    close(&mut out, &mut unanswered);
    out
}

/// Results for the calls still without one.
fn close(out: &mut Vec<ChatCompletionRequestMessage>, unanswered: &mut Vec<String>) {
    for id in unanswered.drain(..) {
        out.push(ChatCompletionRequestMessage::Tool(
            ChatCompletionRequestToolMessage {
                content: ChatCompletionRequestToolMessageContent::Text(UNRECORDED.into()),
                tool_call_id: id,
            },
        ));
    }
}

/// The result given for a call whose result was never recorded.
const UNRECORDED: &str = r#"{"status":"unknown","message":"no result was recorded for this call: do not assume that it ran or that it did not; check before calling it again"}"#;

fn calls(m: &ThreadMessage) -> Vec<StoredCall> {
    m.tool_calls
        .as_deref()
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or_default()
}

fn message(m: &ThreadMessage) -> ChatCompletionRequestMessage {
    match m.role {
        MessageRole::User => ChatCompletionRequestMessage::User(ChatCompletionRequestUserMessage {
            content: ChatCompletionRequestUserMessageContent::Text(m.content.clone()),
            name: None,
        }),
        MessageRole::Assistant => assistant(m),
        MessageRole::Tool => ChatCompletionRequestMessage::Tool(ChatCompletionRequestToolMessage {
            content: ChatCompletionRequestToolMessageContent::Text(m.content.clone()),
            tool_call_id: m.tool_call_id.clone().unwrap_or_default(),
        }),
        MessageRole::Notice => system(format!("Warden: {}", m.content)),
    }
}

fn assistant(m: &ThreadMessage) -> ChatCompletionRequestMessage {
    let calls = calls(m);
    #[allow(deprecated, reason = "the deprecated `function_call` is left out")]
    ChatCompletionRequestMessage::Assistant(ChatCompletionRequestAssistantMessage {
        content: (!m.content.is_empty())
            .then(|| ChatCompletionRequestAssistantMessageContent::Text(m.content.clone())),
        tool_calls: (!calls.is_empty()).then(|| {
            calls
                .into_iter()
                .map(|c| {
                    ChatCompletionMessageToolCalls::Function(ChatCompletionMessageToolCall {
                        id: c.id,
                        function: FunctionCall {
                            name: c.name,
                            arguments: c.arguments,
                        },
                    })
                })
                .collect()
        }),
        ..ChatCompletionRequestAssistantMessage::default()
    })
}

/// The run's tools (`tools/list`'s wire form) as function tools.
pub(crate) fn tools(listed: &[rmcp::model::Tool]) -> Vec<ChatCompletionTools> {
    listed
        .iter()
        .map(|t| {
            ChatCompletionTools::Function(ChatCompletionTool {
                function: FunctionObject {
                    name: t.name.to_string(),
                    description: t.description.as_ref().map(ToString::to_string),
                    parameters: Some(Value::Object((*t.input_schema).clone())),
                    strict: None,
                },
            })
        })
        .collect()
}
