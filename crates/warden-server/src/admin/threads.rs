//! Agent chat over the API (RUN-9): start a thread with an agent, add messages to it, list,
//! read and delete one's own threads. Each answers as JSON, or — a turn asked for with
//! `Accept: text/event-stream` — as events while the turn runs. Another principal's thread
//! answers exactly as one that does not exist (RUN-7). All of it is the chat service's
//! (`warden-chat`); here requests are parsed and answers rendered.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Extension, Path, Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use warden_chat::{Chat, Turn};
use warden_core::principal::Credential;
use warden_mcp::Authenticated;
use warden_store::{Thread, ThreadMessage};

use super::error::{ApiError, ErrorBody};
use crate::chat_events::{self, Turning};
use crate::state::AppState;

/// A thread.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ThreadView {
    /// `thr_…`.
    id: String,
    /// The agent talked to.
    agent: String,
    /// Its owner, the only principal that can read it.
    owner: String,
    /// The run its tool calls are audited under.
    run_id: String,
    /// The start of its first message.
    title: String,
    /// When it was started (ms since the epoch).
    created_at: i64,
    /// When a message was last added (ms since the epoch).
    updated_at: i64,
}

impl From<Thread> for ThreadView {
    fn from(t: Thread) -> Self {
        Self {
            id: t.id,
            agent: t.agent,
            owner: t.owner,
            run_id: t.run_id,
            title: t.title,
            created_at: t.created_at.0,
            updated_at: t.updated_at.0,
        }
    }
}

/// A message of a thread.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MessageView {
    /// 1, 2, … within the thread.
    seq: i64,
    /// `user`, `assistant`, `tool` (a tool call's result as the model got it) or `notice`
    /// (Warden's: a limit reached, a model that failed, a parked call decided).
    role: String,
    /// Its text.
    content: String,
    /// An assistant's tool calls: `[{id, name, arguments}]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    tool_calls: Option<serde_json::Value>,
    /// A tool message: the model's id of the call it answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<String>,
    /// The governed call (`call_…`).
    #[serde(skip_serializing_if = "Option::is_none")]
    call_id: Option<String>,
    /// Its decision: `executed`, `denied`, `pending_approval`, `not_run`; for a notice about
    /// a parked call, the approval's status.
    #[serde(skip_serializing_if = "Option::is_none")]
    decision: Option<String>,
    /// A parked call's approval (`apr_…`).
    #[serde(skip_serializing_if = "Option::is_none")]
    approval_id: Option<String>,
    /// When it was added (ms since the epoch).
    at: i64,
}

impl From<ThreadMessage> for MessageView {
    fn from(m: ThreadMessage) -> Self {
        Self {
            seq: m.seq,
            role: m.role.as_str().to_owned(),
            content: m.content,
            tool_calls: m
                .tool_calls
                .as_deref()
                .and_then(|t| serde_json::from_str(t).ok()),
            tool_call_id: m.tool_call_id,
            call_id: m.call_id,
            decision: m.decision,
            approval_id: m.approval_id,
            at: m.at.0,
        }
    }
}

/// A turn's answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TurnView {
    /// The thread.
    thread: ThreadView,
    /// The messages the turn added, the caller's first.
    messages: Vec<MessageView>,
    /// Why the model gave no (further) answer, when it failed (also the last message).
    #[serde(skip_serializing_if = "Option::is_none")]
    failure: Option<String>,
}

impl From<Turn> for TurnView {
    fn from(t: Turn) -> Self {
        Self {
            thread: t.thread.into(),
            messages: t.added.into_iter().map(MessageView::from).collect(),
            failure: t.failure,
        }
    }
}

/// A thread with its messages.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ThreadDetail {
    /// The thread.
    thread: ThreadView,
    /// Its messages, in order.
    messages: Vec<MessageView>,
}

/// A message to the agent.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Say {
    /// What the caller says.
    message: String,
}

fn said(body: Result<Bytes, BytesRejection>) -> Result<String, ApiError> {
    let body = body?;
    let say: Say = serde_json::from_slice(&body).map_err(|e| {
        ApiError::invalid(format!("invalid message: {e}; send {{\"message\": \"…\"}}"))
    })?;
    Ok(say.message)
}

fn wants_events(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("text/event-stream"))
}

/// Runs a turn, answering as JSON (`created` for a new thread) or as events.
async fn answer_turn(
    chat: Chat,
    credential: Credential,
    turning: Turning,
    text: String,
    events: bool,
    created: StatusCode,
) -> Result<Response, ApiError> {
    if events {
        return Ok(chat_events::stream(chat, credential, turning, text).await?);
    }
    let turn = chat_events::run_detached(chat, credential, turning, text).await?;
    Ok((created, Json(TurnView::from(turn))).into_response())
}

