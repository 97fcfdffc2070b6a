//! A GitProvider's webhook (WORK-3): `POST /hooks/git/{provider}` takes a CI status for a
//! commit and, when a merged epic task's merge commit failed, reopens the task with the link.
//!
//! Fail closed, in this order: an unknown provider, a provider without a `webhookSecret` (or
//! whose secret cannot be read), a delivery without `X-Hub-Signature-256`, and one whose
//! signature is not the HMAC-SHA256 of the body under the secret are all refused before the
//! body is read. A signed delivery already taken — by its `X-GitHub-Delivery` id or by its
//! body's SHA-256, so that a captured body replayed under another id is ignored too — changes
//! nothing. It is recorded as taken only after its changes are made, so that a forge's retry
//! of a delivery that failed half-way is taken again. Every delivery the store can record is
//! one audit record.
//!
//! The body is GitHub's status event (`{"sha", "state", "target_url", "commit": {…}}`, event
//! `status`) or the generic `{"commit", "state", "url"}`; `state` is `success`, `pending`,
//! `failure` or `error`, and the commit its full id. Another GitHub event (`ping` when a hook is
//! made) is taken and ignored. A failure reopens a merged task of an open epic; in a `done` or
//! `archived` epic it is recorded only (an epic does not move back from `done`).

use hmac::{KeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use warden_core::audit::{NewRecord, RecordKind, canonical_json};
use warden_core::policy::Policy;
use warden_core::time::Millis;
use warden_core::work::{EpicState, EpicTaskState};
use warden_runtime::Secrets;
use warden_store::{Report, Store, StoreError};

type Hmac = hmac::Hmac<Sha256>;

/// The states a report may give.
pub const STATES: [&str; 4] = ["success", "pending", "failure", "error"];

/// What a delivery brings.
#[derive(Clone, Copy, Debug)]
pub struct Delivery<'a> {
    /// `X-Hub-Signature-256`.
    pub signature: Option<&'a str>,
    /// `X-GitHub-Delivery`.
    pub id: Option<&'a str>,
    /// `X-GitHub-Event`, if sent.
    pub event: Option<&'a str>,
    /// The body, as sent.
    pub body: &'a [u8],
}

/// Why a delivery was refused; nothing was changed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HookRefusal {
    /// No GitProvider by that name.
    #[error("no GitProvider `{0}`")]
    UnknownProvider(String),
    /// The provider has no webhook secret: its webhook takes nothing.
    #[error(
        "GitProvider `{0}` has no webhookSecret, so its webhook refuses every delivery; set one \
         with `warden apply`"
    )]
    NoSecret(String),
    /// The provider's secret cannot be read now.
    #[error("the webhook secret of GitProvider `{0}` cannot be read; see the server's log")]
    SecretUnavailable(String),
    /// No `X-Hub-Signature-256`.
    #[error(
        "the delivery is not signed; send X-Hub-Signature-256: sha256=<HMAC-SHA256 of the body>"
    )]
    Unsigned,
    /// A signature that is not the body's under the secret.
    #[error("the delivery's X-Hub-Signature-256 does not match its body")]
    BadSignature,
    /// A signed body that is not a report.
    #[error("{0}")]
    BadBody(String),
}

impl HookRefusal {
    /// Its code, as the answer and the audit record name it.
    pub fn code(&self) -> &'static str {
        match self {
            Self::UnknownProvider(_) => "NOT_FOUND",
            Self::NoSecret(_) => "NO_SECRET",
            Self::SecretUnavailable(_) => "UNAVAILABLE",
            Self::Unsigned => "UNSIGNED",
            Self::BadSignature => "BAD_SIGNATURE",
            Self::BadBody(_) => "INVALID_ARGUMENT",
        }
    }
}

/// Why a delivery failed.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    /// Refused.
    #[error(transparent)]
    Refused(#[from] HookRefusal),
    /// The store could not be read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a taken delivery did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Taken {
    /// The delivery's id.
    pub delivery: String,
    /// The commit it reports on.
    pub commit: String,
    /// Its state.
    pub state: String,
    /// The merged epic tasks of that commit, its status recorded on each.
    pub recorded: Vec<String>,
    /// Those it reopened.
    pub reopened: Vec<String>,
    /// True when the delivery was taken before: nothing was done.
    pub repeated: bool,
    /// The event, when it is not a CI status (nothing was done).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignored: Option<String>,
}

