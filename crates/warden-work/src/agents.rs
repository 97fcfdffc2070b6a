//! Unattended agent runs (RUN-2 `agent` mode): the scheduler, manual runs, run credentials.
//!
//! A run gets a short-lived credential bound to its agent and its run, minted by Warden; the
//! runner command starts with `WARDEN_MCP_URL` (this server's `/mcp/agents/{agent}`),
//! `WARDEN_RUN_TOKEN` and `WARDEN_RUN_ID` in its environment. Its authority is exactly the
//! agent's memberships. The credential is revoked when the run ends or times out.
//!
//! A run bound to a task is a *session* (TASK-1): its surface is the task's workspace, and its
//! runner starts in the task's environment ([`crate::environments`]) with `WARDEN_TASK_ID` and
//! `WARDEN_WORKSPACE` beside the run's variables.
//!
//! Missed schedules are not replayed: after downtime (or a busy moment), a schedule fires at
//! its next time after now, once. A schedule never runs twice at once, and one scheduled time
//! runs once across replicas (unique indexes in the store decide).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::io::AsyncBufReadExt as _;
use tokio_util::sync::CancellationToken;
use warden_core::authority::{Authority, AuthorityError};
use warden_core::config::RunnerSpec;
use warden_core::contract::CallOutcome;
use warden_core::name::Name;
use warden_core::pipeline::{Clock, RunState};
use warden_core::policy::Policy;
use warden_core::principal::{Credential, CredentialKind, Principal, Provenance};
use warden_core::time::Millis;
use warden_runtime::Secrets;
use warden_store::{AgentRun, Store, TokenRequest};

/// What the runner and the Reconcilers need of the gateway their runs call through: the current
/// policy, the store, reloading credentials at once, a run's authority, where the server is,
/// and a governed call.
pub trait Gateway: Send + Sync + fmt::Debug {
    /// The policy now.
    fn policy(&self) -> Arc<Policy>;
    /// The store.
    fn store(&self) -> &Arc<Store>;
    /// Reloads configuration and credentials now, instead of at the next poll.
    fn refresh(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
    /// The authority of a run with `credential`, as the agent `agent`.
    fn authority(
        &self,
        credential: &Credential,
        agent: Option<&str>,
    ) -> Result<Arc<Authority>, AuthorityError>;
    /// Tells the gateway the server's base URL once it is bound.
    fn set_public_url(&self, url: String);
    /// The gateway's clock.
    fn clock(&self) -> &Arc<dyn Clock>;
    /// Calls `tool` with `args` as `authority` in the run `run`, through the governed pipeline
    /// (GOV-2), as a call no client waits on (a Reconciler's moves, WORK-4).
    fn call<'a>(
        &'a self,
        authority: &'a Authority,
        run: &'a RunState,
        tool: &'a str,
        args: serde_json::Map<String, serde_json::Value>,
    ) -> Pin<Box<dyn Future<Output = CallOutcome> + Send + 'a>>;
}

/// Default time a run may take.
pub const DEFAULT_RUN_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// Why a run could not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// No such agent.
    #[error("no agent named `{0}`")]
    UnknownAgent(String),
    /// The agent has no runner.
    #[error("agent `{0}` has no runner: give it `runner` or a schedule")]
    NoRunner(String),
    /// The same schedule is already running, or this time already fired.
    #[error("this schedule already has a run in progress or for this time")]
    AlreadyRunning,
    /// No such task (or one the caller may not see).
    #[error("no task `{0}`")]
    UnknownTask(String),
    /// The task is in a workspace of a project the agent is not a member of.
    #[error(
        "agent `{agent}` is not a member of project `{project}`, which task `{task}`'s workspace belongs to"
    )]
    NotAMember {
        /// The agent.
        agent: String,
        /// The task.
        task: String,
        /// The project.
        project: String,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] warden_store::StoreError),
}

/// What started a run.
#[derive(Clone, Debug)]
pub enum Trigger {
    /// `warden run agent NAME` / the admin API, by this principal.
    Manual(Provenance),
    /// A schedule (`<index>:<cron>`) for its fire time.
    Schedule {
        /// The schedule.
        key: String,
        /// The time it fired for.
        fire_at: Millis,
    },
}

