//! Conversions between database rows and core types, at the edge (STYLE: conversions live
//! in the adapter crate).

use warden_core::audit::{AuditRecord, NewRecord, RecordKind};
use warden_core::principal::{Credential, CredentialKind, Principal, TokenHash};
use warden_core::time::Millis;

use warden_core::config::Kind;

use crate::error::StoreError;

/// A resource as stored: its kind, key and canonical JSON.
pub(crate) type ResourceRow = (Kind, String, String);

/// A filter over the audit trail (AUD-4).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuditFilter {
    /// One run.
    pub run_id: Option<String>,
    /// One principal (`user:alice`).
    pub principal: Option<String>,
    /// One agent.
    pub agent: Option<String>,
    /// One tool (or admin action).
    pub tool: Option<String>,
    /// `allow`, `deny`, `executed` or `failed`.
    pub decision: Option<String>,
    /// A denial code.
    pub code: Option<String>,
    /// A record kind.
    pub kind: Option<String>,
    /// At or after this time.
    pub since: Option<Millis>,
    /// Before this time.
    pub until: Option<Millis>,
    /// Text found, ignoring case (of ASCII letters only on SQLite), in the run or call id, the
    /// principal, the agent, the tool, the code or the payload (a free-text search).
    pub contains: Option<String>,
    /// A cursor: only records after this sequence number in the listing's order — higher
    /// sequence numbers oldest first, lower ones with `newest_first` — to page through a
    /// long listing from the last record of the page before.
    pub after_seq: Option<i64>,
    /// At most this many (default 100).
    pub limit: Option<i64>,
    /// Newest first.
    pub newest_first: bool,
}

#[derive(Debug, sqlx::FromRow)]
pub(crate) struct CredentialRow {
    pub(crate) id: String,
    pub(crate) hash: String,
    pub(crate) kind: String,
    pub(crate) principal: String,
    pub(crate) projects: Option<String>,
    pub(crate) scopes: Option<String>,
    pub(crate) created_at: i64,
    pub(crate) expires_at: Option<i64>,
    pub(crate) revoked_at: Option<i64>,
    pub(crate) description: Option<String>,
}

fn kind_str(kind: CredentialKind) -> &'static str {
    kind.as_str()
}

fn corrupt(id: &str, what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("credential `{id}`: {what}: {e}"))
}

impl CredentialRow {
    pub(crate) fn from_credential(c: &Credential, hash: TokenHash) -> Result<Self, StoreError> {
        let json =
            |v: serde_json::Result<String>| v.map_err(|e| StoreError::Invalid(e.to_string()));
        Ok(Self {
            id: c.id.clone(),
            hash: hash.to_hex(),
            kind: kind_str(c.kind).to_owned(),
            principal: json(serde_json::to_string(&c.principal))?,
            projects: c
                .projects
                .as_ref()
                .map(|p| json(serde_json::to_string(p)))
                .transpose()?,
            scopes: c
                .scopes
                .as_ref()
                .map(|s| json(serde_json::to_string(s)))
                .transpose()?,
            created_at: c.created_at.0,
            expires_at: c.expires_at.map(|m| m.0),
            revoked_at: c.revoked_at.map(|m| m.0),
            description: c.description.clone(),
        })
    }

    pub(crate) fn into_credential(self) -> Result<Credential, StoreError> {
        let kind = match self.kind.as_str() {
            "api_key" => CredentialKind::ApiKey,
            "run" => CredentialKind::Run,
            other => return Err(corrupt(&self.id, "kind", other)),
        };
        let principal: Principal =
            serde_json::from_str(&self.principal).map_err(|e| corrupt(&self.id, "principal", e))?;
        // No credential names an agent role: it acts only inside Warden (WORK-4).
        if matches!(principal, Principal::AgentRole { .. }) {
            return Err(corrupt(&self.id, "principal", &self.principal));
        }
        let projects = self
            .projects
            .as_deref()
            .map(serde_json::from_str)
            .transpose()
            .map_err(|e| corrupt(&self.id, "projects", e))?;
        let scopes = self
            .scopes
            .as_deref()
            .map(serde_json::from_str)
            .transpose()
            .map_err(|e| corrupt(&self.id, "scopes", e))?;
        Ok(Credential {
            id: self.id,
            kind,
            principal,
            projects,
            scopes,
            created_at: Millis(self.created_at),
            expires_at: self.expires_at.map(Millis),
            revoked_at: self.revoked_at.map(Millis),
            description: self.description,
            groups: Vec::new(),
        })
    }
}

#[derive(Debug, sqlx::FromRow)]
pub(crate) struct AuditRow {
    pub(crate) seq: i64,
    pub(crate) at: i64,
    pub(crate) kind: String,
    pub(crate) run_id: String,
    pub(crate) call_id: Option<String>,
    pub(crate) principal: Option<String>,
    pub(crate) agent: Option<String>,
    pub(crate) tool: Option<String>,
    pub(crate) decision: Option<String>,
    pub(crate) code: Option<String>,
    pub(crate) payload: String,
    pub(crate) prev_hash: String,
    pub(crate) hash: String,
}

impl AuditRow {
    pub(crate) fn into_record(self) -> Result<AuditRecord, StoreError> {
        let kind = RecordKind::parse(&self.kind).ok_or_else(|| {
            StoreError::Corrupt(format!(
                "audit record {} has an unknown kind `{}`",
                self.seq, self.kind
            ))
        })?;
        Ok(AuditRecord {
            seq: self.seq,
            record: NewRecord {
                at: Millis(self.at),
                kind,
                run_id: self.run_id,
                call_id: self.call_id,
                principal: self.principal,
                agent: self.agent,
                tool: self.tool,
                decision: self.decision,
                code: self.code,
                payload: self.payload,
            },
            prev_hash: self.prev_hash,
            hash: self.hash,
        })
    }
}

pub(crate) const AUDIT_COLUMNS: &str = "seq, at, kind, run_id, call_id, principal, agent, tool, decision, code, payload, prev_hash, hash";

/// The lifecycle of one unattended agent run (RUN-2 `agent` mode).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, sqlx::FromRow)]
#[serde(rename_all = "camelCase")]
pub struct AgentRun {
    /// The run's id (also the MCP run id of its calls).
    pub id: String,
    /// The agent.
    pub agent: String,
    /// `manual` or `schedule`.
    pub trigger: String,
    /// For scheduled runs: which schedule (`<index>:<cron>`).
    pub schedule_key: Option<String>,
    /// For scheduled runs: the time the schedule fired for (ms).
    pub fire_at: Option<i64>,
    /// `queued`, `running`, `succeeded`, `failed`, `timed_out` or `stopped`.
    pub status: String,
    /// Who asked, by reference (APR-3), as JSON.
    pub requested_by: String,
    /// The run credential's id (revoked when the run ends).
    pub credential_id: Option<String>,
    /// When it was queued (ms).
    pub queued_at: i64,
    /// When the runner started (ms).
    pub started_at: Option<i64>,
    /// When it ended (ms).
    pub finished_at: Option<i64>,
    /// The runner's exit code.
    pub exit_code: Option<i32>,
    /// Why it failed, when it did.
    pub error: Option<String>,
    /// The task this run is a session of, if any (it may have been deleted since).
    pub task_id: Option<String>,
    /// What the runner printed, stdout and stderr as read: the last 8 KiB, once it ended.
    #[serde(default)]
    pub output: Option<String>,
}

pub(crate) const AGENT_RUN_COLUMNS: &str = "id, agent, trigger, schedule_key, fire_at, status, requested_by, credential_id, queued_at, started_at, finished_at, exit_code, error, task_id, output";
