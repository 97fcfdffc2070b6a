//! The work domain end to end (TASK-1..TASK-8): workspaces with real git repositories, tasks
//! created over MCP by external callers and by real sessions (`warden run agent … --task`,
//! under their run credentials), the office path (`warden task create`), materialised
//! environments, and nothing written before admission.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "test code"
)]

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use serde_json::{Value, json};

/// `git` in `dir`, its stdout.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A repository with `main` (file `main.txt`) and `feature` (also `feature.txt`).
fn repository(dir: &Path) -> PathBuf {
    let repo = dir.join("api");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("main.txt"), "main").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "main"]);
    git(&repo, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(repo.join("feature.txt"), "feature").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-q", "-m", "feature"]);
    git(&repo, &["checkout", "-q", "main"]);
    repo
}

/// The configuration: project `web` with a kanban and an office workspace on one repository,
/// and an agent `dev` whose runner writes what it was started with into `out/<run>/` and
/// waits until the test writes `out/<run>/done`.
fn config(repo: &Path, out: &Path) -> String {
    let script = format!(
        "d={out}/$WARDEN_RUN_ID; mkdir -p $d; pwd > $d/pwd; env | grep ^WARDEN_ > $d/env; \
         printf %s \"$WARDEN_RUN_TOKEN\" > $d/token; \
         for i in $(seq 1 600); do [ -e $d/done ] && exit 0; sleep 0.1; done",
        out = out.display()
    );
    format!(
        "kind: Project\nname: web\n---\nkind: Project\nname: other\n---\n\
         kind: Workspace\nname: board\nmode: kanban\nproject: web\n\
         repositories: [{{ name: api, url: {repo:?}, branch: main }}]\n---\n\
         kind: Workspace\nname: org\nmode: office\nproject: web\n\
         repositories: [{{ name: api, url: {repo:?}, branch: main }}]\n---\n\
         kind: Role\nname: tasker\npermissions: [\"tasks:create\", \"tasks:read\", \"tasks:write\"]\n---\n\
         kind: RoleBinding\nrole: tasker\nsubject: {{ agent: dev }}\n---\n\
         kind: Agent\nname: dev\nmemberships: [web]\n\
         runner: {{ command: bash, args: [\"-c\", {script:?}] }}\n",
        repo = repo.display().to_string(),
    )
}

/// A started session: its run id, run credential and working directory.
struct Session {
    run: String,
    token: String,
    pwd: PathBuf,
    env: String,
    out: PathBuf,
}

impl Session {
    fn end(&self) {
        std::fs::write(self.out.join(&self.run).join("done"), "").unwrap();
    }
}

/// `warden run agent dev --task TASK` against the server; waits for its runner to start.
async fn start_session(w: &TestWarden, task: &str, out: &Path) -> Session {
    let started = std::process::Command::new(WARDEN)
        .args(["run", "agent", "dev", "--task", task, "--server", &w.base])
        .env("WARDEN_TOKEN", &w.admin)
        .output()
        .unwrap();
    assert!(
        started.status.success(),
        "run agent: {}",
        String::from_utf8_lossy(&started.stderr)
    );
    let run = String::from_utf8_lossy(&started.stdout).trim().to_owned();
    let dir = out.join(&run);
    for _ in 0..300 {
        if dir.join("token").exists() && dir.join("env").exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let read = |f: &str| {
        std::fs::read_to_string(dir.join(f)).unwrap_or_else(|_| {
            panic!(
                "the session of {task} did not start ({run}): {:?}",
                std::process::Command::new(WARDEN)
                    .args(["get", "runs", "-o", "json"])
                    .args(w.store_args())
                    .output()
                    .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
            )
        })
    };
    Session {
        token: read("token"),
        pwd: PathBuf::from(read("pwd").trim()),
        env: read("env"),
        run,
        out: out.to_path_buf(),
    }
}

/// A 2026-07-28 `tools/call` as `token` on `url`; the result.
async fn call_as(url: &str, token: &str, tool: &str, arguments: Value) -> Value {
    warden_mcp::http_client::install_tls();
    let response = reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "name": tool, "arguments": arguments,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {"name": "tasks", "version": "1"}
                }
            }}),
        )
        .send()
        .await
        .unwrap();
    let answer = last_message(&response.text().await.unwrap());
    answer["result"].clone()
}

/// What a tasks tool answered: its data when it succeeded, or `{code, message}`.
fn outcome(result: &Value) -> Value {
    result["structuredContent"]["data"].clone()
}

