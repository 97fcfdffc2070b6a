//! Table-driven golden tests of the decision function and the pipeline (GOV-2, GOV-4, RUN-3,
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]
//! RUN-6): YAML fixtures in `tests/fixtures/decisions/`, outcomes as insta snapshots.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use warden_core::authority::resolve;
use warden_core::capability::{Capability, CapabilitySet};
use warden_core::config::{Config, Kind, Resource, parse_documents};
use warden_core::contract::Verdict;
use warden_core::decision::{Purpose, decide};
use warden_core::name::Name;
use warden_core::pipeline::{CallRequest, Governance, Pipeline, RunState};
use warden_core::policy::Policy;
use warden_core::principal::{Credential, CredentialKind, Principal};
use warden_core::time::Millis;
use warden_core::tool::{Catalog, ToolDescriptor, UpstreamTool, catalog_name, matching_policy};
use warden_testkit::memory::{EchoExecutor, ManualClock, MemoryAudit, MemoryCounters};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Fixture {
    config: String,
    tools: Vec<ToolFixture>,
    credentials: BTreeMap<String, CredentialFixture>,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ToolFixture {
    upstream: String,
    name: String,
    #[serde(default)]
    annotations: Option<Value>,
    #[serde(default)]
    schema: Option<Map<String, Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CredentialFixture {
    #[serde(default)]
    user: Option<String>,
    #[serde(default)]
    service_account: Option<String>,
    #[serde(default)]
    agent_run: Option<String>,
    #[serde(default)]
    projects: Option<Vec<String>>,
    #[serde(default)]
    scopes: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Case {
    name: String,
    credential: String,
    #[serde(default)]
    agent: Option<String>,
    #[serde(default)]
    list: bool,
    #[serde(default)]
    call: Option<String>,
    #[serde(default)]
    args: Option<Map<String, Value>>,
    #[serde(default)]
    store_down: bool,
    #[serde(default = "one")]
    repeat: u32,
}

fn one() -> u32 {
    1
}

#[derive(Serialize)]
struct CaseResult {
    case: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    visible: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    calls: Vec<CallResult>,
}

#[derive(Serialize)]
struct CallResult {
    status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<String>,
    rule: String,
    message: String,
    audited: bool,
    new_records: Vec<String>,
}

fn name(s: &str) -> Name {
    Name::new(s).unwrap()
}

fn build(fixture: &Fixture) -> (Policy, Catalog) {
    let docs = parse_documents("fixture", &fixture.config).unwrap();
    let config = Config::validate(docs).unwrap_or_else(|e| panic!("{e:?}"));
    let policy = Policy::compile(config, 7);
    let mut tools = Vec::new();
    for t in &fixture.tools {
        let Some(Resource::Upstream(u)) = policy.config.get(Kind::Upstream, &t.upstream) else {
            panic!("no upstream {}", t.upstream)
        };
        let raw = UpstreamTool {
            name: t.name.clone(),
            title: None,
            description: None,
            input_schema: warden_core::schema::SchemaText::new(
                &t.schema.clone().unwrap_or_default(),
            ),
            output_schema: None,
            annotations: t.annotations.clone().map(std::sync::Arc::new),
            icons: None,
            meta: None,
        };
        let cname = catalog_name(u.prefix.as_deref().unwrap_or(u.name.as_str()), &t.name);
        let pol = matching_policy(policy.tool_policies(), &u.project, &cname);
        tools.push(ToolDescriptor::for_upstream(&u.project, &u.name, &cname, &raw, pol).unwrap());
    }
    let (catalog, conflicts) = Catalog::new(tools);
    assert!(conflicts.is_empty());
    (policy, catalog)
}

fn credential(id: &str, f: &CredentialFixture) -> Credential {
    let principal = match (&f.user, &f.service_account, &f.agent_run) {
        (Some(u), None, None) => Principal::User { name: name(u) },
        (None, Some(s), None) => Principal::ServiceAccount { name: name(s) },
        (None, None, Some(a)) => Principal::AgentRun {
            agent: name(a),
            run: "run_fixture".into(),
        },
        _ => panic!("credential {id}: give exactly one of user, serviceAccount, agentRun"),
    };
    Credential {
        id: id.to_owned(),
        kind: if f.agent_run.is_some() {
            CredentialKind::Run
        } else {
            CredentialKind::ApiKey
        },
        principal,
        projects: f
            .projects
            .as_ref()
            .map(|p| p.iter().map(|s| name(s)).collect()),
        scopes: f
            .scopes
            .as_ref()
            .map(|s| CapabilitySet::from_patterns(s.iter().map(Capability::new))),
        created_at: Millis(0),
        expires_at: None,
        revoked_at: None,
        description: None,
        groups: Vec::new(),
    }
}

fn run_fixture(text: &str) -> Vec<CaseResult> {
    let fixture: Fixture = yaml_serde::from_str(text).unwrap();
    let (policy, catalog) = build(&fixture);
    let audit = MemoryAudit::default();
    let counters = MemoryCounters::default();
    let clock = ManualClock::at(Millis(1_800_000_000_000));
    let executor = EchoExecutor::default();
    let pipeline = Pipeline {
        audit: &audit,
        counters: &counters,
        clock: &clock,
        executor: &executor,
        approvals: &warden_testkit::memory::MemoryApprovals::default(),
    };
    let mut results = Vec::new();
    for (i, case) in fixture.cases.iter().enumerate() {
        let cred = fixture
            .credentials
            .get(&case.credential)
            .unwrap_or_else(|| panic!("no credential {}", case.credential));
        let cred = credential(&case.credential, cred);
        let authority = resolve(&policy, &cred, case.agent.as_deref()).unwrap();
        // `sees` (the allocation-free filter of `tools/list`) is exactly the list decision.
        for t in catalog.iter() {
            assert_eq!(
                warden_core::decision::sees(&authority, t),
                matches!(
                    decide(&authority, t, Purpose::List),
                    warden_core::decision::Decision::Allow { .. }
                ),
                "{}: `sees` and `decide` disagree on {}",
                case.name,
                t.name
            );
        }
        // `visible` (the project index of `tools/list`) returns exactly what `sees` accepts.
        let by_index: Vec<_> = warden_core::decision::visible(&authority, &catalog)
            .iter()
            .map(|t| t.name.clone())
            .collect();
        let by_filter: Vec<_> = catalog
            .iter()
            .filter(|t| warden_core::decision::sees(&authority, t))
            .map(|t| t.name.clone())
            .collect();
        assert_eq!(
            by_index, by_filter,
            "{}: `visible` and `sees` disagree",
            case.name
        );
        let mut result = CaseResult {
            case: case.name.clone(),
            visible: None,
            calls: Vec::new(),
        };
        if case.list {
            result.visible = Some(
                catalog
                    .iter()
                    .filter(|t| {
                        matches!(
                            decide(&authority, t, Purpose::List),
                            warden_core::decision::Decision::Allow { .. }
                        )
                    })
                    .map(|t| t.name.to_string())
                    .collect(),
            );
        }
        if let Some(tool) = &case.call {
            audit.set_down(case.store_down);
            counters.set_down(case.store_down);
            let run = RunState::new(format!("run_{i}"));
            for n in 0..case.repeat {
                let before = audit.records().len();
                let outcome = pollster::block_on(pipeline.call(
                    &policy,
                    &catalog,
                    &authority,
                    &run,
                    CallRequest {
                        call_id: format!("call_{i}_{n}"),
                        name: tool,
                        args: case.args.clone(),
                        governance: Governance::On,
                        context: (),
                    },
                ));
                let records = audit.records();
                let new_records = records[before..]
                    .iter()
                    .map(|r| {
                        let mut s = r.record.kind.as_str().to_owned();
                        if let Some(d) = &r.record.decision {
                            s.push_str(&format!(":{d}"));
                        }
                        if let Some(c) = &r.record.code {
                            s.push_str(&format!(":{c}"));
                        }
                        s
                    })
                    .collect();
                let (rule, code) = match &outcome.verdict {
                    Verdict::Executed { rule, .. } | Verdict::Pending { rule, .. } => {
                        (rule.clone(), None)
                    }
                    Verdict::Denied(d) => (d.rule.clone(), Some(d.code.to_string())),
                };
                let contract = outcome.contract();
                result.calls.push(CallResult {
                    status: contract.status.to_owned(),
                    code,
                    rule,
                    message: contract.message,
                    audited: outcome.audited,
                    new_records,
                });
            }
            audit.set_down(false);
            counters.set_down(false);
        }
        results.push(result);
    }
    // The trail written by all cases verifies.
    let mut verifier = warden_core::audit::ChainVerifier::default();
    for r in audit.records() {
        verifier.push(&r).unwrap();
        assert_payload_form(&r.record);
    }
    results
}

/// AUD: every payload is stored in canonical form (the form the chain hashes) and has the
/// fields of its kind of record.
fn assert_payload_form(record: &warden_core::audit::NewRecord) {
    let value: serde_json::Value = serde_json::from_str(&record.payload).unwrap();
    assert_eq!(
        record.payload,
        warden_core::audit::canonical_json(&value),
        "not canonical"
    );
    let keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let expected: &[&str] = match (record.kind.as_str(), record.decision.as_deref()) {
        ("run", _) => &[
            "agent",
            "credential",
            "knowledge_only",
            "mode",
            "policy_revision",
            "principal",
            "projects",
            "withheld",
        ],
        ("call", _) => &["args", "args_hash", "class", "project"],
        ("decision", Some("allow" | "deny")) => &[
            "code",
            "decision",
            "message",
            "policy_revision",
            "rule",
            "step",
        ],
        ("decision", _) => &[
            "approval_id",
            "decision",
            "due_at",
            "policy_revision",
            "rule",
            "step",
        ],
        ("outcome", Some("executed" | "input_required")) => {
            &["duration_ms", "is_error", "result_hash", "status", "step"]
        }
        ("outcome", _) => &["duration_ms", "error", "status", "step"],
        (kind, _) => panic!("unexpected record kind `{kind}`"),
    };
    assert_eq!(
        keys,
        expected,
        "{} record: {}",
        record.kind.as_str(),
        record.payload
    );
}

#[test]
fn decision_fixtures() {
    insta::glob!("fixtures/decisions/*.yaml", |path| {
        let text = std::fs::read_to_string(path).unwrap();
        insta::assert_yaml_snapshot!(run_fixture(&text));
    });
}

/// Issue 45 (observed: an agent run's page said "agent `sre-bot` is a member" twice): an
/// agent run's reason for a project is its membership, said once; a caller's run through the
/// agent says both the membership and the caller's own grant.
#[test]
fn an_agent_runs_reason_for_a_project_says_the_membership_once() {
    let yaml = "kind: Project\nname: ops\n---\nkind: Agent\nname: sre-bot\nmemberships: [ops]\n---\n\
                kind: User\nname: alice\n---\nkind: Role\nname: r\npermissions: [\"run:projects:ops\"]\n---\n\
                kind: RoleBinding\nrole: r\nsubject: { user: alice }\n";
    let config = Config::validate(parse_documents("t", yaml).unwrap()).unwrap();
    let policy = Policy::compile(config, 1);
    let run = credential("run", &yaml_serde::from_str("agentRun: sre-bot").unwrap());
    let authority = resolve(&policy, &run, Some("sre-bot")).unwrap();
    assert_eq!(
        authority.projects[&name("ops")],
        "agent `sre-bot` is a member"
    );
    let alice = credential("alice", &yaml_serde::from_str("user: alice").unwrap());
    let authority = resolve(&policy, &alice, Some("sre-bot")).unwrap();
    let why = &authority.projects[&name("ops")];
    assert!(
        why.starts_with("agent `sre-bot` is a member and ")
            && why.matches("is a member").count() == 1,
        "{why}"
    );
}
