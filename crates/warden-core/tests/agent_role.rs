//! The agent role a Reconciler acts as (WORK-4, APR-3): exactly its role's capabilities in its
//! project only, its autonomy capped by its intent, recorded by reference, and resolved again
//! when its parked work is decided — refused once its reconciler or role is gone or changed.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

use serde_json::{Value, json};
use warden_core::approval::{provenance_of, resolve_requester};
use warden_core::authority::{Mode, resolve};
use warden_core::decision::DenyCode;
use warden_core::name::Name;
use warden_core::policy::Policy;
use warden_core::principal::{Credential, Principal};
use warden_core::time::Millis;
use warden_testkit::{catalog, config};

const BASE: &str = "kind: Project\nname: shop\n---\nkind: Project\nname: other\n---\n\
kind: Upstream\nname: ledger\nproject: shop\nstdio: { command: \"true\" }\n---\n\
kind: Role\nname: janitor\npermissions: [\"run:projects:*\", \"work:write\"]\n---\n\
kind: Role\nname: reader\npermissions: [\"run:projects:*\", \"work:read\"]\n";

fn policy(extra: &str) -> Policy {
    Policy::compile(config(&format!("{BASE}---\n{extra}")), 1)
}

fn janitor() -> Principal {
    Principal::AgentRole {
        role: Name::new("janitor").unwrap(),
        intent: "reconciler:stale-work".into(),
    }
}

const RECONCILER: &str = "kind: Reconciler\nname: stale-work\nproject: shop\nschedule: \"0 * * * *\"\nrole: janitor\nautonomyCap: 1\n";

#[test]
fn an_agent_role_holds_its_roles_capabilities_in_its_project_only() {
    let policy = policy(RECONCILER);
    let authority = resolve(&policy, &Credential::synthetic("r", janitor()), None).unwrap();
    assert_eq!(authority.mode, Mode::AgentRole);
    assert_eq!(
        authority
            .projects
            .keys()
            .map(Name::as_str)
            .collect::<Vec<_>>(),
        ["shop"],
        "its reconciler's project, though its role grants every project"
    );
    assert!(authority.holds("work:write"));
    assert!(!authority.holds("work:accept"));
    assert_eq!(authority.intent.as_deref(), Some("reconciler:stale-work"));
    assert_eq!(authority.autonomy_cap, Some(1));
    assert_eq!(
        authority.principal.to_string(),
        "agentRole:janitor/reconciler:stale-work"
    );
}

#[test]
fn its_intents_cap_lowers_its_autonomy_and_never_raises_it() {
    let tools = |p: &Policy| {
        catalog(
            p,
            &[("ledger", "refund", Value::Null, json!({"type": "object"}))],
        )
    };
    let policy = policy(RECONCILER);
    let authority = resolve(&policy, &Credential::synthetic("r", janitor()), None).unwrap();
    let catalog = tools(&policy);
    let tool = catalog.get("ledger__refund").unwrap();
    let level = policy.autonomy_for(authority.actor(), tool);
    assert_eq!(
        (level.level, level.rule.as_str()),
        (1, "reconciler:stale-work:autonomy-cap")
    );
    // A cap of 0 parks like 1: its moves reach a human.
    let zero = self::policy(&RECONCILER.replace("autonomyCap: 1", "autonomyCap: 0"));
    let authority = resolve(&zero, &Credential::synthetic("r", janitor()), None).unwrap();
    let catalog = tools(&zero);
    let level = zero.autonomy_for(authority.actor(), catalog.get("ledger__refund").unwrap());
    assert_eq!(level.level, 1);
    // An Autonomy below the cap keeps its own level.
    let lower = self::policy(&format!(
        "{RECONCILER}---\nkind: Autonomy\nsubject: {{ intent: \"reconciler:stale-work\" }}\nlevel: 0\n"
    ));
    let authority = resolve(&lower, &Credential::synthetic("r", janitor()), None).unwrap();
    let catalog = tools(&lower);
    let level = lower.autonomy_for(authority.actor(), catalog.get("ledger__refund").unwrap());
    assert_eq!(level.level, 0);
    assert!(level.rule.starts_with("autonomy:"), "{}", level.rule);
}

#[test]
fn its_parked_work_is_resolved_again_and_refused_once_its_role_is_gone() {
    let policy = policy(RECONCILER);
    let authority = resolve(&policy, &Credential::synthetic("r", janitor()), None).unwrap();
    let provenance = provenance_of(&authority);
    assert_eq!(
        serde_json::to_value(&provenance).unwrap(),
        json!({"kind": "agentRole", "role": "janitor", "intentId": "reconciler:stale-work", "autonomyCap": 1})
    );
    assert_eq!(
        provenance.principal(),
        "agentRole:janitor/reconciler:stale-work"
    );
    let recorded = serde_json::to_string(&provenance).unwrap();
    let again = |p: &Policy| resolve_requester(p, Some(&recorded), None, |_| None, Millis(0));
    let resolved = again(&policy).unwrap();
    assert_eq!(resolved.principal, janitor());
    assert!(resolved.holds("work:write"));

    // Its reconciler removed, or given another role, or its role removed: refused.
    for changed in [
        policy_without_reconciler(),
        self::policy(&RECONCILER.replace("role: janitor", "role: reader")),
    ] {
        let denial = again(&changed).unwrap_err();
        assert_eq!(denial.code, DenyCode::RequesterRoleUnavailable);
        assert_eq!(denial.rule, "provenance:role-gone");
    }
}

fn policy_without_reconciler() -> Policy {
    Policy::compile(config(BASE), 2)
}

#[test]
fn no_role_no_reconciler_no_authority() {
    assert_eq!(
        warden_core::config::DEFAULT_AUTONOMY_CAP,
        warden_core::policy::DEFAULT_AUTONOMY_LEVEL,
        "a Reconciler's cap defaults to the level of an unconfigured install"
    );
    let policy = policy_without_reconciler();
    assert!(!policy.principal_exists(&janitor()));
    assert!(resolve(&policy, &Credential::synthetic("r", janitor()), None).is_err());
}
