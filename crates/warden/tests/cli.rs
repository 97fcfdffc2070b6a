//! The `warden` binary as users run it: exit codes, messages, stores on both backends.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};

use warden_store::Location;
use warden_testkit::{TestStore, stores};

const WARDEN: &str = env!("CARGO_BIN_EXE_warden");

fn store_args(location: &Location) -> Vec<String> {
    match location {
        Location::DataDir(d) => vec!["--data-dir".into(), d.display().to_string()],
        Location::Url(u) => vec!["--database-url".into(), u.clone()],
    }
}

fn warden(location: &Location, args: &[&str]) -> Output {
    let mut cmd = Command::new(WARDEN);
    cmd.args(args).args(store_args(location));
    for (k, _) in std::env::vars() {
        if k.starts_with("WARDEN_") {
            cmd.env_remove(k);
        }
    }
    cmd.output().expect("run warden")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

const CONFIG: &str = "kind: Project\nname: payments\n---\nkind: User\nname: alice\n---\nkind: Role\nname: op\npermissions: [\"run:projects:payments\"]\n---\nkind: RoleBinding\nrole: op\nsubject: { user: alice }\n";

#[tokio::test]
async fn apply_with_a_misspelt_field_exits_2_naming_file_resource_and_field() {
    let s = warden_testkit::sqlite_store().await;
    let dir = tempfile::tempdir().unwrap();
    let bad = write(
        dir.path(),
        "bad.yaml",
        "kind: Project\nname: payments\n---\nkind: ToolPolicy\nproject: payments\ntool: ledger__refund\ncapabilty: ledger:write\n",
    );
    let out = warden(&s.location, &["apply", "-f", &bad]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        format!(
            "error: {bad} (document 2): ToolPolicy `payments/ledger__refund`: field `capabilty`: unknown field `capabilty`, expected one of `name`, `project`, `tool`, `class`, `capability`, `risk`, `rateLimit`, `strict`, `deny`, `ungoverned`, `projectArguments`, `audit`, `selfApproval`, `approvals`, `rules`\n"
        )
    );
    // Nothing was applied, not even the valid project.
    let out = warden(&s.location, &["get", "projects", "-o", "json"]);
    assert_eq!(stdout(&out).trim(), "[]");
}

/// `warden config validate` checks files without a store: a reference to a resource only a
/// store holds is named, and so is where to check against a store.
#[test]
fn config_validate_says_it_reads_the_files_alone() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = write(
        dir.path(),
        "up.yaml",
        "kind: Upstream\nname: x\nproject: lab\nhttp: { url: \"http://127.0.0.1:1/mcp\" }\n",
    );
    let project = write(dir.path(), "lab.yaml", "kind: Project\nname: lab\n");
    let validate = |files: &[&str]| {
        let mut cmd = Command::new(WARDEN);
        cmd.args(["config", "validate"]);
        for f in files {
            cmd.args(["-f", f]);
        }
        cmd.output().unwrap()
    };
    let out = validate(&[&upstream]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        format!(
            "error: {upstream} (document 1): Upstream `x`: field `project`: no Project named `lab`; apply it first or fix the name\n\
             error: `warden config validate` checks the given files alone; `warden apply --dry-run -f …` checks them against a store\n"
        )
    );
    let out = validate(&[&upstream, &project]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "2 resources are valid\n");
}

/// `-f -` reads standard input (`warden get … -o yaml | warden apply -f -`); its errors name
/// `<stdin>`.
#[tokio::test]
async fn apply_reads_standard_input_for_a_dash() {
    use std::io::Write as _;
    let s = warden_testkit::sqlite_store().await;
    let apply = |text: &str| {
        let mut cmd = Command::new(WARDEN);
        cmd.args(["apply", "-f", "-"])
            .args(store_args(&s.location))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        for (k, _) in std::env::vars() {
            if k.starts_with("WARDEN_") {
                cmd.env_remove(k);
            }
        }
        let mut child = cmd.spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let out = apply("kind: Project\nname: payments\nkinds: 1\n");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("error: <stdin> (document 1): Project `payments`: field `kinds`"),
        "{}",
        stderr(&out)
    );
    let out = apply(CONFIG);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut twice = Command::new(WARDEN);
    twice
        .args(["apply", "-f", "-", "-f", "-"])
        .args(store_args(&s.location))
        .stdin(std::process::Stdio::null());
    let out = twice.output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stderr(&out), "error: -: standard input can be read once\n");
    let out = warden(&s.location, &["get", "projects", "-o", "json"]);
    assert!(stdout(&out).contains("\"payments\""), "{}", stdout(&out));
}

