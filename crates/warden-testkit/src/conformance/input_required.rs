//! The fixture's 2026-07-28 tools and prompt (suite 0.2.0-alpha.12, SEP-2322 and SEP-2575):
//! `test_input_required_result_*` answer `input_required` (elicitation, sampling, roots) and
//! finish on the retry; `requestState` is sealed with a keyed SHA-256, so a tampered one is
//! refused with -32602. In 2025-11-25 they run the same rounds within one call, asking by
//! server-to-client request ([`call_tool`]). The `server-stateless` diagnostics (`test_missing_capability`,
//! `test_streaming_elicitation`, `test_logging_tool` — served by the server, which logs —,
//! `test_trigger_*_change`) and a tool with an `x-mcp-header` parameter (`test_custom_header`)
//! are here too.
//!
//! [`Shared`] is the state every per-request server shares: listen streams, tasks, the key.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, GetPromptResponse,
    GetPromptResult, InputRequests, InputRequiredResult, JsonObject, PromptMessage, Role, Tool,
};
use rmcp::service::{RequestContext, SubscriptionSink};
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::Mutex;

use super::catalog::{from_json, no_args, schema, text};

/// State shared by every ConformanceServer instance (one per session / stateless request).
pub(super) struct Shared {
    secret: String,
    next: AtomicU64,
    sinks: Mutex<Vec<(u64, SubscriptionSink)>>,
    pub(super) tasks: rmcp::task_manager::TaskManager,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Shared")
    }
}

impl Default for Shared {
    fn default() -> Self {
        Self {
            secret: uuid::Uuid::new_v4().to_string(),
            next: AtomicU64::new(0),
            sinks: Mutex::new(Vec::new()),
            tasks: Default::default(),
        }
    }
}

impl Shared {
    pub(super) async fn add_sink(&self, sink: SubscriptionSink) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.sinks.lock().await.push((id, sink));
        id
    }
    pub(super) async fn remove_sink(&self, id: u64) {
        self.sinks.lock().await.retain(|(i, _)| *i != id);
    }
    pub(super) async fn tools_changed(&self) {
        let sinks: Vec<_> = self
            .sinks
            .lock()
            .await
            .iter()
            .map(|(_, s)| s.clone())
            .collect();
        for s in sinks {
            let _ = s.notify_tool_list_changed().await; // the sink drops it if not accepted
        }
    }
    pub(super) async fn prompts_changed(&self) {
        let sinks: Vec<_> = self
            .sinks
            .lock()
            .await
            .iter()
            .map(|(_, s)| s.clone())
            .collect();
        for s in sinks {
            let _ = s.notify_prompt_list_changed().await;
        }
    }
    fn mac(&self, payload: &str) -> String {
        let mut h = Sha256::new();
        h.update(self.secret.as_bytes());
        h.update(b"\0");
        h.update(payload.as_bytes());
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
    /// `payload.mac`
    fn seal(&self, payload: &str) -> String {
        format!("{payload}.{}", self.mac(payload))
    }
    fn open(&self, state: &str) -> Result<String, McpError> {
        let bad = || McpError::invalid_params("requestState failed its integrity check", None);
        let (payload, mac) = state.rsplit_once('.').ok_or_else(bad)?;
        if self.mac(payload) != mac {
            return Err(bad());
        }
        Ok(payload.to_owned())
    }
}

pub(super) fn is_2026(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.protocol_version()
        .is_some_and(|v| v.as_str() >= "2026-07-28")
}

pub(super) fn tools() -> Vec<Tool> {
    let t = |n: &str, d: &str| Tool::new(n.to_owned(), d.to_owned(), no_args());
    vec![
        t(
            "test_input_required_result_elicitation",
            "SEP-2322: asks for user_name by elicitation",
        ),
        t(
            "test_input_required_result_sampling",
            "SEP-2322: asks capital_question by sampling",
        ),
        t(
            "test_input_required_result_list_roots",
            "SEP-2322: asks client_roots by roots/list",
        ),
        t(
            "test_input_required_result_request_state",
            "SEP-2322: round-trips requestState",
        ),
        t(
            "test_input_required_result_multiple_inputs",
            "SEP-2322: three input requests at once",
        ),
        t(
            "test_input_required_result_multi_round",
            "SEP-2322: two rounds of input",
        ),
        t(
            "test_input_required_result_tampered_state",
            "SEP-2322: rejects tampered requestState",
        ),
        t(
            "test_input_required_result_capabilities",
            "SEP-2322: asks only for declared client capabilities",
        ),
        t(
            "test_missing_capability",
            "SEP-2575: needs the client's sampling capability",
        ),
        t(
            "test_streaming_elicitation",
            "SEP-2575: elicits via InputRequiredResult, never a request on the stream",
        ),
        t(
            "test_logging_tool",
            "SEP-2575: logs only when _meta logLevel asks for it",
        ),
        t(
            "test_trigger_tool_change",
            "SEP-2575: announces tools/list_changed on listen streams",
        ),
        t(
            "test_trigger_prompt_change",
            "SEP-2575: announces prompts/list_changed on listen streams",
        ),
        Tool::new(
            "test_custom_header",
            "SEP-2243: a parameter mirrored in the Mcp-Param-Region header",
            schema(json!({
                "type": "object",
                "properties": {"region": {"type": "string", "description": "Region", "x-mcp-header": "Region"}},
                "required": ["region"]
            })),
        ),
    ]
}

