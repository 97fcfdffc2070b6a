//! Reading approvals (APR-7): which parked calls a caller may list and read, decided here for
//! the admin API, the console and `warden approvals` alike.
//!
//! With `approvals:read` or `approvals:decide`, every one. Otherwise a caller reads its own:
//! those its principal requested — with whichever of its credentials — in the projects whose
//! tools *this* credential may use. A token narrowed by bindings or scopes reads no further
//! than it could act, so a token whose scopes grant nothing reads none. Anyone else's approval
//! answers exactly like one that does not exist. A built-in tool's call (no project) is read
//! by its principal's credentials, which are all offered those tools. (Over MCP, a parked call shown as a task
//! belongs to the very credential that parked it: `Gateway::parked_call`.)

use warden_core::approval::ApprovalStatus;
use warden_core::capability::{APPROVALS_DECIDE, APPROVALS_READ};
use warden_store::{Approval, ApprovalFilter};

use crate::{Caller, Control, Refusal};

/// Whether `caller` reads every approval.
pub fn reads_all(caller: &Caller) -> bool {
    caller.holds(APPROVALS_READ) || caller.holds(APPROVALS_DECIDE)
}

/// `filter` narrowed to what `caller` may read.
fn narrowed(caller: &Caller, mut filter: ApprovalFilter) -> ApprovalFilter {
    if let Caller::Credential(authority) = caller
        && !reads_all(caller)
    {
        filter.principal = Some(authority.principal.to_string());
        filter.projects = Some(authority.projects.keys().map(ToString::to_string).collect());
    }
    filter
}

/// Whether `caller` may read `approval`.
pub fn may_read(caller: &Caller, approval: &Approval) -> bool {
    match caller {
        Caller::Operator(_) => true,
        Caller::Credential(authority) => {
            reads_all(caller)
                || (approval.principal == authority.principal.to_string()
                    && approval.project.as_deref().is_none_or(|project| {
                        authority.projects.keys().any(|p| p.as_str() == project)
                    }))
        }
    }
}

/// The approvals of the given statuses (all when empty) that `caller` may read, oldest first,
/// at most `limit` (default 100).
pub async fn list(
    control: &Control,
    caller: &Caller,
    status: Vec<ApprovalStatus>,
    limit: Option<i64>,
) -> Result<Vec<Approval>, Refusal> {
    let filter = narrowed(
        caller,
        ApprovalFilter {
            status,
            limit,
            ..ApprovalFilter::default()
        },
    );
    Ok(control.store().approvals(&filter).await?)
}

/// The approval `id`, when `caller` may read it; anyone else's answers like one that does not
/// exist.
pub async fn get(control: &Control, caller: &Caller, id: &str) -> Result<Approval, Refusal> {
    control
        .store()
        .approval(id)
        .await?
        .filter(|a| may_read(caller, a))
        .ok_or_else(|| Refusal::not_found(format!("no approval `{id}`")))
}
