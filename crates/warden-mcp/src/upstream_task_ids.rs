//! The ids of upstream tasks as Warden hands them out (the tasks extension, SEP-2663).
//!
//! An upstream that runs a call as a task names it by an id of its own, unique at that
//! upstream only, and it cannot tell Warden's callers apart. So a client gets
//! `wtk.<upstream>.<the upstream's id, base64url>.<tag>`: the tag is an HMAC-SHA256 (first 16
//! bytes) over the caller, the upstream and its id, under a key every replica shares (the
//! store's `task-ids` secret). `tasks/get`, `tasks/update` and `tasks/cancel` reach the
//! upstream only for the caller that created the task; anyone else's id, a changed one and
//! one that does not exist answer alike (-32602). No state is kept: any replica can route it.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{KeyInit, Mac};

type Hmac = hmac::Hmac<sha2::Sha256>;

/// The prefix of the ids of upstream tasks (Warden's parked calls are `apr_…`).
const PREFIX: &str = "wtk.";
/// How many bytes of the HMAC the tag keeps.
const TAG_BYTES: usize = 16;

/// Issues and opens the ids of upstream tasks.
#[derive(Clone)]
pub struct TaskIds {
    key: Vec<u8>,
}

impl std::fmt::Debug for TaskIds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TaskIds")
    }
}

impl TaskIds {
    /// Ids tagged under `key`.
    pub fn new(key: &[u8]) -> Self {
        Self { key: key.to_vec() }
    }

    /// Whether `id` is one of these (an upstream task's, whoever it belongs to).
    pub fn is_upstream_task(id: &str) -> bool {
        id.starts_with(PREFIX)
    }

    fn mac(&self, caller: &str, upstream: &str, task: &str) -> Option<Hmac> {
        let mut mac = Hmac::new_from_slice(&self.key).ok()?;
        for part in [caller, upstream, task] {
            mac.update(part.as_bytes());
            mac.update(b"\0");
        }
        Some(mac)
    }

    /// The id `caller` gets for task `task` of `upstream`.
    pub fn issue(&self, caller: &str, upstream: &str, task: &str) -> Option<String> {
        let tag = self.mac(caller, upstream, task)?.finalize().into_bytes();
        Some(format!(
            "{PREFIX}{upstream}.{}.{}",
            URL_SAFE_NO_PAD.encode(task),
            hex::encode(tag.get(..TAG_BYTES)?)
        ))
    }

    /// The upstream and its task id behind `id`, when `caller` was given it.
    pub fn open(&self, caller: &str, id: &str) -> Option<(String, String)> {
        let rest = id.strip_prefix(PREFIX)?;
        let (upstream, rest) = rest.split_once('.')?;
        let (task, tag) = rest.split_once('.')?;
        let task = String::from_utf8(URL_SAFE_NO_PAD.decode(task).ok()?).ok()?;
        let tag = hex::decode(tag).ok().filter(|t| t.len() == TAG_BYTES)?;
        // In constant time: the tag is what a forger would guess.
        self.mac(caller, upstream, &task)?
            .verify_truncated_left(&tag)
            .ok()?;
        Some((upstream.to_owned(), task))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    #[test]
    fn an_id_opens_for_its_caller_only_and_not_once_changed() {
        let ids = TaskIds::new(b"key");
        let id = ids.issue("tok_a/", "conf", "task-1.x/y").unwrap();
        assert!(TaskIds::is_upstream_task(&id));
        assert_eq!(
            ids.open("tok_a/", &id),
            Some(("conf".to_owned(), "task-1.x/y".to_owned()))
        );
        assert_eq!(ids.open("tok_b/", &id), None);
        assert_eq!(ids.open("tok_a/", &format!("{id}0")), None);
        assert_eq!(ids.open("tok_a/", &id.replace("conf", "other")), None);
        assert_eq!(TaskIds::new(b"another key").open("tok_a/", &id), None);
        assert_eq!(ids.open("tok_a/", "apr_123"), None);
    }
}
