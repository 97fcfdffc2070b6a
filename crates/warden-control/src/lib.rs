//! Warden's operator services (OPS-5): each operator action is one function here, taking who
//! asks ([`Caller`]) and plain arguments, and returning a typed result or a [`Refusal`]. The
//! admin API, the console and the CLI only parse, call and render, so that a rule cannot
//! differ by door (AUTH-2 was once written three times and wrong in all three).
//!
//! A service decides and writes to the store; making a running server see the change
//! (`Gateway::refresh`) is the caller's business, since the CLI's store-direct mode has no
//! server to tell.

pub mod approvals;
pub mod audit;
pub mod audit_archive;
pub mod audit_file;
pub mod epics;
pub mod explain;
mod forge_secrets;
pub mod forges;
pub mod killswitches;
pub mod notifiers;
pub mod resources;
pub mod runs;
pub mod sign_ins;
pub mod tasks;
pub mod tokens;
pub mod tools;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use warden_core::authority::Authority;
use warden_core::config::ConfigError;
use warden_core::pipeline::Clock;
use warden_core::principal::Principal;
use warden_core::time::Millis;
use warden_runtime::Secrets;
use warden_store::{Store, StoreError};

/// Told when a service has changed configuration or credentials, so that a running server
/// sees the change at once rather than at its next poll of the store.
pub trait Listener: Send + Sync {
    /// The store changed; done when the listener has taken the change in.
    fn changed(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
}

/// What every service works with: the store it reads and writes, the clock it stamps with,
/// and who hears of its changes. Each door holds one; only the services reach the store
/// through it.
#[derive(Clone)]
pub struct Control {
    store: Arc<Store>,
    clock: Arc<dyn Clock>,
    listener: Option<Arc<dyn Listener>>,
    secrets: Secrets,
}

impl fmt::Debug for Control {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Control")
            .field("store", &self.store)
            .field("listener", &self.listener.is_some())
            .finish_non_exhaustive()
    }
}

impl Control {
    /// Services over `store`, stamping with `clock`, telling nobody of their changes (the
    /// CLI's store-direct mode: a running server sees them at its next poll).
    pub fn new(store: Arc<Store>, clock: Arc<dyn Clock>) -> Self {
        Self {
            store,
            clock,
            listener: None,
            secrets: Secrets::default(),
        }
    }

    /// These services, storing the secrets applied as values (a GitProvider's webhook secret)
    /// in `secrets`' directory.
    #[must_use]
    pub fn with_secrets(mut self, secrets: Secrets) -> Self {
        self.secrets = secrets;
        self
    }

    pub(crate) fn secrets(&self) -> &Secrets {
        &self.secrets
    }

    /// These services, telling `listener` of each change they write.
    #[must_use]
    pub fn with_listener(mut self, listener: Arc<dyn Listener>) -> Self {
        self.listener = Some(listener);
        self
    }

    /// The store's per-purpose secret `name` (created on first use), for what the doors sign
    /// themselves (the console's sign-in and forms).
    pub async fn shared_secret(&self, name: &str) -> Result<String, StoreError> {
        self.store.shared_secret(name).await
    }

    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    /// The time by the services' clock.
    pub fn now(&self) -> Millis {
        self.clock.now()
    }

    /// Tells the listener, if any, that the store changed.
    pub(crate) async fn changed(&self) {
        if let Some(listener) = &self.listener {
            listener.changed().await;
        }
    }
}

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

impl Refusal {
    /// [`Refusal::NotFound`], about no one argument (an id in the address).
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::NotFound {
            field: None,
            message: message.into(),
        }
    }

    /// [`Refusal::Unprocessable`], about no one argument.
    pub fn unprocessable(message: impl Into<String>) -> Self {
        Self::Unprocessable {
            field: None,
            message: message.into(),
        }
    }

    /// The argument a refusal is about, as the admin API's body names it.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            Self::Invalid { field, .. } => Some(field),
            Self::Unprocessable { field, .. } | Self::NotFound { field, .. } => *field,
            _ => None,
        }
    }

    /// What is wrong, without the argument's name (for a door that shows it beside that
    /// argument).
    pub fn message(&self) -> String {
        match self {
            Self::Invalid { message, .. }
            | Self::Unprocessable { message, .. }
            | Self::NotFound { message, .. } => message.clone(),
            other => other.to_string(),
        }
    }
}

/// `` `field`: message ``, or the message alone.
fn about(field: Option<&str>, message: &str) -> String {
    match field {
        Some(field) => format!("`{field}`: {message}"),
        None => message.to_owned(),
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
    #[error("{}", about(*field, message))]
    Unprocessable {
        /// The argument it is about, as the admin API names it, if one.
        field: Option<&'static str>,
        /// What cannot be done.
        message: String,
    },
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
    #[error("{}", about(*field, message))]
    NotFound {
        /// The argument that names it, as the admin API names it; `None` for an id in the
        /// address.
        field: Option<&'static str>,
        /// What was not found.
        message: String,
    },
    /// Not possible in the current state (a run already running, no runner configured).
    #[error("{0}")]
    Conflict(String),
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