/// A report, as either body gives it: GitHub's `sha` and `target_url` (its `commit` is an
/// object), or the generic `commit` and `url`.
#[derive(Debug, Deserialize)]
struct Body {
    sha: Option<String>,
    commit: Option<serde_json::Value>,
    state: Option<String>,
    target_url: Option<String>,
    url: Option<String>,
}

/// The longest delivery id taken; a longer one is refused.
const MAX_ID: usize = 128;

/// Takes `delivery` for the GitProvider `provider` (see the module's rules), audited.
pub async fn deliver(
    store: &Store,
    policy: &Policy,
    secrets: &Secrets,
    provider: &str,
    delivery: Delivery<'_>,
    now: Millis,
) -> Result<Taken, HookError> {
    if warden_core::name::Name::new(provider).is_err() {
        // No provider can have that name: nothing to record, nor a name to trust in a record.
        return Err(HookRefusal::UnknownProvider(provider.chars().take(MAX_ID).collect()).into());
    }
    let outcome = take(store, policy, secrets, provider, delivery, now).await;
    let (decision, code, details) = match &outcome {
        Ok(taken) => (
            "allow",
            None,
            serde_json::to_value(taken).unwrap_or_default(),
        ),
        Err(HookError::Refused(r)) => (
            "deny",
            Some(r.code()),
            serde_json::json!({ "reason": r.to_string() }),
        ),
        Err(HookError::Store(_)) => return outcome,
    };
    let mut details = details;
    if let Some(fields) = details.as_object_mut() {
        fields.insert("provider".into(), provider.into());
        if let Some(id) = delivery.id.filter(|id| printable(id)) {
            fields.insert("delivery".into(), id.into());
        }
    }
    let record = NewRecord {
        at: now,
        kind: RecordKind::Admin,
        run_id: "admin".into(),
        call_id: None,
        principal: Some(format!("gitprovider:{provider}")),
        agent: None,
        tool: Some("gitprovider.delivery".into()),
        decision: Some(decision.into()),
        code: code.map(str::to_owned),
        payload: canonical_json(&details),
    };
    store.append_audit(vec![record]).await?;
    outcome
}

async fn take(
    store: &Store,
    policy: &Policy,
    secrets: &Secrets,
    name: &str,
    delivery: Delivery<'_>,
    now: Millis,
) -> Result<Taken, HookError> {
    let provider = policy
        .git_provider(name)
        .ok_or_else(|| HookRefusal::UnknownProvider(name.to_owned()))?;
    let reference = provider
        .webhook_secret()
        .ok_or_else(|| HookRefusal::NoSecret(name.to_owned()))?;
    let secret = secrets
        .resolve(reference)
        .and_then(|s| {
            if s.is_empty() {
                Err(format!("`{reference}` is empty"))
            } else {
                Ok(s)
            }
        })
        .map_err(|e| {
            tracing::warn!(provider = name, error = %e, "a webhook secret cannot be read");
            HookRefusal::SecretUnavailable(name.to_owned())
        })?;
    verify(&secret, delivery)?;
    let body_id = format!("sha256:{}", hex::encode(Sha256::digest(delivery.body)));
    let mut ids = vec![body_id.clone()];
    if let Some(id) = delivery.id {
        if !printable(id) {
            return Err(HookRefusal::BadBody(format!(
                "X-GitHub-Delivery must be at most {MAX_ID} printable characters"
            ))
            .into());
        }
        ids.insert(0, id.to_owned());
    }
    let mut taken = Taken {
        delivery: ids.first().cloned().unwrap_or(body_id),
        ..Taken::default()
    };
    if let Some(event) = delivery.event.filter(|e| *e != "status") {
        taken.ignored = Some(event.chars().take(MAX_ID).collect());
        return Ok(taken);
    }
    let body: Body = serde_json::from_slice(delivery.body)
        .map_err(|e| HookRefusal::BadBody(format!("the body is not a CI report: {e}")))?;
    let generic = match body.commit {
        Some(serde_json::Value::String(c)) => Some(c),
        _ => None,
    };
    let commit = body
        .sha
        .or(generic)
        .filter(|c| (c.len() == 40 || c.len() == 64) && c.bytes().all(|b| b.is_ascii_hexdigit()))
        .ok_or_else(|| {
            HookRefusal::BadBody(
                "give the commit's full id (40 or 64 hex digits) as `commit` (or `sha`)".into(),
            )
        })?
        .to_ascii_lowercase();
    let state = body
        .state
        .filter(|s| STATES.contains(&s.as_str()))
        .ok_or_else(|| {
            HookRefusal::BadBody(format!("give `state`, one of {}", STATES.join(", ")))
        })?;
    let link = body.url.or(body.target_url);
    taken.commit = commit.clone();
    taken.state = state.clone();
    if store.git_delivery_seen(name, &ids).await? {
        taken.repeated = true;
        return Ok(taken);
    }
    let failed = state == "failure" || state == "error";
    let actor = format!("gitprovider:{name}");
    for task in store
        .merged_epic_tasks(provider.project.as_str(), &commit)
        .await?
    {
        let report = Report::Ci {
            state: &state,
            url: link.as_deref(),
        };
        store.report_epic_task(&task.id, report, now).await?;
        taken.recorded.push(task.id.clone());
        let open = store
            .epic(&task.epic_id)
            .await?
            .is_some_and(|e| e.state == EpicState::Open);
        if failed
            && open
            && store
                .move_epic_task(
                    &task.id,
                    EpicTaskState::Merged,
                    EpicTaskState::Reopened,
                    &actor,
                    None,
                    now,
                )
                .await?
        {
            tracing::info!(epic_task = %task.id, %commit, "epic task reopened: CI failed after its merge");
            taken.reopened.push(task.id);
        }
    }
    store.record_git_delivery(name, &ids, now).await?;
    Ok(taken)
}