#[tokio::test]
async fn usage_errors_exit_2_and_runtime_errors_exit_1() {
    let s = warden_testkit::sqlite_store().await;
    let out = warden(&s.location, &["get", "widgets"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("error: unknown kind `widgets`; expected one of User,"),
        "{}",
        stderr(&out)
    );
    let out = warden(&s.location, &["token", "create", "--user", "nobody"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        "error: `user`: no User named `nobody`; apply it first\n"
    );
    let out = warden(&s.location, &["token", "revoke", "tok_0000"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "error: no token with id `tok_0000`; see `warden token list`\n"
    );
    let out = warden(&s.location, &["serve", "--bogus"]);
    assert_eq!(out.status.code(), Some(2));
    let out = warden(
        &s.location,
        &["token", "create", "--user", "alice", "--ttl", "soon"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).starts_with("error: --ttl: `soon` is not a duration"),
        "{}",
        stderr(&out)
    );
    // A direct prefix the tools do not carry is refused before anything is called (`bench`
    // takes no store).
    let out = Command::new(WARDEN)
        .args([
            "bench",
            "http://127.0.0.1:9/mcp",
            "--direct",
            "http://127.0.0.1:9/mcp",
            "--direct-prefix",
            "bench-",
        ])
        .env_remove("WARDEN_TOKEN")
        .output()
        .expect("run warden");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        "error: --read-tool `bench__read` does not start with --direct-prefix `bench-`\n"
    );
}

#[tokio::test]
async fn tokens_print_their_secret_once_and_list_without_it() {
    for s in stores().await {
        let dir = tempfile::tempdir().unwrap();
        let cfg = write(dir.path(), "c.yaml", CONFIG);
        assert!(warden(&s.location, &["apply", "-f", &cfg]).status.success());
        let out = warden(
            &s.location,
            &[
                "token",
                "create",
                "--user",
                "alice",
                "--project",
                "payments",
            ],
        );
        assert!(out.status.success(), "{}: {}", s.name, stderr(&out));
        let secret = stdout(&out).trim().to_owned();
        assert!(
            secret.starts_with("wdn_") && !secret.contains(' '),
            "{secret}"
        );
        for format in ["table", "json", "yaml"] {
            let list = warden(&s.location, &["token", "list", "-o", format]);
            assert!(list.status.success());
            assert!(
                !stdout(&list).contains(&secret[4..]),
                "{}: secret listed as {format}",
                s.name
            );
            assert!(stdout(&list).contains("payments"));
        }
        let credential = s
            .store
            .credential_for_token(&secret)
            .await
            .unwrap()
            .unwrap();
        let out = warden(&s.location, &["token", "revoke", &credential.id]);
        assert!(out.status.success());
        let list = warden(&s.location, &["token", "list"]);
        assert!(stdout(&list).contains("revoked"), "{}", stdout(&list));
        s.cleanup().await;
    }
}

fn tamper_sql(s: &TestStore, sql: &str) -> String {
    let drop = if s.name.starts_with("sqlite") {
        "DROP TRIGGER audit_no_update; DROP TRIGGER audit_no_delete;"
    } else {
        "DROP TRIGGER audit_no_change ON audit;"
    };
    format!("{drop} {sql}")
}

async fn trail(s: &TestStore) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(dir.path(), "c.yaml", CONFIG);
    for _ in 0..3 {
        assert!(warden(&s.location, &["apply", "-f", &cfg]).status.success());
        assert!(
            warden(
                &s.location,
                &["kill", "--project", "payments", "--reason", "drill"]
            )
            .status
            .success()
        );
        assert!(
            warden(&s.location, &["delete", "killswitch", "project:payments"])
                .status
                .success()
        );
    }
    let out = warden(&s.location, &["audit", "verify"]);
    assert!(out.status.success(), "{}: {}", s.name, stderr(&out));
    // A store no `warden serve` ever signed a checkpoint of: verified, and said unanchored.
    let printed = stdout(&out);
    let mut lines = printed.lines();
    assert_eq!(
        lines.next(),
        Some("audit chain verified: 7 records"),
        "{}",
        s.name
    );
    assert!(
        lines
            .next()
            .is_some_and(|l| l.starts_with("its end is not anchored")),
        "{}: {printed}",
        s.name
    );
}

#[tokio::test]
async fn audit_verify_names_an_edited_record() {
    for s in stores().await {
        trail(&s).await;
        s.store
            .execute_raw(&tamper_sql(
                &s,
                "UPDATE audit SET principal = 'cli:mallory' WHERE seq = 3",
            ))
            .await
            .unwrap();
        let out = warden(&s.location, &["audit", "verify"]);
        assert_eq!(out.status.code(), Some(1), "{}", s.name);
        assert_eq!(
            stderr(&out),
            "error: audit record 3 does not match its hash: it was edited or moved\n"
        );
        s.cleanup().await;
    }
}

#[tokio::test]
async fn audit_verify_names_a_deleted_record() {
    for s in stores().await {
        trail(&s).await;
        s.store
            .execute_raw(&tamper_sql(&s, "DELETE FROM audit WHERE seq = 4"))
            .await
            .unwrap();
        let out = warden(&s.location, &["audit", "verify"]);
        assert_eq!(out.status.code(), Some(1), "{}", s.name);
        assert_eq!(stderr(&out), "error: audit record 4 is missing\n");
        s.cleanup().await;
    }
}

#[tokio::test]
async fn audit_verify_names_reordered_records() {
    for s in stores().await {
        trail(&s).await;
        s.store
            .execute_raw(&tamper_sql(
                &s,
                "UPDATE audit SET seq = -1 WHERE seq = 5; UPDATE audit SET seq = 5 WHERE seq = 6; UPDATE audit SET seq = 6 WHERE seq = -1;",
            ))
            .await
            .unwrap();
        let out = warden(&s.location, &["audit", "verify"]);
        assert_eq!(out.status.code(), Some(1), "{}", s.name);
        assert_eq!(
            stderr(&out),
            "error: audit record 5 does not match its hash: it was edited or moved\n"
        );
        s.cleanup().await;
    }
}

#[tokio::test]
async fn audit_lists_and_filters_and_exports_json_lines() {
    let s = warden_testkit::sqlite_store().await;
    trail(&s).await;
    let out = warden(
        &s.location,
        &["audit", "--tool", "apply", "--oldest-first", "-o", "json"],
    );
    assert!(out.status.success());
    let lines: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The first apply wrote 4 resources; the next two changed nothing and wrote nothing;
    // each `kill` is an apply of one KillSwitch.
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0]["tool"], "apply");
    assert_eq!(
        lines[0]["payload"]["resources"].as_array().unwrap().len(),
        4
    );
    assert_eq!(
        lines[1]["payload"]["resources"][0],
        "KillSwitch/project:payments"
    );
    let out = warden(&s.location, &["audit", "--since", "garbage"]);
    assert_eq!(out.status.code(), Some(2));
}