fn elicit(message: &str, field: &str, ty: &str) -> Value {
    json!({"method": "elicitation/create", "params": {
        "mode": "form",
        "message": message,
        "requestedSchema": {"type": "object", "properties": {field: {"type": ty}}, "required": [field]}
    }})
}
fn sample(text: &str, max: u32) -> Value {
    json!({"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
        "maxTokens": max
    }})
}
fn roots() -> Value {
    json!({"method": "roots/list", "params": {}})
}

/// An `input_required` answer asking `requests`, carrying `state`.
fn asking(requests: Value, state: Option<String>) -> Result<Option<CallToolResponse>, McpError> {
    Ok(Some(ask(requests, state)?.into()))
}

fn ask(requests: Value, state: Option<String>) -> Result<InputRequiredResult, McpError> {
    let requests: InputRequests = from_json(requests)?;
    Ok(InputRequiredResult::new(Some(requests), state))
}

/// An accepted elicitation's `content[field]` as a string.
fn accepted(responses: &JsonObject, key: &str, field: &str) -> Option<String> {
    let r = responses.get(key)?.as_object()?;
    if r.get("action")?.as_str()? != "accept" {
        return None;
    }
    let v = r.get("content")?.as_object()?.get(field)?;
    Some(
        v.as_str()
            .map(str::to_owned)
            .unwrap_or_else(|| v.to_string()),
    )
}
fn sampled(responses: &JsonObject, key: &str) -> Option<String> {
    let c = responses.get(key)?.as_object()?.get("content")?;
    c.get("text").and_then(Value::as_str).map(str::to_owned)
}
fn listed_roots(responses: &JsonObject, key: &str) -> Option<Vec<String>> {
    let r = responses.get(key)?.as_object()?.get("roots")?.as_array()?;
    Some(
        r.iter()
            .filter_map(|x| x.get("uri")?.as_str().map(str::to_owned))
            .collect(),
    )
}

/// The MRTR / diagnostic tools; `None` when `name` is not one of them.
///
/// In 2026-07-28 each call is one round: an `input_required` answer, or the result. In
/// 2025-11-25 the same rounds run in one call: what a round would ask is asked as
/// server-to-client requests on the call's stream (a round's requests at once), and a request
/// the client refuses takes its capability out of what the next round may ask for.
pub(super) async fn call_tool(
    shared: &Arc<Shared>,
    req: &CallToolRequestParams,
    ctx: &RequestContext<RoleServer>,
) -> Result<Option<CallToolResponse>, McpError> {
    let responses: JsonObject = req
        .input_responses
        .clone()
        .map(|m| m.into_iter().collect())
        .unwrap_or_default();
    let caps = ctx.client_capabilities().unwrap_or_default();
    if is_2026(ctx) {
        return round(
            shared,
            req,
            &responses,
            req.request_state.as_deref(),
            &caps,
            ctx,
        )
        .await;
    }
    let mut caps = caps;
    let mut responses = responses;
    let mut state: Option<String> = None;
    for _ in 0..MAX_2025_ROUNDS {
        let answer = round(shared, req, &responses, state.as_deref(), &caps, ctx).await?;
        let Some(CallToolResponse::InputRequired(needed)) = answer else {
            return Ok(answer);
        };
        responses = ask_on_the_stream(ctx, &needed, &mut caps).await;
        state = needed.request_state;
    }
    Err(McpError::internal_error(
        "too many rounds of questions",
        None,
    ))
}

