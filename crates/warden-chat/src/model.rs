//! The model endpoint of a `kind: Model` (RUN-9): one streamed chat completion, its text
//! handed on as it comes and its tool calls reassembled from their chunks.
//!
//! Requests go through `async-openai` (chat completions only, over the workspace's reqwest
//! and TLS), without its default retries: its client sends a request that met a 429 or a 5xx
//! up to three more times, so that one message of a person became up to four requests to the
//! model (seen with the scripted model of the tests). Here a failure is told at once, and the
//! person sends again. Every failure becomes a [`ModelError`] that says, in one line, what
//! went wrong with which Model and what to do about it.

use std::time::Duration;

use async_openai::Client;
use async_openai::config::Config;
use async_openai::error::OpenAIError;
use async_openai::middleware::ReqwestService;
use async_openai::types::chat::{
    ChatCompletionRequestMessage, ChatCompletionTools, CreateChatCompletionRequest,
};
use futures::StreamExt as _;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use secrecy::{ExposeSecret as _, SecretString};
use warden_core::config::ModelSpec;

/// How long connecting to a model may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A tool call the model asked for, reassembled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolCall {
    /// The model's id of the call.
    pub id: String,
    /// The tool, by its catalog name.
    pub name: String,
    /// Its arguments, as the model wrote them (JSON text, not checked here).
    pub arguments: String,
}

/// One answer of the model.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Answer {
    /// Its text.
    pub content: String,
    /// The tools it asked to call, in its order.
    pub tool_calls: Vec<ToolCall>,
}

/// Why a model gave no answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelError {
    /// Its API key could not be resolved (`${secret:…}` missing).
    Key(String),
    /// It could not be reached.
    Unreachable(String),
    /// It answered with an error status.
    Status {
        /// The HTTP status.
        code: u16,
        /// Its message.
        message: String,
    },
    /// Its stream was cut or was not a chat-completion stream.
    Malformed(String),
    /// It did not finish within the Model's `timeout`.
    Timeout(Duration),
}

impl ModelError {
    /// What kind of failure, for logs (which carry no model text, AUD-3).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Key(_) => "key",
            Self::Unreachable(_) => "unreachable",
            Self::Status { .. } => "status",
            Self::Malformed(_) => "malformed",
            Self::Timeout(_) => "timeout",
        }
    }

    /// One line for the thread and the surface: what went wrong with Model `model`, and what
    /// to do.
    pub fn explain(&self, model: &str) -> String {
        match self {
            Self::Key(e) => format!(
                "Model `{model}`: its `apiKey` cannot be read ({e}); provide that secret or environment variable and try again"
            ),
            Self::Unreachable(e) => format!(
                "Model `{model}` cannot be reached ({e}); check that its server runs and that its `url` is right, then send the message again"
            ),
            Self::Status {
                code: 401 | 403,
                message,
            } => format!(
                "Model `{model}` refused Warden's credentials ({message}); check its `apiKey`"
            ),
            Self::Status { code: 429, message } => format!(
                "Model `{model}` is rate limited ({message}); wait a moment and send the message again"
            ),
            Self::Status { code, message } => format!(
                "Model `{model}` answered with an error ({code}: {message}); check its `model` and its server's log, then send the message again"
            ),
            Self::Malformed(e) => format!(
                "Model `{model}` sent an answer Warden cannot read ({e}); check that its `url` is an OpenAI-compatible API base (ending in `/v1`), then send the message again"
            ),
            Self::Timeout(t) => format!(
                "Model `{model}` did not finish its answer within {}s (its `timeout`); send the message again, or give it a longer `timeout`",
                t.as_secs()
            ),
        }
    }
}

fn from_openai(e: OpenAIError) -> ModelError {
    match e {
        OpenAIError::ApiError(api) => ModelError::Status {
            code: api.status_code.as_u16(),
            message: api.api_error.message.clone(),
        },
        OpenAIError::Reqwest(e) if e.is_connect() => ModelError::Unreachable(e.to_string()),
        OpenAIError::Reqwest(e) => match e.status() {
            Some(status) => ModelError::Status {
                code: status.as_u16(),
                message: status
                    .canonical_reason()
                    .unwrap_or("an error status")
                    .to_owned(),
            },
            None => ModelError::Malformed(format!("the connection failed: {e}")),
        },
        OpenAIError::StreamError(e) => ModelError::Malformed(format!("the stream failed: {e}")),
        OpenAIError::JSONDeserialize(e, _) => {
            ModelError::Malformed(format!("a chunk is not a chat completion: {e}"))
        }
        other => ModelError::Malformed(other.to_string()),
    }
}

/// Where a model is and its key — and nothing else: async-openai's own `OpenAIConfig` takes
/// `OPENAI_API_KEY`, `OPENAI_ORG_ID` and `OPENAI_PROJECT_ID` from the server's environment,
/// which would send the server's key to whatever `url` a Model names (FED-3).
#[derive(Clone, Debug)]
struct Endpoint {
    base: String,
    key: Option<SecretString>,
    none: SecretString,
}

