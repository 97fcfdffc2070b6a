//! Every fixture of Warden's tests; no product crate depends on this one.
//!
//! - [`stores`]: a fresh store on every backend available — SQLite always, PostgreSQL when
//!   `WARDEN_TEST_POSTGRES_URL` is set (CI sets it; without it the PostgreSQL half prints that
//!   it was skipped).
//! - [`catalog`]: a catalog of upstream tools classified by a policy, without an upstream.
//! - [`memory`]: the pipeline's traits in memory (audit log, counters, clock, executor).
//! - [`notes`]: the tests' upstream MCP server (in-process, or `warden_fixture notes`).
//! - [`conformance`]: the MCP conformance suite's fixture server (`warden_fixture conformance`).
//! - [`fixture_bin`]: the `warden_fixture` binary, to start either as a child process.

#![allow(
    clippy::expect_used,
    clippy::panic,
    reason = "test fixtures fail loudly"
)]

pub mod conformance;
pub mod hostile;
pub mod memory;
pub mod notes;
pub mod openai;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value};
use warden_core::config::{Config, Kind, Resource, parse_documents};
use warden_core::policy::Policy;
use warden_core::tool::{Catalog, ToolDescriptor, UpstreamTool, catalog_name, matching_policy};
use warden_store::{Location, Store};

/// The environment variable naming a PostgreSQL server for tests.
pub const POSTGRES_ENV: &str = "WARDEN_TEST_POSTGRES_URL";

static SKIP_NOTICE: AtomicBool = AtomicBool::new(false);

/// A fresh, migrated store for one test.
#[derive(Debug)]
pub struct TestStore {
    /// `sqlite` or `postgres`.
    pub name: &'static str,
    /// The store.
    pub store: Store,
    /// Where it is (for starting the CLI or a server on the same store).
    pub location: Location,
    schema: Option<String>,
    _dir: Option<tempfile::TempDir>,
}

impl TestStore {
    /// The same store, reached by servers started on it at `location` instead (through a
    /// proxy, say); the test's own handle keeps its connection.
    pub fn reached_at(mut self, location: Location) -> Self {
        self.location = location;
        self
    }

    /// Another handle on the same store, opened anew, as another replica opens it (it leaves
    /// the store to this one to clean up).
    pub async fn another(&self) -> TestStore {
        TestStore {
            name: self.name,
            store: Store::open(&self.location)
                .await
                .expect("open the store again"),
            location: self.location.clone(),
            schema: None,
            _dir: None,
        }
    }

    /// Drops the PostgreSQL schema of this test.
    pub async fn cleanup(self) {
        self.store.close().await;
        if let (Some(schema), Some(url)) = (self.schema, postgres_url())
            && let Ok(pool) = sqlx::PgPool::connect(&url).await
        {
            let drop = format!("DROP SCHEMA IF EXISTS {schema} CASCADE");
            let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(drop))
                .execute(&pool)
                .await;
            pool.close().await;
        }
    }
}

/// A fresh SQLite store in `dir` (which the caller owns and removes).
pub async fn sqlite_store_in(dir: &std::path::Path) -> TestStore {
    let location = Location::DataDir(dir.to_path_buf());
    let store = Store::open(&location).await.expect("open sqlite store");
    TestStore {
        name: "sqlite",
        store,
        location,
        schema: None,
        _dir: None,
    }
}

/// A fresh SQLite store opened as `warden serve` opens it: it owns the audit spool, so its
/// appends are acknowledged from the spool and inserted into the chain moments later.
pub async fn sqlite_serving_store() -> TestStore {
    let dir = tempfile::tempdir().expect("tempdir");
    let location = Location::DataDir(dir.path().to_path_buf());
    let store = Store::open_serving(&location)
        .await
        .expect("open sqlite store");
    TestStore {
        name: "sqlite-serving",
        store,
        location,
        schema: None,
        _dir: Some(dir),
    }
}

/// The PostgreSQL URL for tests, if configured.
pub fn postgres_url() -> Option<String> {
    std::env::var(POSTGRES_ENV).ok().filter(|s| !s.is_empty())
}

