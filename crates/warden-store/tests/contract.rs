//! The store contract (STORE-1): one suite, run against SQLite and PostgreSQL.
//!
//! Every test runs on each backend `warden_testkit::stores()` provides; PostgreSQL needs
//! `WARDEN_TEST_POSTGRES_URL` (CI sets it) and prints that it was skipped otherwise.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

use std::time::Duration;

use serde_json::{Map, Value, json};
use warden_core::audit::RecordKind;
use warden_core::authority::resolve;
use warden_core::capability::{Capability, CapabilitySet};
use warden_core::config::{Kind, Located, parse_documents};
use warden_core::contract::Verdict;
use warden_core::decision::DenyCode;
use warden_core::name::Name;
use warden_core::pipeline::{CallRequest, Governance, Pipeline, RunState};
use warden_core::policy::{CounterSpec, Policy};
use warden_core::principal::{CredentialKind, CredentialRejection, Principal};
use warden_core::time::Millis;
use warden_core::tool::Catalog;
use warden_store::{AuditFilter, Store, StoreError, TokenRequest};
use warden_testkit::memory::{EchoExecutor, ManualClock};
use warden_testkit::{TestStore, stores};

const NOW: Millis = Millis(1_800_000_000_000);

const CONFIG: &str = r#"
kind: Project
name: payments
---
kind: Project
name: infra
---
kind: User
name: alice
---
kind: Role
name: operator
permissions: ["run:projects:*", "ledger:write"]
---
kind: RoleBinding
role: operator
subject: { user: alice }
---
kind: Upstream
name: ledger
project: payments
stdio: { command: ledger-mcp }
---
kind: Upstream
name: nodes
project: infra
stdio: { command: nodes-mcp }
---
kind: ToolPolicy
project: payments
tool: "ledger__*"
class: mutation
capability: ledger:write
projectArguments: ["/project"]
---
kind: ToolPolicy
project: infra
tool: "nodes__*"
class: mutation
"#;

fn docs(yaml: &str) -> Vec<Located> {
    parse_documents("test.yaml", yaml).unwrap()
}

async fn applied(s: &TestStore, yaml: &str) -> Policy {
    s.store
        .apply(docs(yaml), "test", NOW)
        .await
        .unwrap()
        .unwrap();
    let (config, revision) = s.store.load_config().await.unwrap();
    Policy::compile(config, revision)
}

fn catalog(policy: &Policy) -> Catalog {
    let schema = json!({"type":"object","properties":{"amount":{"type":"integer"},"project":{"type":"string"}}});
    warden_testkit::catalog(
        policy,
        &[
            ("ledger", "refund", Value::Null, schema.clone()),
            ("nodes", "restart", Value::Null, json!({})),
        ],
    )
}

async fn token(s: &TestStore, projects: Option<&[&str]>, scopes: Option<&[&str]>) -> String {
    s.store
        .create_token(
            TokenRequest {
                principal: Principal::User {
                    name: Name::new("alice").unwrap(),
                },
                projects: projects.map(|p| p.iter().map(|n| Name::new(n).unwrap()).collect()),
                scopes: scopes
                    .map(|s| CapabilitySet::from_patterns(s.iter().map(|c| Capability::new(*c)))),
                ttl: None,
                description: None,
                kind: CredentialKind::ApiKey,
            },
            "test",
            NOW,
        )
        .await
        .unwrap()
        .secret
}

struct Call<'a> {
    policy: &'a Policy,
    catalog: &'a Catalog,
    executor: &'a EchoExecutor,
}

impl Call<'_> {
    async fn run(
        &self,
        s: &TestStore,
        secret: &str,
        tool: &str,
        args: Value,
    ) -> warden_core::contract::CallOutcome {
        let credential = s
            .store
            .credential_for_token(secret)
            .await
            .unwrap()
            .expect("known token");
        credential.check_usable(NOW).unwrap();
        let authority = resolve(self.policy, &credential, None).unwrap();
        let clock = ManualClock::at(NOW);
        let pipeline = Pipeline {
            audit: &s.store,
            counters: &s.store,
            clock: &clock,
            executor: self.executor,
            approvals: &warden_testkit::memory::MemoryApprovals::default(),
        };
        let args = match args {
            Value::Object(m) => Some(m),
            _ => None::<Map<String, Value>>,
        };
        pipeline
            .call(
                self.policy,
                self.catalog,
                &authority,
                &RunState::new(format!("run_{}", uuid_like())),
                CallRequest {
                    call_id: "c1".into(),
                    name: tool,
                    args,
                    governance: Governance::On,
                    context: (),
                },
            )
            .await
    }
}

fn uuid_like() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

async fn call_records(store: &Store) -> Vec<warden_core::audit::AuditRecord> {
    store
        .audit(&AuditFilter {
            limit: Some(10_000),
            ..AuditFilter::default()
        })
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.record.kind != RecordKind::Admin)
        .collect()
}

fn code(outcome: &warden_core::contract::CallOutcome) -> Option<DenyCode> {
    outcome.denial().map(|d| d.code)
}

#[tokio::test]
async fn invalid_input_writes_no_run_and_no_tool_call() {
    for s in stores().await {
        let policy = applied(&s, CONFIG).await;
        let catalog = catalog(&policy);
        let executor = EchoExecutor::default();
        let call = Call {
            policy: &policy,
            catalog: &catalog,
            executor: &executor,
        };
        let secret = token(&s, None, None).await;
        let outcome = call
            .run(&s, &secret, "ledger__refund", json!({"amount": "lots"}))
            .await;
        assert_eq!(code(&outcome), Some(DenyCode::Validation), "{}", s.name);
        assert!(
            call_records(&s.store).await.is_empty(),
            "{}: records were written",
            s.name
        );
        assert!(executor.executed().is_empty());
        s.cleanup().await;
    }
}