impl Config for Endpoint {
    fn headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.key
            && let Ok(value) = HeaderValue::from_str(&format!("Bearer {}", key.expose_secret()))
        {
            headers.insert(AUTHORIZATION, value);
        }
        headers
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn query(&self) -> Vec<(&str, &str)> {
        Vec::new()
    }

    fn api_base(&self) -> &str {
        &self.base
    }

    fn api_key(&self) -> &SecretString {
        self.key.as_ref().unwrap_or(&self.none)
    }
}

/// A model's client: its endpoint and its resolved key.
#[derive(Debug)]
pub struct Model {
    spec: ModelSpec,
    client: Client<Endpoint>,
}

impl Model {
    /// The client of `spec`, its key resolved with `resolve` (`${secret:…}`, `${env:…}`).
    pub fn new(
        spec: &ModelSpec,
        resolve: impl Fn(&str) -> Result<String, String>,
    ) -> Result<Self, ModelError> {
        let key = match &spec.api_key {
            None => None,
            Some(reference) => {
                let key = resolve(reference).map_err(ModelError::Key)?;
                let key = key.trim().to_owned();
                if HeaderValue::from_str(&format!("Bearer {key}")).is_err() {
                    return Err(ModelError::Key(
                        "its value holds a character a header cannot carry".into(),
                    ));
                }
                Some(SecretString::from(key))
            }
        };
        let config = Endpoint {
            base: spec.url.trim_end_matches('/').to_owned(),
            key,
            none: SecretString::from(String::new()),
        };
        warden_mcp::http_client::install_tls();
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(|e| ModelError::Unreachable(e.to_string()))?;
        Ok(Self {
            spec: spec.clone(),
            client: Client::with_config(config).with_http_service(ReqwestService::new(http)),
        })
    }

    /// The Model resource's name.
    pub fn name(&self) -> &str {
        self.spec.name.as_str()
    }

    /// The rounds of tool calls one turn may take (`maxToolRounds`).
    pub fn tool_rounds(&self) -> u32 {
        self.spec.tool_rounds()
    }

    /// How long one answer may take (`timeout`).
    pub fn answer_timeout(&self) -> Duration {
        self.spec.answer_timeout()
    }

    /// One answer to `messages` with `tools` offered; `on_text` gets its text as it streams.
    pub async fn answer(
        &self,
        messages: Vec<ChatCompletionRequestMessage>,
        tools: Vec<ChatCompletionTools>,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Answer, ModelError> {
        let timeout = self.spec.answer_timeout();
        let request = CreateChatCompletionRequest {
            model: self.spec.model.clone(),
            messages,
            tools: (!tools.is_empty()).then_some(tools),
            stream: Some(true),
            ..CreateChatCompletionRequest::default()
        };
        tokio::time::timeout(timeout, self.stream(request, on_text))
            .await
            .unwrap_or(Err(ModelError::Timeout(timeout)))
    }

    async fn stream(
        &self,
        request: CreateChatCompletionRequest,
        on_text: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Answer, ModelError> {
        let mut stream = self
            .client
            .chat()
            .create_stream(request)
            .await
            .map_err(from_openai)?;
        let mut answer = Answer::default();
        // Tool calls by their index; a call's id and name come first, its arguments in pieces.
        let mut calls: Vec<ToolCall> = Vec::new();
        let mut finished = false;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(from_openai)?;
            let Some(choice) = chunk.choices.into_iter().find(|c| c.index == 0) else {
                continue;
            };
            if let Some(text) = choice.delta.content.filter(|t| !t.is_empty()) {
                on_text(&text);
                answer.content.push_str(&text);
            }
            for piece in choice.delta.tool_calls.unwrap_or_default() {
                let index = usize::try_from(piece.index).unwrap_or(usize::MAX);
                if index > 127 {
                    return Err(ModelError::Malformed(format!(
                        "a tool call numbered {index}"
                    )));
                }
                while calls.len() <= index {
                    calls.push(ToolCall {
                        id: String::new(),
                        name: String::new(),
                        arguments: String::new(),
                    });
                }
                let Some(call) = calls.get_mut(index) else {
                    continue;
                };
                if let Some(id) = piece.id {
                    call.id = id;
                }
                if let Some(function) = piece.function {
                    // Some servers repeat the whole name in every chunk; others split it.
                    if let Some(name) = function.name
                        && name != call.name
                    {
                        call.name.push_str(&name);
                    }
                    if let Some(arguments) = function.arguments {
                        call.arguments.push_str(&arguments);
                    }
                }
            }
            finished |= choice.finish_reason.is_some();
        }
        if !finished {
            return Err(ModelError::Malformed(
                "the stream ended before the answer was finished".into(),
            ));
        }
        for (i, call) in calls.into_iter().enumerate() {
            if call.name.is_empty() {
                return Err(ModelError::Malformed(format!(
                    "tool call {i} names no tool"
                )));
            }
            answer.tool_calls.push(ToolCall {
                id: if call.id.is_empty() {
                    format!("call_{i}")
                } else {
                    call.id
                },
                ..call
            });
        }
        Ok(answer)
    }
}
