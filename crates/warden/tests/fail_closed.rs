//! The fail-closed matrix (REL-2), one table on every store: whatever breaks — the store
//! (removed, full, unwritable, locked, PostgreSQL stopped), the configuration (not loaded),
//! the upstream (dead), the credential (expired, issued by a skewed clock, revoked, forged,
//! another's session) — the call is refused with its code, nothing reaches the upstream, and
//! every record acknowledged before stays in the trail.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

mod common;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::*;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use warden_store::{AuditFilter, Location};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Backend {
    Sqlite,
    Postgres,
}

#[derive(Clone, Copy, Debug)]
enum Fault {
    /// The database files removed under the running server.
    StoreRemoved,
    /// The disk (a small file system) filled up; on PostgreSQL, inserts refused `disk_full`.
    StoreFull,
    /// Inserts refused as in a read-only transaction (PostgreSQL).
    StoreUnwritable,
    /// Another process holds the write lock (SQLite) or the audit table's lock (PostgreSQL).
    StoreLocked,
    /// PostgreSQL stops: every connection cut, no new one accepted.
    PostgresStopped,
    /// The configuration in the store cannot be read when the server starts.
    NotLoaded,
    /// The upstream's server is gone.
    UpstreamDead,
    /// A token issued by a clock two hours behind, for one hour: expired by this server's clock.
    ClockSkew,
    /// A token past its expiry.
    Expired,
    /// A revoked token.
    Revoked,
    /// A well-formed token that was never issued.
    Forged,
    /// A valid token on another credential's 2025-11-25 session.
    ForeignSession,
}

/// What the refused call must get.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// A governed denial with this code (and, for the store's faults, `/readyz` 503).
    Denied(&'static str),
    /// An HTTP status before any governance.
    Http(u16),
}

use Backend::*;
use Expect::*;
use Fault::*;

