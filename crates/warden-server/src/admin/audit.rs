//! The audit trail over the API (AUD-2, AUD-4): records filtered by run, principal, agent,
//! tool, decision, code, kind and time, newest first in pages; the same as JSON Lines,
//! streamed oldest first; and the chain's verification — `warden audit` and
//! `warden audit verify`.

use std::sync::Arc;

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{Extension, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use warden_control::Caller;
use warden_control::audit::{self, End, Export};
use warden_core::audit::checkpoint::Checkpoint;
use warden_core::audit::{AuditRecord, NewRecord};
use warden_core::time::Millis;
use warden_mcp::Authenticated;
use warden_store::AuditFilter;

use super::access::{AUDIT_READ, own_authority};
use super::error::{ApiError, ErrorBody};
use crate::state::AppState;

/// The filters of `GET /api/v1/audit` and `GET /api/v1/audit/export` (AUD-4).
#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct AuditQuery {
    /// One run.
    run: Option<String>,
    /// One principal (`user:alice`).
    principal: Option<String>,
    /// One agent.
    agent: Option<String>,
    /// One tool (or admin action: `apply`, `token.create`, …).
    tool: Option<String>,
    /// `allow`, `deny`, `executed`, `failed`, …
    decision: Option<String>,
    /// One denial code (`KILL_SWITCH`, …).
    code: Option<String>,
    /// One record kind: `run`, `call`, `decision`, `outcome`, `admin`, `relay`.
    kind: Option<String>,
    /// At or after this time: milliseconds since the epoch, or an age (`1h`, `30m`).
    since: Option<String>,
    /// Before this time: milliseconds since the epoch, or an age.
    until: Option<String>,
    /// Text found, ignoring case (of ASCII letters only on SQLite), in the run or call id,
    /// principal, agent, tool, code or payload (`%` and `_` are literal).
    text: Option<String>,
    /// Listing only: records before this sequence number, the `next` of the previous page.
    before: Option<i64>,
    /// At most this many (default 100, at most 1000; for an export, all by default).
    limit: Option<i64>,
    /// Listing only: also count the records the filters match, on every page, as `matching`.
    count: Option<bool>,
}

fn time(field: &str, value: Option<&str>, now: Millis) -> Result<Option<Millis>, ApiError> {
    let Some(v) = value else {
        return Ok(None);
    };
    if let Ok(ms) = v.parse::<i64>() {
        return Ok(Some(Millis(ms)));
    }
    warden_core::time::parse_duration(v)
        .map(|age| {
            Some(Millis(now.0.saturating_sub(
                i64::try_from(age.as_millis()).unwrap_or(i64::MAX),
            )))
        })
        .map_err(|_| {
            ApiError::invalid(format!(
                "`{field}`: `{}` is neither milliseconds since the epoch nor an age (1h, 30m)",
                v.chars().take(64).collect::<String>()
            ))
        })
}

impl AuditQuery {
    fn filter(&self, now: Millis) -> Result<AuditFilter, ApiError> {
        if let Some(kind) = &self.kind
            && warden_core::audit::RecordKind::parse(kind).is_none()
        {
            return Err(ApiError::invalid(format!(
                "`kind`: `{}` is not a record kind; use run, call, decision, outcome, admin or relay",
                kind.chars().take(64).collect::<String>()
            )));
        }
        if self.limit.is_some_and(|l| l < 1) {
            return Err(ApiError::invalid("`limit`: must be at least 1"));
        }
        Ok(AuditFilter {
            run_id: self.run.clone(),
            principal: self.principal.clone(),
            agent: self.agent.clone(),
            tool: self.tool.clone(),
            decision: self.decision.clone(),
            code: self.code.clone(),
            kind: self.kind.clone(),
            since: time("since", self.since.as_deref(), now)?,
            until: time("until", self.until.as_deref(), now)?,
            contains: self.text.clone().filter(|t| !t.is_empty()),
            ..AuditFilter::default()
        })
    }
}

/// One audit record, as `warden audit -o json` prints it: the chain's fields, the payload as
/// JSON.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Record {
    /// Position in the chain, from 1, without gaps.
    seq: i64,
    /// When (ms since the epoch).
    at: i64,
    /// `run`, `call`, `decision`, `outcome`, `admin` or `relay`.
    kind: &'static str,
    /// The run (`admin` for operator actions).
    run_id: String,
    /// The call within the run.
    call_id: Option<String>,
    /// The acting principal.
    principal: Option<String>,
    /// The agent of the run.
    agent: Option<String>,
    /// The tool called, or the admin action.
    tool: Option<String>,
    /// `allow`, `deny`, `executed`, `failed`, …
    decision: Option<String>,
    /// The denial code.
    code: Option<String>,
    /// The details (arguments only as their hash and a redacted copy, AUD-3).
    #[schema(value_type = Object)]
    payload: Value,
    /// The previous record's hash.
    prev_hash: String,
    /// This record's hash.
    hash: String,
}

