//! Warden's operator services (OPS-5): each operator action is one function here, taking who
//! asks ([`Caller`]) and plain arguments, and returning a typed result or a [`Refusal`]. The
//! admin API, the console and the CLI only parse, call and render, so that a rule cannot
//! differ by door (AUTH-2 was once written three times and wrong in all three).
//!
//! A service decides and writes to the store; making a running server see the change
//! (`Gateway::refresh`) is the caller's business, since the CLI's store-direct mode has no
//! server to tell.

pub mod approvals;
pub mod killswitches;
pub mod resources;
pub mod tokens;

use std::sync::Arc;

use warden_core::authority::Authority;
use warden_core::config::ConfigError;
use warden_core::principal::Principal;
use warden_store::StoreError;

/// Why configuration was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigRefusal {
    /// By the configuration it would make as a whole (a dangling reference, …).
    Rejected,
    /// Others still reference what would be deleted.
    InUse,
}

/// Who asks for an operation.
#[derive(Clone, Debug)]
pub enum Caller {
    /// A verified credential, with its authority resolved from the current policy (RUN-8).
    Credential(Arc<Authority>),
    /// Someone holding the store itself (`warden … --data-dir` or `--database-url`): the
    /// deployment's owner, who could write the store directly, named for the audit trail
    /// (`cli:alice`).
    Operator(String),
}

impl Caller {
    /// Whether the caller holds the concrete capability `capability`; an operator holds all.
    pub fn holds(&self, capability: &str) -> bool {
        match self {
            Self::Credential(authority) => authority.holds(capability),
            Self::Operator(_) => true,
        }
    }

    /// Who acted, as the audit trail's admin records and its `principal` filter name it.
    pub fn actor(&self) -> String {
        match self {
            Self::Credential(authority) => authority.principal.to_string(),
            Self::Operator(actor) => actor.clone(),
        }
    }

    /// The caller's principal; none for an operator.
    pub fn principal(&self) -> Option<&Principal> {
        match self {
            Self::Credential(authority) => Some(&authority.principal),
            Self::Operator(_) => None,
        }
    }

    /// Refuses unless the caller holds `capability`, naming it and what it is needed for.
    pub fn require(&self, capability: &'static str, what: &str) -> Result<(), Refusal> {
        if self.holds(capability) {
            Ok(())
        } else {
            Err(Refusal::Missing {
                capability,
                what: what.to_owned(),
            })
        }
    }
}

/// Why a service did not do what it was asked. Each door renders it its own way (a status
/// and code, a page, an exit status); the words are the same at every door.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// A malformed argument: which one (as the admin API names it) and what is wrong.
    #[error("`{field}`: {message}")]
    Invalid {
        /// The argument, as the admin API's body names it (`ttl`, `projects`).
        field: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// A malformed request, for a reason that is not one argument's.
    #[error("{0}")]
    Malformed(String),
    /// A well-formed request that cannot be done as asked (a name that is not configured).
    #[error("{0}")]
    Unprocessable(String),
    /// The caller lacks a capability.
    #[error("{what} needs the `{capability}` capability")]
    Missing {
        /// The capability.
        capability: &'static str,
        /// What it is needed for (`creating tokens`).
        what: String,
    },
    /// Refused for another reason than one missing capability.
    #[error("{0}")]
    Forbidden(String),
    /// Nothing by that name or id.
    #[error("{0}")]
    NotFound(String),
    /// Configuration refused, every problem naming its file, resource and field (one per
    /// line, as `warden apply` prints them).
    #[error("{}", errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Config {
        /// Why as a whole.
        refusal: ConfigRefusal,
        /// Each problem.
        errors: Vec<ConfigError>,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}