/// Starts a thread with an agent: its first message and the agent's answer, as JSON or (with
/// `Accept: text/event-stream`) as the events `thread`, `delta`, `tool_call`, `decision`,
/// `notice` and `done` while the turn runs.
#[utoipa::path(post, path = "/agents/{agent}/threads", operation_id = "startThread", tag = "chat",
    params(("agent" = String, Path, description = "the agent")),
    request_body = Say,
    responses(
        (status = 201, description = "the thread and the messages of its first turn", body = TurnView),
        (status = 400, description = "a malformed or empty message", body = ErrorBody),
        (status = 403, description = "the caller cannot run the agent", body = ErrorBody),
        (status = 404, description = "no such agent", body = ErrorBody),
        (status = 409, description = "the agent has no model", body = ErrorBody),
    ))]
pub(crate) async fn start(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path(agent): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let text = said(body)?;
    answer_turn(
        Chat::new(state.gateway.clone()),
        credential,
        Turning::Start(agent),
        text,
        wants_events(&headers),
        StatusCode::CREATED,
    )
    .await
}

/// Adds a message to one of the caller's threads and runs a turn; answers as
/// `startThread` does.
#[utoipa::path(post, path = "/threads/{id}/messages", operation_id = "sendMessage", tag = "chat",
    params(("id" = String, Path, description = "the thread (`thr_…`)")),
    request_body = Say,
    responses(
        (status = 200, description = "the messages of the turn", body = TurnView),
        (status = 400, description = "a malformed or empty message", body = ErrorBody),
        (status = 404, description = "no such thread of the caller's", body = ErrorBody),
        (status = 409, description = "the agent has no model, or a turn of the thread is still running", body = ErrorBody),
    ))]
pub(crate) async fn send(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let chat = Chat::new(state.gateway.clone());
    // Whose thread it is comes first: a stranger's message is not read before it is refused.
    chat.thread(&credential, &id).await?;
    let text = said(body)?;
    answer_turn(
        chat,
        credential,
        Turning::Send(id),
        text,
        wants_events(&headers),
        StatusCode::OK,
    )
    .await
}

/// `?agent=NAME`.
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct ThreadsQuery {
    /// Only the threads with this agent.
    agent: Option<String>,
}

/// The caller's threads, the last used first (at most 200).
#[utoipa::path(get, path = "/threads", operation_id = "listThreads", tag = "chat",
    params(ThreadsQuery),
    responses((status = 200, description = "the caller's threads", body = Vec<ThreadView>)))]
pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    query: Result<Query<ThreadsQuery>, QueryRejection>,
) -> Result<Json<Vec<ThreadView>>, ApiError> {
    let Query(q) = query?;
    let threads = Chat::new(state.gateway.clone())
        .threads(&credential, q.agent.as_deref())
        .await?;
    Ok(Json(threads.into_iter().map(ThreadView::from).collect()))
}

/// One of the caller's threads with its messages.
#[utoipa::path(get, path = "/threads/{id}", operation_id = "getThread", tag = "chat",
    params(("id" = String, Path, description = "the thread (`thr_…`)")),
    responses(
        (status = 200, description = "the thread", body = ThreadDetail),
        (status = 404, description = "no such thread of the caller's", body = ErrorBody),
    ))]
pub(crate) async fn get(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path(id): Path<String>,
) -> Result<Json<ThreadDetail>, ApiError> {
    let (thread, messages) = Chat::new(state.gateway.clone())
        .thread(&credential, &id)
        .await?;
    Ok(Json(ThreadDetail {
        thread: thread.into(),
        messages: messages.into_iter().map(MessageView::from).collect(),
    }))
}

/// A thread deleted.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Deleted {
    /// The thread (`thr_…`).
    deleted: String,
}

/// Deletes one of the caller's threads and its messages.
#[utoipa::path(delete, path = "/threads/{id}", operation_id = "deleteThread", tag = "chat",
    params(("id" = String, Path, description = "the thread (`thr_…`)")),
    responses(
        (status = 200, description = "deleted", body = Deleted),
        (status = 404, description = "no such thread of the caller's", body = ErrorBody),
    ))]
pub(crate) async fn delete(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    Path(id): Path<String>,
) -> Result<Json<Deleted>, ApiError> {
    Chat::new(state.gateway.clone())
        .delete(&credential, &id)
        .await?;
    Ok(Json(Deleted { deleted: id }))
}
