//! Agent chat (RUN-9) and its threads (RUN-7): the one chat service that the admin API, the
//! console and `warden chat` call.
//!
//! A turn gives the agent's Model the system block a run of this caller would get (the
//! agent's instructions, its projects' knowledge, the RUN-5 notice), offers exactly the tools
//! `tools/list` would show (RUN-6), and executes each tool call the model asks for through the
//! governed pipeline under the caller's authority (caller mode, RUN-2), in the thread's run:
//! audited, budgeted and gated by autonomy like any MCP client's call. A denial or a parked
//! call goes back to the model as the GOV-3 result; a parked call's outcome is added to the
//! thread once it is decided.
//!
//! A thread belongs to the principal that started it: to anyone else it is exactly a thread
//! that does not exist (RUN-7). Message content is kept in the thread tables only; logs carry
//! ids and hashes (AUD-3).

mod history;
pub mod model;
mod turn;

use std::sync::Arc;

use serde::Serialize;
use sha2::Digest as _;
use warden_control::Refusal;
use warden_core::approval::ApprovalStatus;
use warden_core::authority::{Authority, AuthorityError};
use warden_core::principal::Credential;
use warden_core::time::Millis;
use warden_mcp::gateway::Gateway;
use warden_store::{MessageRole, Thread, ThreadMessage};

pub use history::StoredCall;

/// The longest message a person may send, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// The threads a listing shows at most.
const MAX_THREADS: i64 = 200;

/// What a turn tells its surface as it happens.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(
    tag = "event",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum ChatEvent {
    /// The thread the turn is in (first).
    Thread {
        /// `thr_…`.
        id: String,
        /// The run its calls are audited under.
        run_id: String,
    },
    /// A piece of the model's text.
    Delta {
        /// The piece.
        text: String,
    },
    /// The model asked to call a tool.
    ToolCall {
        /// The model's id of the call.
        id: String,
        /// The tool.
        name: String,
        /// Its arguments as the model wrote them.
        arguments: String,
    },
    /// Warden's decision on that call (GOV-3).
    Decision {
        /// The model's id of the call.
        tool_call_id: String,
        /// The governed call (`call_…`), when it reached the pipeline.
        #[serde(skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        /// `executed`, `denied`, `pending_approval`, or `not_run`.
        status: String,
        /// A denial's code.
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<String>,
        /// A parked call's approval.
        #[serde(skip_serializing_if = "Option::is_none")]
        approval_id: Option<String>,
        /// One line.
        message: String,
    },
    /// Warden's own word in the thread: a limit reached, a model that failed, a parked call
    /// decided.
    Notice {
        /// What happened.
        text: String,
        /// Whether it is the model's failure, which ends the turn.
        failure: bool,
    },
    /// The turn ended.
    Done {
        /// `thr_…`.
        thread: String,
    },
}

impl ChatEvent {
    /// The event's name on an event stream (`delta`, `tool_call`, …).
    pub fn name(&self) -> &'static str {
        match self {
            Self::Thread { .. } => "thread",
            Self::Delta { .. } => "delta",
            Self::ToolCall { .. } => "tool_call",
            Self::Decision { .. } => "decision",
            Self::Notice { .. } => "notice",
            Self::Done { .. } => "done",
        }
    }

    /// The event's fields as JSON (without its name).
    pub fn data(&self) -> serde_json::Value {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::Object(mut m)) => {
                m.remove("event");
                serde_json::Value::Object(m)
            }
            _ => serde_json::Value::Null,
        }
    }
}

/// Where a turn's events go as they happen.
pub type Events<'a> = &'a mut (dyn FnMut(ChatEvent) + Send);

/// A turn that ran.
#[derive(Clone, Debug)]
pub struct Turn {
    /// The thread.
    pub thread: Thread,
    /// The messages this turn added, the person's first.
    pub added: Vec<ThreadMessage>,
    /// Why the model gave no (further) answer, when it failed; also the last message added.
    pub failure: Option<String>,
}

/// The chat service.
#[derive(Clone, Debug)]
pub struct Chat {
    gateway: Arc<Gateway>,
}

impl Chat {
    /// The chat service over `gateway`'s policy, catalog, pipeline and store.
    pub fn new(gateway: Arc<Gateway>) -> Self {
        Self { gateway }
    }

    /// Starts a thread with `agent` for the holder of `credential`, whose first message is
    /// `text`, and runs its first turn.
    pub async fn start(
        &self,
        credential: &Credential,
        agent: &str,
        text: &str,
        on: Events<'_>,
    ) -> Result<Turn, Refusal> {
        let text = checked(text)?;
        let (_, model) = self.run_of(credential, agent)?;
        let now = self.gateway.clock().now();
        // Two ids, so that knowing a run does not name its thread (RUN-7).
        let thread = Thread {
            id: format!("thr_{}", uuid::Uuid::now_v7().simple()),
            agent: agent.to_owned(),
            owner: credential.principal.to_string(),
            run_id: format!("run_{}", uuid::Uuid::now_v7().simple()),
            title: title(text),
            created_at: now,
            updated_at: now,
        };
        let store = self.gateway.store();
        store.insert_thread(&thread).await?;
        tracing::info!(thread = %thread.id, agent, owner = %thread.owner, "chat thread started");
        if !store
            .claim_thread(&thread.id, &thread.owner, now, lease_end(&model, now))
            .await?
        {
            return Err(busy());
        }
        self.turn(credential, model, thread, text, on).await
    }

