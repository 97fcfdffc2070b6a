//! A scripted OpenAI-compatible chat-completions server, for the tests of agent chat (RUN-9).
//!
//! Each request to `POST /v1/chat/completions` takes the next [`Reply`] of the script and
//! records the request's body, so that a test can read what the model was offered (the system
//! block, the tools and their schemas, the history). Streams are written as the OpenAI API
//! writes them: `data: {chunk}` events, then `data: [DONE]`.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

/// One answer of the scripted model.
#[derive(Clone, Debug)]
pub enum Reply {
    /// Text, streamed in these pieces.
    Text(Vec<String>),
    /// Tool calls, each `(id, name, pieces of its arguments)`: the arguments are split over
    /// that many chunks, as models stream them.
    ToolCalls(Vec<(String, String, Vec<String>)>),
    /// An error status with an OpenAI error body (`401`, `429`, `500`).
    Status(u16),
    /// The first piece of a text, then the connection is cut without an end.
    Broken,
    /// A stream of events that are not chat-completion chunks.
    Garbage,
    /// Text whose first piece is sent at once and the rest only once the test calls
    /// [`ScriptedModel::release`]: a turn seen while it streams.
    Held(Vec<String>),
}

impl Reply {
    /// Text in one piece.
    pub fn text(text: &str) -> Self {
        Self::Text(vec![text.to_owned()])
    }

    /// One tool call whose arguments arrive in `pieces`.
    pub fn call(id: &str, name: &str, pieces: &[&str]) -> Self {
        Self::ToolCalls(vec![(
            id.to_owned(),
            name.to_owned(),
            pieces.iter().map(|p| (*p).to_owned()).collect(),
        )])
    }
}

#[derive(Debug)]
struct Script {
    replies: VecDeque<Reply>,
    requests: Vec<Value>,
    headers: Vec<Vec<(String, String)>>,
    released: Arc<tokio::sync::Semaphore>,
}

/// A running scripted model.
#[derive(Clone, Debug)]
pub struct ScriptedModel {
    /// The API base to configure as a Model's `url` (`http://127.0.0.1:PORT/v1`).
    pub url: String,
    script: Arc<Mutex<Script>>,
}

impl ScriptedModel {
    /// Serves `replies`, in order, on a port of its own.
    pub async fn start(replies: Vec<Reply>) -> Self {
        let script = Arc::new(Mutex::new(Script {
            replies: replies.into(),
            requests: Vec::new(),
            headers: Vec::new(),
            released: Arc::new(tokio::sync::Semaphore::new(0)),
        }));
        let app = axum::Router::new()
            .route("/v1/chat/completions", post(completions))
            .with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a port for the scripted model");
        let addr: SocketAddr = listener.local_addr().expect("its address");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            url: format!("http://{addr}/v1"),
            script,
        }
    }

    /// Adds replies to the end of the script.
    pub fn push(&self, replies: impl IntoIterator<Item = Reply>) {
        if let Ok(mut s) = self.script.lock() {
            s.replies.extend(replies);
        }
    }

    /// Lets one [`Reply::Held`] send the rest of its text.
    pub fn release(&self) {
        if let Ok(s) = self.script.lock() {
            s.released.add_permits(1);
        }
    }

    /// The headers of the requests received so far (names in lower case).
    pub fn headers(&self) -> Vec<Vec<(String, String)>> {
        self.script
            .lock()
            .map(|s| s.headers.clone())
            .unwrap_or_default()
    }

    /// The bodies of the requests received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.script
            .lock()
            .map(|s| s.requests.clone())
            .unwrap_or_default()
    }
}

fn chunk(delta: &Value, finish: Option<&str>) -> String {
    let chunk = json!({
        "id": "chatcmpl-scripted",
        "object": "chat.completion.chunk",
        "created": 1_800_000_000,
        "model": "scripted",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    });
    format!("data: {chunk}\n\n")
}

fn events(reply: &Reply) -> Vec<String> {
    let mut out = vec![chunk(&json!({"role": "assistant", "content": ""}), None)];
    match reply {
        Reply::Text(pieces) => {
            out.extend(pieces.iter().map(|p| chunk(&json!({"content": p}), None)));
            out.push(chunk(&json!({}), Some("stop")));
        }
        Reply::ToolCalls(calls) => {
            for (index, (id, name, pieces)) in calls.iter().enumerate() {
                out.push(chunk(
                    &json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                        "function": {"name": name, "arguments": ""}}]}),
                    None,
                ));
                out.extend(pieces.iter().map(|p| {
                    chunk(
                        &json!({"tool_calls": [{"index": index, "function": {"arguments": p}}]}),
                        None,
                    )
                }));
            }
            out.push(chunk(&json!({}), Some("tool_calls")));
        }
        Reply::Status(_) | Reply::Broken | Reply::Garbage | Reply::Held(_) => {}
    }
    out.push("data: [DONE]\n\n".to_owned());
    out
}

async fn completions(
    State(script): State<Arc<Mutex<Script>>>,
    headers: axum::http::HeaderMap,
    body: String,
) -> Response {
    let (reply, released) = {
        let Ok(mut s) = script.lock() else {
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        };
        s.headers.push(
            headers
                .iter()
                .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
                .collect(),
        );
        s.requests
            .push(serde_json::from_str(&body).unwrap_or(Value::Null));
        (s.replies.pop_front(), s.released.clone())
    };
    let Some(reply) = reply else {
        return error(500, "the script has no more replies");
    };
    let stream: Vec<Result<String, std::io::Error>> = match &reply {
        Reply::Status(code) => {
            return error(*code, "scripted failure");
        }
        Reply::Broken => {
            let first = chunk(
                &json!({"role": "assistant", "content": "I was about to"}),
                None,
            );
            let now = futures::stream::once(async move { Ok::<_, std::io::Error>(first) });
            // Pending once after the first piece, so that the server sends it before the cut.
            let cut = futures::stream::once(async {
                tokio::task::yield_now().await;
                Err(std::io::Error::other("the scripted model cut the stream"))
            });
            return (
                [(header::CONTENT_TYPE, "text/event-stream")],
                Body::from_stream(futures::StreamExt::chain(now, cut)),
            )
                .into_response();
        }
        Reply::Garbage => vec![Ok("data: {\"not\": \"a chunk\"}\n\n".to_owned())],
        Reply::Held(pieces) => {
            let mut all = events(&Reply::Text(pieces.clone())).into_iter();
            // The role chunk and the first piece now; the rest once released.
            let first: Vec<String> = all.by_ref().take(2).collect();
            let rest: Vec<String> = all.collect();
            let later = futures::stream::once(async move {
                let _ = released.acquire().await.map(|p| p.forget());
                Ok::<_, std::io::Error>(rest.concat())
            });
            let now = futures::stream::iter(first.into_iter().map(Ok::<_, std::io::Error>));
            return (
                [(header::CONTENT_TYPE, "text/event-stream")],
                Body::from_stream(futures::StreamExt::chain(now, later)),
            )
                .into_response();
        }
        other => events(other).into_iter().map(Ok).collect(),
    };
    (
        [(header::CONTENT_TYPE, "text/event-stream")],
        Body::from_stream(futures::stream::iter(stream)),
    )
        .into_response()
}

fn error(code: u16, message: &str) -> Response {
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let kind = match code {
        401 => "invalid_request_error",
        429 => "rate_limit_error",
        _ => "server_error",
    };
    (
        status,
        axum::Json(
            json!({"error": {"message": message, "type": kind, "param": null, "code": null}}),
        ),
    )
        .into_response()
}
