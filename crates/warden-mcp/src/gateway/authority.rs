//! Who calls, and what their run may do: bearer tokens verified against the snapshot's
//! credential table, and run authorities resolved from the current policy on every request
//! (RUN-8), memoised per policy object.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use warden_core::authority::{Authority, AuthorityError, resolve};
use warden_core::policy::Policy;
use warden_core::principal::{Credential, CredentialRejection, TokenHash, looks_like_token};
use warden_core::time::Millis;

use super::snapshot::Snapshot;

/// How many resolved authorities are kept before the memo starts over.
const MAX_RESOLVED: usize = 4096;

/// One memoised `resolve(policy, credential, agent)`, valid for exactly these inputs.
#[derive(Debug)]
struct Resolved {
    policy: Arc<Policy>,
    credential: Credential,
    authority: Result<Arc<Authority>, AuthorityError>,
}

/// Resolved authorities by (credential id, agent).
#[derive(Debug, Default)]
pub(super) struct Authorities {
    memo: Mutex<HashMap<(String, Option<String>), Resolved>>,
}

/// Verifies a bearer token against the snapshot's credential table (a hash lookup).
pub(super) fn authenticate(
    snapshot: &Snapshot,
    token: &str,
    now: Millis,
) -> Result<Credential, CredentialRejection> {
    if token.is_empty() {
        return Err(CredentialRejection::Missing);
    }
    if !looks_like_token(token) {
        return Err(CredentialRejection::Unknown);
    }
    let credential = snapshot
        .credential(&TokenHash::of(token))
        .ok_or(CredentialRejection::Unknown)?;
    credential.check_usable(now)?;
    if snapshot.loaded && !snapshot.policy.principal_exists(&credential.principal) {
        return Err(CredentialRejection::OwnerGone);
    }
    Ok(credential.clone())
}

impl Authorities {
    /// The authority of a run under `snapshot`. Without a loaded policy or a reachable store,
    /// the run keeps its knowledge and gets no tools (RUN-4).
    pub(super) fn authority(
        &self,
        snapshot: &Snapshot,
        credential: &Credential,
        agent: Option<&str>,
    ) -> Result<Arc<Authority>, AuthorityError> {
        let authority = self.resolve_memoised(&snapshot.policy, credential, agent)?;
        let withheld = if !snapshot.loaded {
            "the configuration is not loaded"
        } else if !snapshot.store_ok {
            "the store cannot be reached"
        } else {
            return Ok(authority);
        };
        Ok(Arc::new(Arc::unwrap_or_clone(authority).withhold(withheld)))
    }

    /// `resolve(policy, credential, agent)`, memoised: resolving is pure in those three inputs
    /// and costs a reason string per refused project on every request (PERF-3). An entry is
    /// used only for the very same policy object (a new configuration, binding or principal
    /// makes a new one), an identical credential and the same agent; anything else resolves
    /// anew.
    fn resolve_memoised(
        &self,
        policy: &Arc<Policy>,
        credential: &Credential,
        agent: Option<&str>,
    ) -> Result<Arc<Authority>, AuthorityError> {
        let key = (credential.id.clone(), agent.map(str::to_owned));
        if let Ok(memo) = self.memo.lock()
            && let Some(hit) = memo
                .get(&key)
                .filter(|r| Arc::ptr_eq(&r.policy, policy) && r.credential == *credential)
        {
            return hit.authority.clone();
        }
        let authority = resolve(policy, credential, agent).map(Arc::new);
        if let Ok(mut memo) = self.memo.lock() {
            if memo.len() >= MAX_RESOLVED {
                memo.clear();
            }
            memo.insert(
                key,
                Resolved {
                    policy: policy.clone(),
                    credential: credential.clone(),
                    authority: authority.clone(),
                },
            );
        }
        authority
    }
}