const MATRIX: &[(Fault, &[Backend], Expect)] = &[
    (StoreRemoved, &[Sqlite], Denied("UNAVAILABLE")),
    (StoreFull, &[Sqlite, Postgres], Denied("UNAVAILABLE")),
    // SQLite: a file system cannot be made read-only under a process that holds files open for
    // writing (the kernel answers "busy"); a write refused for lack of space is the same failure.
    (StoreUnwritable, &[Postgres], Denied("UNAVAILABLE")),
    (StoreLocked, &[Sqlite, Postgres], Denied("UNAVAILABLE")),
    (PostgresStopped, &[Postgres], Denied("UNAVAILABLE")),
    (NotLoaded, &[Sqlite, Postgres], Http(503)),
    (UpstreamDead, &[Sqlite, Postgres], Denied("UNAVAILABLE")),
    (ClockSkew, &[Sqlite, Postgres], Http(401)),
    (Expired, &[Sqlite, Postgres], Http(401)),
    (Revoked, &[Sqlite, Postgres], Http(401)),
    (Forged, &[Sqlite, Postgres], Http(401)),
    (ForeignSession, &[Sqlite, Postgres], Http(404)),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_failure_is_refused_with_its_code_executes_nothing_and_loses_nothing() {
    let mut failures = Vec::new();
    for &(fault, backends, expect) in MATRIX {
        for &backend in backends {
            let Some(case) = Case::start(fault, backend).await else {
                continue;
            };
            let name = format!("{fault:?} on {backend:?}");
            match tokio::time::timeout(Duration::from_secs(60), case.run(expect)).await {
                Ok(Ok(acknowledged)) => eprintln!(
                    "fail-closed: {name}: ok ({acknowledged} calls acknowledged before it was noticed)"
                ),
                Ok(Err(problem)) => failures.push(format!("{name}: {problem}")),
                Err(_) => failures.push(format!("{name}: no answer within 60 s")),
            }
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// One row on one store: a Warden in front of a notes upstream that writes its notes to a
/// file, and a call acknowledged before the fault.
struct Case {
    fault: Fault,
    backend: Backend,
    w: TestWarden,
    alice: String,
    notes: PathBuf,
    upstream: CancellationToken,
    proxy: Option<Proxy>,
    mount: Option<Mount>,
    _dir: tempfile::TempDir,
}

impl Case {
    async fn start(fault: Fault, backend: Backend) -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let notes = dir.path().join("notes.json");
        let upstream = CancellationToken::new();
        let addr = warden_testkit::notes::spawn_http(
            warden_testkit::notes::NotesServer::new(Some(notes.clone())),
            "127.0.0.1:0".parse().unwrap(),
            upstream.clone(),
        )
        .await
        .unwrap();
        let (mut mount, mut proxy) = (None, None);
        let store = match backend {
            Sqlite if matches!(fault, StoreFull) => {
                let Some(m) = Mount::tmpfs(&dir.path().join("small")) else {
                    eprintln!(
                        "fail-closed: {fault:?} on SQLite skipped: mounting a small file system needs root"
                    );
                    return None;
                };
                let store = warden_testkit::sqlite_store_in(&m.path).await;
                mount = Some(m);
                store
            }
            Sqlite => warden_testkit::sqlite_store().await,
            Postgres => {
                let store = warden_testkit::postgres_store().await?;
                let Location::Url(url) = &store.location else {
                    unreachable!()
                };
                let p = Proxy::start(postgres_addr(url)).await;
                let through = url.replacen(&postgres_addr(url).to_string(), &p.addr.to_string(), 1);
                proxy = Some(p);
                store.reached_at(Location::Url(through))
            }
        };
        let config = format!(
            "kind: Project\nname: alpha\n---\nkind: User\nname: alice\n---\nkind: User\nname: bob\n---\n\
             kind: Role\nname: r\npermissions: [\"run:projects:alpha\"]\n---\n\
             kind: RoleBinding\nrole: r\nsubject: {{ user: alice }}\n---\n\
             kind: RoleBinding\nrole: r\nsubject: {{ user: bob }}\n---\n\
             kind: Upstream\nname: alpha\nproject: alpha\nhttp: {{ url: \"http://{addr}/mcp\" }}\n---\n\
             kind: ToolPolicy\nproject: alpha\ntool: \"alpha__*_note\"\nclass: mutation\n"
        );
        let w = TestWarden::start_on(store, &config).await;
        let alice = w.token("alice", None, None).await;
        let case = Self {
            fault,
            backend,
            w,
            alice,
            notes,
            upstream,
            proxy,
            mount,
            _dir: dir,
        };
        let before = case.call(&case.alice.clone(), "before", None).await;
        assert_eq!(before.status.as_deref(), Some("executed"), "{before:?}");
        Some(case)
    }

    /// The row's check; how many calls were acknowledged before the fault was noticed.
    async fn run(mut self, expect: Expect) -> Result<usize, String> {
        let mut token = self.alice.clone();
        let mut session = None;
        let restore = self.break_it(&mut token, &mut session).await;
        // The embedded store acknowledges a call once its records are durable in the store's
        // spool, and inserts them moments later: a fault that only the insert meets (a held
        // lock, a full disk whose spool still has room) is noticed there, and calls are
        // refused from then on. Calls answered before are kept (checked below).
        let mut acknowledged = 0;
        let answer = loop {
            let on_file = std::fs::read_to_string(&self.notes).unwrap_or_default();
            let text = format!("after {acknowledged}");
            let answer = self.call(&token, &text, session.as_deref()).await;
            if std::fs::read_to_string(&self.notes).unwrap_or_default() != on_file
                && answer.status.as_deref() != Some("executed")
            {
                return Err(format!("a refused call reached the upstream: {answer:?}"));
            }
            let store_fault = matches!(
                self.fault,
                StoreFull | StoreUnwritable | StoreLocked | PostgresStopped | StoreRemoved
            );
            if store_fault && answer.status.as_deref() == Some("executed") && acknowledged < 100 {
                acknowledged += 1;
                tokio::time::sleep(Duration::from_millis(250)).await;
                continue;
            }
            break answer;
        };
        match expect {
            Denied(code) => {
                if answer.status.as_deref() != Some("denied")
                    || answer.code.as_deref() != Some(code)
                {
                    return Err(format!("expected a denial `{code}`, got {answer:?}"));
                }
            }
            Http(status) => {
                if answer.http != status {
                    return Err(format!("expected HTTP {status}, got {answer:?}"));
                }
            }
        }
        if matches!(expect, Denied("UNAVAILABLE")) && !matches!(self.fault, UpstreamDead) {
            let ready = reqwest::get(format!("{}/readyz", self.w.base))
                .await
                .unwrap();
            if ready.status() != 503 {
                return Err(format!(
                    "/readyz answered {} with the store broken",
                    ready.status()
                ));
            }
        }
        if let Some(restore) = restore {
            restore(&mut self).await;
        }
        self.nothing_lost(1 + acknowledged).await?;
        Ok(acknowledged)
    }

    /// Breaks what the row names; what puts the store back (for the acknowledged records to
    /// be read), where the row breaks the store.
    async fn break_it(
        &mut self,
        token: &mut String,
        session: &mut Option<String>,
    ) -> Option<Restore> {
        match self.fault {
            StoreRemoved => {
                let Location::DataDir(dir) = &self.w.store.location else {
                    unreachable!()
                };
                for suffix in ["", "-wal", "-shm"] {
                    let _ = std::fs::remove_file(dir.join(format!("warden.db{suffix}")));
                }
                // The trail went with the files: nothing to read back.
                None
            }
            StoreFull if self.backend == Sqlite => {
                self.mount.as_ref().unwrap().fill();
                Some(Box::new(|case: &mut Case| {
                    Box::pin(async move { case.mount.as_ref().unwrap().unfill() })
                }))
            }
            StoreFull | StoreUnwritable => {
                let sqlstate = if matches!(self.fault, StoreFull) {
                    "53100"
                } else {
                    "25006"
                };
                self.pg(&format!(
                    "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS \
                     $$ BEGIN RAISE EXCEPTION 'refused by the test' USING ERRCODE = '{sqlstate}'; END $$; \
                     CREATE TRIGGER refuse BEFORE INSERT ON audit FOR EACH ROW EXECUTE FUNCTION refuse()"
                ))
                .await;
                Some(Box::new(|case: &mut Case| {
                    Box::pin(async move {
                        case.pg("DROP TRIGGER refuse ON audit; DROP FUNCTION refuse()")
                            .await
                    })
                }))
            }
            StoreLocked => {
                let held = Arc::new(tokio::sync::Notify::new());
                let locked = Arc::new(tokio::sync::Notify::new());
                let (release, taken) = (held.clone(), locked.clone());
                match (&self.w.store.location, self.backend) {
                    (Location::DataDir(dir), Sqlite) => {
                        let db = dir.join("warden.db");
                        tokio::task::spawn_blocking(move || {
                            let conn = rusqlite::Connection::open(db).unwrap();
                            conn.execute_batch("BEGIN EXCLUSIVE").unwrap();
                            taken.notify_one();
                            tokio::runtime::Handle::current().block_on(release.notified());
                            conn.execute_batch("ROLLBACK").unwrap();
                        });
                    }
                    _ => {
                        let url = self.direct_url();
                        tokio::spawn(async move {
                            use sqlx::Connection as _;
                            let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
                            let mut tx = conn.begin().await.unwrap();
                            sqlx::query("LOCK TABLE audit IN ACCESS EXCLUSIVE MODE")
                                .execute(&mut *tx)
                                .await
                                .unwrap();
                            taken.notify_one();
                            release.notified().await;
                            tx.rollback().await.unwrap();
                        });
                    }
                }
                locked.notified().await;
                Some(Box::new(move |_: &mut Case| {
                    Box::pin(async move {
                        held.notify_one();
                    })
                }))
            }
            PostgresStopped => {
                self.proxy.as_ref().unwrap().stop();
                Some(Box::new(|case: &mut Case| {
                    Box::pin(async move { case.proxy.as_ref().unwrap().start_again() })
                }))
            }
            NotLoaded => {
                self.corrupt_config(true).await;
                let w = std::mem::replace(&mut self.w, placeholder().await);
                self.w = w.restart().await;
                Some(Box::new(|case: &mut Case| {
                    Box::pin(async move { case.corrupt_config(false).await })
                }))
            }
            UpstreamDead => {
                self.upstream.cancel();
                tokio::time::sleep(Duration::from_millis(300)).await;
                None
            }
            ClockSkew | Expired => {
                // Skew: issued by a clock two hours behind, for an hour. Expired: issued 61 s
                // ago for 60 s.
                let (ago, ttl) = match self.fault {
                    ClockSkew => (2 * 3_600_000, 3_600),
                    _ => (61_000, 60),
                };
                *token = self
                    .token_issued_at(Millis(now().0 - ago), Duration::from_secs(ttl))
                    .await;
                None
            }
            Revoked => {
                let credential = self
                    .w
                    .store
                    .store
                    .credential_for_token(&self.alice)
                    .await
                    .unwrap()
                    .unwrap();
                self.w
                    .store
                    .store
                    .revoke_token(&credential.id, "test", now())
                    .await
                    .unwrap();
                self.w.settle().await;
                None
            }
            Forged => {
                *token = format!("wdn_{}", "A".repeat(43));
                None
            }
            ForeignSession => {
                let bob = self.w.token("bob", None, None).await;
                *session = Some(open_session(&self.w, &bob).await);
                None
            }
        }
    }

    /// Every call acknowledged (`expected` of them) has its outcome in the trail, which
    /// verifies.
    async fn nothing_lost(&self, expected: usize) -> Result<(), String> {
        if matches!(self.fault, StoreRemoved) {
            return Ok(());
        }
        let mut executed = 0;
        for _ in 0..100 {
            executed = self
                .w
                .store
                .store
                .audit(&AuditFilter {
                    tool: Some("alpha__add_note".into()),
                    decision: Some("executed".into()),
                    limit: Some(1000),
                    ..AuditFilter::default()
                })
                .await
                .map_err(|e| format!("the trail cannot be read: {e}"))?
                .len();
            if executed >= expected {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        if executed != expected {
            return Err(format!(
                "{executed} executed outcomes in the trail, {expected} acknowledged"
            ));
        }
        let verify = cli(&["audit", "verify"], &self.w.store_args());
        if !verify.status.success() {
            return Err(format!(
                "audit verify: {}",
                String::from_utf8_lossy(&verify.stderr)
            ));
        }
        Ok(())
    }

    /// A `tools/call` of `alpha__add_note` over HTTP: on a 2025-11-25 session if given, else
    /// stateless.
    async fn call(&self, token: &str, text: &str, session: Option<&str>) -> Answer {
        let version = if session.is_some() {
            "2025-11-25"
        } else {
            "2026-07-28"
        };
        let mut params = json!({"name": "alpha__add_note", "arguments": {"text": text}});
        if session.is_none() {
            params["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "fail-closed", "version": "1"}
            });
        }
        let mut request = http()
            .post(self.w.mcp())
            .bearer_auth(token)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", version)
            .header("mcp-method", "tools/call")
            .header("mcp-name", "alpha__add_note")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}));
        if let Some(s) = session {
            request = request.header("mcp-session-id", s);
        }
        let response = request.send().await.unwrap();
        let http = response.status().as_u16();
        let body = response.text().await.unwrap();
        let message = body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .next_back()
            .unwrap_or(&body);
        let d = serde_json::from_str::<Value>(message.trim())
            .ok()
            .map(|v| v["result"]["_meta"]["warden/decision"].clone())
            .unwrap_or(Value::Null);
        Answer {
            http,
            status: d["status"].as_str().map(str::to_owned),
            code: d["code"].as_str().map(str::to_owned),
            body: body.chars().take(400).collect(),
        }
    }

    async fn token_issued_at(&self, issued: Millis, ttl: Duration) -> String {
        use warden_core::name::Name;
        use warden_core::principal::{CredentialKind, Principal};
        let token = self
            .w
            .store
            .store
            .create_token(
                warden_store::TokenRequest {
                    principal: Principal::User {
                        name: Name::new("alice").unwrap(),
                    },
                    projects: None,
                    scopes: None,
                    ttl: Some(ttl),
                    description: None,
                    kind: CredentialKind::ApiKey,
                },
                "test",
                issued,
            )
            .await
            .unwrap()
            .secret;
        self.w.settle().await;
        token
    }

    /// Makes the stored configuration unreadable (`true`), or readable again.
    async fn corrupt_config(&self, corrupt: bool) {
        let sql = if corrupt {
            "UPDATE resources SET spec = '{not json' || spec WHERE kind = 'Role'"
        } else {
            "UPDATE resources SET spec = substr(spec, 10) WHERE kind = 'Role'"
        };
        match &self.w.store.location {
            Location::DataDir(dir) => {
                let conn = rusqlite::Connection::open(dir.join("warden.db")).unwrap();
                conn.execute_batch(sql).unwrap();
            }
            Location::Url(_) => self.pg(sql).await,
        }
    }

    fn direct_url(&self) -> String {
        let Location::Url(url) = &self.w.store.location else {
            unreachable!()
        };
        let proxy = self.proxy.as_ref().unwrap();
        url.replacen(&proxy.addr.to_string(), &proxy.upstream.to_string(), 1)
    }

    async fn pg(&self, sql: &str) {
        use sqlx::Connection as _;
        let mut conn = sqlx::PgConnection::connect(&self.direct_url())
            .await
            .unwrap();
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
            .execute(&mut conn)
            .await
            .unwrap();
    }
}

type Restore = Box<
    dyn for<'a> FnOnce(&'a mut Case) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send + 'a>>
        + Send,