    /// Runs a turn of `thread`, claimed for it, and lets the claim go however it ends.
    async fn turn(
        &self,
        credential: &Credential,
        model: model::Model,
        thread: Thread,
        text: &str,
        on: Events<'_>,
    ) -> Result<Turn, Refusal> {
        let (id, owner) = (thread.id.clone(), thread.owner.clone());
        let store = self.gateway.store();
        let turn = async {
            self.settle_parked(&thread).await?;
            let history = store.thread_messages(&id, &owner).await?;
            turn::run(&self.gateway, credential, &model, thread, history, text, on).await
        }
        .await;
        store.release_thread(&id, &owner).await?;
        turn
    }

    /// Adds `text` to the thread `id` of the holder of `credential` and runs a turn.
    pub async fn send(
        &self,
        credential: &Credential,
        id: &str,
        text: &str,
        on: Events<'_>,
    ) -> Result<Turn, Refusal> {
        let owner = credential.principal.to_string();
        let thread = self.owned(id, &owner).await?;
        let text = checked(text)?;
        let (_, model) = self.run_of(credential, &thread.agent)?;
        let now = self.gateway.clock().now();
        // One turn at a time, on every replica: a message, or a decided call's notice, never
        // lands between a model's tool calls and their results.
        if !self
            .gateway
            .store()
            .claim_thread(id, &owner, now, lease_end(&model, now))
            .await?
        {
            return Err(busy());
        }
        self.turn(credential, model, thread, text, on).await
    }

    /// The agents the holder of `credential` can chat with: those with a model that a
    /// caller-mode run of theirs may run.
    pub fn agents(&self, credential: &Credential) -> Vec<String> {
        let snapshot = self.gateway.snapshot();
        snapshot
            .policy
            .agents()
            .iter()
            .filter(|(_, a)| a.model.is_some())
            .filter(|(name, _)| {
                self.gateway
                    .authority(credential, Some(name.as_str()))
                    .is_ok()
            })
            .map(|(name, _)| name.to_string())
            .collect()
    }

    /// The threads of the holder of `credential`, the last used first (of `agent` when given).
    pub async fn threads(
        &self,
        credential: &Credential,
        agent: Option<&str>,
    ) -> Result<Vec<Thread>, Refusal> {
        let owner = credential.principal.to_string();
        Ok(self
            .gateway
            .store()
            .threads(&owner, agent, MAX_THREADS)
            .await?)
    }

    /// The thread `id` of the holder of `credential`, with its messages (the outcomes of its
    /// parked calls decided since added).
    pub async fn thread(
        &self,
        credential: &Credential,
        id: &str,
    ) -> Result<(Thread, Vec<ThreadMessage>), Refusal> {
        let owner = credential.principal.to_string();
        let thread = self.owned(id, &owner).await?;
        let store = self.gateway.store();
        let now = self.gateway.clock().now();
        // Outcomes are added only while no turn runs (the turn adds them when it ends).
        if store
            .claim_thread(id, &owner, now, Millis(now.0.saturating_add(60_000)))
            .await?
        {
            let settled = self.settle_parked(&thread).await;
            store.release_thread(id, &owner).await?;
            settled?;
        }
        let messages = store.thread_messages(id, &owner).await?;
        Ok((thread, messages))
    }

    /// Deletes the thread `id` of the holder of `credential` and its messages.
    pub async fn delete(&self, credential: &Credential, id: &str) -> Result<(), Refusal> {
        let owner = credential.principal.to_string();
        match self.gateway.store().delete_thread(id, &owner).await? {
            true => {
                tracing::info!(thread = id, owner, "chat thread deleted");
                Ok(())
            }
            false => Err(no_thread(id)),
        }
    }

    /// The thread `id` of `owner`, or exactly the refusal of one that does not exist (RUN-7).
    async fn owned(&self, id: &str, owner: &str) -> Result<Thread, Refusal> {
        self.gateway
            .store()
            .thread(id, owner)
            .await?
            .ok_or_else(|| no_thread(id))
    }