/// How many rounds a 2025-11-25 call runs at most.
const MAX_2025_ROUNDS: usize = 10;

/// A round's questions as 2025-11-25 requests, all at once; the answers by key. A refused
/// question takes its capability out of `caps`.
pub(super) async fn ask_on_the_stream(
    ctx: &RequestContext<RoleServer>,
    needed: &InputRequiredResult,
    caps: &mut ClientCapabilities,
) -> JsonObject {
    let asked = needed
        .input_requests
        .iter()
        .flatten()
        .map(|(key, request)| async move {
            let request = serde_json::to_value(request).unwrap_or_default();
            let method = request
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let params = request.get("params").cloned();
            let sent = rmcp::model::ServerRequest::CustomRequest(rmcp::model::CustomRequest::new(
                method.clone(),
                params,
            ));
            let answer = ctx
                .peer
                .send_request(sent)
                .await
                .ok()
                .and_then(|r| serde_json::to_value(r).ok());
            (key.clone(), method, answer)
        });
    let mut responses = JsonObject::new();
    for (key, method, answer) in futures::future::join_all(asked).await {
        match answer {
            Some(answer) => {
                responses.insert(key, answer);
            }
            None => match method.as_str() {
                "elicitation/create" => caps.elicitation = None,
                "sampling/createMessage" => caps.sampling = None,
                _ => caps.roots = None,
            },
        }
    }
    responses
}

/// One round of an MRTR / diagnostic tool.
async fn round(
    shared: &Arc<Shared>,
    req: &CallToolRequestParams,
    responses: &JsonObject,
    state: Option<&str>,
    caps: &ClientCapabilities,
    ctx: &RequestContext<RoleServer>,
) -> Result<Option<CallToolResponse>, McpError> {
    let name = req.name.as_ref();
    let modern = is_2026(ctx);
    let responses = responses.clone();
    let done = |t: String| Ok(Some(text(t).into()));
    match name {
        "test_input_required_result_elicitation" => {
            match accepted(&responses, "user_name", "name") {
                Some(n) => done(format!("Hello, {n}!")),
                None => asking(
                    json!({"user_name": elicit("What is your name?", "name", "string")}),
                    None,
                ),
            }
        }
        "test_input_required_result_sampling" => match sampled(&responses, "capital_question") {
            Some(a) => done(format!("LLM answered: {a}")),
            None => asking(
                json!({"capital_question": sample("What is the capital of France?", 100)}),
                None,
            ),
        },
        "test_input_required_result_list_roots" => match listed_roots(&responses, "client_roots") {
            Some(r) => done(format!("Client roots: {}", r.join(", "))),
            None => asking(json!({"client_roots": roots()}), None),
        },
        "test_input_required_result_request_state"
        | "test_input_required_result_tampered_state" => {
            if let Some(s) = state {
                let payload = shared.open(s)?; // tampered → -32602
                if payload != format!("{name}:1") {
                    return Err(McpError::invalid_params(
                        "requestState belongs to another request",
                        None,
                    ));
                }
                if accepted(&responses, "confirm", "ok").is_some() {
                    return done("state-ok: requestState verified".into());
                }
            }
            let st = shared.seal(&format!("{name}:1"));
            asking(
                json!({"confirm": elicit("Please confirm", "ok", "boolean")}),
                Some(st),
            )
        }
        "test_input_required_result_multiple_inputs" => {
            if let Some(s) = state {
                shared.open(s)?;
            }
            let n = accepted(&responses, "user_name", "name");
            let g = sampled(&responses, "greeting");
            let r = listed_roots(&responses, "client_roots");
            if let (Some(n), Some(g), Some(r)) = (&n, &g, &r) {
                return done(format!("name={n}, greeting={g}, roots={}", r.join(",")));
            }
            let mut want = serde_json::Map::new();
            if n.is_none() {
                want.insert(
                    "user_name".into(),
                    elicit("What is your name?", "name", "string"),
                );
            }
            if g.is_none() {
                want.insert("greeting".into(), sample("Generate a greeting", 50));
            }
            if r.is_none() {
                want.insert("client_roots".into(), roots());
            }
            let st = shared.seal(&format!("{name}:1"));
            asking(Value::Object(want), Some(st))
        }
        "test_input_required_result_multi_round" => {
            let round = match state {
                Some(s) => shared.open(s)?,
                None => String::new(),
            };
            if round == format!("{name}:2:") || round.starts_with(&format!("{name}:2:")) {
                if let Some(c) = accepted(&responses, "step2", "color") {
                    let who = round.splitn(3, ':').nth(2).unwrap_or("").to_owned();
                    return done(format!("{who} likes {c}"));
                }
                let st = shared.seal(&round);
                return asking(
                    json!({"step2": elicit("Step 2: What is your favorite color?", "color", "string")}),
                    Some(st),
                );
            }
            if round == format!("{name}:1")
                && let Some(n) = accepted(&responses, "step1", "name")
            {
                let st = shared.seal(&format!("{name}:2:{n}"));
                return asking(
                    json!({"step2": elicit("Step 2: What is your favorite color?", "color", "string")}),
                    Some(st),
                );
            }
            let st = shared.seal(&format!("{name}:1"));
            asking(
                json!({"step1": elicit("Step 1: What is your name?", "name", "string")}),
                Some(st),
            )
        }
        "test_input_required_result_capabilities" => {
            if !responses.is_empty() {
                return done(format!("received {} input response(s)", responses.len()));
            }
            let mut want = serde_json::Map::new();
            if caps.sampling.is_some() {
                want.insert(
                    "capital_question".into(),
                    sample("What is the capital of France?", 100),
                );
            }
            if caps.elicitation.is_some() {
                want.insert(
                    "user_name".into(),
                    elicit("What is your name?", "name", "string"),
                );
            }
            if caps.roots.is_some() {
                want.insert("client_roots".into(), roots());
            }
            if want.is_empty() {
                let required: ClientCapabilities = from_json(json!({"sampling": {}}))?;
                return Err(McpError::missing_required_client_capability(required));
            }
            asking(Value::Object(want), None)
        }
        "test_missing_capability" => {
            if let Some(a) = sampled(&responses, "needed") {
                return done(format!("the client sampled: {a}"));
            }
            if caps.sampling.is_none() {
                let required: ClientCapabilities = from_json(json!({"sampling": {}}))?;
                return Err(McpError::missing_required_client_capability(required));
            }
            asking(json!({"needed": sample("Say anything", 10)}), None)
        }
        "test_streaming_elicitation" => match accepted(&responses, "confirm", "ok") {
            Some(v) => done(format!("confirmed: {v}")),
            None => asking(
                json!({"confirm": elicit("Continue?", "ok", "boolean")}),
                None,
            ),
        },
        "test_trigger_tool_change" => {
            shared.tools_changed().await;
            if !modern {
                let _ = ctx.peer.notify_tool_list_changed().await;
            }
            done("tools/list_changed announced".into())
        }
        "test_trigger_prompt_change" => {
            shared.prompts_changed().await;
            if !modern {
                let _ = ctx.peer.notify_prompt_list_changed().await;
            }
            done("prompts/list_changed announced".into())
        }
        "test_custom_header" => {
            let region = req
                .arguments
                .as_ref()
                .and_then(|a| a.get("region"))
                .and_then(Value::as_str)
                .unwrap_or("");
            done(format!("region={region}"))
        }
        _ => Ok(None),
    }
}