/// How much of what a runner prints is kept with its run (the last of it).
const OUTPUT_KEPT: usize = 8 * 1024;
/// How long the last lines of a runner that exited are waited for.
const OUTPUT_GRACE: Duration = Duration::from_secs(2);

/// The last [`OUTPUT_KEPT`] bytes of a runner's lines.
#[derive(Debug, Default)]
struct Tail(std::collections::VecDeque<String>, usize);

impl Tail {
    fn push(&mut self, line: &str) {
        // A line longer than all that is kept keeps its start.
        let mut end = line.len().min(OUTPUT_KEPT - 1);
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        let line = line.get(..end).unwrap_or_default().to_owned();
        self.1 += line.len() + 1;
        self.0.push_back(line);
        while self.1 > OUTPUT_KEPT {
            match self.0.pop_front() {
                Some(old) => self.1 -= old.len() + 1,
                None => break,
            }
        }
    }

    fn text(&self) -> String {
        self.0.iter().map(|l| format!("{l}\n")).collect()
    }
}

/// Starts agent runs.
#[derive(Debug)]
pub struct Runner {
    gateway: Arc<dyn Gateway>,
    base_url: OnceLock<String>,
    environments: OnceLock<std::path::PathBuf>,
    secrets: Secrets,
    next_fire: Mutex<crate::fire_times::FireTimes>,
    /// The runtime that created the runner: runs execute there, also when started by a
    /// request on a serving thread (whose runtime ends with its connections).
    runtime: Option<tokio::runtime::Handle>,
}

impl Runner {
    /// A runner for the gateway; runner commands resolve `${env:…}`/`${secret:…}` with `secrets`.
    pub fn new(gateway: Arc<dyn Gateway>, secrets: Secrets) -> Self {
        Self {
            gateway,
            base_url: OnceLock::new(),
            environments: OnceLock::new(),
            secrets,
            next_fire: Mutex::default(),
            runtime: tokio::runtime::Handle::try_current().ok(),
        }
    }

    /// Where the environments of sessions are materialised (the data dir's `environments/`).
    pub fn set_environments(&self, dir: std::path::PathBuf) {
        let _ = self.environments.set(dir);
    }

    /// Sets the server's base URL once bound (`http://127.0.0.1:8600`).
    pub fn set_base_url(&self, url: String) {
        self.gateway.set_public_url(url.clone());
        let _ = self.base_url.set(url);
    }

