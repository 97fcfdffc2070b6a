//! Unit tests of the pipeline's records.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

use super::ports::RunState;
use super::record::{Recorder, Step};
use crate::audit::{canonical_json, hash_arguments, hash_value, redact};
use crate::authority::Authority;
use crate::authority::Mode;
use crate::capability::Grant;
use crate::contract::ToolOutput;
use crate::decision::{Decision, Denial, DenyCode};
use crate::error::ExecError;
use crate::policy::Policy;
use crate::principal::Principal;
use crate::time::Millis;

fn name(s: &str) -> crate::name::Name {
    crate::name::Name::new(s).unwrap()
}

/// AUD: the payloads written field by field are the canonical JSON of the objects the
/// records always held (the form before `CanonicalObject`), values included.
#[test]
fn payloads_are_the_canonical_form_of_their_objects() {
    let policy = Policy::compile(crate::config::Config::default(), 7);
    let authority = Authority {
        mode: Mode::Agent,
        principal: Principal::User { name: name("ada") },
        groups: Vec::new(),
        credential_id: Some("cred-\"1\"".into()),
        expires_at: None,
        agent: Some(name("triage")),
        intent: None,
        autonomy_cap: None,
        grant: Grant::default(),
        projects: BTreeMap::from([
            (name("zeta"), "member".into()),
            (name("alpha"), "bound \u{e9}".into()),
        ]),
        knowledge: BTreeSet::new(),
        knowledge_only: BTreeMap::from([(name("docs"), "knowledge only".into())]),
        withheld: Some("the store cannot be reached".into()),
        cosigner: None,
    };
    let run = RunState::new("run_1");
    let rec = Recorder {
        policy: &policy,
        authority: &authority,
        run: &run,
        call_id: "call_1",
        tool: "alpha__t",
    };
    let at = Millis(5);
    let args = json!({"b": [1, {"api-Key": "s"}], "a": "x"});
    let args = args.as_object();

    let opened = rec.open(at, None, args);
    assert_eq!(
        opened[0].payload,
        canonical_json(&json!({
            "mode": authority.mode,
            "principal": authority.principal.to_string(),
            "credential": authority.credential_id,
            "agent": authority.agent.as_ref().map(ToString::to_string),
            "projects": authority.projects,
            "knowledge_only": authority.knowledge_only,
            "withheld": authority.withheld,
            "policy_revision": policy.revision,
        }))
    );
    assert_eq!(
        opened[1].payload,
        canonical_json(&json!({
            "args_hash": hash_arguments(args),
            "args": redact(args),
            "project": None::<String>,
            "class": None::<crate::tool::ToolClass>,
        }))
    );

    let allow = Decision::Allow { rule: "r1".into() };
    let deny = Decision::Deny(Denial::new(DenyCode::Unavailable, "rule:2", "no \"way\""));
    for (decision, verdict, code, rule, message) in [
        (&allow, "allow", None, "r1", None),
        (
            &deny,
            "deny",
            Some(DenyCode::Unavailable),
            "rule:2",
            Some("no \"way\""),
        ),
    ] {
        assert_eq!(
            rec.decision(at, Step::ToolPolicy, decision).payload,
            canonical_json(&json!({
                "decision": verdict,
                "code": code,
                "rule": rule,
                "step": Step::ToolPolicy.as_str(),
                "policy_revision": policy.revision,
                "message": message,
            }))
        );
    }

    let started = Millis(2);
    let data = ToolOutput::Data(json!({"y": 1, "x": [true, null]}));
    let upstream = ToolOutput::Upstream {
        result: json!({"content": [], "isError": true})
            .as_object()
            .unwrap()
            .clone(),
        is_error: true,
    };
    for (output, hash, is_error) in [
        (
            &data,
            hash_value(&json!({"y": 1, "x": [true, null]})),
            false,
        ),
        (
            &upstream,
            hash_value(&json!({"content": [], "isError": true})),
            true,
        ),
    ] {
        assert_eq!(
            rec.outcome(at, started, Ok(output)).payload,
            canonical_json(
                &json!({"status": "executed", "step": Step::Execute.as_str(), "duration_ms": 3, "result_hash": hash, "is_error": is_error})
            )
        );
    }
    assert_eq!(
        rec.outcome(at, started, Err(&ExecError::Cancelled)).payload,
        canonical_json(
            &json!({"status": "cancelled", "step": Step::Execute.as_str(), "duration_ms": 3, "error": "cancelled by the client"})
        )
    );
    let failed = ExecError::Unavailable("upstream `u` is down".into());
    assert_eq!(
        rec.outcome(at, started, Err(&failed)).payload,
        canonical_json(
            &json!({"status": "failed", "step": Step::Execute.as_str(), "duration_ms": 3, "error": failed.to_string()})
        )
    );
}