fn printable(id: &str) -> bool {
    !id.is_empty() && id.len() <= MAX_ID && id.bytes().all(|b| b.is_ascii_graphic())
}

/// Whether `delivery` is signed by the secret of the GitProvider `name` — reading nothing but
/// the configuration and the secret, writing nothing: what a rate limit lets through.
pub fn verified(policy: &Policy, secrets: &Secrets, name: &str, delivery: Delivery<'_>) -> bool {
    policy
        .git_provider(name)
        .and_then(|p| p.webhook_secret())
        .and_then(|reference| secrets.resolve(reference).ok())
        .is_some_and(|secret| !secret.is_empty() && verify(&secret, delivery).is_ok())
}

/// Refuses a delivery whose signature is missing or is not the body's under `secret`.
fn verify(secret: &str, delivery: Delivery<'_>) -> Result<(), HookRefusal> {
    let signature = delivery.signature.ok_or(HookRefusal::Unsigned)?;
    let given = signature
        .trim()
        .strip_prefix("sha256=")
        .and_then(|h| hex::decode(h).ok())
        .ok_or(HookRefusal::BadSignature)?;
    let mut mac = Hmac::new_from_slice(secret.as_bytes()).map_err(|_| HookRefusal::BadSignature)?;
    mac.update(delivery.body);
    // Compared in constant time.
    mac.verify_slice(&given)
        .map_err(|_| HookRefusal::BadSignature)
}

/// The `X-Hub-Signature-256` of `body` under `secret`, as a sender computes it.
pub fn sign(secret: &str, body: &[u8]) -> String {
    let Ok(mut mac) = Hmac::new_from_slice(secret.as_bytes()) else {
        return String::new();
    };
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_bodys_own_signature_verifies() {
        let body = br#"{"commit":"abc1234","state":"failure"}"#;
        let good = sign("s3cret", body);
        let at = |signature| Delivery {
            signature,
            id: None,
            event: None,
            body,
        };
        assert_eq!(verify("s3cret", at(Some(&good))), Ok(()));
        assert_eq!(
            verify("other", at(Some(&good))),
            Err(HookRefusal::BadSignature)
        );
        assert_eq!(verify("s3cret", at(None)), Err(HookRefusal::Unsigned));
        assert_eq!(
            verify("s3cret", at(Some("sha256=zz"))),
            Err(HookRefusal::BadSignature)
        );
        assert_eq!(
            verify("s3cret", at(Some(good.trim_start_matches("sha256=")))),
            Err(HookRefusal::BadSignature)
        );
    }
}
