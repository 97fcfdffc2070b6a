//! The errors of the machinery around the core: what an adapter reports when the store or an
//! upstream failed. A refusal is never one of these — refusals are values
//! ([`crate::decision::Denial`]); the pipeline turns these into fail-closed denials.

/// A failure of the machinery behind the pipeline (store unreachable, …). The message is for
/// operators' logs, never for the caller.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct EnvError(pub String);

/// Why an admitted call could not be executed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExecError {
    /// The upstream is down, restarting or timed out; the message is safe for the caller.
    #[error("{0}")]
    Unavailable(String),
    /// The client cancelled the call.
    #[error("cancelled")]
    Cancelled,
}
