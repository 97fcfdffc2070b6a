//! How many bytes of large upstream answers Warden holds at once, across every call and
//! upstream: 32 calls reading 50 MB answers at once held 2.28 GB. Each answer's first
//! [`FREE`] bytes are not counted — every ordinary answer stays off this path — and past them
//! a call takes a part of [`BUDGET`] per MiB it reads, waiting while the budget is spent
//! (its upstream's answer then waits in the socket); the part is given back when the call
//! has its answer.

use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The part of each answer that is not counted.
pub(super) const FREE: usize = 1 << 20;
/// Bytes of large answers held at once, in MiB.
pub(super) const BUDGET: u32 = 256;

fn budget() -> Arc<Semaphore> {
    static BUDGET_MIB: OnceLock<Arc<Semaphore>> = OnceLock::new();
    BUDGET_MIB
        .get_or_init(|| Arc::new(Semaphore::new(BUDGET as usize)))
        .clone()
}

/// The parts of the budget one answer holds; given back when dropped.
#[derive(Debug, Default, Clone)]
pub(super) struct Held {
    permits: Arc<Mutex<Vec<OwnedSemaphorePermit>>>,
}

impl Held {
    /// Accounts for an answer (or one message of it) grown to `len` bytes: waits until the
    /// budget has room for the MiB past [`FREE`] not accounted for yet.
    pub(super) async fn grow(&self, len: usize) {
        let needed = len.saturating_sub(FREE).div_ceil(1 << 20);
        let held = self.permits.lock().map_or(0, |p| p.len());
        for _ in held..needed.min(BUDGET as usize) {
            if let Ok(permit) = budget().acquire_owned().await
                && let Ok(mut permits) = self.permits.lock()
            {
                permits.push(permit);
            }
        }
    }

    /// Gives back what is held (one message of an event stream was handled).
    pub(super) fn release(&self) {
        if let Ok(mut permits) = self.permits.lock() {
            permits.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_answer_takes_a_mib_of_the_budget_per_mib_past_the_free_part() {
        let held = Held::default();
        held.grow(FREE).await;
        assert_eq!(held.permits.lock().unwrap().len(), 0);
        held.grow(FREE + 1).await;
        held.grow(FREE + (3 << 20)).await;
        assert_eq!(held.permits.lock().unwrap().len(), 3);
        held.release();
        assert_eq!(held.permits.lock().unwrap().len(), 0);
    }
}
