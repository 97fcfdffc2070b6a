//! The two backends behind one enum: each call goes to the backend the store was opened on.

use warden_core::audit::NewRecord;
use warden_core::config::Kind;

use crate::error::StoreError;
use crate::postgres::backend::PgBackend;
use crate::rows::{AuditFilter, AuditRow, CredentialRow, ResourceRow};
use crate::sqlite::backend::SqliteBackend;

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

impl Backend {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Backend::Sqlite(_) => "sqlite",
            Backend::Postgres(_) => "postgres",
        }
    }

    pub(crate) async fn migrate(&self) -> Result<(), StoreError> {
        dispatch!(self, b => b.migrate().await)
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

    pub(crate) async fn write_resources(
        &self,
        upserts: &[ResourceRow],
        deletes: &[(Kind, String)],
        expected: Option<u64>,
        admin: NewRecord,
    ) -> Result<u64, StoreError> {
        dispatch!(self, b => b.write_resources(upserts, deletes, expected, admin).await)
    }

    pub(crate) async fn bootstrap(
        &self,
        resources: &[ResourceRow],
        admin: NewRecord,
    ) -> Result<bool, StoreError> {
        dispatch!(self, b => b.bootstrap(resources, admin).await)
    }

    pub(crate) async fn meta_get(&self, key: &str) -> Result<Option<String>, StoreError> {
        dispatch!(self, b => b.meta_get(key).await)
    }

    pub(crate) async fn insert_credential(
        &self,
        row: CredentialRow,
        admin: NewRecord,
    ) -> Result<u64, StoreError> {
        dispatch!(self, b => b.insert_credential(row, admin).await)
    }

    pub(crate) async fn revoke_credential(
        &self,
        id: &str,
        now: warden_core::time::Millis,
        admin: NewRecord,
    ) -> Result<bool, StoreError> {
        dispatch!(self, b => b.revoke_credential(id, now, admin).await)
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

    pub(crate) async fn append(&self, records: Vec<NewRecord>) -> Result<(), StoreError> {
        dispatch!(self, b => b.append(records).await)
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

    pub(crate) async fn scan_audit(
        &self,
        after: i64,
        limit: i64,
    ) -> Result<Vec<AuditRow>, StoreError> {
        dispatch!(self, b => b.scan_audit(after, limit).await)
    }

    pub(crate) async fn take(
        &self,
        key: &str,
        window: i64,
        limit: i64,
    ) -> Result<bool, StoreError> {
        dispatch!(self, b => b.take(key, window, limit).await)
    }

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
        limit: i64,
    ) -> Result<Vec<crate::rows::AgentRun>, StoreError> {
        dispatch!(self, b => b.agent_runs(agent, limit).await)
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
        from: &[&str],
        to: &str,
        set: &crate::approvals::Transition,
    ) -> Result<bool, StoreError> {
        dispatch!(self, b => b.transition(id, from, to, set).await)
    }
}
