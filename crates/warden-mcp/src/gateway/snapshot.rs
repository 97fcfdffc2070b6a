//! What the gateway knows at one instant: the policy, the federated catalog and the
//! credential table in one immutable [`Snapshot`], replaced whole by [`super::live`]; and what
//! building it found wrong ([`Problems`]).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use warden_core::config::UpstreamSpec;
use warden_core::pins::Pins;
use warden_core::policy::Policy;
use warden_core::principal::{Credential, TokenHash};
use warden_core::tool::Catalog;

/// What the gateway knows at one instant. Immutable; replaced whole.
#[derive(Debug)]
pub struct Snapshot {
    /// The store revision it was built from.
    pub revision: u64,
    /// The policy.
    pub policy: Arc<Policy>,
    /// The federated catalog.
    pub catalog: Arc<Catalog>,
    pub(super) credentials: Arc<HashMap<TokenHash, Credential>>,
    /// The pinned tool definitions (GOV-9).
    pub(super) pins: Arc<Pins>,
    /// Whether the store answered the last poll; when not, runs get no tools (RUN-4).
    pub store_ok: bool,
    /// Whether a configuration was ever loaded; when not, runs get no tools (RUN-4).
    pub loaded: bool,
}

impl Snapshot {
    pub(super) fn empty() -> Self {
        Self {
            revision: 0,
            policy: Arc::new(Policy::default()),
            catalog: Arc::new(Catalog::default()),
            credentials: Arc::new(HashMap::new()),
            pins: Arc::new(Pins::default()),
            store_ok: false,
            loaded: false,
        }
    }

    /// A credential by its public id (revoked and expired ones included), for resolving the
    /// requester of a parked call.
    pub fn credential_by_id(&self, id: &str) -> Option<Credential> {
        self.credentials.values().find(|c| c.id == id).cloned()
    }

    /// A credential by the hash of its secret.
    pub(super) fn credential(&self, hash: &TokenHash) -> Option<&Credential> {
        self.credentials.get(hash)
    }
}

/// The catalog's problems as last built.
#[derive(Debug, Default)]
pub(super) struct Problems(HashSet<String>);

impl Problems {
    /// Keeps `now` as the problems; those not known before, in order.
    pub(super) fn update(&mut self, now: Vec<String>) -> Vec<String> {
        let now: HashSet<String> = now.into_iter().collect();
        let mut new: Vec<String> = now.difference(&self.0).cloned().collect();
        new.sort();
        self.0 = now;
        new
    }
}

/// The prefix of an upstream's catalog names: its own, else its name.
pub(super) fn prefix(spec: &UpstreamSpec) -> String {
    spec.catalog_prefix()
}

#[cfg(test)]
mod tests {
    use super::Problems;

    #[test]
    fn a_problem_is_told_once_while_it_lasts_and_again_when_it_comes_back() {
        let mut p = Problems::default();
        let of = |v: &[&str]| v.iter().map(ToString::to_string).collect::<Vec<_>>();
        assert_eq!(p.update(of(&["b", "a"])), of(&["a", "b"]));
        assert!(p.update(of(&["a", "b"])).is_empty());
        assert!(p.update(of(&["a"])).is_empty());
        assert_eq!(p.update(of(&["a", "b"])), of(&["b"]));
    }
}
