//! The decision function (RUN-6) on its two enforcement points.
//!
//! `tools/call` asks [`decide`] once per call (after [`resolve_tool`] asked it once more for
//! name resolution); `tools/list` asks it once per catalog tool. PERF-1 gives the whole
//! governed call ≤ 0.15 ms p50 of added latency and PERF-3 gives `tools/list` over
//! 100 projects × 100 tools ≤ 1 ms p99, so these pure steps must stay far below both.
//!
//! The installation is built the way the gateway builds it: YAML configuration → [`Policy`],
//! upstream tools → [`ToolDescriptor::for_upstream`] → [`Catalog`], credential → [`resolve`].
//! `alice` may run every project and holds `tracker:write`; `bob` may run `p000` only.
//! `decision/list/baseline_bool_scope_check/*` is not the decision function but the same
//! scope rule as a bare bool: the gap to it is what building rule and denial strings costs.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "benchmark setup"
)]

use std::fmt::Write as _;
use std::hint::black_box;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Map, Value, json};
use warden_core::authority::{Authority, resolve};
use warden_core::config::{Config, Kind, Resource, parse_documents};
use warden_core::decision::{Decision, DenyCode, Purpose, decide, resolve_tool};
use warden_core::name::Name;
use warden_core::policy::Policy;
use warden_core::principal::{Credential, Principal};
use warden_core::tool::{Catalog, ToolDescriptor, UpstreamTool, catalog_name, matching_policy};

/// The governed tool of the call benches: a mutation requiring `tracker:write`.
const CALLED: &str = "u000__create_issue";

/// One installation: `projects` projects, each with one upstream of `tools` tools.
struct World {
    catalog: Catalog,
    /// Holds `run:projects:*` and `tracker:write`.
    alice: Authority,
    /// Holds `run:projects:p000` only.
    bob: Authority,
}

fn config_yaml(projects: usize) -> String {
    let mut y = String::from(
        "kind: User\nname: alice\n---\nkind: User\nname: bob\n---\n\
         kind: Role\nname: tracker-writer\npermissions: [\"run:projects:*\", \"tracker:write\"]\n---\n\
         kind: Role\nname: p000-runner\npermissions: [\"run:projects:p000\"]\n---\n\
         kind: RoleBinding\nrole: tracker-writer\nsubject: { user: alice }\n---\n\
         kind: RoleBinding\nrole: p000-runner\nsubject: { user: bob }\n---\n\
         kind: ToolPolicy\nproject: p000\ntool: u000__create_issue\nclass: mutation\ncapability: tracker:write\n",
    );
    for p in 0..projects {
        write!(
            y,
            "---\nkind: Project\nname: p{p:03}\n---\n\
             kind: Upstream\nname: u{p:03}\nproject: p{p:03}\nstdio: {{ command: tracker-mcp }}\n"
        )
        .unwrap();
    }
    y
}

fn issue_schema() -> Map<String, Value> {
    let Value::Object(m) = json!({
        "type": "object",
        "properties": {
            "title": {"type": "string", "minLength": 1, "maxLength": 200},
            "body": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 20},
        },
        "required": ["title"],
    }) else {
        unreachable!()
    };
    m
}

fn credential(user: &str) -> Credential {
    Credential::synthetic(
        &format!("tok_{user}"),
        Principal::User {
            name: Name::new(user).unwrap(),
        },
    )
}

fn world(projects: usize, tools: usize) -> World {
    let docs = parse_documents("bench", &config_yaml(projects)).unwrap();
    let config = Config::validate(docs).unwrap_or_else(|e| panic!("{e:?}"));
    let policy = Policy::compile(config, 1);
    let schema = issue_schema();
    let mut descriptors = Vec::with_capacity(projects * tools);
    for p in 0..projects {
        let Some(Resource::Upstream(u)) = policy.config.get(Kind::Upstream, &format!("u{p:03}"))
        else {
            panic!("no upstream u{p:03}")
        };
        for t in 0..tools {
            let raw = UpstreamTool {
                name: if t == 0 {
                    "create_issue".to_owned()
                } else {
                    format!("tool_{t:03}")
                },
                title: None,
                description: Some("Opens an issue in the tracker.".to_owned()),
                input_schema: warden_core::schema::SchemaText::new(&schema),
                output_schema: None,
                annotations: None,
                icons: None,
                meta: None,
            };
            let cname = catalog_name(u.name.as_str(), &raw.name);
            let pol = matching_policy(policy.tool_policies(), &u.project, &cname);
            descriptors.push(
                ToolDescriptor::for_upstream(&u.project, &u.name, &cname, &raw, pol).unwrap(),
            );
        }
    }
    let (catalog, conflicts) = Catalog::new(descriptors);
    assert!(conflicts.is_empty());
    let alice = resolve(&policy, &credential("alice"), None).unwrap();
    let bob = resolve(&policy, &credential("bob"), None).unwrap();
    World {
        catalog,
        alice,
        bob,
    }
}