    /// Starts a run of `agent` — a session of `task` when one is given — and returns its
    /// record (status `running` or `failed`).
    pub async fn start(
        self: &Arc<Self>,
        agent: &str,
        trigger: Trigger,
        task: Option<&str>,
    ) -> Result<AgentRun, RunError> {
        let policy = self.gateway.policy();
        let spec = policy
            .agent(agent)
            .ok_or_else(|| RunError::UnknownAgent(agent.to_owned()))?;
        // A session works on a task of a workspace in one of the agent's projects.
        if let Some(task) = task {
            let stored = self
                .gateway
                .store()
                .task(task)
                .await?
                .ok_or_else(|| RunError::UnknownTask(task.to_owned()))?;
            let project = match policy
                .config
                .get(warden_core::config::Kind::Workspace, &stored.workspace)
            {
                Some(warden_core::config::Resource::Workspace(w)) => w.project.clone(),
                _ => return Err(RunError::UnknownTask(task.to_owned())),
            };
            if !spec.memberships.contains(&project) {
                return Err(RunError::NotAMember {
                    agent: agent.to_owned(),
                    task: task.to_owned(),
                    project: project.to_string(),
                });
            }
        }
        let (runner, timeout) = match &trigger {
            Trigger::Manual(_) => spec
                .manual_runner()
                .ok_or_else(|| RunError::NoRunner(agent.to_owned()))?,
            Trigger::Schedule { key, .. } => {
                let index: usize = key
                    .split(':')
                    .next()
                    .and_then(|i| i.parse().ok())
                    .unwrap_or(usize::MAX);
                let s = spec
                    .schedules
                    .get(index)
                    .ok_or_else(|| RunError::NoRunner(agent.to_owned()))?;
                (&s.runner, s.timeout.or(spec.timeout))
            }
        };
        let runner = runner.clone();
        let timeout = timeout.unwrap_or(DEFAULT_RUN_TIMEOUT);
        let now = self.gateway.clock().now();
        let id = format!("run_{}", uuid::Uuid::now_v7().simple());
        let (trigger_name, schedule_key, fire_at, requested_by) = match &trigger {
            Trigger::Manual(p) => (
                "manual",
                None,
                None,
                serde_json::to_string(p).unwrap_or_default(),
            ),
            Trigger::Schedule { key, fire_at } => {
                let provenance = Provenance::AgentRole {
                    role: spec.name.clone(),
                    intent_id: format!("schedule:{key}"),
                    autonomy_cap: warden_core::policy::DEFAULT_AUTONOMY_LEVEL,
                };
                (
                    "schedule",
                    Some(key.clone()),
                    Some(fire_at.0),
                    serde_json::to_string(&provenance).unwrap_or_default(),
                )
            }
        };
        let mut run = AgentRun {
            id: id.clone(),
            agent: agent.to_owned(),
            trigger: trigger_name.into(),
            schedule_key,
            fire_at,
            status: "queued".into(),
            requested_by,
            credential_id: None,
            queued_at: now.0,
            started_at: None,
            finished_at: None,
            exit_code: None,
            error: None,
            task_id: task.map(str::to_owned),
            output: None,
        };
        let store = self.gateway.store().clone();
        if !store.insert_agent_run(&run).await? {
            return Err(RunError::AlreadyRunning);
        }
        let credential = store
            .create_token(
                TokenRequest {
                    principal: Principal::AgentRun {
                        agent: Name::new(agent)
                            .map_err(|_| RunError::UnknownAgent(agent.to_owned()))?,
                        run: id.clone(),
                    },
                    projects: None,
                    scopes: None,
                    ttl: Some(timeout + Duration::from_secs(60)),
                    description: Some(format!("run credential of {id}")),
                    kind: CredentialKind::Run,
                },
                "scheduler",
                now,
            )
            .await?;
        // The runner may call at once: make the credential known now, not at the next poll.
        self.gateway.refresh().await;
        // The run record, with the authority the run starts with (exactly the memberships).
        let authority = self
            .gateway
            .authority(&credential.credential, Some(agent))
            .map_err(|e| RunError::UnknownAgent(e.to_string()))?;
        let record =
            warden_core::pipeline::run_record(&authority, &self.gateway.policy(), &id, now);
        store.append_audit(vec![record]).await?;
        run.credential_id = Some(credential.credential.id.clone());
        run.status = "running".into();
        run.started_at = Some(self.gateway.clock().now().0);
        store.update_agent_run(&run).await?;
        // A session stopped while it was queued (its task moved back by a Reconciler) never
        // starts: its credential dies unused.
        if let Some(stopped) = store
            .agent_run(&id)
            .await?
            .filter(|r| r.status == "stopped")
        {
            store
                .revoke_token(
                    &credential.credential.id,
                    "scheduler",
                    self.gateway.clock().now(),
                )
                .await?;
            self.gateway.refresh().await;
            return Ok(stopped);
        }
        let this = self.clone();
        let started = run.clone();
        let execution = async move {
            this.execute(started, runner, timeout, credential.secret)
                .await
        };
        match &self.runtime {
            Some(runtime) => runtime.spawn(execution),
            None => tokio::spawn(execution),
        };
        Ok(run)
    }

