//! The governed call (GOV-2) as an explicit ordered sequence over small traits.
//!
//! ```text
//! resolve name ─► 1 kill switch ─► 2 validate ─► 3 audit (run + call) ─► 4 capability
//!   ─► 5 tool policy ─► 6 write budget ─► 7 autonomy ─► execute ─► outcome record
//! ```
//!
//! The order is part of the contract: a frozen scope creates nothing (1 before 3); invalid
//! input writes nothing (2 before 3); from 3 on every refusal is recorded. Any failure of the
//! machinery (store, counters) is a denial with code `UNAVAILABLE`, never an execution.
//!
//! - [`ports`]: what the adapters provide (audit log, counters, clock, executor) and the
//!   requests the pipeline takes;
//! - `call`: a `tools/call`, governed (GOV-2) or with governance off (GOV-6);
//! - `approved`: an approved or staged action, executed later (APR-4);
//! - `execute`: the one execute-and-record both end in;
//! - `record`: the audit records of a call, in canonical form.

mod approved;
mod call;
mod execute;
pub mod ports;
mod record;

pub use ports::{
    ApprovedCall, AuditLog, CallRequest, Clock, Counters, Execution, Executor, Governance,
    Pipeline, RunState,
};
pub use record::{INTERRUPTED, interrupted_record, run_record};

#[cfg(test)]
mod tests;