#[tokio::test]
async fn a_kill_switch_creates_nothing() {
    for s in stores().await {
        let policy = applied(
            &s,
            &format!("{CONFIG}\n---\nkind: KillSwitch\nscope: {{ project: payments }}\nreason: incident 4411\n"),
        )
        .await;
        let catalog = catalog(&policy);
        let executor = EchoExecutor::default();
        let call = Call {
            policy: &policy,
            catalog: &catalog,
            executor: &executor,
        };
        let secret = token(&s, None, None).await;
        let outcome = call
            .run(&s, &secret, "ledger__refund", json!({"amount": 1}))
            .await;
        assert_eq!(code(&outcome), Some(DenyCode::KillSwitch), "{}", s.name);
        assert_eq!(
            outcome.denial().unwrap().message,
            "`ledger__refund` is frozen by a kill switch: incident 4411"
        );
        assert!(call_records(&s.store).await.is_empty(), "{}", s.name);
        assert!(executor.executed().is_empty());
        s.cleanup().await;
    }
}

#[tokio::test]
async fn a_token_bound_to_one_project_cannot_reach_another_also_through_the_arguments() {
    for s in stores().await {
        let policy = applied(&s, CONFIG).await;
        let catalog = catalog(&policy);
        let executor = EchoExecutor::default();
        let call = Call {
            policy: &policy,
            catalog: &catalog,
            executor: &executor,
        };
        let bound = token(&s, Some(&["payments"]), None).await;
        // B's tool by name: the same answer as a tool that does not exist.
        let hidden = call.run(&s, &bound, "nodes__restart", json!({})).await;
        let missing = call.run(&s, &bound, "nodes__restrat", json!({})).await;
        assert_eq!(code(&hidden), Some(DenyCode::UnknownTool), "{}", s.name);
        assert_eq!(hidden.contract().message, "unknown tool `nodes__restart`");
        assert_eq!(code(&missing), Some(DenyCode::UnknownTool));
        // B named only inside the arguments of A's tool.
        let via_args = call
            .run(
                &s,
                &bound,
                "ledger__refund",
                json!({"amount": 1, "project": "infra"}),
            )
            .await;
        assert_eq!(code(&via_args), Some(DenyCode::Capability), "{}", s.name);
        assert_eq!(via_args.denial().unwrap().rule, "ceiling:argument:/project");
        // A named in A's tool is fine.
        let own = call
            .run(
                &s,
                &bound,
                "ledger__refund",
                json!({"amount": 1, "project": "payments"}),
            )
            .await;
        assert!(
            matches!(own.verdict, Verdict::Executed { .. }),
            "{}: {:?}",
            s.name,
            own.verdict
        );
        assert_eq!(executor.executed(), vec!["ledger__refund".to_owned()]);
        s.cleanup().await;
    }
}

#[tokio::test]
async fn a_scoped_token_is_never_wider_than_its_owner() {
    for s in stores().await {
        let policy = applied(&s, CONFIG).await;
        let catalog = catalog(&policy);
        let executor = EchoExecutor::default();
        let call = Call {
            policy: &policy,
            catalog: &catalog,
            executor: &executor,
        };
        let narrow = token(&s, None, Some(&["run:projects:*"])).await;
        let outcome = call
            .run(&s, &narrow, "ledger__refund", json!({"amount": 1}))
            .await;
        assert_eq!(code(&outcome), Some(DenyCode::Capability), "{}", s.name);
        // Scopes wider than the owner add nothing: alice holds no `ledger:admin`.
        let wide = token(&s, None, Some(&["*"])).await;
        let credential = s.store.credential_for_token(&wide).await.unwrap().unwrap();
        let authority = resolve(&policy, &credential, None).unwrap();
        assert!(authority.holds("ledger:write"));
        assert!(!authority.holds("ledger:admin"));
        assert!(!authority.holds("approvals:decide"));
        s.cleanup().await;
    }
}

#[tokio::test]
async fn a_revoked_token_is_refused_at_its_next_use() {
    for s in stores().await {
        applied(&s, CONFIG).await;
        let secret = token(&s, None, None).await;
        let credential = s
            .store
            .credential_for_token(&secret)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(credential.check_usable(NOW), Ok(()));
        assert!(
            s.store
                .revoke_token(&credential.id, "test", NOW)
                .await
                .unwrap()
        );
        let again = s
            .store
            .credential_for_token(&secret)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            again.check_usable(NOW),
            Err(CredentialRejection::Revoked),
            "{}",
            s.name
        );
        assert!(!s.store.revoke_token("tok_nope", "test", NOW).await.unwrap());
        s.cleanup().await;
    }
}

#[tokio::test]
async fn an_expired_token_is_refused() {
    for s in stores().await {
        applied(&s, CONFIG).await;
        let t = s
            .store
            .create_token(
                TokenRequest {
                    principal: Principal::User {
                        name: Name::new("alice").unwrap(),
                    },
                    projects: None,
                    scopes: None,
                    ttl: Some(Duration::from_secs(60)),
                    description: None,
                    kind: CredentialKind::ApiKey,
                },
                "test",
                NOW,
            )
            .await
            .unwrap();
        let c = s
            .store
            .credential_for_token(&t.secret)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(c.check_usable(NOW.plus(Duration::from_secs(59))), Ok(()));
        assert_eq!(
            c.check_usable(NOW.plus(Duration::from_secs(60))),
            Err(CredentialRejection::Expired)
        );
        assert!(
            s.store
                .credential_for_token("wdn_unknown")
                .await
                .unwrap()
                .is_none()
        );
        s.cleanup().await;
    }
}