    async fn execute(
        self: Arc<Self>,
        mut run: AgentRun,
        runner: RunnerSpec,
        timeout: Duration,
        secret: String,
    ) {
        let store = self.gateway.store().clone();
        let base = self
            .base_url
            .get()
            .cloned()
            .unwrap_or_else(|| "http://127.0.0.1:8600".into());
        let mut cmd = tokio::process::Command::new(&runner.command);
        // A session starts in its task's environment, made ready first.
        let mut failure = None;
        if let Some(task_id) = &run.task_id {
            match self.session_directory(task_id).await {
                Ok((dir, workspace)) => {
                    cmd.current_dir(dir)
                        .env("WARDEN_TASK_ID", task_id)
                        .env("WARDEN_WORKSPACE", workspace);
                }
                Err(e) => failure = Some(e),
            }
        }
        cmd.args(&runner.args)
            .env("WARDEN_MCP_URL", format!("{base}/mcp/agents/{}", run.agent))
            .env("WARDEN_RUN_TOKEN", &secret)
            .env("WARDEN_RUN_ID", &run.id)
            .env("WARDEN_AGENT", &run.agent)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (k, v) in &runner.env {
            match self.secrets.resolve(v) {
                Ok(v) => {
                    cmd.env(k, v);
                }
                Err(e) => failure = Some(format!("runner env `{k}`: {e}")),
            }
        }
        let outcome = match failure {
            Some(e) => Err(e),
            None => match cmd.spawn() {
                Err(e) => Err(format!("cannot start `{}`: {e}", runner.command)),
                Ok(mut child) => {
                    let printed = Arc::new(Mutex::new(Tail::default()));
                    let mut readers = Vec::new();
                    for stream in
                        [
                            child.stdout.take().map(|s| {
                                Box::new(s) as Box<dyn tokio::io::AsyncRead + Send + Unpin>
                            }),
                            child.stderr.take().map(|s| {
                                Box::new(s) as Box<dyn tokio::io::AsyncRead + Send + Unpin>
                            }),
                        ]
                        .into_iter()
                        .flatten()
                    {
                        let id = run.id.clone();
                        let agent = run.agent.clone();
                        let printed = Arc::clone(&printed);
                        readers.push(tokio::spawn(async move {
                            let mut lines = tokio::io::BufReader::new(stream).lines();
                            while let Ok(Some(line)) = lines.next_line().await {
                                tracing::info!(%agent, run = %id, "{line}");
                                if let Ok(mut tail) = printed.lock() {
                                    tail.push(&line);
                                }
                            }
                        }));
                    }
                    // Until the runner exits, times out, or its run is stopped (in the store,
                    // by whichever replica moved its task back).
                    let stopped = stopped(&store, &run.id);
                    let waited = tokio::time::timeout(timeout, async {
                        tokio::select! {
                            status = child.wait() => Some(status),
                            () = stopped => None,
                        }
                    })
                    .await;
                    if !matches!(waited, Ok(Some(_))) {
                        // Timed out or stopped: killed before its last lines are read.
                        let _ = child.kill().await;
                    }
                    // The last lines, read once the pipes close (bounded: a child the runner
                    // left behind may hold them open).
                    for reader in readers {
                        let _ = tokio::time::timeout(OUTPUT_GRACE, reader).await;
                    }
                    run.output = printed
                        .lock()
                        .ok()
                        .map(|t| t.text())
                        .filter(|t| !t.is_empty());
                    match waited {
                        Ok(Some(Ok(status))) => Ok(status),
                        Ok(Some(Err(e))) => Err(format!("waiting for the runner failed: {e}")),
                        Ok(None) => Err("the run was stopped".to_owned()),
                        Err(_) => {
                            run.status = "timed_out".into();
                            Err(format!(
                                "the run did not finish within {}s and was stopped",
                                timeout.as_secs()
                            ))
                        }
                    }
                }
            },
        };
        // The credential dies with the run.
        if let Some(id) = &run.credential_id
            && let Err(e) = store
                .revoke_token(id, "scheduler", self.gateway.clock().now())
                .await
        {
            tracing::error!(run = %run.id, error = %e, "cannot revoke the run credential");
        }
        self.gateway.refresh().await;
        run.finished_at = Some(self.gateway.clock().now().0);
        match outcome {
            Ok(status) => {
                run.exit_code = status.code();
                run.status = if status.success() {
                    "succeeded"
                } else {
                    "failed"
                }
                .into();
                if !status.success() {
                    run.error = Some(format!("the runner exited with {status}"));
                }
            }
            Err(e) => {
                if run.status != "timed_out" {
                    run.status = "failed".into();
                }
                run.error = Some(e);
            }
        }
        tracing::info!(agent = %run.agent, run = %run.id, status = %run.status, exit_code = run.exit_code.unwrap_or_default(), "agent run ended");
        if let Err(e) = store.update_agent_run(&run).await {
            tracing::error!(run = %run.id, error = %e, "cannot record the end of the run");
        }
    }

