//! `explain` shows each condition of a call (GOV-10): whether it held, or why it could not be
//! evaluated, and the decision they make — without executing anything.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

use serde_json::{Map, Value, json};
use warden_core::authority::resolve;
use warden_core::explain::explain;
use warden_core::name::Name;
use warden_core::policy::Policy;
use warden_core::principal::{Credential, Principal};
use warden_core::time::Millis;
use warden_testkit::{catalog, config};

const CONFIG: &str = "kind: Project\nname: payments\n---\nkind: User\nname: alice\n---\n\
kind: Role\nname: clerk\npermissions: [\"run:projects:payments\", \"ledger:write\"]\n---\n\
kind: RoleBinding\nrole: clerk\nsubject: { user: alice }\n---\n\
kind: Upstream\nname: ledger\nproject: payments\nstdio: { command: ledger }\n---\n\
kind: ToolPolicy\nproject: payments\ntool: ledger__refund\nclass: mutation\ncapability: ledger:write\n\
rules:\n\
  - { name: frozen, when: \"args.account == 'frozen'\", deny: \"the frozen account takes no refunds\" }\n\
  - { name: big-refunds, when: \"args.amount > 500\", risk: dangerous }\n";

fn explained(args: Value) -> Value {
    let policy = Policy::compile(config(CONFIG), 1);
    let catalog = catalog(
        &policy,
        &[(
            "ledger",
            "refund",
            Value::Null,
            json!({"type": "object", "properties": {"amount": {"type": "integer"}, "account": {"type": "string"}}}),
        )],
    );
    let alice = Principal::User {
        name: Name::new("alice").unwrap(),
    };
    let authority = resolve(&policy, &Credential::synthetic("t", alice), None).unwrap();
    let args: Map<String, Value> = serde_json::from_value(args).unwrap();
    let out = explain(
        &policy,
        &catalog,
        &authority,
        "ledger__refund",
        Some(&args),
        true,
        Millis(0),
    );
    serde_json::to_value(out).unwrap()
}

fn conditions(explained: &Value) -> Vec<(String, String, String)> {
    explained["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["step"] == "condition")
        .map(|s| {
            (
                s["rule"].as_str().unwrap().to_owned(),
                s["outcome"].as_str().unwrap().to_owned(),
                s["detail"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn explain_shows_each_condition_and_what_it_decides() {
    let big = explained(json!({"account": "shop", "amount": 600}));
    assert_eq!(
        conditions(&big),
        [
            (
                "tool-policy:payments/ledger__refund:rule:frozen".to_owned(),
                "no-match".to_owned(),
                "`args.account == 'frozen'` is false".to_owned()
            ),
            (
                "tool-policy:payments/ledger__refund:rule:big-refunds".to_owned(),
                "match".to_owned(),
                "`args.amount > 500` is true".to_owned()
            ),
        ]
    );
    assert_eq!(big["would"], "pending_approval", "{big}");

    let frozen = explained(json!({"account": "frozen", "amount": 1}));
    assert_eq!(frozen["would"], "denied");
    assert_eq!(frozen["code"], "TOOL_POLICY");
    assert_eq!(
        frozen["rule"],
        "tool-policy:payments/ledger__refund:rule:frozen"
    );

    let broken = explained(json!({"account": "shop"}));
    let steps = conditions(&broken);
    assert_eq!(steps[1].1, "error", "{steps:?}");
    assert_eq!(
        steps[1].2,
        "`args.amount > 500` could not be evaluated: No such key: amount"
    );
    assert_eq!(
        (broken["would"].as_str(), broken["code"].as_str()),
        (Some("denied"), Some("TOOL_POLICY"))
    );
}