#[tokio::test]
async fn a_store_error_during_a_call_is_unavailable_and_never_an_execution() {
    for s in stores().await {
        let policy = applied(&s, CONFIG).await;
        let catalog = catalog(&policy);
        let executor = EchoExecutor::default();
        let secret = token(&s, None, None).await;
        let credential = s
            .store
            .credential_for_token(&secret)
            .await
            .unwrap()
            .unwrap();
        let authority = resolve(&policy, &credential, None).unwrap();
        s.store.close().await;
        let clock = ManualClock::at(NOW);
        let pipeline = Pipeline {
            audit: &s.store,
            counters: &s.store,
            clock: &clock,
            executor: &executor,
            approvals: &warden_testkit::memory::MemoryApprovals::default(),
        };
        let outcome = pipeline
            .call(
                &policy,
                &catalog,
                &authority,
                &RunState::new("run_down"),
                CallRequest {
                    call_id: "c1".into(),
                    name: "ledger__refund",
                    args: Some(Map::from_iter([("amount".to_owned(), json!(1))])),
                    governance: Governance::On,
                    context: (),
                },
            )
            .await;
        assert_eq!(code(&outcome), Some(DenyCode::Unavailable), "{}", s.name);
        assert!(
            executor.executed().is_empty(),
            "{}: executed with the store down",
            s.name
        );
        s.cleanup().await;
    }
}

#[tokio::test]
async fn an_untouched_trail_verifies_and_every_call_is_chained() {
    for s in stores().await {
        let policy = applied(&s, CONFIG).await;
        let catalog = catalog(&policy);
        let executor = EchoExecutor::default();
        let call = Call {
            policy: &policy,
            catalog: &catalog,
            executor: &executor,
        };
        let secret = token(&s, None, None).await;
        for _ in 0..3 {
            call.run(&s, &secret, "ledger__refund", json!({"amount": 1}))
                .await;
        }
        call.run(&s, &secret, "nope", json!({})).await;
        let records = call_records(&s.store).await;
        let kinds: Vec<_> = records.iter().map(|r| r.record.kind.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "run", "call", "decision", "outcome", "run", "call", "decision", "outcome", "run",
                "call", "decision", "outcome", "run", "call", "decision"
            ],
            "{}",
            s.name
        );
        let verified = s.store.verify_audit().await.unwrap().unwrap();
        assert!(verified >= 15, "{}", s.name);
        s.cleanup().await;
    }
}

async fn tamper(s: &TestStore, sql: &str) {
    // An attacker with database access removes the append-only triggers first.
    let drop = if s.name.starts_with("sqlite") {
        "DROP TRIGGER audit_no_update; DROP TRIGGER audit_no_delete;"
    } else {
        "DROP TRIGGER audit_no_change ON audit;"
    };
    s.store.execute_raw(drop).await.unwrap();
    s.store.execute_raw(sql).await.unwrap();
}

async fn trail(s: &TestStore) {
    let policy = applied(s, CONFIG).await;
    let catalog = catalog(&policy);
    let executor = EchoExecutor::default();
    let call = Call {
        policy: &policy,
        catalog: &catalog,
        executor: &executor,
    };
    let secret = token(s, None, None).await;
    for _ in 0..3 {
        call.run(s, &secret, "ledger__refund", json!({"amount": 1}))
            .await;
    }
}

#[tokio::test]
async fn audit_records_are_append_only_in_the_database() {
    for s in stores().await {
        trail(&s).await;
        let err = s
            .store
            .execute_raw("UPDATE audit SET tool = 'x' WHERE seq = 3")
            .await
            .unwrap_err();
        assert!(err.to_string().contains("append-only"), "{}: {err}", s.name);
        let err = s
            .store
            .execute_raw("DELETE FROM audit WHERE seq = 3")
            .await
            .unwrap_err();
        assert!(err.to_string().contains("append-only"), "{}: {err}", s.name);
        s.cleanup().await;
    }
}

#[tokio::test]
async fn editing_a_record_in_the_database_is_named_by_verify() {
    for s in stores().await {
        trail(&s).await;
        tamper(
            &s,
            "UPDATE audit SET code = NULL, decision = 'allow' WHERE seq = 6",
        )
        .await;
        let b = s.store.verify_audit().await.unwrap().unwrap_err();
        assert_eq!(
            b.to_string(),
            "audit record 6 does not match its hash: it was edited or moved",
            "{}",
            s.name
        );
        s.cleanup().await;
    }
}

#[tokio::test]
async fn deleting_a_record_in_the_database_is_named_by_verify() {
    for s in stores().await {
        trail(&s).await;
        tamper(&s, "DELETE FROM audit WHERE seq = 5").await;
        let b = s.store.verify_audit().await.unwrap().unwrap_err();
        assert_eq!(b.to_string(), "audit record 5 is missing", "{}", s.name);
        s.cleanup().await;
    }
}

#[tokio::test]
async fn reordering_records_in_the_database_is_named_by_verify() {
    for s in stores().await {
        trail(&s).await;
        // Swap records 4 and 5 by renumbering them.
        tamper(&s, "UPDATE audit SET seq = -1 WHERE seq = 4; UPDATE audit SET seq = 4 WHERE seq = 5; UPDATE audit SET seq = 5 WHERE seq = -1;").await;
        let b = s.store.verify_audit().await.unwrap().unwrap_err();
        assert_eq!(b.seq, 4, "{}: {b}", s.name);
        assert_eq!(
            b.to_string(),
            "audit record 4 does not match its hash: it was edited or moved"
        );
        s.cleanup().await;
    }
}

