//! What the tasks tests share: real git repositories, a configuration with a runner that
//! reports how it was started, sessions, the three creation paths (MCP, `POST /api/v1/tasks`,
//! `warden task create`) answered alike, and the world a refusal must leave as it was.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::*;

/// `git` in `dir`, its stdout.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
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

/// A repository with `main` (file `main.txt`) and `feature` (also `feature.txt`); `main` is
/// its default branch.
pub(crate) fn repository(dir: &Path) -> PathBuf {
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

/// The configuration: project `web` with a kanban (`board`) and an office (`org`) workspace on
/// one repository, project `other` with a kanban workspace `vault`; an agent `dev` of `web`
/// that may create, read and change tasks, and an agent `watcher` of `web` that may only read
/// them. Their runner writes what it was started with into `out/<run>/` and waits until the
/// test writes `out/<run>/done`.
pub(crate) fn config(repo: &Path, out: &Path) -> String {
    let script = format!(
        "d={out}/$WARDEN_RUN_ID; mkdir -p $d; pwd > $d/pwd; env | grep ^WARDEN_ > $d/env; \
         printf %s \"$WARDEN_RUN_TOKEN\" > $d/token.part && mv $d/token.part $d/token; \
         for i in $(seq 1 600); do [ -e $d/done ] && exit 0; sleep 0.1; done",
        out = out.display()
    );
    format!(
        "kind: Project\nname: web\n---\nkind: Project\nname: other\n---\n\
         kind: Workspace\nname: board\nmode: kanban\nproject: web\n\
         repositories: [{{ name: api, url: {repo:?}, branch: main }}]\n---\n\
         kind: Workspace\nname: org\nmode: office\nproject: web\n\
         repositories: [{{ name: api, url: {repo:?}, branch: main }}]\n---\n\
         kind: Workspace\nname: vault\nmode: kanban\nproject: other\n\
         repositories: [{{ name: api, url: {repo:?}, branch: main }}]\n---\n\
         kind: Role\nname: tasker\npermissions: [\"tasks:create\", \"tasks:read\", \"tasks:write\"]\n---\n\
         kind: Role\nname: reader\npermissions: [\"tasks:read\"]\n---\n\
         kind: RoleBinding\nrole: tasker\nsubject: {{ agent: dev }}\n---\n\
         kind: RoleBinding\nrole: reader\nsubject: {{ agent: watcher }}\n---\n\
         kind: Agent\nname: dev\nmemberships: [web]\n\
         runner: {{ command: bash, args: [\"-c\", {script:?}] }}\n---\n\
         kind: Agent\nname: watcher\nmemberships: [web]\n\
         runner: {{ command: bash, args: [\"-c\", {script:?}] }}\n",
        repo = repo.display().to_string(),
    )
}

/// A running Warden on that configuration, with its repository and directories.
pub(crate) struct Fixture {
    pub(crate) w: TestWarden,
    pub(crate) repo: PathBuf,
    pub(crate) out: PathBuf,
    pub(crate) environments: PathBuf,
    _dir: tempfile::TempDir,
}

impl Fixture {
    pub(crate) async fn start() -> Self {
        Self::start_with("").await
    }

    /// The fixture with the resources `extra` (YAML documents) configured as well.
    pub(crate) async fn start_with(extra: &str) -> Self {
        Self::start_on_clock(extra, None).await
    }

    /// [`Self::start_with`], its gateway and services reading `clock` when one is given.
    pub(crate) async fn start_on_clock(
        extra: &str,
        clock: Option<std::sync::Arc<dyn warden_core::pipeline::Clock>>,
    ) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let repo = repository(dir.path());
        let out = dir.path().join("out");
        let mut config = config(&repo, &out);
        if !extra.is_empty() {
            config = format!("{config}---\n{extra}");
        }
        let w = match clock {
            Some(clock) => TestWarden::start_with_clock(&config, clock).await,
            None => TestWarden::start(&config).await,
        };
        let environments = match &w.store.location {
            warden_store::Location::DataDir(d) => d.join("environments"),
            warden_store::Location::Url(_) => unreachable!("sqlite"),
        };
        Self {
            w,
            repo,
            out,
            environments,
            _dir: dir,
        }
    }

    /// The MCP URL of the agents' runs (`/mcp/agents/dev`).
    pub(crate) fn agent_mcp(&self) -> String {
        format!("{}/mcp/agents/dev", self.w.base)
    }

    /// A task created by the first admin (an external caller) over MCP; its id.
    pub(crate) async fn external_task(&self, args: Value) -> String {
        let created = call_as(&self.w.mcp(), &self.w.admin, "tasks__create_task", args).await;
        assert_eq!(created["isError"], false, "{created}");
        outcome(&created)["task"]["id"].as_str().unwrap().to_owned()
    }

    /// A session of `task` (`warden run agent dev --task TASK`), started.
    pub(crate) async fn session(&self, task: &str) -> Session {
        self.run("dev", Some(task)).await
    }

    /// A run of `agent`, a session of `task` when one is given, started.
    pub(crate) async fn run(&self, agent: &str, task: Option<&str>) -> Session {
        let mut args = vec!["run", "agent", agent, "--server", &self.w.base];
        if let Some(task) = task {
            args.extend(["--task", task]);
        }
        let started = std::process::Command::new(WARDEN)
            .args(&args)
            .env("WARDEN_TOKEN", &self.w.admin)
            .output()
            .unwrap();
        assert!(
            started.status.success(),
            "run agent: {}",
            String::from_utf8_lossy(&started.stderr)
        );
        let run = String::from_utf8_lossy(&started.stdout).trim().to_owned();
        let dir = self.out.join(&run);
        for _ in 0..300 {
            if dir.join("token").exists() && dir.join("env").exists() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let read = |f: &str| {
            std::fs::read_to_string(dir.join(f)).unwrap_or_else(|_| {
                panic!(
                    "the run {run} of {task:?} did not start: {:?}",
                    std::process::Command::new(WARDEN)
                        .args(["get", "runs", "-o", "json"])
                        .args(self.w.store_args())
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
            out: self.out.clone(),
        }
    }

    /// Everything a refusal must leave as it was: every task, every environment and its
    /// repositories, every agent run and the task it is bound to, and every file under the
    /// environments' directory. A run's status is left out: the sessions a test started move
    /// on their own.
    pub(crate) async fn world(&self) -> (Value, Vec<String>) {
        let store = &self.w.store.store;
        let tasks = store
            .tasks(&warden_store::TaskFilter::default())
            .await
            .unwrap();
        let mut envs = Vec::new();
        for t in &tasks {
            envs.push(json!(store.environment(&t.id).await.unwrap()));
        }
        let mut runs: Vec<Value> = store
            .agent_runs(None, 1000)
            .await
            .unwrap()
            .into_iter()
            .map(|r| json!({"id": r.id, "agent": r.agent, "task": r.task_id}))
            .collect();
        runs.sort_by_key(Value::to_string);
        let mut files = Vec::new();
        let mut stack = vec![self.environments.clone()];
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
        (
            json!({"tasks": tasks, "environments": envs, "runs": runs}),
            files,
        )
    }
}

/// A started run: its id, run credential and working directory.
pub(crate) struct Session {
    pub(crate) run: String,
    pub(crate) token: String,
    pub(crate) pwd: PathBuf,
    pub(crate) env: String,
    out: PathBuf,
}

impl Session {
    pub(crate) fn end(&self) {
        std::fs::write(self.out.join(&self.run).join("done"), "").unwrap();
    }
}

/// A 2026-07-28 `tools/call` as `token` on `url`; the result.
pub(crate) async fn call_as(url: &str, token: &str, tool: &str, arguments: Value) -> Value {
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
pub(crate) fn outcome(result: &Value) -> Value {
    result["structuredContent"]["data"].clone()
}

/// A creation path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Via {
    /// `tasks__create_task` on an MCP URL.
    Mcp,
    /// `POST /api/v1/tasks`.
    Api,
    /// `warden task create --server`.
    Cli,
}

/// What a creation answered on any path.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    /// The task's id, and whether it was new (the CLI does not say).
    Task { id: String, created: Option<bool> },
    /// A refusal: its code (the CLI prints none), its message, the HTTP status (the API) or
    /// the exit status (the CLI).
    Refused {
        code: Option<String>,
        message: String,
        status: Option<u16>,
        exit: Option<i32>,
    },
}

impl Answer {
    /// The refusal `via` gives for `code`, `message` and HTTP `status`: the CLI prints the
    /// message alone and exits 2 for 400 and 422, 1 otherwise; MCP has no status.
    pub(crate) fn refusal(via: Via, code: &str, message: &str, status: u16) -> Self {
        Self::Refused {
            code: (via != Via::Cli).then(|| code.to_owned()),
            message: message.to_owned(),
            status: (via == Via::Api).then_some(status),
            exit: (via == Via::Cli).then_some(if matches!(status, 400 | 422) { 2 } else { 1 }),
        }
    }

    /// The task's id.
    pub(crate) fn id(&self) -> &str {
        match self {
            Self::Task { id, .. } => id,
            Self::Refused { .. } => panic!("refused: {self:?}"),
        }
    }
}

/// Creates a task with `args` over `via` as `token`; `None` when the path cannot express the
/// arguments (the CLI has no `source_session_id`). `mcp` is the MCP URL to use. Returns the
/// answer and the whole text of it.
pub(crate) async fn create(
    f: &Fixture,
    via: Via,
    mcp: &str,
    token: &str,
    args: &Value,
) -> Option<(Answer, String)> {
    match via {
        Via::Mcp => {
            let result = call_as(mcp, token, "tasks__create_task", args.clone()).await;
            let data = outcome(&result);
            let answer = if result["isError"] == true {
                Answer::Refused {
                    code: data["code"].as_str().map(str::to_owned),
                    message: data["message"].as_str().unwrap_or_default().to_owned(),
                    status: None,
                    exit: None,
                }
            } else {
                Answer::Task {
                    id: data["task"]["id"].as_str().unwrap().to_owned(),
                    created: data["created"].as_bool(),
                }
            };
            Some((answer, result.to_string()))
        }
        Via::Api => {
            let response = reqwest::Client::new()
                .post(format!("{}/api/v1/tasks", f.w.base))
                .bearer_auth(token)
                .json(args)
                .send()
                .await
                .unwrap();
            let status = response.status().as_u16();
            let text = response.text().await.unwrap();
            let body: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
            let answer = if status < 300 {
                Answer::Task {
                    id: body["task"]["id"].as_str().unwrap().to_owned(),
                    created: Some(status == 201),
                }
            } else {
                Answer::Refused {
                    code: body["code"].as_str().map(str::to_owned),
                    message: body["error"].as_str().unwrap_or_default().to_owned(),
                    status: Some(status),
                    exit: None,
                }
            };
            Some((answer, text))
        }
        Via::Cli => {
            let mut flags: Vec<String> = vec!["task".into(), "create".into()];
            for (key, value) in args.as_object().unwrap() {
                let flag = match key.as_str() {
                    "title" => "--title",
                    "description" => "--description",
                    "workspace_id" => "--workspace",
                    "parent_id" => "--parent",
                    "workspace_mode" => "--workspace-mode",
                    "external_id" => "--external-id",
                    "repositories" => {
                        for r in value.as_array().unwrap() {
                            flags.push("--repository".into());
                            flags.push(match r["branch"].as_str() {
                                Some(b) => format!("{}@{b}", r["repository"].as_str().unwrap()),
                                None => r["repository"].as_str().unwrap().to_owned(),
                            });
                        }
                        continue;
                    }
                    _ => return None,
                };
                flags.push(flag.into());
                flags.push(value.as_str().unwrap().to_owned());
            }
            flags.extend(["--server".into(), f.w.base.clone()]);
            let out = std::process::Command::new(WARDEN)
                .args(&flags)
                .env("WARDEN_TOKEN", token)
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout).to_string();
            let stderr = String::from_utf8_lossy(&out.stderr).to_string();
            let answer = if out.status.success() {
                Answer::Task {
                    id: stdout.trim().to_owned(),
                    created: None,
                }
            } else {
                Answer::Refused {
                    code: None,
                    message: stderr
                        .strip_prefix("error: ")
                        .unwrap_or(&stderr)
                        .trim_end()
                        .to_owned(),
                    status: None,
                    exit: out.status.code(),
                }
            };
            Some((answer, format!("{stdout}{stderr}")))
        }
    }
}