impl From<AuditRecord> for Record {
    fn from(r: AuditRecord) -> Self {
        let AuditRecord {
            seq,
            record,
            prev_hash,
            hash,
        } = r;
        let NewRecord {
            at,
            kind,
            run_id,
            call_id,
            principal,
            agent,
            tool,
            decision,
            code,
            payload,
        } = record;
        Self {
            seq,
            at: at.0,
            kind: kind.as_str(),
            run_id,
            call_id,
            principal,
            agent,
            tool,
            decision,
            code,
            payload: serde_json::from_str(&payload).unwrap_or(Value::String(payload)),
            prev_hash,
            hash,
        }
    }
}

/// One page of the trail, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct AuditPage {
    /// The records, newest first.
    records: Vec<Record>,
    /// The `before` of the next (older) page; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    next: Option<i64>,
    /// With `count=true`: how many records the filters match, on every page.
    #[serde(skip_serializing_if = "Option::is_none")]
    matching: Option<i64>,
}

/// Audit records matching the filters, newest first, one page at a time.
#[utoipa::path(get, path = "/audit", operation_id = "listAudit", tag = "audit",
    params(AuditQuery),
    responses(
        (status = 200, description = "a page of records, newest first", body = AuditPage),
        (status = 400, description = "a malformed filter, naming it", body = ErrorBody),
        (status = 403, description = "without `audit:read`", body = ErrorBody),
        (status = 503, description = "the store cannot be read", body = ErrorBody),
    ))]
pub(crate) async fn list(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    query: Result<Query<AuditQuery>, QueryRejection>,
) -> Result<Json<AuditPage>, ApiError> {
    let Query(query) = query?;
    let caller = Caller::Credential(own_authority(&state, &credential)?);
    let filter = query.filter(state.control.now())?;
    let page = audit::page(
        &state.control,
        &caller,
        filter,
        query.before,
        query.limit.unwrap_or(100),
        query.count == Some(true),
    )
    .await?;
    Ok(Json(AuditPage {
        records: page.records.into_iter().map(Record::from).collect(),
        next: page.next,
        matching: page.matching,
    }))
}

/// The next chunk of an export as JSON Lines, or `None` at the end.
async fn chunk(mut export: Export) -> Option<(Result<Bytes, std::io::Error>, Export)> {
    match export.next_chunk().await? {
        Ok(records) => {
            let mut lines = Vec::new();
            for r in records {
                if serde_json::to_writer(&mut lines, &Record::from(r)).is_ok() {
                    lines.push(b'\n');
                }
            }
            Some((Ok(Bytes::from(lines)), export))
        }
        Err(e) => {
            // Cut short: the answer ends without its last line, never with a wrong one.
            tracing::warn!(error = %e, "an audit export stopped: the store cannot be read");
            Some((Err(std::io::Error::other(e.to_string())), export))
        }
    }
}

/// The records matching the filters as JSON Lines, oldest first, streamed.
#[utoipa::path(get, path = "/audit/export", operation_id = "exportAudit", tag = "audit",
    params(AuditQuery),
    responses(
        (status = 200, description = "one `Record` JSON object per line, oldest first", body = String, content_type = "application/jsonl"),
        (status = 400, description = "a malformed filter, naming it", body = ErrorBody),
        (status = 403, description = "without `audit:read`", body = ErrorBody),
    ))]
pub(crate) async fn export(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    query: Result<Query<AuditQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query?;
    let caller = Caller::Credential(own_authority(&state, &credential)?);
    caller.require(AUDIT_READ, "exporting the audit trail")?;
    if query.before.is_some() {
        return Err(ApiError::invalid(
            "`before`: pages the listing only; an export runs oldest first to the end (narrow it with `since` and `until`)",
        ));
    }
    if query.count.is_some() {
        return Err(ApiError::invalid(
            "`count`: counts for the listing only; an export is every record that matches",
        ));
    }
    let export = audit::export(
        &state.control,
        &caller,
        query.filter(state.control.now())?,
        query.limit,
    )?;
    let stream = futures::stream::unfold(export, chunk);
    Ok((
        [(header::CONTENT_TYPE, "application/jsonl")],
        Body::from_stream(stream),
    )
        .into_response())
}