    /// The directory a session of `task_id` starts in, and the task's workspace.
    async fn session_directory(
        &self,
        task_id: &str,
    ) -> Result<(std::path::PathBuf, String), String> {
        let store = self.gateway.store();
        let task = store
            .task(task_id)
            .await
            .map_err(|e| format!("the store cannot be read: {e}"))?
            .ok_or_else(|| format!("task `{task_id}` no longer exists"))?;
        let root = self
            .environments
            .get()
            .cloned()
            .ok_or_else(|| "this server has no directory for environments".to_owned())?;
        let policy = self.gateway.policy();
        let dir =
            crate::environments::prepare(store, &policy, &root, &task, self.gateway.clock().now())
                .await?;
        Ok((dir, task.workspace))
    }

    /// Fires schedules until `cancel`, checking every second.
    pub async fn schedule(self: Arc<Self>, cancel: CancellationToken) {
        let start = self.gateway.clock().now();
        crate::fire_times::every_second(start, cancel, |since| {
            let this = self.clone();
            async move { this.fire_due(since).await }
        })
        .await;
    }

    /// Starts the runs of the schedules due now (the last check was at `since`); returns now.
    async fn fire_due(self: &Arc<Self>, since: Millis) -> Millis {
        let now = self.gateway.clock().now();
        let policy = self.gateway.policy();
        let due = match self.next_fire.lock() {
            Ok(mut times) => times.due(
                policy.agents().iter().flat_map(|(name, agent)| {
                    agent.schedules.iter().enumerate().map(move |(i, s)| {
                        (name.to_string(), format!("{i}:{}", s.cron), s.cron.as_str())
                    })
                }),
                since,
                now,
            ),
            Err(_) => Vec::new(),
        };
        for (agent, key, fire_at) in due {
            match self
                .start(
                    &agent,
                    Trigger::Schedule {
                        key: key.clone(),
                        fire_at,
                    },
                    None,
                )
                .await
            {
                Ok(run) => {
                    tracing::info!(%agent, schedule = %key, run = %run.id, "scheduled run started")
                }
                Err(RunError::AlreadyRunning) => {
                    tracing::info!(%agent, schedule = %key, "schedule skipped: a run is in progress or this time already ran")
                }
                Err(e) => {
                    tracing::error!(%agent, schedule = %key, error = %e, "scheduled run failed to start")
                }
            }
        }
        now
    }
}

/// How often a running session looks whether it was stopped.
const STOP_CHECK: Duration = Duration::from_secs(2);

/// Done once the run `id` is marked `stopped` in the store.
async fn stopped(store: &Store, id: &str) {
    loop {
        tokio::time::sleep(STOP_CHECK).await;
        if let Ok(Some(run)) = store.agent_run(id).await
            && run.status == "stopped"
        {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runners_output_keeps_its_last_8_kib_whole_lines_first() {
        let mut tail = Tail::default();
        tail.push("first");
        tail.push(&"é".repeat(OUTPUT_KEPT));
        tail.push("last");
        let text = tail.text();
        assert!(text.len() <= OUTPUT_KEPT, "{}", text.len());
        assert_eq!(text, "last\n", "the oldest lines go first");
        let mut long = Tail::default();
        long.push(&"é".repeat(OUTPUT_KEPT));
        let text = long.text();
        assert!(
            text.len() <= OUTPUT_KEPT && text.starts_with('é'),
            "its start, whole characters"
        );
        let mut small = Tail::default();
        small.push("a");
        small.push("b");
        assert_eq!(small.text(), "a\nb\n");
    }
}
