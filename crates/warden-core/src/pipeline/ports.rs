//! What the pipeline needs from the adapter crates — the audit log, the counters, the clock,
//! the executor, the approval queue — and the requests it takes.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value};

use crate::audit::NewRecord;
use crate::authority::Authority;
use crate::contract::ToolOutput;
use crate::error::{EnvError, ExecError};
use crate::policy::CounterSpec;
use crate::time::Millis;
use crate::tool::ToolDescriptor;

/// Appends audit records durably (the store).
pub trait AuditLog: Send + Sync {
    /// Appends records in order; returns once they are durable.
    fn append(&self, records: Vec<NewRecord>) -> impl Future<Output = Result<(), EnvError>> + Send;
}

/// Exact counters for rate limits and write budgets (the store).
pub trait Counters: Send + Sync {
    /// Takes one unit from `counter` in the window containing `now`; `Ok(false)` when the
    /// limit is reached. Exact under concurrency.
    fn take(
        &self,
        counter: &CounterSpec,
        now: Millis,
    ) -> impl Future<Output = Result<bool, EnvError>> + Send;
}

/// The time.
pub trait Clock: Send + Sync + std::fmt::Debug {
    /// Now.
    fn now(&self) -> Millis;
}

/// A shared clock is the clock it shares (a process's one clock, injected where it is needed).
impl<T: Clock + ?Sized> Clock for std::sync::Arc<T> {
    fn now(&self) -> Millis {
        (**self).now()
    }
}

/// One admitted call to execute.
#[derive(Debug)]
pub struct Execution<'a, C> {
    /// The tool.
    pub tool: &'a Arc<ToolDescriptor>,
    /// Validated arguments.
    pub args: Option<Map<String, Value>>,
    /// The run's authority.
    pub authority: &'a Authority,
    /// The run.
    pub run_id: &'a str,
    /// The call.
    pub call_id: &'a str,
    /// What the calling client's transport gives the execution (see [`Executor::Context`]).
    pub context: C,
}

/// Executes admitted calls (upstreams and built-in tool sets).
pub trait Executor: Send + Sync {
    /// The calling client's side of a call, as the transport that received it knows it: where
    /// the upstream's progress, log messages and requests for input go, and the client's
    /// cancellation. It travels with the request ([`CallRequest::context`]) to the execution.
    type Context: Send;

    /// Executes the call.
    fn execute(
        &self,
        call: Execution<'_, Self::Context>,
    ) -> impl Future<Output = Result<ToolOutput, ExecError>> + Send;
}

/// Whether a call is governed (GOV-6).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Governance {
    /// Every step of GOV-2 (the default, and the only mode of the HTTP endpoints).
    #[default]
    On,
    /// No decision steps; the call is still recorded (run, call, an `allow` decision with rule
    /// `governance:off`, outcome). Only `warden stdio --governance off|auto` asks for it;
    /// `auto` is `warden stdio`'s choice between the two, not a mode of the pipeline.
    Off,
}

/// The state of a run shared by its calls: its id and whether its run record exists.
#[derive(Debug)]
pub struct RunState {
    id: String,
    opened: AtomicBool,
}

impl RunState {
    /// A run not yet recorded; its record is written with its first audited call.
    pub fn new(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            opened: AtomicBool::new(false),
        }
    }

    /// A run whose run record was already written (an unattended agent run, recorded when it
    /// started).
    pub fn recorded(id: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            opened: AtomicBool::new(true),
        }
    }

    /// The run's id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether the run record was written.
    pub fn is_opened(&self) -> bool {
        self.opened.load(Ordering::Acquire)
    }

    /// Marks the run record as written; `true` for the one call that must write it.
    pub(super) fn open_once(&self) -> bool {
        !self.opened.swap(true, Ordering::AcqRel)
    }

    /// A failed append of the run record lets the next call write it.
    pub(super) fn reopen(&self) {
        self.opened.store(false, Ordering::Release);
    }
}

/// One `tools/call` request.
#[derive(Debug)]
pub struct CallRequest<'a, C> {
    /// The call's id (unique in the run).
    pub call_id: String,
    /// The tool name as the client sent it.
    pub name: &'a str,
    /// The arguments.
    pub args: Option<Map<String, Value>>,
    /// Governed, or not (GOV-6).
    pub governance: Governance,
    /// The calling client's side of the call, for the execution.
    pub context: C,
}

/// An approved (or staged and unvetoed) action to execute now.
#[derive(Debug)]
pub struct ApprovedCall<'a, C> {
    /// The approval's id.
    pub id: &'a str,
    /// The run it was requested in.
    pub run_id: &'a str,
    /// The call it was requested by.
    pub call_id: &'a str,
    /// The tool.
    pub tool: &'a str,
    /// The exact arguments approved.
    pub args: Option<Map<String, Value>>,
    /// Who decided (`None` for a staged action that ran after its veto window).
    pub decided_by: Option<&'a str>,
    /// The execution's context: no client waits for an approved action.
    pub context: C,
}

/// The pipeline's dependencies.
#[derive(Debug)]
pub struct Pipeline<'a, A, C, K, X, Q> {
    /// Audit log.
    pub audit: &'a A,
    /// Counters.
    pub counters: &'a C,
    /// Clock.
    pub clock: &'a K,
    /// Executor.
    pub executor: &'a X,
    /// Where parked calls go.
    pub approvals: &'a Q,
}
