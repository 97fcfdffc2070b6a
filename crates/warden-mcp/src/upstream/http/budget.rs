//! How many bytes of large upstream answers Warden holds at once, across every call and
//! upstream: 32 calls reading 50 MB answers at once held 2.28 GB. Each answer's first
//! [`FREE`] bytes are not counted — every ordinary answer stays off this path, and costs
//! nothing — and past them a call takes a part of [`BUDGET`] per MiB it reads, waiting while
//! the budget is spent (its upstream's answer then waits in the socket); the parts are given
//! back when the call has its answer (or, for an event stream, when a message of it was
//! handled).

use std::sync::{Arc, OnceLock};

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

/// The parts of the budget one answer (or one message) holds; given back when dropped.
pub(super) type Held = Vec<OwnedSemaphorePermit>;

/// The parts an answer grown to `len` bytes needs beyond the `held` ones it has: waits until
/// the budget has room for them.
pub(super) async fn more(held: usize, len: usize) -> Held {
    let needed = len
        .saturating_sub(FREE)
        .div_ceil(1 << 20)
        .min(BUDGET as usize);
    let mut more = Vec::new();
    for _ in held..needed {
        if let Ok(permit) = budget().acquire_owned().await {
            more.push(permit);
        }
    }
    more
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_answer_takes_a_mib_of_the_budget_per_mib_past_the_free_part() {
        let mut held = Held::new();
        held.extend(more(held.len(), FREE).await);
        assert_eq!(held.len(), 0);
        held.extend(more(held.len(), FREE + 1).await);
        held.extend(more(held.len(), FREE + (3 << 20)).await);
        assert_eq!(held.len(), 3);
        assert_eq!(budget().available_permits(), BUDGET as usize - 3);
        drop(held);
        assert_eq!(budget().available_permits(), BUDGET as usize);
    }
}