#[tokio::test]
async fn serve_prints_the_urls_and_the_first_admin_token_once() {
    let s = warden_testkit::sqlite_store().await;
    for first in [true, false] {
        let mut child = Command::new(WARDEN)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(store_args(&s.location))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mcp = lines.next().unwrap().unwrap();
        let console = lines.next().unwrap().unwrap();
        assert!(
            mcp.starts_with("mcp: http://127.0.0.1:") && mcp.ends_with("/mcp"),
            "{mcp}"
        );
        assert!(
            console.starts_with("console: http://127.0.0.1:") && console.ends_with('/'),
            "{console}"
        );
        let addr = mcp
            .trim_start_matches("mcp: http://")
            .trim_end_matches("/mcp")
            .to_owned();
        if first {
            let token = lines.next().unwrap().unwrap();
            assert!(token.starts_with("admin token: wdn_"), "{token}");
        }
        let ready: serde_json::Value =
            serde_json::from_str(&reqwest_get(&format!("http://{addr}/readyz")).await).unwrap();
        assert_eq!(ready["ready"], true, "{ready}");
        child.kill().unwrap();
        child.wait().unwrap();
        if !first {
            // No third line was printed on the second start.
            assert!(lines.next().is_none());
        }
    }
}

async fn reqwest_get(url: &str) -> String {
    // A tiny HTTP/1.1 GET over a socket: the test needs no HTTP client crate.
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rest = url.trim_start_matches("http://");
    let (host, path) = rest.split_once('/').unwrap();
    let mut stream = tokio::net::TcpStream::connect(host).await.unwrap();
    stream
        .write_all(
            format!("GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    response.split_once("\r\n\r\n").unwrap().1.to_owned()
}

#[test]
fn the_configuration_schema_is_json() {
    let out = Command::new(WARDEN)
        .args(["config", "schema"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let schema: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(schema.to_string().contains("ToolPolicy"));
}

/// PERF-3: the repository's build configuration (.cargo/config.toml) compiles mimalloc to
/// commit its arenas on demand, which lets it return freed memory. Checked on the binary
/// itself, through mimalloc's own report of its options; skipped when CFLAGS of one's own
/// replaced the repository's.
#[test]
fn the_allocator_commits_memory_on_demand() {
    let flags = option_env!("CFLAGS").unwrap_or_default();
    if !flags.contains("-DMI_DEFAULT_ARENA_EAGER_COMMIT=0") {
        eprintln!("skipped: CFLAGS ({flags:?}) is not the repository's");
        return;
    }
    let out = Command::new(WARDEN)
        .arg("--version")
        .env("MIMALLOC_VERBOSE", "1")
        .env_remove("MIMALLOC_ARENA_EAGER_COMMIT")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        stderr(&out).contains("option 'arena_eager_commit': 0"),
        "{}",
        stderr(&out)
    );
}
