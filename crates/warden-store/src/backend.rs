//! The two backends behind one enum each: [`Backend`] for their sqlx pools, [`Sink`] for
//! their audit sinks. Each call goes to the backend the store was opened on.

use warden_core::audit::NewRecord;

use crate::error::StoreError;
use crate::postgres::{PgBackend, PgSink};
use crate::rows::{AuditFilter, AuditRow, CredentialRow, ResourceRow};
use crate::sessions::sql::SessionRow;
use crate::sign_ins::sql::SignInRow;
use crate::sign_ins::{SignIn, SignInNote};
use crate::sink::{AdminChange, AuditSink};
use crate::sqlite::{SqliteBackend, SqliteSink};
use crate::tasks::sql::{EnvironmentRepoRow, EnvironmentRow, TaskRow};
use crate::tasks::{EnvironmentState, TaskChange, TaskEnvironment, TaskFilter, TaskInsert};

/// A backend's sqlx pool: reads, and the writes that chain no audit record.
#[derive(Debug)]
pub(crate) enum Backend {
    Sqlite(SqliteBackend),
    Postgres(PgBackend),
}

macro_rules! dispatch {
    ($self:ident, $b:ident => $e:expr) => {
        match $self {
            Backend::Sqlite($b) => $e,
            Backend::Postgres($b) => $e,
        }
    };
}
pub(crate) use dispatch;