#[tokio::test]
async fn removing_the_newest_records_is_detected_against_the_head() {
    for s in stores().await {
        trail(&s).await;
        let (_, head) = (
            0,
            s.store
                .audit(&AuditFilter {
                    newest_first: true,
                    limit: Some(1),
                    ..Default::default()
                })
                .await
                .unwrap(),
        );
        let last = head[0].seq;
        tamper(&s, &format!("DELETE FROM audit WHERE seq = {last}")).await;
        let b = s.store.verify_audit().await.unwrap().unwrap_err();
        assert_eq!(
            b.to_string(),
            format!("audit records from {last} on are missing: the chain was truncated"),
            "{}",
            s.name
        );
        s.cleanup().await;
    }
}

/// Issue 33: verify read the records page by page and the head afterwards, so records
/// appended in between looked like a truncation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_while_records_are_appended_never_reports_a_truncation() {
    for s in stores().await {
        let policy = applied(&s, CONFIG).await;
        let catalog = catalog(&policy);
        let executor = EchoExecutor::default();
        let call = Call {
            policy: &policy,
            catalog: &catalog,
            executor: &executor,
        };
        let secret = token(&s, None, None).await;
        let done = std::sync::atomic::AtomicBool::new(false);
        let append = async {
            let mut calls = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                call.run(&s, &secret, "ledger__refund", json!({"amount": 1}))
                    .await;
                calls += 1;
                tokio::task::yield_now().await;
            }
            calls
        };
        let verify = async {
            let mut verified = Vec::new();
            for _ in 0..50 {
                verified.push(s.store.verify_audit().await.unwrap());
                tokio::task::yield_now().await;
            }
            done.store(true, std::sync::atomic::Ordering::Relaxed);
            verified
        };
        let (calls, verified) = tokio::join!(append, verify);
        assert!(calls > 0, "{}: nothing was appended", s.name);
        for v in verified {
            assert!(v.is_ok(), "{}: a false alarm: {}", s.name, v.unwrap_err());
        }
        s.cleanup().await;
    }
}

#[tokio::test]
async fn a_token_secret_is_stored_nowhere() {
    for s in stores().await {
        applied(&s, CONFIG).await;
        let secret = token(&s, Some(&["payments"]), None).await;
        let needle = &secret["wdn_".len()..];
        match &s.location {
            warden_store::Location::DataDir(dir) => {
                // The database file and its WAL, byte for byte.
                for entry in std::fs::read_dir(dir).unwrap() {
                    let bytes = std::fs::read(entry.unwrap().path()).unwrap();
                    assert!(
                        !bytes.windows(needle.len()).any(|w| w == needle.as_bytes()),
                        "the secret was found in the SQLite files"
                    );
                }
            }
            warden_store::Location::Url(_) => {
                for table in [
                    "meta",
                    "state",
                    "resources",
                    "credentials",
                    "audit",
                    "audit_head",
                    "counters",
                ] {
                    let found = s
                        .store
                        .execute_raw(&format!(
                            "SELECT 1 FROM {table} t WHERE row_to_json(t)::text LIKE '%{needle}%'"
                        ))
                        .await
                        .unwrap();
                    assert_eq!(found, 0, "the secret was found in table {table}");
                }
                // The search itself works: the token's public id is found.
                let id = s.store.credentials().await.unwrap()[0].id.clone();
                let found = s
                    .store
                    .execute_raw(&format!(
                        "SELECT 1 FROM credentials t WHERE row_to_json(t)::text LIKE '%{id}%'"
                    ))
                    .await
                    .unwrap();
                assert_eq!(found, 1);
            }
        }
        s.cleanup().await;
    }
}

#[tokio::test]
async fn configuration_is_applied_validated_and_versioned() {
    for s in stores().await {
        let r0 = s.store.revision().await.unwrap();
        applied(&s, CONFIG).await;
        let r1 = s.store.revision().await.unwrap();
        assert!(r1 > r0, "{}", s.name);
        // A dangling reference changes nothing.
        let errors = s
            .store
            .apply(
                docs("kind: Agent\nname: bot\nmemberships: [nowhere]\n"),
                "test",
                NOW,
            )
            .await
            .unwrap()
            .unwrap_err();
        assert_eq!(
            errors[0].to_string(),
            "test.yaml (document 1): Agent `bot`: field `memberships[0]`: no Project named `nowhere`; apply it first or fix the name"
        );
        assert_eq!(s.store.revision().await.unwrap(), r1, "{}", s.name);
        // Deleting what is referenced is refused; deleting the referrers first works.
        assert!(
            s.store
                .delete(Kind::Project, "infra", "test", NOW)
                .await
                .unwrap()
                .is_err()
        );
        s.store
            .delete(Kind::ToolPolicy, "infra/nodes__*", "test", NOW)
            .await
            .unwrap()
            .unwrap();
        s.store
            .delete(Kind::Upstream, "nodes", "test", NOW)
            .await
            .unwrap()
            .unwrap();
        s.store
            .delete(Kind::Project, "infra", "test", NOW)
            .await
            .unwrap()
            .unwrap();
        let (config, _) = s.store.load_config().await.unwrap();
        assert!(!config.contains(Kind::Project, "infra"));
        assert!(config.contains(Kind::Project, "payments"));
        s.cleanup().await;
    }
}

