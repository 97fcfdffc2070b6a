//! Agent chat in the console (RUN-9): the signed-in principal's threads, a thread's messages
//! with its tool calls, Warden's decisions on them and a card for each parked call (linking
//! to its approval), and forms to start a thread and to go on with one. Every operation is
//! the chat service's (`warden-chat`), as for the API and `warden chat`; another principal's
//! thread is not found, exactly as one that does not exist (RUN-7).

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse as _, Response};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::Value;
use warden_chat::{Chat, StoredCall};
use warden_store::{MessageRole, Thread, ThreadMessage};

use super::caps::Section;
use super::fmt;
use super::layout::{
    FormError, badge, csrf_field, form_error, page_with, refusal_status, refused, see_other,
};
use super::signed_in::Signed;
use crate::chat_events::{self, Turning};
use crate::state::AppState;

/// The chat service's arguments (as the admin API names them) → the forms' fields.
const FIELDS: &[(&str, &str)] = &[("agent", "agent"), ("message", "message")];

#[derive(Debug, Default, Deserialize)]
pub(crate) struct ChatQuery {
    agent: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct StartForm {
    #[serde(default)]
    agent: String,
    #[serde(default)]
    message: String,
}

#[derive(Debug, Default, Deserialize)]
pub(crate) struct SendForm {
    #[serde(default)]
    message: String,
}

fn chat(state: &AppState) -> Chat {
    Chat::new(state.gateway.clone())
}

/// `GET /chat`: the agents one can chat with, the form to start a thread, one's threads.
pub(crate) async fn threads(
    State(state): State<Arc<AppState>>,
    signed: Signed,
    Query(q): Query<ChatQuery>,
) -> Response {
    let typed = StartForm {
        agent: q.agent.clone().unwrap_or_default(),
        message: String::new(),
    };
    render_threads(&state, &signed, &typed, None).await
}

/// `POST /chat`: starts a thread and runs its first turn, then shows it.
pub(crate) async fn start(
    State(state): State<Arc<AppState>>,
    signed: Signed,
    axum::Form(form): axum::Form<StartForm>,
) -> Response {
    let turning = Turning::Start(form.agent.trim().to_owned());
    let started = chat_events::run_detached(
        chat(&state),
        signed.credential.clone(),
        turning,
        form.message.clone(),
    )
    .await;
    match started {
        Ok(turn) => see_other(&format!("/chat/{}#end", turn.thread.id)),
        Err(e) => {
            let error = FormError::refusal(&e, FIELDS);
            render_threads(&state, &signed, &form, Some(&error)).await
        }
    }
}

async fn render_threads(
    state: &AppState,
    signed: &Signed,
    typed: &StartForm,
    error: Option<&FormError>,
) -> Response {
    let agent = Some(typed.agent.trim()).filter(|a| !a.is_empty());
    let threads = match chat(state).threads(&signed.credential, agent).await {
        Ok(t) => t,
        Err(e) => return refused(signed, &e),
    };
    let agents = chat(state).agents(&signed.credential);
    let body = html! {
        (form_error(error, None))
        @if agents.is_empty() {
            p.muted #no-chat { "No agent has a model to chat through. Give an Agent " code { "model:" } ", naming a Model (docs/chat.md)." }
        } @else {
            form.stack #start-chat method="post" action="/chat" {
                (csrf_field(signed))
                label { "Agent "
                    select name="agent" {
                        @for name in &agents {
                            option value=(name) selected[typed.agent == *name] { (name) }
                        }
                    }
                }
                (form_error(error, Some("agent")))
                label { "Message" textarea name="message" rows="3" required { (typed.message) } }
                (form_error(error, Some("message")))
                button type="submit" { "Start a thread" }
            }
        }
        h2 { "Your threads" }
        table.grid #threads {
            thead { tr { th { "Thread" } th { "Agent" } th { "Last message" } } }
            tbody {
                @if threads.is_empty() { tr.empty { td colspan="3" { "No threads yet." } } }
                @for t in &threads {
                    tr {
                        td { a href={ "/chat/" (t.id) } { (t.title) } }
                        td { (t.agent) }
                        td.nowrap { (fmt::time(t.updated_at.0)) }
                    }
                }
            }
        }
    };
    let status = error.map_or(StatusCode::OK, |e| e.status);
    page_with(status, signed, Section::Chat, "Chat", body)
}

/// `GET /chat/{id}`: one of one's threads.
pub(crate) async fn thread(
    State(state): State<Arc<AppState>>,
    signed: Signed,
    Path(id): Path<String>,
) -> Response {
    render_thread(&state, &signed, &id, "", None).await
}

/// `POST /chat/{id}`: a turn in one of one's threads, then the thread.
pub(crate) async fn send(
    State(state): State<Arc<AppState>>,
    signed: Signed,
    Path(id): Path<String>,
    axum::Form(form): axum::Form<SendForm>,
) -> Response {
    let sent = chat_events::run_detached(
        chat(&state),
        signed.credential.clone(),
        Turning::Send(id.clone()),
        form.message.clone(),
    )
    .await;
    match sent {
        Ok(turn) => see_other(&format!("/chat/{}#end", turn.thread.id)),
        Err(e) if e.field().is_none() => refused(&signed, &e),
        Err(e) => {
            let error = FormError::refusal(&e, FIELDS);
            render_thread(&state, &signed, &id, &form.message, Some(&error)).await
        }
    }
}

