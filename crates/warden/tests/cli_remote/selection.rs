//! How a verb chooses between the server and the store (docs/cli.md): flags, then the
//! environment, then `warden context`, then its default — and what it says when that is
//! ambiguous, never on stdout.

use crate::common::TestWarden;
use crate::support::{Both, config, warden};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flags_then_the_environment_then_the_context_then_the_default() {
    let w = TestWarden::start(&config()).await;
    let cli = Both::new(&w);
    let home = cli.home.path();
    let data_dir = match &w.store.location {
        warden_store::Location::DataDir(d) => d.display().to_string(),
        warden_store::Location::Url(_) => unreachable!("TestWarden starts on SQLite"),
    };
    let users = cli.store(&["get", "users", "-o", "json"]).ok().stdout;

    // Both chosen at once: a usage error that names both.
    let out = warden(home, &["get", "users"])
        .env("WARDEN_SERVER", &w.base)
        .env("WARDEN_DATA_DIR", &data_dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "error: WARDEN_SERVER and WARDEN_DATA_DIR are both set, so it is not clear whether to work through the server or on the store: unset one, or choose with --server or --data-dir/--database-url\n"
    );
    let out = warden(
        home,
        &["get", "users", "--server", &w.base, "--data-dir", &data_dir],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "error: give --server or --data-dir/--database-url, not both: the first works through the server, the others on the store\n"
    );
    // A flag wins over the environment.
    let out = warden(
        home,
        &["get", "users", "-o", "json", "--data-dir", &data_dir],
    )
    .env("WARDEN_SERVER", "http://127.0.0.1:9")
    .output()
    .unwrap();
    assert_eq!(text(&out.stdout), users);
    // The environment alone: WARDEN_SERVER with WARDEN_TOKEN.
    let out = warden(home, &["get", "users", "-o", "json"])
        .env("WARDEN_SERVER", &w.base)
        .env("WARDEN_TOKEN", &w.admin)
        .output()
        .unwrap();
    assert_eq!(
        (text(&out.stdout), text(&out.stderr)),
        (users.clone(), String::new())
    );

    // The context: the server, and a file with its token (never printed), 0600.
    let token_file = home.join("admin.token");
    std::fs::write(&token_file, format!("{}\n", w.admin)).unwrap();
    let tf = token_file.display().to_string();
    let set = warden(
        home,
        &["context", "set", "--server", &w.base, "--token-file", &tf],
    )
    .output()
    .unwrap();
    assert!(set.status.success(), "{}", text(&set.stderr));
    let shown = warden(home, &["context", "show", "-o", "json"])
        .output()
        .unwrap();
    let shown: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(shown["server"], w.base.as_str());
    assert_eq!(shown["tokenFile"], tf.as_str());
    let table = warden(home, &["context", "show"]).output().unwrap();
    assert!(
        !text(&table.stdout).contains(&w.admin[4..]),
        "{}",
        text(&table.stdout)
    );
    let file = home.join("warden/context.json");
    assert!(
        !std::fs::read_to_string(&file)
            .unwrap()
            .contains(&w.admin[4..])
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let out = warden(home, &["get", "users", "-o", "json"])
        .output()
        .unwrap();
    assert_eq!(
        (text(&out.stdout), text(&out.stderr)),
        (users.clone(), String::new())
    );
    // Its token file is for its server only.
    let out = warden(home, &["get", "users", "--server", "http://127.0.0.1:9"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).starts_with(
            "error: WARDEN_TOKEN is not set: export a token for the server at http://127.0.0.1:9"
        ),
        "{}",
        text(&out.stderr)
    );
    // The environment wins over the context; a store it names that the context's server (on
    // this machine) does not serve is said so on stderr, stdout stays JSON.
    let other = tempfile::tempdir().unwrap();
    let o = other.path().display().to_string();
    assert!(
        warden(home, &["migrate", "--data-dir", &o])
            .output()
            .unwrap()
            .status
            .success()
    );
    let out = warden(home, &["get", "users", "-o", "json"])
        .env("WARDEN_DATA_DIR", &o)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap(),
        serde_json::json!([])
    );
    assert_eq!(
        text(&out.stderr),
        format!(
            "using the store at {o} (from WARDEN_DATA_DIR), which the server at {} does not serve: it will not see these changes (give the command the server's store with --data-dir, or --server {} to work through that server)\n",
            w.base, w.base
        )
    );
    let cleared = warden(home, &["context", "clear"]).output().unwrap();
    assert_eq!(text(&cleared.stdout), "context cleared\n");
    assert!(!file.exists());

    // No choice at all: the verb's default, said when it is the server.
    let out = warden(home, &["approvals", "list", "-o", "json"])
        .output()
        .unwrap();
    assert!(
        text(&out.stderr).starts_with(
            "using the server at http://127.0.0.1:8600 (from the default; --data-dir for the store)\n"
        ),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_and_an_unreachable_server_exit_as_scripts_expect() {
    let w = TestWarden::start(&config()).await;
    let cli = Both::new(&w);
    let out = warden(cli.home.path(), &["get", "users", "--server", &w.base])
        .env("WARDEN_TOKEN", "wdn_not_a_token")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with(&format!(
            "error: the server at {} refused the token (",
            w.base
        )) && stderr.ends_with("): set WARDEN_TOKEN to a valid token (`warden token create`)\n"),
        "{stderr}"
    );
    let out = warden(
        cli.home.path(),
        &["get", "users", "--server", "http://127.0.0.1:9"],
    )
    .env("WARDEN_TOKEN", &w.admin)
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).starts_with("error: cannot reach the server at http://127.0.0.1:9: "),
        "{}",
        text(&out.stderr)
    );
    let out = warden(
        cli.home.path(),
        &["get", "users", "--server", "127.0.0.1:9"],
    )
    .env("WARDEN_TOKEN", &w.admin)
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stderr),
        "error: `127.0.0.1:9` is not a server's base URL; give one such as http://127.0.0.1:8600\n"
    );
    // No token for the server: a usage error too.
    let out = warden(cli.home.path(), &["get", "users", "--server", &w.base])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