    /// The authority of a caller-mode run of `agent` for `credential`, and the agent's model.
    fn run_of(
        &self,
        credential: &Credential,
        agent: &str,
    ) -> Result<(Arc<Authority>, model::Model), Refusal> {
        let authority = self
            .gateway
            .authority(credential, Some(agent))
            .map_err(|e| match e {
                AuthorityError::UnknownAgent(_) => Refusal::NotFound {
                    field: Some("agent"),
                    message: e.to_string(),
                },
                other => Refusal::Forbidden(other.to_string()),
            })?;
        let snapshot = self.gateway.snapshot();
        let spec = snapshot
            .policy
            .agent(agent)
            .and_then(|a| a.model.as_ref())
            .and_then(|m| snapshot.policy.model(m.as_str()))
            .ok_or_else(|| {
                Refusal::Conflict(format!(
                    "agent `{agent}` has no model to chat through; give it `model:` naming a Model (docs/chat.md)"
                ))
            })?;
        let secrets = self.gateway.upstreams().secrets();
        let model = model::Model::new(spec, |v| secrets.resolve(v))
            .map_err(|e| Refusal::Conflict(e.explain(spec.name.as_str())))?;
        Ok((authority, model))
    }

    /// Adds to `thread` a notice for each of its parked calls decided since (once each).
    async fn settle_parked(&self, thread: &Thread) -> Result<(), Refusal> {
        let store = self.gateway.store();
        let messages = store.thread_messages(&thread.id, &thread.owner).await?;
        let settled: Vec<&str> = messages
            .iter()
            .filter(|m| m.role == MessageRole::Notice)
            .filter_map(|m| m.approval_id.as_deref())
            .collect();
        let now = self.gateway.clock().now();
        let mut notices = Vec::new();
        for parked in messages.iter().filter(|m| {
            m.role == MessageRole::Tool
                && m.approval_id
                    .as_deref()
                    .is_some_and(|id| !settled.contains(&id))
        }) {
            let Some(id) = parked.approval_id.as_deref() else {
                continue;
            };
            let Some(approval) = store.approval(id).await? else {
                continue;
            };
            let status = approval.status;
            if !matches!(
                status,
                ApprovalStatus::Executed
                    | ApprovalStatus::Failed
                    | ApprovalStatus::Rejected
                    | ApprovalStatus::Expired
                    | ApprovalStatus::Vetoed
            ) {
                continue;
            }
            let mut text = format!("`{}`, parked as `{id}`, was {status}", approval.tool);
            if let Some(m) = approval
                .outcome_message
                .as_deref()
                .or(approval.reason.as_deref())
            {
                text.push_str(&format!(": {m}"));
            }
            if let Some(result) = &approval.result {
                text.push_str(&format!("\nResult: {}", cut(result, 4000)));
            }
            let mut notice = ThreadMessage::new(MessageRole::Notice, text, now);
            notice.approval_id = Some(id.to_owned());
            notice.call_id = Some(approval.call_id.clone());
            notice.decision = Some(status.as_str().to_owned());
            notices.push(notice);
        }
        if !notices.is_empty() {
            store
                .append_thread_messages(&thread.id, &thread.owner, &notices, now)
                .await?;
        }
        Ok(())
    }
}

/// The refusal for a thread whose turn is still running.
fn busy() -> Refusal {
    Refusal::Conflict(
        "a turn of this thread is still running; wait for it to end, then send again".into(),
    )
}

/// Until when a turn of `model` may hold its thread: every round at its longest, and a
/// minute for the tools.
fn lease_end(model: &model::Model, now: Millis) -> Millis {
    let longest = model
        .answer_timeout()
        .saturating_mul(model.tool_rounds().saturating_add(1))
        .saturating_add(std::time::Duration::from_secs(60));
    Millis(
        now.0
            .saturating_add(i64::try_from(longest.as_millis()).unwrap_or(i64::MAX)),
    )
}

/// The refusal for a thread the caller does not have: the same status and bytes whether it is
/// another principal's or does not exist, whatever the id (RUN-7).
fn no_thread(_id: &str) -> Refusal {
    Refusal::not_found("no thread with that id")
}

/// `text`, unless it is empty or too long.
fn checked(text: &str) -> Result<&str, Refusal> {
    let text = text.trim();
    if text.is_empty() {
        return Err(Refusal::Invalid {
            field: "message",
            message: "say something: the message is empty".into(),
        });
    }
    if text.len() > MAX_MESSAGE_BYTES {
        return Err(Refusal::Invalid {
            field: "message",
            message: format!(
                "{} bytes is longer than a message may be ({MAX_MESSAGE_BYTES} bytes)",
                text.len()
            ),
        });
    }
    Ok(text)
}

/// A thread's title: the start of its first line.
fn title(text: &str) -> String {
    cut(text.lines().next().unwrap_or_default().trim(), 80)
}

/// At most `max` bytes of `text`, on a character boundary, with `…` when cut.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", text.get(..end).unwrap_or_default())
}

/// The SHA-256 of a message's text, for logs that must not carry it (AUD-3).
fn digest(text: &str) -> String {
    hex::encode(sha2::Sha256::digest(text.as_bytes()))
}
