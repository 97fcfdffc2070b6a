//! `warden serve`'s signed checkpoints of the audit chain's head (AUD-2): once the chain has
//! grown by [`EVERY_RECORDS`] records, or a minute after it last grew, and when the server
//! stops. Each goes to the store and to the checkpoint file beside the audit key
//! (warden-store `anchor.rs`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;
use warden_store::{AuditKey, Store};

use crate::common::now;

/// Records after which a checkpoint is due.
const EVERY_RECORDS: i64 = 1_000;
/// Time after which a grown chain gets a checkpoint.
const EVERY: Duration = Duration::from_secs(60);
/// How often the head is looked at.
const LOOK: Duration = Duration::from_secs(5);

/// Signs checkpoints until `cancel`.
pub(crate) async fn sign_while(store: Arc<Store>, key: Arc<AuditKey>, cancel: CancellationToken) {
    let mut signed_at = 0;
    let mut last = Instant::now();
    let mut timer = tokio::time::interval(LOOK);
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = timer.tick() => {}
        }
        let head = match store.audit_head().await {
            Ok(head) => head,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the audit chain's head for a checkpoint");
                continue;
            }
        };
        let due =
            head - signed_at >= EVERY_RECORDS || (head > signed_at && last.elapsed() >= EVERY);
        if !due {
            continue;
        }
        if let Some(seq) = sign(&store, &key).await {
            signed_at = seq;
            last = Instant::now();
        }
    }
}

/// Signs one checkpoint of the current head (none when it has not grown); its sequence number.
pub(crate) async fn sign(store: &Store, key: &AuditKey) -> Option<i64> {
    match store.checkpoint(key, now()).await {
        Ok(Some(c)) => {
            tracing::debug!(seq = c.seq, "signed a checkpoint of the audit chain");
            Some(c.seq)
        }
        Ok(None) => None,
        Err(e) => {
            tracing::error!(error = %e, "cannot sign a checkpoint of the audit chain");
            None
        }
    }
}