#[tokio::test]
async fn the_first_admin_is_bootstrapped_once() {
    for s in stores().await {
        let first = s
            .store
            .bootstrap(NOW)
            .await
            .unwrap()
            .expect("first bootstrap");
        assert!(first.secret.starts_with("wdn_"));
        assert!(
            s.store.bootstrap(NOW).await.unwrap().is_none(),
            "{}",
            s.name
        );
        let (config, revision) = s.store.load_config().await.unwrap();
        let policy = Policy::compile(config, revision);
        let credential = s
            .store
            .credential_for_token(&first.secret)
            .await
            .unwrap()
            .unwrap();
        let authority = resolve(&policy, &credential, None).unwrap();
        assert!(authority.holds("approvals:decide"));
        s.cleanup().await;
    }
}

#[tokio::test]
async fn counters_are_exact_under_concurrency() {
    for s in stores().await {
        let counter = CounterSpec {
            key: "budget:x".into(),
            limit: 20,
            window: Duration::from_secs(60),
            rule: "r".into(),
        };
        let takes = (0..64).map(|_| s.store.take(&counter, NOW));
        let taken = futures::future::join_all(takes)
            .await
            .into_iter()
            .filter(|r| *r.as_ref().unwrap())
            .count();
        assert_eq!(taken, 20, "{}", s.name);
        // The next window starts afresh.
        assert!(
            s.store
                .take(&counter, NOW.plus(Duration::from_secs(60)))
                .await
                .unwrap()
        );
        s.cleanup().await;
    }
}

#[tokio::test]
async fn a_time_is_claimed_once_across_stores_and_old_claims_are_forgotten() {
    for s in stores().await {
        let other = s.another().await;
        let claims = (0..16).map(|i| {
            let store = if i % 2 == 0 { &s.store } else { &other.store };
            store.claim_once("reconciler:r:0 * * * *", NOW)
        });
        let claimed = futures::future::join_all(claims)
            .await
            .into_iter()
            .filter(|r| *r.as_ref().unwrap())
            .count();
        assert_eq!(claimed, 1, "{}", s.name);
        // The next time is claimed afresh; one two days later forgets the first.
        let hour = Duration::from_secs(3600);
        assert!(
            s.store
                .claim_once("reconciler:r:0 * * * *", NOW.plus(hour))
                .await
                .unwrap()
        );
        assert!(
            s.store
                .claim_once("reconciler:r:0 * * * *", NOW.plus(hour * 48))
                .await
                .unwrap()
        );
        assert!(
            s.store
                .claim_once("reconciler:r:0 * * * *", NOW)
                .await
                .unwrap(),
            "forgotten, so claimable: a replica two days late would run it"
        );
        other.cleanup().await;
        s.cleanup().await;
    }
}

/// Ten appends of two records each to the run `run_concurrent_{task}`.
async fn ten_appends(store: &Store, task: usize) {
    for i in 0..10_i64 {
        let record = |kind| warden_core::audit::NewRecord {
            at: Millis(NOW.0 + i),
            kind,
            run_id: format!("run_concurrent_{task}"),
            call_id: Some(format!("c{i}")),
            principal: Some("user:t".into()),
            agent: None,
            tool: Some("p__t".into()),
            decision: None,
            code: None,
            payload: "{}".into(),
        };
        store
            .append_audit(vec![record(RecordKind::Call), record(RecordKind::Decision)])
            .await
            .unwrap();
    }
}

/// AUD-2, REL-3: appends racing from many callers, through two store handles on the same
/// database (as a second process, the CLI, would) and alongside a configuration apply, form
/// one unbroken chain, and every acknowledged append is in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_appends_from_two_handles_form_one_chain() {
    for s in stores().await {
        let other = Store::open(&s.location).await.unwrap();
        let handles = [&s.store, &other];
        let appends = (0..16_usize).map(|task| ten_appends(handles[task % 2], task));
        let apply = async {
            s.store
                .apply(docs(CONFIG), "test", NOW)
                .await
                .unwrap()
                .unwrap();
        };
        futures::join!(futures::future::join_all(appends), apply);
        assert!(
            s.store.verify_audit().await.unwrap().is_ok(),
            "{}: the chain is broken",
            s.name
        );
        for task in 0..16 {
            let records = s
                .store
                .audit(&AuditFilter {
                    run_id: Some(format!("run_concurrent_{task}")),
                    ..AuditFilter::default()
                })
                .await
                .unwrap();
            assert_eq!(records.len(), 20, "{}: run {task}", s.name);
        }
        drop(other);
        s.cleanup().await;
    }
}

#[tokio::test]
async fn a_schema_newer_than_the_binary_is_refused() {
    for s in stores().await {
        let checksum = if s.name.starts_with("sqlite") {
            "X'00'"
        } else {
            "'\\x00'::bytea"
        };
        s.store
            .execute_raw(&format!(
                "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) VALUES (99999, 'future', TRUE, {checksum}, 0)"
            ))
            .await
            .unwrap();
        let err = Store::open(&s.location).await.unwrap_err();
        assert!(
            matches!(err, StoreError::SchemaTooNew { found: 99999, .. }),
            "{}: {err}",
            s.name
        );
        assert_eq!(
            err.to_string(),
            "the store's schema is at version 99999, newer than this warden knows (version 17); run a newer warden"
        );
        s.cleanup().await;
    }
}

fn agent_run(
    id: &str,
    key: Option<&str>,
    fire_at: Option<i64>,
    status: &str,
) -> warden_store::AgentRun {
    warden_store::AgentRun {
        id: id.into(),
        agent: "sre-bot".into(),
        trigger: if key.is_some() { "schedule" } else { "manual" }.into(),
        schedule_key: key.map(Into::into),
        fire_at,
        status: status.into(),
        requested_by: "{}".into(),
        credential_id: None,
        queued_at: NOW.0,
        started_at: None,
        finished_at: None,
        exit_code: None,
        error: None,
        task_id: None,
        output: None,
    }
}