impl Backend {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Backend::Sqlite(_) => "sqlite",
            Backend::Postgres(_) => "postgres",
        }
    }

    pub(crate) async fn close(&self) {
        dispatch!(self, b => b.pool.close().await)
    }

    pub(crate) async fn revision(&self) -> Result<u64, StoreError> {
        dispatch!(self, b => b.revision().await)
    }

    pub(crate) async fn load_resources(&self) -> Result<(Vec<ResourceRow>, u64), StoreError> {
        dispatch!(self, b => b.load_resources().await)
    }

    pub(crate) async fn meta_get(&self, key: &str) -> Result<Option<String>, StoreError> {
        dispatch!(self, b => b.meta_get(key).await)
    }

    pub(crate) async fn meta_get_or_set(
        &self,
        key: &str,
        value: &str,
    ) -> Result<String, StoreError> {
        dispatch!(self, b => b.meta_get_or_set(key, value).await)
    }

    pub(crate) async fn credentials(&self) -> Result<Vec<CredentialRow>, StoreError> {
        dispatch!(self, b => b.credentials().await)
    }

    pub(crate) async fn credential_by_hash(
        &self,
        hash: &str,
    ) -> Result<Option<CredentialRow>, StoreError> {
        dispatch!(self, b => b.credential_by_hash(hash).await)
    }

    pub(crate) async fn head(&self) -> Result<(i64, String), StoreError> {
        dispatch!(self, b => b.head().await)
    }

    pub(crate) async fn query_audit(
        &self,
        filter: &AuditFilter,
    ) -> Result<Vec<AuditRow>, StoreError> {
        dispatch!(self, b => b.query_audit(filter).await)
    }

    pub(crate) async fn count_audit(&self, filter: &AuditFilter) -> Result<i64, StoreError> {
        dispatch!(self, b => b.count_audit(filter).await)
    }

    pub(crate) async fn waiting_approvals(&self) -> Result<Vec<(String, i64)>, StoreError> {
        dispatch!(self, b => b.waiting_approvals().await)
    }

    pub(crate) async fn insert_checkpoint(
        &self,
        c: &warden_core::audit::checkpoint::Checkpoint,
    ) -> Result<(), StoreError> {
        dispatch!(self, b => b.insert_checkpoint(c).await)
    }

    pub(crate) async fn checkpoints(
        &self,
        limit: i64,
    ) -> Result<Vec<(Option<String>, i64, String, i64, String, String)>, StoreError> {
        dispatch!(self, b => b.checkpoints(limit).await)
    }

    pub(crate) async fn audit_hash_at(&self, seq: i64) -> Result<Option<String>, StoreError> {
        dispatch!(self, b => b.audit_hash_at(seq).await)
    }

    pub(crate) async fn unfinished_calls(
        &self,
        from: i64,
        to: i64,
        before: i64,
    ) -> Result<Vec<crate::rows::AuditRow>, StoreError> {
        dispatch!(self, b => b.unfinished_calls(from, to, before).await)
    }

    pub(crate) async fn scan_audit(
        &self,
        after: i64,
        through: i64,
        limit: i64,
    ) -> Result<Vec<AuditRow>, StoreError> {
        dispatch!(self, b => b.scan_audit(after, through, limit).await)
    }

    pub(crate) async fn take(
        &self,
        key: &str,
        window: i64,
        limit: i64,
    ) -> Result<bool, StoreError> {
        dispatch!(self, b => b.take(key, window, limit).await)
    }

    #[cfg(any(test, feature = "testing"))]
    pub(crate) async fn execute_raw(&self, sql: &str) -> Result<u64, StoreError> {
        dispatch!(self, b => b.execute_raw(sql).await)
    }

    pub(crate) async fn insert_agent_run(
        &self,
        run: &crate::rows::AgentRun,
    ) -> Result<bool, StoreError> {
        dispatch!(self, b => b.insert_agent_run(run).await)
    }

    pub(crate) async fn update_agent_run(
        &self,
        run: &crate::rows::AgentRun,
    ) -> Result<(), StoreError> {
        dispatch!(self, b => b.update_agent_run(run).await)
    }

    pub(crate) async fn agent_runs(
        &self,
        agent: Option<&str>,
        until: Option<i64>,
        limit: i64,
    ) -> Result<Vec<crate::rows::AgentRun>, StoreError> {
        dispatch!(self, b => b.agent_runs(agent, until, limit).await)
    }

    pub(crate) async fn count_runs(&self, agent: Option<&str>) -> Result<i64, StoreError> {
        dispatch!(self, b => b.count_runs(agent).await)
    }

    pub(crate) async fn pin_rows(&self) -> Result<Vec<crate::pins::PinRow>, StoreError> {
        dispatch!(self, b => b.pin_rows().await)
    }

    pub(crate) async fn pinned_upstreams(&self) -> Result<Vec<String>, StoreError> {
        dispatch!(self, b => b.pinned_upstreams().await)
    }

    pub(crate) async fn add_approver(
        &self,
        id: &str,
        before: &str,
        after: &str,
    ) -> Result<bool, StoreError> {
        dispatch!(self, b => b.add_approver(id, before, after).await)
    }

    pub(crate) async fn claim_once(
        &self,
        key: &str,
        at: i64,
        forget_before: i64,
    ) -> Result<bool, StoreError> {
        dispatch!(self, b => b.claim_once(key, at, forget_before).await)
    }

    pub(crate) async fn stop_agent_run(
        &self,
        id: &str,
        reason: &str,
        at: i64,
    ) -> Result<bool, StoreError> {
        dispatch!(self, b => b.stop_agent_run(id, reason, at).await)
    }

    pub(crate) async fn agent_run(
        &self,
        id: &str,
    ) -> Result<Option<crate::rows::AgentRun>, StoreError> {
        dispatch!(self, b => b.agent_run(id).await)
    }

    pub(crate) async fn insert_approval(
        &self,
        a: &crate::approvals::Approval,
    ) -> Result<(), StoreError> {
        dispatch!(self, b => b.insert_approval(a).await)
    }

    pub(crate) async fn approval(
        &self,
        id: &str,
    ) -> Result<Option<crate::approvals::Approval>, StoreError> {
        dispatch!(self, b => b.approval(id).await)
    }

    pub(crate) async fn approvals(
        &self,
        f: &crate::approvals::ApprovalFilter,
    ) -> Result<Vec<crate::approvals::Approval>, StoreError> {
        dispatch!(self, b => b.approvals(f).await)
    }

    pub(crate) async fn transition(
        &self,
        id: &str,
        from: &[warden_core::approval::ApprovalStatus],
        to: warden_core::approval::ApprovalStatus,
        set: &crate::approvals::Transition,
    ) -> Result<bool, StoreError> {
        dispatch!(self, b => b.transition(id, from, to, set).await)
    }

    pub(crate) async fn insert_task(&self, t: &TaskRow) -> Result<TaskInsert, StoreError> {
        dispatch!(self, b => b.insert_task(t).await)
    }

    pub(crate) async fn put_session_state(
        &self,
        id: &str,
        state: &str,
        now: i64,
    ) -> Result<(), StoreError> {
        dispatch!(self, b => b.put_session_state(id, state, now).await)
    }

    pub(crate) async fn put_session_owner(
        &self,
        id: &str,
        credential: &str,
        agent: Option<&str>,
        now: i64,
    ) -> Result<bool, StoreError> {
        dispatch!(self, b => b.put_session_owner(id, credential, agent, now).await)
    }

    pub(crate) async fn session_row(&self, id: &str) -> Result<Option<SessionRow>, StoreError> {
        dispatch!(self, b => b.session_row(id).await)
    }

    pub(crate) async fn touch_session(&self, id: &str, now: i64) -> Result<bool, StoreError> {
        dispatch!(self, b => b.touch_session(id, now).await)
    }

    pub(crate) async fn delete_session(&self, id: &str) -> Result<bool, StoreError> {
        dispatch!(self, b => b.delete_session(id).await)
    }

    pub(crate) async fn expire_sessions(&self, unseen_since: i64) -> Result<u64, StoreError> {
        dispatch!(self, b => b.expire_sessions(unseen_since).await)
    }

    pub(crate) async fn insert_sign_in(&self, sign_in: &SignIn) -> Result<(), StoreError> {
        dispatch!(self, b => b.insert_sign_in(sign_in).await)
    }

    pub(crate) async fn sign_in_row(&self, id_hash: &str) -> Result<Option<SignInRow>, StoreError> {
        dispatch!(self, b => b.sign_in_row(id_hash).await)
    }

    pub(crate) async fn touch_sign_in(
        &self,
        id_hash: &str,
        now: i64,
        older_than: i64,
    ) -> Result<(), StoreError> {
        dispatch!(self, b => b.touch_sign_in(id_hash, now, older_than).await)
    }

    pub(crate) async fn set_sign_in_note(
        &self,
        id_hash: &str,
        note: SignInNote,
        value: &str,
    ) -> Result<bool, StoreError> {
        dispatch!(self, b => b.set_sign_in_note(id_hash, note, value).await)
    }

    pub(crate) async fn clear_sign_in_note(
        &self,
        id_hash: &str,
        note: SignInNote,
        value: &str,
    ) -> Result<bool, StoreError> {
        dispatch!(self, b => b.clear_sign_in_note(id_hash, note, value).await)
    }

    pub(crate) async fn delete_sign_in(&self, id_hash: &str) -> Result<bool, StoreError> {
        dispatch!(self, b => b.delete_sign_in(id_hash).await)
    }

    pub(crate) async fn count_sign_ins(
        &self,
        opened_since: i64,
        seen_since: i64,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        dispatch!(self, b => b.count_sign_ins(opened_since, seen_since).await)
    }

    pub(crate) async fn expire_sign_ins(
        &self,
        opened_before: i64,
        seen_before: i64,
    ) -> Result<u64, StoreError> {
        dispatch!(self, b => b.expire_sign_ins(opened_before, seen_before).await)
    }

    pub(crate) async fn insert_thread(&self, t: &crate::threads::Thread) -> Result<(), StoreError> {
        dispatch!(self, b => b.insert_thread(t).await)
    }

    pub(crate) async fn thread_row(
        &self,
        id: &str,
        owner: &str,
    ) -> Result<Option<crate::threads::sql::ThreadRow>, StoreError> {
        dispatch!(self, b => b.thread_row(id, owner).await)
    }

    pub(crate) async fn thread_rows(
        &self,
        owner: &str,
        agent: Option<&str>,
        limit: i64,
    ) -> Result<Vec<crate::threads::sql::ThreadRow>, StoreError> {
        dispatch!(self, b => b.thread_rows(owner, agent, limit).await)
    }

    pub(crate) async fn message_rows(
        &self,
        id: &str,
        owner: &str,
    ) -> Result<Vec<crate::threads::sql::MessageRow>, StoreError> {
        dispatch!(self, b => b.message_rows(id, owner).await)
    }

    pub(crate) async fn append_thread_messages(
        &self,
        id: &str,
        owner: &str,
        messages: &[crate::threads::ThreadMessage],
        now: i64,
    ) -> Result<Option<Vec<i64>>, StoreError> {
        dispatch!(self, b => b.append_thread_messages(id, owner, messages, now).await)
    }

    pub(crate) async fn claim_thread(
        &self,
        id: &str,
        owner: &str,
        now: i64,
        until: i64,
    ) -> Result<bool, StoreError> {
        dispatch!(self, b => b.claim_thread(id, owner, now, until).await)
    }

    pub(crate) async fn release_thread(&self, id: &str, owner: &str) -> Result<(), StoreError> {
        dispatch!(self, b => b.release_thread(id, owner).await)
    }

    pub(crate) async fn delete_thread(&self, id: &str, owner: &str) -> Result<bool, StoreError> {
        dispatch!(self, b => b.delete_thread(id, owner).await)
    }

    pub(crate) async fn task(&self, id: &str) -> Result<Option<TaskRow>, StoreError> {
        dispatch!(self, b => b.task(id).await)
    }

    pub(crate) async fn task_by_external_id(
        &self,
        workspace: &str,
        external_id: &str,
    ) -> Result<Option<TaskRow>, StoreError> {
        dispatch!(self, b => b.task_by_external_id(workspace, external_id).await)
    }

    pub(crate) async fn tasks(
        &self,
        f: &TaskFilter,
        limit: i64,
    ) -> Result<Vec<TaskRow>, StoreError> {
        dispatch!(self, b => b.tasks(f, limit).await)
    }

    pub(crate) async fn update_task(
        &self,
        id: &str,
        change: &TaskChange,
        now: i64,
    ) -> Result<Option<TaskRow>, StoreError> {
        dispatch!(self, b => b.update_task(id, change, now).await)
    }

    pub(crate) async fn delete_task(&self, id: &str) -> Result<bool, StoreError> {
        dispatch!(self, b => b.delete_task(id).await)
    }

    pub(crate) async fn insert_environment(
        &self,
        env: &TaskEnvironment,
    ) -> Result<bool, StoreError> {
        dispatch!(self, b => b.insert_environment(env).await)
    }

    pub(crate) async fn environment(
        &self,
        task_id: &str,
    ) -> Result<Option<(EnvironmentRow, Vec<EnvironmentRepoRow>)>, StoreError> {
        dispatch!(self, b => b.environment(task_id).await)
    }

    pub(crate) async fn set_environment_state(
        &self,
        id: &str,
        state: EnvironmentState,
        error: Option<&str>,
        now: i64,
    ) -> Result<bool, StoreError> {
        dispatch!(self, b => b.set_environment_state(id, state, error, now).await)
    }

    pub(crate) async fn set_environment_repo_state(
        &self,
        environment_id: &str,
        repository: &str,
        branch: &str,
        state: EnvironmentState,
        error: Option<&str>,
    ) -> Result<u64, StoreError> {
        dispatch!(self, b => b.set_environment_repo_state(environment_id, repository, branch, state, error).await)
    }

    pub(crate) async fn runs_of_task(
        &self,
        task_id: &str,
    ) -> Result<Vec<crate::rows::AgentRun>, StoreError> {
        dispatch!(self, b => b.runs_of_task(task_id).await)
    }

    pub(crate) async fn set_run_task(
        &self,
        run_id: &str,
        task_id: Option<&str>,
    ) -> Result<bool, StoreError> {
        dispatch!(self, b => b.set_run_task(run_id, task_id).await)
    }
}

/// A backend's audit sink.
#[derive(Debug)]
pub(crate) enum Sink {
    Sqlite(SqliteSink),
    Postgres(PgSink),
}

impl AuditSink for Sink {
    async fn append(&self, records: Vec<NewRecord>) -> Result<(), StoreError> {
        match self {
            Sink::Sqlite(s) => s.append(records).await,
            Sink::Postgres(s) => s.append(records).await,
        }
    }

    async fn admin(
        &self,
        change: AdminChange,
        record: NewRecord,
    ) -> Result<Option<u64>, StoreError> {
        match self {
            Sink::Sqlite(s) => s.admin(change, record).await,
            Sink::Postgres(s) => s.admin(change, record).await,
        }
    }

    fn check(&self) -> Result<(), StoreError> {
        match self {
            Sink::Sqlite(s) => s.check(),
            Sink::Postgres(s) => s.check(),
        }
    }

    async fn settle_for_read(&self) -> Result<(), StoreError> {
        match self {
            Sink::Sqlite(s) => s.settle_for_read().await,
            Sink::Postgres(s) => s.settle_for_read().await,
        }
    }

    fn close(&self) {
        match self {
            Sink::Sqlite(s) => s.close(),
            Sink::Postgres(s) => s.close(),
        }
    }
}