fn issue_args() -> Map<String, Value> {
    let Value::Object(m) = json!({
        "title": "Refund job times out for invoices over 10k lines",
        "body": "Since the 2.3 deploy the nightly refund job exceeds its 30 min budget when an \
                 invoice has more than 10 000 lines. Logs attached in the incident channel.",
        "tags": ["billing", "regression", "p2"],
    }) else {
        unreachable!()
    };
    m
}

/// What `tools/list` does (warden-mcp `Gateway::list_tools`): keep what the run may see.
fn list_tools(catalog: &Catalog, authority: &Authority) -> Vec<Arc<ToolDescriptor>> {
    catalog
        .iter()
        .filter(|t| matches!(decide(authority, t, Purpose::List), Decision::Allow { .. }))
        .cloned()
        .collect()
}

fn call_decisions(c: &mut Criterion) {
    let w = world(100, 100);
    let tool = w.catalog.get(CALLED).unwrap();
    let args = issue_args();
    // INVARIANT: the two benches measure the outcome their names say.
    assert!(matches!(
        decide(&w.alice, tool, Purpose::Call { args: Some(&args) }),
        Decision::Allow { .. }
    ));
    assert!(matches!(
        decide(&w.bob, tool, Purpose::Call { args: Some(&args) }),
        Decision::Deny(ref d) if d.code == DenyCode::Capability
    ));

    let mut g = c.benchmark_group("decision/call");
    g.bench_function("allowed", |b| {
        b.iter(|| {
            decide(
                black_box(&w.alice),
                black_box(tool),
                Purpose::Call {
                    args: Some(black_box(&args)),
                },
            )
        });
    });
    g.bench_function("denied_capability", |b| {
        b.iter(|| {
            decide(
                black_box(&w.bob),
                black_box(tool),
                Purpose::Call {
                    args: Some(black_box(&args)),
                },
            )
        });
    });
    // Name resolution precedes the pipeline: a catalog lookup plus a `List` decision.
    g.bench_function("resolve_tool", |b| {
        b.iter(|| {
            resolve_tool(
                black_box(&w.catalog),
                black_box(&w.alice),
                black_box(CALLED),
            )
            .is_ok()
        });
    });
    g.finish();
}

fn list_filtering(c: &mut Criterion) {
    let mut g = c.benchmark_group("decision/list");
    // 100 tools = 10 projects × 10 tools; 10,000 tools = 100 × 100, the PERF-3 shape.
    for (projects, tools) in [(10, 10), (100, 100)] {
        let w = world(projects, tools);
        let size = projects * tools;
        assert_eq!(list_tools(&w.catalog, &w.alice).len(), size);
        assert_eq!(list_tools(&w.catalog, &w.bob).len(), tools);
        g.throughput(Throughput::Elements(size as u64));
        g.bench_with_input(
            BenchmarkId::new(format!("{size}_tools"), "one_project"),
            &w,
            |b, w| b.iter(|| list_tools(black_box(&w.catalog), black_box(&w.bob))),
        );
        g.bench_with_input(
            BenchmarkId::new(format!("{size}_tools"), "all_projects"),
            &w,
            |b, w| b.iter(|| list_tools(black_box(&w.catalog), black_box(&w.alice))),
        );
        // Not the decision function: the same visibility rule answered as a bare bool, to show
        // how much of the filter is spent building rule and denial strings nobody reads.
        assert_eq!(visible_by_scope(&w.catalog, &w.bob).len(), tools);
        g.bench_with_input(
            BenchmarkId::new(
                format!("baseline_bool_scope_check/{size}_tools"),
                "one_project",
            ),
            &w,
            |b, w| b.iter(|| visible_by_scope(black_box(&w.catalog), black_box(&w.bob))),
        );
        g.bench_with_input(
            BenchmarkId::new(
                format!("baseline_bool_scope_check/{size}_tools"),
                "all_projects",
            ),
            &w,
            |b, w| b.iter(|| visible_by_scope(black_box(&w.catalog), black_box(&w.alice))),
        );
    }
    g.finish();
}

/// The scope part of [`decide`] for `Purpose::List`, without building any `String`.
fn visible_by_scope(catalog: &Catalog, authority: &Authority) -> Vec<Arc<ToolDescriptor>> {
    catalog
        .iter()
        .filter(|t| {
            authority.withheld.is_none()
                && t.project
                    .as_ref()
                    .is_none_or(|p| authority.projects.contains_key(p))
        })
        .cloned()
        .collect()
}

criterion_group!(benches, call_decisions, list_filtering);
criterion_main!(benches);
