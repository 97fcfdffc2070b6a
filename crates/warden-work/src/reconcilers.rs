//! Reconciliation (WORK-4): the periodic job of a `kind: Reconciler`.
//!
//! On its schedule a Reconciler looks at the epics of its project that are not `done` or
//! `archived`, and asks for two kinds of move:
//!
//! - an epic task `in_progress` with no activity for `staleAfter` goes back to `ready`
//!   (`work__move_task`), which stops its task's sessions;
//! - an `open` epic with tasks, all of them `merged`, goes to `done` (`work__update_epic`).
//!
//! Activity is what [`crate::epics::stale`] says it is; the move checks it again when it runs.
//!
//! It asks through the governed pipeline, as the agent role `agentRole:<role>/reconciler:<name>`
//! (APR-3): exactly `role`'s capabilities, in its project only, its autonomy capped at
//! `autonomyCap` — so a move is audited like any call, refused when the role lacks the
//! capability, and parked for approval (with agent-role provenance) at a cap of 1. A move
//! already waiting for a decision is not asked for again. One pass runs per scheduled time
//! across replicas (a counter in the store decides).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;
use warden_core::approval::ApprovalStatus;
use warden_core::authority::Authority;
use warden_core::config::ReconcilerSpec;
use warden_core::contract::{ToolOutput, Verdict};
use warden_core::pipeline::RunState;
use warden_core::principal::{Credential, Principal};
use warden_core::time::Millis;
use warden_core::work::{EpicState, EpicTaskState, State as _};
use warden_store::{ApprovalFilter, EpicFilter, Store, StoreError};

use crate::agents::Gateway;
use crate::epics::stale;
use crate::fire_times::FireTimes;

/// The most epics of its project in each state (`draft`, `open`) one pass looks at (the
/// most recently changed).
const EPICS_PER_PASS: i64 = 10_000;

/// Why a pass could not run.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// No such Reconciler.
    #[error("no Reconciler named `{0}`")]
    Unknown(String),
    /// Its agent role has no authority (its role is gone, or the configuration is not
    /// loaded).
    #[error("Reconciler `{name}` cannot act: {reason}")]
    NoAuthority {
        /// The Reconciler.
        name: String,
        /// Why.
        reason: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One move a pass asked for, and what became of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Asked {
    /// The epic task (`ept_…`) or epic (`epc_…`).
    pub id: String,
    /// Where it was to move.
    pub to: String,
    /// `executed`, `pending_approval`, `denied`, `failed` (the work service said no), or
    /// `waiting` (an earlier pass's move still waits for its decision; not asked again).
    pub status: String,
    /// The approval, when parked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<String>,
    /// The refusal's code, when denied or failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// What happened, for people.
    pub message: String,
}

/// What one pass did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pass {
    /// The Reconciler.
    pub reconciler: String,
    /// The run its calls were recorded under (`run_…`).
    pub run_id: String,
    /// When it looked.
    pub at: Millis,
    /// The moves it asked for.
    pub asked: Vec<Asked>,
}

/// The Reconcilers of a server: their passes, by hand or on their schedules.
#[derive(Debug)]
pub struct Reconcilers {
    gateway: Arc<dyn Gateway>,
    next_fire: Mutex<FireTimes>,
}

impl Reconcilers {
    /// The Reconcilers acting through `gateway`.
    pub fn new(gateway: Arc<dyn Gateway>) -> Self {
        Self {
            gateway,
            next_fire: Mutex::default(),
        }
    }

    /// One pass of the Reconciler `name`, now.
    pub async fn reconcile(&self, name: &str) -> Result<Pass, ReconcileError> {
        let policy = self.gateway.policy();
        let spec = policy
            .reconciler(name)
            .ok_or_else(|| ReconcileError::Unknown(name.to_owned()))?
            .clone();
        let principal = Principal::AgentRole {
            role: spec.role.clone(),
            intent: spec.intent(),
        };
        let no_authority = |reason: String| ReconcileError::NoAuthority {
            name: name.to_owned(),
            reason,
        };
        let authority = self
            .gateway
            .authority(&Credential::synthetic(&spec.intent(), principal), None)
            .map_err(|e| no_authority(e.to_string()))?;
        if let Some(reason) = &authority.withheld {
            return Err(no_authority(reason.clone()));
        }
        let now = self.gateway.clock().now();
        let store = self.gateway.store().clone();
        let run = RunState::new(format!("run_{}", uuid::Uuid::now_v7().simple()));
        let waiting = waiting(&store, &authority).await?;
        let mut asked = Vec::new();
        for (tool, id, to) in due_moves(&store, &spec, now).await? {
            if waiting.contains(&(tool, id.clone())) {
                asked.push(Asked {
                    status: "waiting".into(),
                    approval_id: None,
                    code: None,
                    message: "an earlier pass's move waits for its decision".into(),
                    id,
                    to: to.into(),
                });
                continue;
            }
            let args = match tool {
                MOVE_TASK => json!({"id": id, "to": to}),
                _ => json!({"id": id, "status": to}),
            };
            let Value::Object(args) = args else {
                continue;
            };
            let outcome = self.gateway.call(&authority, &run, tool, args).await;
            asked.push(asked_of(id, to, &outcome.verdict));
        }
        // Credentials of stopped sessions die at once on this server, not at its next poll.
        if asked.iter().any(|a| a.status == "executed") {
            self.gateway.refresh().await;
        }
        tracing::info!(reconciler = %spec.name, run = %run.id(), asked = asked.len(), "reconciler pass");
        Ok(Pass {
            reconciler: spec.name.to_string(),
            run_id: run.id().to_owned(),
            at: now,
            asked,
        })
    }