/// The MRTR prompt; `None` for any other. In 2025-11-25 its rounds run in one request, as
/// for the tools ([`call_tool`]).
pub(super) async fn prompt_get(
    name: &str,
    responses: Option<&JsonObject>,
    ctx: &RequestContext<RoleServer>,
) -> Result<Option<GetPromptResponse>, McpError> {
    if name != "test_input_required_result_prompt" {
        return Ok(None);
    }
    let mut responses = responses.cloned().unwrap_or_default();
    if is_2026(ctx) {
        return prompt_round(&responses).map(Some);
    }
    let mut caps = ctx.client_capabilities().unwrap_or_default();
    for _ in 0..MAX_2025_ROUNDS {
        match prompt_round(&responses)? {
            GetPromptResponse::InputRequired(needed) => {
                responses = ask_on_the_stream(ctx, &needed, &mut caps).await;
            }
            other => return Ok(Some(other)),
        }
    }
    Err(McpError::internal_error(
        "too many rounds of questions",
        None,
    ))
}

fn prompt_round(responses: &JsonObject) -> Result<GetPromptResponse, McpError> {
    match accepted(responses, "user_context", "context") {
        Some(c) => Ok(
            GetPromptResult::new(vec![PromptMessage::new_text(
                Role::User,
                format!("Prompt with context: {c}"),
            )])
            .into()),
        None => Ok(ask(
            json!({"user_context": elicit("What context should the prompt use?", "context", "string")}),
            None,
        )?
        .into()),
    }
}