/// Everything a refusal must leave as it was: every task, every environment and its
/// repositories, and every file under the environments' directory.
async fn world(w: &TestWarden, environments: &Path) -> (Value, Vec<String>) {
    let tasks = w
        .store
        .store
        .tasks(&warden_store::TaskFilter::default())
        .await
        .unwrap();
    let mut envs = Vec::new();
    for t in &tasks {
        envs.push(json!(w.store.store.environment(&t.id).await.unwrap()));
    }
    let mut files = Vec::new();
    let mut stack = vec![environments.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            files.push(e.path().display().to_string());
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            }
        }
    }
    files.sort();
    (json!({"tasks": tasks, "environments": envs}), files)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_create_tasks_as_their_surface_allows_and_refusals_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repository(dir.path());
    let out = dir.path().join("out");
    let w = TestWarden::start(&config(&repo, &out)).await;
    let environments = match &w.store.location {
        warden_store::Location::DataDir(d) => d.join("environments"),
        warden_store::Location::Url(_) => unreachable!("sqlite"),
    };
    let mcp = w.mcp();
    let agent_mcp = format!("{}/mcp/agents/dev", w.base);

    // An external caller creates in both modes.
    let kanban = call_as(
        &mcp,
        &w.admin,
        "tasks__create_task",
        json!({"title": "board root", "workspace_id": "board", "workspace_mode": "new_workspace"}),
    )
    .await;
    assert_eq!(kanban["isError"], false, "{kanban}");
    let kanban_id = outcome(&kanban)["task"]["id"].as_str().unwrap().to_owned();
    let office = call_as(
        &mcp,
        &w.admin,
        "tasks__create_task",
        json!({"title": "org root", "workspace_id": "org", "external_id": "e-1"}),
    )
    .await;
    let office_task = &outcome(&office)["task"];
    assert_eq!(office_task["fromOffice"], true, "{office}");
    let office_id = office_task["id"].as_str().unwrap().to_owned();
    // A token bound to another project: its ceiling applies to the workspace the arguments
    // name (RUN-3), which answers like one that does not exist.
    let bound = w.token("admin", Some(&["other"]), None).await;
    let ceiling = call_as(
        &mcp,
        &bound,
        "tasks__create_task",
        json!({"title": "t", "workspace_id": "board"}),
    )
    .await;
    assert_eq!(outcome(&ceiling)["code"], "NOT_FOUND", "{ceiling}");
    assert_eq!(
        outcome(&ceiling)["message"],
        "no workspace `board`",
        "{ceiling}"
    );

    // A kanban session: its runner starts in a real worktree of `main`.
    let k = start_session(&w, &kanban_id, &out).await;
    assert!(
        k.env.contains(&format!("WARDEN_TASK_ID={kanban_id}")),
        "{}",
        k.env
    );
    assert!(k.env.contains("WARDEN_WORKSPACE=board"), "{}", k.env);
    let checkout = k.pwd.join("api");
    assert_eq!(
        git(&checkout, &["rev-parse", "--is-inside-work-tree"]),
        "true"
    );
    assert_eq!(
        git(&checkout, &["rev-parse", "HEAD"]),
        git(&repo, &["rev-parse", "main"]),
        "the worktree is at the requested branch"
    );
    assert!(checkout.join("main.txt").exists() && !checkout.join("feature.txt").exists());

    // It creates a child in its workspace (inheriting its environment)…
    let child = call_as(
        &agent_mcp,
        &k.token,
        "tasks__create_task",
        json!({"title": "child", "parent_id": kanban_id}),
    )
    .await;
    assert_eq!(child["isError"], false, "{child}");
    let child_task = outcome(&child)["task"].clone();
    assert_eq!(child_task["workspaceMode"], "inherit_parent", "{child}");
    assert_eq!(child_task["createdInSession"], json!(k.run), "{child}");
    let child_id = child_task["id"].as_str().unwrap().to_owned();

    // …and every refusal leaves the store and the disk as they were.
    let refusals = [
        (
            json!({"title": "t", "workspace_id": "org"}),
            "KANBAN_ONLY",
            "a session creates tasks over MCP in kanban workspaces only: `org` is an office workspace",
        ),
        (
            json!({"title": "t", "parent_id": kanban_id, "repositories": [{"repository": "api", "branch": "feature"}]}),
            "INHERITED_REPOSITORY_MISMATCH",
            "",
        ),
        // A retry naming the office task's external id: refused before any lookup, nothing
        // of that task in the answer.
        (
            json!({"title": "t", "workspace_id": "org", "external_id": "e-1"}),
            "KANBAN_ONLY",
            "a session creates tasks over MCP in kanban workspaces only: `org` is an office workspace",
        ),
        (
            json!({"title": "t", "parent_id": "task_nope"}),
            "NOT_FOUND",
            "no task `task_nope`",
        ),
        (
            json!({"title": "t", "source_session_id": "run_someone_else"}),
            "CONFLICTING_IDENTITY",
            "`source_session_id` names another session than the caller's",
        ),
    ];
    for (args, code, message) in refusals {
        let before = world(&w, &environments).await;
        let refused = call_as(&agent_mcp, &k.token, "tasks__create_task", args.clone()).await;
        assert_eq!(refused["isError"], true, "{args}: {refused}");
        assert_eq!(outcome(&refused)["code"], code, "{args}: {refused}");
        let text = outcome(&refused)["message"].as_str().unwrap().to_owned();
        if message.is_empty() {
            assert!(text.contains("new_workspace"), "guidance: {text}");
        } else {
            assert_eq!(text, message, "{args}");
        }
        assert!(
            !refused.to_string().contains(&office_id),
            "leaked: {refused}"
        );
        assert_eq!(
            world(&w, &environments).await,
            before,
            "{args}: something changed"
        );
    }

    // The child's session runs in its parent's directory.
    let c = start_session(&w, &child_id, &out).await;
    assert_eq!(
        c.pwd, k.pwd,
        "inherit_parent reuses the parent's environment"
    );

    // An office session is refused over MCP and pointed to its own path…
    let o = start_session(&w, &office_id, &out).await;
    let before = world(&w, &environments).await;
    let refused = call_as(
        &agent_mcp,
        &o.token,
        "tasks__create_task",
        json!({"title": "from office"}),
    )
    .await;
    assert_eq!(outcome(&refused)["code"], "OFFICE_SESSION", "{refused}");
    let message = outcome(&refused)["message"].as_str().unwrap().to_owned();
    assert!(
        message.contains("warden task create") && message.contains("POST /api/v1/tasks"),
        "{message}"
    );
    assert!(
        !message.contains("external"),
        "never suggests the external transport: {message}"
    );
    assert_eq!(world(&w, &environments).await, before);
    // …where it succeeds, in its office workspace.
    let created = std::process::Command::new(WARDEN)
        .args([
            "task",
            "create",
            "--title",
            "from office",
            "--server",
            &w.base,
        ])
        .env("WARDEN_TOKEN", &o.token)
        .output()
        .unwrap();
    assert!(
        created.status.success(),
        "{}",
        String::from_utf8_lossy(&created.stderr)
    );
    let id = String::from_utf8_lossy(&created.stdout).trim().to_owned();
    let stored = w.store.store.task(&id).await.unwrap().unwrap();
    assert_eq!(stored.workspace, "org");
    assert!(stored.from_office);
    assert_eq!(stored.created_in_session.as_deref(), Some(o.run.as_str()));

    // The operators' view.
    let described = cli(
        &["describe", "task", &kanban_id, "-o", "json"],
        &w.store_args(),
    );
    let described: Value = serde_json::from_slice(&described.stdout).unwrap();
    assert_eq!(
        described["environment"]["repositories"][0]["branch"],
        "main"
    );
    assert_eq!(described["sessions"][0]["id"], json!(k.run));
    let listed = cli(&["get", "tasks", "-o", "json"], &w.store_args());
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 4, "{listed}");

    for s in [&k, &c, &o] {
        s.end();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workspace_mode_is_an_exact_enum_and_bad_values_write_nothing_in_both_eras() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repository(dir.path());
    let w = TestWarden::start(&config(&repo, &dir.path().join("out"))).await;
    for era in [Era::Stateless, Era::Sessions] {
        let client = http_client(&w.mcp(), &w.admin, era).await;
        let tools = client.list_all_tools().await.unwrap();
        let create = tools
            .iter()
            .find(|t| t.name == "tasks__create_task")
            .unwrap();
        let schema = Value::Object((*create.input_schema).clone());
        let mode = &schema["properties"]["workspace_mode"];
        assert_eq!(
            mode["enum"],
            json!(["inherit_parent", "new_workspace"]),
            "{era:?}"
        );
        assert!(mode.get("default").is_none(), "{era:?}: {mode}");
        assert_eq!(
            mode["description"],
            "Optional materialized-workspace mode. Omit for subtasks to inherit the parent's workspace/worktree. inherit_parent requires parent_id and reuses the parent's materialized workspace/worktree; new_workspace requests a separate workspace/worktree."
        );
        assert!(
            !schema["required"]
                .as_array()
                .unwrap()
                .contains(&json!("workspace_mode")),
            "{era:?}"
        );
        for bad in ["", " ", " inherit_parent", "inherit_parent ", "shared"] {
            let result = call(
                &client,
                "tasks__create_task",
                json!({"title": "t", "workspace_id": "board", "workspace_mode": bad}),
            )
            .await;
            assert_eq!(
                decision(&result)["code"],
                "VALIDATION",
                "{era:?} `{bad}`: {result:?}"
            );
            let tasks = w
                .store
                .store
                .tasks(&warden_store::TaskFilter::default())
                .await
                .unwrap();
            assert!(tasks.is_empty(), "{era:?} `{bad}` wrote a task");
        }
    }
}
