//! Agent chat threads (RUN-9) and their messages, kept where every replica reads them.
//!
//! A thread belongs to the principal that started it (RUN-7): every operation here names the
//! owner, and another principal's thread is not found, exactly as a thread that does not
//! exist. Message content lives in these tables only; logs and the audit trail carry ids and
//! hashes (AUD-3). What a turn does is the chat service's (`warden-chat`); here threads are
//! only kept.

pub(crate) mod sql;
mod store;

use serde::{Deserialize, Serialize};
use warden_core::time::Millis;

/// A stored thread.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Thread {
    /// `thr_…`.
    pub id: String,
    /// The agent talked to.
    pub agent: String,
    /// The principal that started it (`user:alice`), its only reader.
    pub owner: String,
    /// The run its tool calls are audited under.
    pub run_id: String,
    /// Its title (the start of its first message).
    pub title: String,
    /// When it was started.
    pub created_at: Millis,
    /// When a message was last added.
    pub updated_at: Millis,
}

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageRole {
    /// The owner.
    User,
    /// The model.
    Assistant,
    /// A tool call's result, as the model was given it.
    Tool,
    /// Warden: a limit reached, a model that failed, a parked call decided.
    Notice,
}

impl MessageRole {
    /// As stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
            Self::Tool => "tool",
            Self::Notice => "notice",
        }
    }

    /// From its stored form.
    pub fn parse(s: &str) -> Option<Self> {
        [Self::User, Self::Assistant, Self::Tool, Self::Notice]
            .into_iter()
            .find(|r| r.as_str() == s)
    }
}

/// One message of a thread.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadMessage {
    /// 1, 2, … within the thread; given by the store.
    pub seq: i64,
    /// Who wrote it.
    pub role: MessageRole,
    /// Its text.
    pub content: String,
    /// An assistant's tool calls, as JSON (`[{id, name, arguments}]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<String>,
    /// A tool message: the model's id of the call it answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// A tool message: the governed call (`call_…`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// A tool message: its decision (`executed`, `denied`, `pending_approval`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    /// A parked call's approval (`apr_…`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<String>,
    /// When it was added.
    pub at: Millis,
}

impl ThreadMessage {
    /// A message of `role` saying `content` at `at`, with nothing else (its `seq` is given
    /// when it is stored).
    pub fn new(role: MessageRole, content: impl Into<String>, at: Millis) -> Self {
        Self {
            seq: 0,
            role,
            content: content.into(),
            tool_calls: None,
            tool_call_id: None,
            call_id: None,
            decision: None,
            approval_id: None,
            at,
        }
    }
}