    /// Runs the Reconcilers on their schedules until `cancel`, checking every second.
    pub async fn schedule(self: Arc<Self>, cancel: CancellationToken) {
        let start = self.gateway.clock().now();
        crate::fire_times::every_second(start, cancel, |since| {
            let this = self.clone();
            async move { this.fire_due(since).await }
        })
        .await;
    }

    /// Runs the passes due now (the last check was at `since`); returns now.
    async fn fire_due(&self, since: Millis) -> Millis {
        let now = self.gateway.clock().now();
        let policy = self.gateway.policy();
        let due = match self.next_fire.lock() {
            Ok(mut times) => times.due(
                policy
                    .reconcilers()
                    .map(|r| (r.name.to_string(), r.schedule.clone(), r.schedule.as_str())),
                since,
                now,
            ),
            Err(_) => Vec::new(),
        };
        for (name, schedule, fire_at) in due {
            // One pass per scheduled time, whichever replica claims it first.
            let claim = format!("reconciler:{name}:{schedule}");
            match self.gateway.store().claim_once(&claim, fire_at).await {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) => {
                    tracing::error!(reconciler = %name, error = %e, "reconciler pass skipped: the store cannot be reached");
                    continue;
                }
            }
            if let Err(e) = self.reconcile(&name).await {
                tracing::error!(reconciler = %name, error = %e, "reconciler pass failed");
            }
        }
        now
    }
}

const MOVE_TASK: &str = "work__move_task";
const UPDATE_EPIC: &str = "work__update_epic";

/// The moves due now, as (tool, id, to): stale epic tasks back to `ready`, finished epics to
/// `done`.
async fn due_moves(
    store: &Store,
    spec: &ReconcilerSpec,
    now: Millis,
) -> Result<Vec<(&'static str, String, &'static str)>, StoreError> {
    let cutoff = stale::cutoff(spec.stale_after(), now);
    let mut due = Vec::new();
    // The epics still worked on: drafts (whose tasks may be under way) and open ones.
    for state in [EpicState::Draft, EpicState::Open] {
        let filter = EpicFilter {
            projects: vec![spec.project.to_string()],
            state: Some(state),
        };
        for epic in store.epics(&filter, EPICS_PER_PASS).await? {
            let tasks = store.epic_tasks(&epic.id).await?;
            for task in &tasks {
                if task.state == EpicTaskState::InProgress
                    && stale::active_since(store, task, cutoff).await?.is_none()
                {
                    due.push((MOVE_TASK, task.id.clone(), EpicTaskState::Ready.as_str()));
                }
            }
            if epic.state == EpicState::Open
                && !tasks.is_empty()
                && tasks.iter().all(|t| t.state == EpicTaskState::Merged)
            {
                due.push((UPDATE_EPIC, epic.id.clone(), EpicState::Done.as_str()));
            }
        }
    }
    Ok(due)
}

/// The moves this agent role asked for that wait for a decision, as (tool, id).
async fn waiting(
    store: &Store,
    authority: &Authority,
) -> Result<BTreeSet<(&'static str, String)>, StoreError> {
    let filter = ApprovalFilter {
        status: vec![ApprovalStatus::Pending, ApprovalStatus::Staged],
        principal: Some(authority.principal.to_string()),
        limit: Some(10_000),
        ..ApprovalFilter::default()
    };
    let mut out = BTreeSet::new();
    for a in store.approvals(&filter).await? {
        let tool = match a.tool.as_str() {
            MOVE_TASK => MOVE_TASK,
            UPDATE_EPIC => UPDATE_EPIC,
            _ => continue,
        };
        let args: Option<Map<String, Value>> =
            a.args.as_deref().and_then(|a| serde_json::from_str(a).ok());
        if let Some(id) = args.as_ref().and_then(|a| a.get("id")?.as_str()) {
            out.insert((tool, id.to_owned()));
        }
    }
    Ok(out)
}

/// What became of one move.
fn asked_of(id: String, to: &str, verdict: &Verdict) -> Asked {
    let mut asked = Asked {
        id,
        to: to.to_owned(),
        status: String::new(),
        approval_id: None,
        code: None,
        message: String::new(),
    };
    match verdict {
        Verdict::Executed {
            output: ToolOutput::Failed { code, message },
            ..
        } => {
            asked.status = "failed".into();
            asked.code = Some(code.clone());
            asked.message.clone_from(message);
        }
        Verdict::Executed { .. } => {
            asked.status = "executed".into();
            asked.message = format!("moved to `{to}`");
        }
        Verdict::Pending { approval_id, .. } => {
            asked.status = "pending_approval".into();
            asked.approval_id = Some(approval_id.clone());
            asked.message = format!("waits for approval `{approval_id}`");
        }
        Verdict::Denied(denial) => {
            asked.status = "denied".into();
            asked.code = Some(denial.code.as_str().to_owned());
            asked.message.clone_from(&denial.message);
        }
    }
    asked
}
