//! `kind: Model`: an OpenAI-compatible chat-completions endpoint that agents are talked to
//! through (RUN-9). An `Agent` names its `model`.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::name::Name;

/// Tool rounds of one turn when a Model does not say (RUN-9).
pub const DEFAULT_MAX_TOOL_ROUNDS: u32 = 8;

/// The most tool rounds a Model may allow in one turn.
pub const MOST_TOOL_ROUNDS: u32 = 100;

/// How long one answer of a model may take when a Model does not say.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// `kind: Model`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelSpec {
    /// The model's name in Warden.
    pub name: Name,
    /// The API base the chat-completions endpoint is under: `http://127.0.0.1:11434/v1`
    /// (Ollama), `http://127.0.0.1:8000/v1` (vLLM), `https://api.openai.com/v1`.
    pub url: String,
    /// The model, as that endpoint names it (`llama3.1`, `gpt-4o-mini`).
    pub model: String,
    /// The API key: a `${secret:NAME}` or `${env:NAME}` reference, never from a client
    /// (FED-3); none for a local server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// At most this many rounds of tool calls in one turn (default 8, at most 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tool_rounds: Option<u32>,
    /// How long one answer of the model may take (default 2m).
    #[serde(
        default,
        with = "crate::time::human_duration",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub timeout: Option<Duration>,
}

impl ModelSpec {
    /// The tool rounds one turn may take.
    pub fn tool_rounds(&self) -> u32 {
        self.max_tool_rounds.unwrap_or(DEFAULT_MAX_TOOL_ROUNDS)
    }

    /// How long one answer may take.
    pub fn answer_timeout(&self) -> Duration {
        self.timeout.unwrap_or(DEFAULT_TIMEOUT)
    }

    /// What is wrong with it, by field (empty when nothing is).
    pub(super) fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if !(self.url.starts_with("http://") || self.url.starts_with("https://")) {
            out.push((
                "url",
                format!(
                    "`{}` is not an http:// or https:// URL; give the API base, e.g. \
                     `http://127.0.0.1:11434/v1`",
                    crate::url_credentials::redact(&self.url)
                ),
            ));
        } else if crate::url_credentials::has_credentials(&self.url) {
            out.push((
                "url",
                format!(
                    "`{}` carries credentials; give the key as `apiKey: \"${{secret:NAME}}\"`",
                    crate::url_credentials::redact(&self.url)
                ),
            ));
        }
        if self.model.trim().is_empty() {
            out.push(("model", "name the model the endpoint serves".into()));
        }
        if let Some(key) = &self.api_key {
            if !super::reference::is_sole_reference(key) {
                out.push((
                    "apiKey",
                    "write a reference, `${secret:NAME}` or `${env:NAME}`, not the key itself"
                        .into(),
                ));
            } else if let Err(e) = super::reference::check_reference(key) {
                out.push(("apiKey", e));
            }
        }
        match self.max_tool_rounds {
            Some(0) => out.push(("maxToolRounds", "must be at least 1".into())),
            Some(n) if n > MOST_TOOL_ROUNDS => out.push((
                "maxToolRounds",
                format!("must be at most {MOST_TOOL_ROUNDS}"),
            )),
            _ => {}
        }
        if self.timeout.is_some_and(|t| t.is_zero()) {
            out.push(("timeout", "must be greater than zero".into()));
        }
        out
    }
}