/// A fresh SQLite store in a temporary data directory.
pub async fn sqlite_store() -> TestStore {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = sqlite_store_in(dir.path()).await;
    TestStore {
        _dir: Some(dir),
        ..store
    }
}

/// A fresh PostgreSQL store in a schema of its own, if PostgreSQL is configured.
pub async fn postgres_store() -> Option<TestStore> {
    let Some(base) = postgres_url() else {
        if !SKIP_NOTICE.swap(true, Ordering::SeqCst) {
            eprintln!("postgres: skipped ({POSTGRES_ENV} is not set)");
        }
        return None;
    };
    let schema = format!("warden_test_{}", uuid::Uuid::now_v7().simple());
    let pool = sqlx::PgPool::connect(&base)
        .await
        .unwrap_or_else(|e| panic!("{POSTGRES_ENV} is set but PostgreSQL cannot be reached: {e}"));
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
        .execute(&pool)
        .await
        .expect("create test schema");
    pool.close().await;
    let sep = if base.contains('?') { '&' } else { '?' };
    let url = format!("{base}{sep}options=-c%20search_path%3D{schema}");
    let location = Location::Url(url);
    let store = Store::open(&location).await.expect("open postgres store");
    Some(TestStore {
        name: "postgres",
        store,
        location,
        schema: Some(schema),
        _dir: None,
    })
}

/// A fresh store on every available backend: SQLite as the CLI opens it and as `warden serve`
/// does, and PostgreSQL if configured.
pub async fn stores() -> Vec<TestStore> {
    let mut out = vec![sqlite_store().await, sqlite_serving_store().await];
    if let Some(pg) = postgres_store().await {
        out.push(pg);
    }
    out
}

/// Parses and validates configuration YAML.
pub fn config(yaml: &str) -> Config {
    let docs = parse_documents("test.yaml", yaml).unwrap_or_else(|e| panic!("{e:?}"));
    Config::validate(docs).unwrap_or_else(|e| panic!("{e:?}"))
}

/// An upstream tool for [`catalog`]: `(upstream, tool, annotations, input schema)`.
pub type ToolSpec<'a> = (&'a str, &'a str, Value, Value);

/// Builds a catalog of upstream tools, classified by the policy's ToolPolicies.
pub fn catalog(policy: &Policy, tools: &[ToolSpec<'_>]) -> Catalog {
    let descriptors = tools.iter().map(|(upstream, tool, annotations, schema)| {
        let Some(Resource::Upstream(u)) = policy.config.get(Kind::Upstream, upstream) else {
            panic!("no upstream `{upstream}` in the configuration")
        };
        let raw = UpstreamTool {
            name: (*tool).to_owned(),
            title: None,
            description: None,
            input_schema: warden_core::schema::SchemaText::new(&match schema {
                Value::Object(m) => m.clone(),
                _ => Map::new(),
            }),
            output_schema: None,
            annotations: (!annotations.is_null()).then(|| std::sync::Arc::new(annotations.clone())),
            icons: None,
            meta: None,
        };
        let name = catalog_name(u.prefix.as_deref().unwrap_or(u.name.as_str()), tool);
        let pol = matching_policy(policy.tool_policies(), &u.project, &name);
        ToolDescriptor::for_upstream(&u.project, &u.name, &name, &raw, pol).expect("tool schema")
    });
    Catalog::new(descriptors).0
}

/// The `warden_fixture` binary (this crate's), for a stdio upstream's `command` or a child
/// process: next to the test executables' directory, where `cargo test --workspace` builds it.
pub fn fixture_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("the test executable's path");
    // target/<profile>/deps/<test> or target/<profile>/<test>
    let bin = exe
        .ancestors()
        .skip(1)
        .take(2)
        .map(|dir| dir.join(format!("warden_fixture{}", std::env::consts::EXE_SUFFIX)))
        .find(|p| p.is_file());
    bin.unwrap_or_else(|| {
        panic!(
            "the `warden_fixture` binary is not built next to {}: run `cargo build -p warden-testkit` (or the whole `cargo test --workspace`)",
            exe.display()
        )
    })
}