/// Issue 45 (lists are thin): the runs listing pages on with a cursor to its end, each run
/// once — runs with audited calls and agent runs alike, several starting in the same
/// millisecond — and says how many there are.
#[tokio::test]
async fn runs_page_on_with_a_cursor_each_once_and_are_counted() {
    use warden_core::audit::NewRecord;
    use warden_store::RunCursor;
    for s in stores().await {
        // Seven runs with run records, three at the same time; five agent runs, two of them
        // at the time of the others.
        let records: Vec<NewRecord> = (0..7)
            .map(|i| NewRecord {
                at: Millis(NOW.0 + [0, 0, 0, 1, 2, 3, 4][i]),
                kind: RecordKind::Run,
                run_id: format!("run_a{i}"),
                call_id: None,
                principal: Some("user:alice".into()),
                agent: None,
                tool: None,
                decision: None,
                code: None,
                payload: "{}".into(),
            })
            .collect();
        s.store.append_audit(records).await.unwrap();
        for i in 0..5 {
            let mut run = agent_run(&format!("run_g{i}"), None, None, "queued");
            run.queued_at = NOW.0 + [0, 2, 5, 6, 6][i];
            assert!(s.store.insert_agent_run(&run).await.unwrap());
        }
        assert_eq!(s.store.count_runs(None).await.unwrap(), 12, "{}", s.name);
        assert_eq!(s.store.count_runs(Some("sre-bot")).await.unwrap(), 5);
        let mut seen = Vec::new();
        let mut cursor: Option<RunCursor> = None;
        loop {
            let page = s.store.runs(None, cursor.as_ref(), 5).await.unwrap();
            seen.extend(page.iter().map(|r| (r.at, r.id.clone())));
            match page.last() {
                Some(last) if page.len() == 5 => {
                    let next = RunCursor::after(last);
                    assert_eq!(RunCursor::parse(&next.to_string()), Some(next.clone()));
                    cursor = Some(next);
                }
                _ => break,
            }
        }
        let mut expected = seen.clone();
        expected.sort_by(|a, b| b.cmp(a));
        expected.dedup();
        assert_eq!(seen, expected, "newest first, each once: {}", s.name);
        assert_eq!(seen.len(), 12, "{}: {seen:?}", s.name);
        assert_eq!(RunCursor::parse("yesterday.run_x"), None);
        assert_eq!(RunCursor::parse("12."), None);
        s.cleanup().await;
    }
}

#[tokio::test]
async fn a_schedule_runs_once_per_time_and_never_twice_at_once() {
    for s in stores().await {
        let key = Some("0:*/15 * * * *");
        assert!(
            s.store
                .insert_agent_run(&agent_run("r1", key, Some(1), "running"))
                .await
                .unwrap()
        );
        // The same schedule while r1 is still running: refused.
        assert!(
            !s.store
                .insert_agent_run(&agent_run("r2", key, Some(2), "queued"))
                .await
                .unwrap(),
            "{}",
            s.name
        );
        // Manual runs are not limited.
        assert!(
            s.store
                .insert_agent_run(&agent_run("m1", None, None, "running"))
                .await
                .unwrap()
        );
        assert!(
            s.store
                .insert_agent_run(&agent_run("m2", None, None, "running"))
                .await
                .unwrap()
        );
        let mut r1 = s.store.agent_run("r1").await.unwrap().unwrap();
        r1.status = "succeeded".into();
        r1.exit_code = Some(0);
        s.store.update_agent_run(&r1).await.unwrap();
        // Once it ended, the next time may run; the same time again may not (another replica).
        assert!(
            !s.store
                .insert_agent_run(&agent_run("r1b", key, Some(1), "queued"))
                .await
                .unwrap(),
            "{}",
            s.name
        );
        assert!(
            s.store
                .insert_agent_run(&agent_run("r3", key, Some(3), "queued"))
                .await
                .unwrap(),
            "{}",
            s.name
        );
        let runs = s.store.agent_runs(Some("sre-bot"), 10).await.unwrap();
        assert_eq!(runs.len(), 4);
        assert_eq!(
            s.store.agent_run("r1").await.unwrap().unwrap().exit_code,
            Some(0)
        );
        s.cleanup().await;
    }
}

#[tokio::test]
async fn unfinished_calls_are_the_allowed_ones_without_an_outcome() {
    use warden_core::audit::{NewRecord, RecordKind};
    for s in stores().await {
        let record = |kind: RecordKind, call: &str, decision: Option<&str>, at: i64| NewRecord {
            at: Millis(at),
            kind,
            run_id: "run_r".into(),
            call_id: Some(call.into()),
            principal: Some("user:alice".into()),
            agent: None,
            tool: Some("ledger__refund".into()),
            decision: decision.map(str::to_owned),
            code: None,
            payload: "{}".into(),
        };
        let old = NOW.0 - 600_000;
        s.store
            .append_audit(vec![
                record(RecordKind::Call, "a", None, old),
                record(RecordKind::Decision, "a", Some("allow"), old),
                record(RecordKind::Call, "b", None, old),
                record(RecordKind::Decision, "b", Some("allow"), old),
                record(RecordKind::Outcome, "b", Some("executed"), old),
                record(RecordKind::Call, "c", None, old),
                record(RecordKind::Decision, "c", Some("deny"), old),
                record(RecordKind::Call, "d", None, NOW.0),
                record(RecordKind::Decision, "d", Some("allow"), NOW.0),
            ])
            .await
            .unwrap();
        let head = s.store.audit_head().await.unwrap();
        assert_eq!(head, 9, "{}", s.name);
        let unfinished = s
            .store
            .unfinished_calls(0, head, Millis(NOW.0 - 60_000))
            .await
            .unwrap();
        let calls: Vec<_> = unfinished
            .iter()
            .map(|r| r.record.call_id.as_deref().unwrap_or_default())
            .collect();
        assert_eq!(calls, ["a"], "{}", s.name);
        // Outside the window, nothing.
        assert!(
            s.store
                .unfinished_calls(2, head, Millis(NOW.0 - 60_000))
                .await
                .unwrap()
                .is_empty(),
            "{}",
            s.name
        );
        s.cleanup().await;
    }
}