/// `POST /chat/events`: [`start`] answered as events while the turn runs (the page's script
/// shows them, then opens the thread). A refusal answers its status and a line; the script
/// then posts the form itself, which shows the error beside its field.
pub(crate) async fn start_events(
    State(state): State<Arc<AppState>>,
    signed: Signed,
    axum::Form(form): axum::Form<StartForm>,
) -> Response {
    let turning = Turning::Start(form.agent.trim().to_owned());
    events(&state, &signed, turning, form.message).await
}

/// `POST /chat/{id}/events`: [`send`] answered as events while the turn runs.
pub(crate) async fn send_events(
    State(state): State<Arc<AppState>>,
    signed: Signed,
    Path(id): Path<String>,
    axum::Form(form): axum::Form<SendForm>,
) -> Response {
    events(&state, &signed, Turning::Send(id), form.message).await
}

async fn events(state: &AppState, signed: &Signed, turning: Turning, text: String) -> Response {
    match chat_events::stream(chat(state), signed.credential.clone(), turning, text).await {
        Ok(answer) => answer,
        Err(e) => (refusal_status(&e), format!("{e}\n")).into_response(),
    }
}

/// `POST /chat/{id}/delete`.
pub(crate) async fn delete(
    State(state): State<Arc<AppState>>,
    signed: Signed,
    Path(id): Path<String>,
) -> Response {
    match chat(&state).delete(&signed.credential, &id).await {
        Ok(()) => {
            signed.flash("Thread deleted.").await;
            see_other("/chat")
        }
        Err(e) => refused(&signed, &e),
    }
}

async fn render_thread(
    state: &AppState,
    signed: &Signed,
    id: &str,
    typed: &str,
    error: Option<&FormError>,
) -> Response {
    let (thread, messages) = match chat(state).thread(&signed.credential, id).await {
        Ok(found) => found,
        Err(e) => return refused(signed, &e),
    };
    let body = html! {
        (header(&thread))
        ol.chat #messages {
            @for m in &messages { (message(m)) }
        }
        form.stack #send method="post" action={ "/chat/" (thread.id) } {
            (csrf_field(signed))
            (form_error(error, None))
            label #end { "Message" textarea name="message" rows="3" required { (typed) } }
            (form_error(error, Some("message")))
            button type="submit" { "Send" }
        }
        form.inline method="post" action={ "/chat/" (thread.id) "/delete" }
            data-confirm="Delete this thread and its messages? The calls it made stay in the audit trail." {
            (csrf_field(signed))
            button.danger type="submit" { "Delete thread" }
        }
    };
    let status = error.map_or(StatusCode::OK, |e| e.status);
    page_with(status, signed, Section::Chat, &thread.title, body)
}

fn header(thread: &Thread) -> Markup {
    html! {
        dl.facts {
            dt { "Agent" } dd { (thread.agent) }
            dt { "Run" } dd { code { (thread.run_id) } " — its calls are in the audit trail" }
            dt { "Started" } dd { (fmt::time(thread.created_at.0)) }
        }
    }
}

fn message(m: &ThreadMessage) -> Markup {
    let role = m.role.as_str();
    html! {
        li.message data-role=(role) data-seq=(m.seq) {
            @match m.role {
                MessageRole::User => { p.who { "You" } div.text { (m.content) } },
                MessageRole::Assistant => {
                    p.who { "Agent" }
                    @if !m.content.is_empty() { div.text { (m.content) } }
                    @for call in calls(m) {
                        div.tool-call { "→ " code { (call.name) } " " code.long { (fmt::cut(&call.arguments, 2000)) } }
                    }
                },
                MessageRole::Tool => (tool_result(m)),
                MessageRole::Notice => {
                    p.who { "Warden" }
                    div.text.notice {
                        @if let Some(d) = &m.decision { (badge(d)) " " }
                        (m.content)
                        @if let Some(a) = &m.approval_id { " " a href={ "/approvals/" (a) } { "approval " code { (a) } } }
                    }
                },
            }
        }
    }
}

fn calls(m: &ThreadMessage) -> Vec<StoredCall> {
    m.tool_calls
        .as_deref()
        .and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or_default()
}

fn tool_result(m: &ThreadMessage) -> Markup {
    let contract: Value = serde_json::from_str(&m.content).unwrap_or(Value::Null);
    let said = contract
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let code = contract.get("code").and_then(Value::as_str);
    html! {
        div.decision {
            @if let Some(d) = &m.decision { (badge(d)) " " }
            @if let Some(code) = code { code { (code) } " " }
            (fmt::prose(said))
            @if let Some(a) = &m.approval_id {
                div.card.approval {
                    "Parked for a human decision: "
                    a href={ "/approvals/" (a) } { "approval " code { (a) } }
                    ". Its outcome joins this thread once it is decided."
                }
            }
            @if let Some(data) = contract.get("data") {
                details { summary { "Result" } pre { (fmt::cut(&data.to_string(), 4000)) } }
            }
        }
    }
}