>;

use warden_core::time::Millis;

#[derive(Debug)]
struct Answer {
    http: u16,
    status: Option<String>,
    code: Option<String>,
    #[expect(dead_code, reason = "shown in a failure's message")]
    body: String,
}

/// A stand-in while a server restarts.
async fn placeholder() -> TestWarden {
    TestWarden::start("").await
}

fn http() -> reqwest::Client {
    warden_mcp::http_client::install_tls();
    reqwest::Client::new()
}

fn postgres_addr(url: &str) -> SocketAddr {
    let host = url.split('@').nth(1).unwrap().split('/').next().unwrap();
    let host = host.replace("localhost", "127.0.0.1");
    let host = if host.contains(':') {
        host
    } else {
        format!("{host}:5432")
    };
    host.parse().unwrap()
}

/// A TCP proxy in front of PostgreSQL that can stop as a server does: every connection cut,
/// no new one accepted.
struct Proxy {
    addr: SocketAddr,
    upstream: SocketAddr,
    running: Arc<AtomicBool>,
    /// Cancelled when the proxy stops; the connections made since it last started hold it.
    cut: Arc<std::sync::Mutex<CancellationToken>>,
}

impl Proxy {
    async fn start(upstream: SocketAddr) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let proxy = Self {
            addr: listener.local_addr().unwrap(),
            upstream,
            running: Arc::new(AtomicBool::new(true)),
            cut: Arc::new(std::sync::Mutex::new(CancellationToken::new())),
        };
        let (running, cut) = (proxy.running.clone(), proxy.cut.clone());
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                if !running.load(Ordering::SeqCst) {
                    continue;
                }
                let stop = cut.lock().unwrap().clone();
                tokio::spawn(async move {
                    let Ok(mut server) = tokio::net::TcpStream::connect(upstream).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        () = stop.cancelled() => {}
                    }
                });
            }
        });
        proxy
    }

    fn stop(&self) {
        self.running.store(false, Ordering::SeqCst);
        let mut cut = self.cut.lock().unwrap();
        cut.cancel();
        *cut = CancellationToken::new();
    }

    fn start_again(&self) {
        self.running.store(true, Ordering::SeqCst);
    }
}

/// A small tmpfs (root only) that can be filled.
struct Mount {
    path: PathBuf,
}

impl Mount {
    fn tmpfs(path: &Path) -> Option<Self> {
        std::fs::create_dir_all(path).unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=8m", "tmpfs"])
            .arg(path)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Self {
            path: path.to_owned(),
        })
    }

    fn fill(&self) {
        use std::io::Write as _;
        let mut f = std::fs::File::create(self.path.join("filler")).unwrap();
        let block = vec![0u8; 64 * 1024];
        while f.write_all(&block).is_ok() {}
        let _ = f.sync_all();
    }

    fn unfill(&self) {
        std::fs::remove_file(self.path.join("filler")).unwrap();
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.path)
            .status();
    }
}