#[tokio::test]
async fn a_checkpoint_anchors_the_chain_end_on_both_backends() {
    use warden_core::audit::{NewRecord, RecordKind};
    for s in stores().await {
        let keys = tempfile::tempdir().unwrap();
        let key = warden_store::AuditKey::load_or_create(&keys.path().join("audit.key")).unwrap();
        assert_eq!(
            s.store.checkpoint(&key, NOW).await.unwrap(),
            None,
            "{}",
            s.name
        );
        let record = |call: &str| NewRecord {
            at: NOW,
            kind: RecordKind::Call,
            run_id: "run_k".into(),
            call_id: Some(call.into()),
            principal: None,
            agent: None,
            tool: Some("t".into()),
            decision: None,
            code: None,
            payload: "{}".into(),
        };
        s.store
            .append_audit(vec![record("a"), record("b")])
            .await
            .unwrap();
        let c = s.store.checkpoint(&key, NOW).await.unwrap().unwrap();
        assert_eq!(c.seq, 2, "{}", s.name);
        // Nothing new: no second checkpoint.
        assert_eq!(s.store.checkpoint(&key, NOW).await.unwrap(), None);
        assert_eq!(
            s.store.checkpoints(10).await.unwrap(),
            std::slice::from_ref(&c)
        );
        assert_eq!(
            warden_store::read_checkpoints(&key.checkpoint_file()).unwrap(),
            std::slice::from_ref(&c)
        );
        let anchored = s
            .store
            .verify_anchor(&key.public_key(), s.store.checkpoints(10).await.unwrap())
            .await
            .unwrap();
        assert_eq!(anchored, Ok(Some(c)), "{}", s.name);
        s.cleanup().await;
    }
}

/// Two stores sharing one audit key and its checkpoint file (every PostgreSQL database verified
/// from one machine does, by default): each checkpoint names its store, and neither store's
/// checkpoints are held against the other's chain — a long chain's checkpoint made no false
/// truncation alarm on a new, short one (AUD-2).
#[tokio::test]
async fn stores_sharing_a_key_read_only_their_own_checkpoints() {
    use warden_core::audit::{NewRecord, RecordKind};
    let record = |call: String| NewRecord {
        at: NOW,
        kind: RecordKind::Call,
        run_id: "run_k".into(),
        call_id: Some(call),
        principal: None,
        agent: None,
        tool: Some("t".into()),
        decision: None,
        code: None,
        payload: "{}".into(),
    };
    let mut pairs = vec![(
        warden_testkit::sqlite_store().await,
        warden_testkit::sqlite_store().await,
    )];
    if let (Some(a), Some(b)) = (
        warden_testkit::postgres_store().await,
        warden_testkit::postgres_store().await,
    ) {
        pairs.push((a, b));
    }
    for (long, short) in pairs {
        let keys = tempfile::tempdir().unwrap();
        let key = warden_store::AuditKey::load_or_create(&keys.path().join("audit.key")).unwrap();
        assert_ne!(
            long.store.id().await.unwrap(),
            short.store.id().await.unwrap()
        );
        long.store
            .append_audit((0..50).map(|i| record(format!("l{i}"))).collect())
            .await
            .unwrap();
        let far = long.store.checkpoint(&key, NOW).await.unwrap().unwrap();
        assert_eq!(
            far.store,
            Some(long.store.id().await.unwrap()),
            "{}",
            long.name
        );
        short
            .store
            .append_audit((0..3).map(|i| record(format!("s{i}"))).collect())
            .await
            .unwrap();
        let file = warden_store::read_checkpoints(&key.checkpoint_file()).unwrap();
        assert_eq!(
            short
                .store
                .verify_anchor(&key.public_key(), file)
                .await
                .unwrap(),
            Ok(None),
            "{}: the other store's checkpoint is not this one's",
            short.name
        );
        let near = short.store.checkpoint(&key, NOW).await.unwrap().unwrap();
        let file = warden_store::read_checkpoints(&key.checkpoint_file()).unwrap();
        assert_eq!(file.len(), 2, "one file, both stores' checkpoints");
        assert_eq!(
            short
                .store
                .verify_anchor(&key.public_key(), file.clone())
                .await
                .unwrap(),
            Ok(Some(near)),
            "{}",
            short.name
        );
        assert_eq!(
            long.store
                .verify_anchor(&key.public_key(), file)
                .await
                .unwrap(),
            Ok(Some(far)),
            "{}",
            long.name
        );
        long.cleanup().await;
        short.cleanup().await;
    }
}

#[tokio::test]
async fn a_shared_secret_is_made_once_and_read_back_the_same() {
    for s in stores().await {
        let first = s.store.shared_secret("task-ids").await.unwrap();
        assert_eq!(first.len(), 64, "{}: 32 bytes in hex", s.name);
        assert_eq!(
            s.store.shared_secret("task-ids").await.unwrap(),
            first,
            "{}",
            s.name
        );
        assert_ne!(
            s.store.shared_secret("other").await.unwrap(),
            first,
            "{}",
            s.name
        );
        s.cleanup().await;
    }
}

