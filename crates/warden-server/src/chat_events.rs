//! A chat turn answered while it runs, as server-sent events — the admin API's and the
//! console's alike (`thread`, `delta`, `tool_call`, `decision`, `notice`, `done`; docs/chat.md).
//! The turn itself is the chat service's (`warden-chat`).

use std::convert::Infallible;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use warden_chat::{Chat, ChatEvent, Turn};
use warden_control::Refusal;
use warden_core::principal::Credential;

/// Where a turn goes.
#[derive(Clone, Debug)]
pub(crate) enum Turning {
    /// A new thread with this agent.
    Start(String),
    /// The next turn of this thread.
    Send(String),
}

/// Runs the turn, telling `on` its events.
pub(crate) async fn run(
    chat: &Chat,
    credential: &Credential,
    turning: &Turning,
    text: &str,
    on: &mut (dyn FnMut(ChatEvent) + Send),
) -> Result<Turn, Refusal> {
    match turning {
        Turning::Start(agent) => chat.start(credential, agent, text, on).await,
        Turning::Send(id) => chat.send(credential, id, text, on).await,
    }
}

/// Runs the turn in a task of its own and waits for it: a client that goes away (a closed
/// tab, a proxy's timeout) does not cut the turn between a tool call and its result.
pub(crate) async fn run_detached(
    chat: Chat,
    credential: Credential,
    turning: Turning,
    text: String,
) -> Result<Turn, Refusal> {
    tokio::spawn(async move { run(&chat, &credential, &turning, &text, &mut |_| {}).await })
        .await
        .unwrap_or_else(|e| Err(Refusal::Conflict(format!("the turn failed: {e}"))))
}

/// What the turn's task tells the answer.
enum Told {
    Event(ChatEvent),
    End(Result<Turn, Refusal>),
}

/// The turn, answered as events while it runs. A refusal before it began is returned instead,
/// for the door to answer as it answers refusals. The turn runs to its end even when the
/// client goes away: what it adds is kept.
pub(crate) async fn stream(
    chat: Chat,
    credential: Credential,
    turning: Turning,
    text: String,
) -> Result<Response, Refusal> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let events = tx.clone();
    tokio::spawn(async move {
        let mut on = move |e: ChatEvent| {
            let _ = events.send(Told::Event(e));
        };
        let ended = run(&chat, &credential, &turning, &text, &mut on).await;
        let _ = tx.send(Told::End(ended));
    });
    let first = match rx.recv().await {
        Some(Told::End(Err(e))) => return Err(e),
        Some(told) => told,
        None => return Err(Refusal::Conflict("the turn ended unseen".into())),
    };
    let stream = futures::stream::unfold((Some(first), rx), |(next, mut rx)| async move {
        let told = match next {
            Some(told) => told,
            None => rx.recv().await?,
        };
        let event = match told {
            Told::Event(e) => Event::default().event(e.name()).data(e.data().to_string()),
            Told::End(Ok(_)) => return None,
            Told::End(Err(e)) => Event::default()
                .event("error")
                .data(serde_json::json!({"error": e.to_string()}).to_string()),
        };
        Some((Ok::<_, Infallible>(event), (None, rx)))
    });
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response())
}
