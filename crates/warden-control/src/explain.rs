//! Explain (GOV-7): what `tools/list` would show and `tools/call` would decide for a run,
//! with rule ids, without executing or recording anything — the admin API's `/explain` and
//! the console's Explain page alike.
//!
//! A caller explains its own credential; another principal's (as a token bound to the given
//! projects would be) needs `explain:any`, which also reveals the rules of tools the run
//! cannot see.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Map, Value};
use warden_core::authority::{Authority, AuthorityError};
use warden_core::capability::EXPLAIN_ANY;
use warden_core::explain::Explanation;
use warden_core::name::Name;
use warden_core::policy::Policy;
use warden_core::principal::{Credential, Principal};
use warden_core::tool::Catalog;

use crate::{Caller, Refusal};

/// What to explain.
#[derive(Clone, Copy, Debug)]
pub struct Question<'a> {
    /// Another principal, bound to these projects (all of its own when `None`); the caller's
    /// own credential when `None`.
    pub subject: Option<(&'a Principal, Option<&'a [String]>)>,
    /// The agent of the run explained.
    pub agent: Option<&'a str>,
    /// The tool, by its catalog name.
    pub tool: &'a str,
    /// Its arguments, checked against its schema and argument rules.
    pub arguments: Option<&'a Map<String, Value>>,
    /// When it is asked (the conditions' `now`).
    pub now: warden_core::time::Millis,
}

/// An explanation, and the authority of the run it is for.
#[derive(Debug)]
pub struct Explained {
    /// The run's authority.
    pub authority: Arc<Authority>,
    /// What would happen.
    pub explanation: Explanation,
}

/// Explains `question` for `caller`, whose own credential is `own`, under `policy` and
/// `catalog`; `authority` resolves a credential's run authority as the gateway does (with
/// what the gateway withholds while the store or the configuration is missing).
pub fn explain(
    policy: &Policy,
    catalog: &Catalog,
    caller: &Caller,
    own: &Credential,
    question: Question<'_>,
    authority: impl FnOnce(&Credential, Option<&str>) -> Result<Arc<Authority>, AuthorityError>,
) -> Result<Explained, Refusal> {
    let reveal = caller.holds(EXPLAIN_ANY);
    let target = match question.subject {
        None => own.clone(),
        Some((principal, projects)) => {
            caller.require(EXPLAIN_ANY, "explaining another principal")?;
            let projects = projects
                .map(|ps| {
                    ps.iter()
                        .map(|p| Name::new(p))
                        .collect::<Result<BTreeSet<_>, _>>()
                })
                .transpose()
                .map_err(|e| Refusal::Invalid {
                    field: "projects",
                    message: e.to_string(),
                })?;
            Credential {
                projects,
                ..Credential::synthetic("explain", principal.clone())
            }
        }
    };
    let authority =
        authority(&target, question.agent).map_err(|e| match (e, question.subject) {
            // The principal asked about, not a credential's owner that went away.
            (AuthorityError::OwnerGone, Some((principal, _))) => Refusal::NotFound {
                field: Some(match principal {
                    Principal::ServiceAccount { .. } => "serviceAccount",
                    _ => "user",
                }),
                message: format!("`{principal}` is not configured"),
            },
            (e @ AuthorityError::UnknownAgent(_), _) => Refusal::NotFound {
                field: Some("agent"),
                message: e.to_string(),
            },
            (e, _) => Refusal::not_found(e.to_string()),
        })?;
    let explanation = warden_core::explain::explain(
        policy,
        catalog,
        &authority,
        question.tool,
        question.arguments,
        reveal,
        question.now,
    );
    Ok(Explained {
        authority,
        explanation,
    })
}