/// Two replicas appending to one store make one chain: each writer's view of the head goes
/// stale whenever the other appends, and nothing is lost or forked (STORE-3).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_writers_on_one_store_append_one_unbroken_chain() {
    async fn writes(store: &Store, name: &str) {
        for i in 0..100 {
            let batch = (0..(i % 3 + 1))
                .map(|j| warden_core::audit::NewRecord {
                    at: NOW,
                    kind: RecordKind::Call,
                    run_id: "run_two".into(),
                    call_id: Some(format!("{name}-{i}-{j}")),
                    principal: None,
                    agent: None,
                    tool: Some("t".into()),
                    decision: None,
                    code: None,
                    payload: "{}".into(),
                })
                .collect();
            store.append_audit(batch).await.unwrap();
        }
    }
    for s in stores().await {
        let other = s.another().await;
        tokio::join!(writes(&s.store, "a"), writes(&other.store, "b"));
        // Each writer appended 1, 2 and 3 records in turn: 199 of them.
        assert_eq!(s.store.verify_audit().await.unwrap(), Ok(398), "{}", s.name);
        other.store.close().await;
        s.cleanup().await;
    }
}

/// An upstream URL with credentials, stored before such URLs were refused: applying one now
/// is refused naming the field, and one read back from the store keeps working with the
/// credentials moved out of its URL, where nothing shows them (REL-4).
#[tokio::test]
async fn credentials_in_a_stored_upstream_url_are_moved_out_of_it_and_new_ones_refused() {
    let upstream = |url: &str| {
        format!(
            "kind: Project\nname: p\n---\nkind: Upstream\nname: svc\nproject: p\nhttp: {{ url: \"{url}\" }}\n"
        )
    };
    for s in stores().await {
        let refused = s
            .store
            .apply(
                docs(&upstream("http://svc:pw_777@127.0.0.1:9/mcp")),
                "test",
                NOW,
            )
            .await
            .unwrap()
            .unwrap_err();
        let text = refused.iter().map(ToString::to_string).collect::<String>();
        assert!(text.contains("http.url"), "{}: {text}", s.name);
        assert!(
            text.contains("`http://***@127.0.0.1:9/mcp` carries credentials"),
            "{}: {text}",
            s.name
        );
        assert!(!text.contains("pw_777"), "{}: {text}", s.name);
        applied(&s, &upstream("http://127.0.0.1:9/mcp")).await;
        s.store
            .execute_raw("UPDATE resources SET spec = replace(spec, 'http://127.0.0.1', 'http://svc:pw_777@127.0.0.1') WHERE kind = 'Upstream'")
            .await
            .unwrap();
        let (config, _) = s.store.load_config().await.unwrap();
        let Some(warden_core::config::Resource::Upstream(svc)) = config.get(Kind::Upstream, "svc")
        else {
            panic!("{}: no upstream `svc`", s.name)
        };
        let http = svc.http.clone().unwrap();
        assert_eq!(http.url, "http://127.0.0.1:9/mcp", "{}", s.name);
        assert_eq!(
            http.url_credentials.as_deref(),
            Some("svc:pw_777"),
            "{}",
            s.name
        );
        let shown =
            serde_json::to_string(&config.resources().map(|r| &r.resource).collect::<Vec<_>>())
                .unwrap();
        assert!(!shown.contains("pw_777"), "{}: {shown}", s.name);
        s.cleanup().await;
    }
}

#[tokio::test]
async fn a_free_text_search_finds_text_in_any_field_ignoring_case_and_wildcards() {
    use warden_core::audit::{NewRecord, RecordKind};
    for s in stores().await {
        let record = |tool: &str, payload: &str| NewRecord {
            at: NOW,
            kind: RecordKind::Decision,
            run_id: "run_search".into(),
            call_id: Some("call_1".into()),
            principal: Some("user:alice".into()),
            agent: None,
            tool: Some(tool.into()),
            decision: Some("allow".into()),
            code: None,
            payload: payload.into(),
        };
        s.store
            .append_audit(vec![
                record("ledger__refund", r#"{"rule":"policy:Refunds"}"#),
                record("notes__add", r#"{"rule":"50%_off"}"#),
                record("notes__list", "{}"),
            ])
            .await
            .unwrap();
        let found = |text: &str| {
            let store = &s.store;
            let text = text.to_owned();
            async move {
                store
                    .audit(&AuditFilter {
                        contains: Some(text),
                        ..AuditFilter::default()
                    })
                    .await
                    .unwrap()
                    .iter()
                    .map(|r| r.record.tool.clone().unwrap_or_default())
                    .collect::<Vec<_>>()
            }
        };
        assert_eq!(found("REFUND").await, ["ledger__refund"], "{}", s.name);
        assert_eq!(
            found("policy:refunds").await,
            ["ledger__refund"],
            "{}",
            s.name
        );
        assert_eq!(found("50%_").await, ["notes__add"], "{}", s.name);
        assert!(
            found("5_%").await.is_empty(),
            "wildcards are literal: {}",
            s.name
        );
        assert_eq!(found("notes__").await.len(), 2, "{}", s.name);
        let count = s
            .store
            .count_audit(&AuditFilter {
                contains: Some("alice".into()),
                ..AuditFilter::default()
            })
            .await
            .unwrap();
        assert!(count >= 3, "{}", s.name);
        s.cleanup().await;
    }
}