/// A signed checkpoint of the chain's head (`warden audit checkpoint export` prints one).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CheckpointDoc {
    /// The store whose chain it signed (its id); checkpoints of other stores are not
    /// considered, nor those that name none (taken before checkpoints named their store).
    store: Option<String>,
    /// The head's sequence number.
    seq: i64,
    /// The head's hash.
    hash: String,
    /// When it was taken (ms).
    at: i64,
    /// The public key that signed it (hex).
    key: String,
    /// The Ed25519 signature (hex).
    signature: String,
}

/// What to check the chain's end against: a trusted public key, or checkpoints kept outside
/// the database (their key is then the trusted one). Without either, only the chain is
/// verified.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct VerifyRequest {
    /// The audit key's public key (hex).
    public_key: Option<String>,
    /// Checkpoints kept outside the database, all signed by one key.
    #[serde(default)]
    checkpoints: Vec<CheckpointDoc>,
}

/// The first record that breaks the chain.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct ChainBreak {
    /// Its sequence number.
    seq: i64,
    /// What is wrong, for people.
    message: String,
}

/// The checkpoint the chain's end was checked against.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct Anchor {
    /// The head it signed.
    seq: i64,
    /// When it was taken (ms).
    at: i64,
}

/// The verification of the chain (AUD-2): a value, refusals included.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Verification {
    /// Whether the chain verifies and, when a trusted key was given, its end matches the
    /// latest checkpoint of that key.
    intact: bool,
    /// The records verified, when the chain holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    records: Option<i64>,
    /// Where the chain breaks.
    #[serde(rename = "break", skip_serializing_if = "Option::is_none")]
    chain_break: Option<ChainBreak>,
    /// The checkpoint its end matches.
    #[serde(skip_serializing_if = "Option::is_none")]
    anchor: Option<Anchor>,
    /// What the checkpoints show to be wrong (truncated, rewritten, forged).
    #[serde(skip_serializing_if = "Option::is_none")]
    anchor_problem: Option<String>,
    /// The verification in one line, as `warden audit verify` prints it.
    message: String,
}

/// Verifies the whole chain and, against a trusted key, its end.
#[utoipa::path(post, path = "/audit/verify", operation_id = "verifyAudit", tag = "audit",
    request_body(content = Option<VerifyRequest>, description = "optional: what to anchor the chain's end with"),
    responses(
        (status = 200, description = "the verification, intact or not", body = Verification),
        (status = 400, description = "malformed checkpoints or key, naming the field", body = ErrorBody),
        (status = 403, description = "without `audit:read`", body = ErrorBody),
    ))]
pub(crate) async fn verify(
    State(state): State<Arc<AppState>>,
    Extension(Authenticated(credential)): Extension<Authenticated>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Verification>, ApiError> {
    let caller = Caller::Credential(own_authority(&state, &credential)?);
    caller.require(AUDIT_READ, "verifying the audit trail")?;
    let body = body?;
    let req: VerifyRequest = if body.iter().all(u8::is_ascii_whitespace) {
        VerifyRequest::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| {
            ApiError::invalid(format!("the body is not a verification request: {e}"))
        })?
    };
    let checkpoints: Vec<Checkpoint> = req
        .checkpoints
        .into_iter()
        .map(|c| Checkpoint {
            store: c.store,
            seq: c.seq,
            hash: c.hash,
            at: Millis(c.at),
            key: c.key,
            signature: c.signature,
        })
        .collect();
    let verification =
        audit::verify(&state.control, &caller, req.public_key, checkpoints, |_| {}).await?;
    let (records, end) = match verification {
        audit::Verification::Broken(b) => {
            return Ok(Json(Verification {
                intact: false,
                records: None,
                message: b.to_string(),
                chain_break: Some(ChainBreak {
                    seq: b.seq,
                    message: b.to_string(),
                }),
                anchor: None,
                anchor_problem: None,
            }));
        }
        audit::Verification::Intact { records, end } => (records, end),
    };
    let (intact, anchor, anchor_problem, message) = match end {
        End::Unanchored => (
            true,
            None,
            None,
            format!(
                "audit chain verified: {records} records; its end is not anchored (give `publicKey` or `checkpoints`)"
            ),
        ),
        End::Anchored(c) => (
            true,
            Some(Anchor {
                seq: c.seq,
                at: c.at.0,
            }),
            None,
            format!(
                "audit chain verified: {records} records, its end anchored by the checkpoint of seq {}",
                c.seq
            ),
        ),
        End::NoCheckpoint => (
            true,
            None,
            None,
            format!(
                "audit chain verified: {records} records; no checkpoint signed by the audit key yet"
            ),
        ),
        End::Problem(problem) => (false, None, Some(problem.to_string()), problem.to_string()),
    };
    Ok(Json(Verification {
        intact,
        records: Some(records),
        chain_break: None,
        anchor,
        anchor_problem,
        message,
    }))
}
