//! Keeping a `subscriptions/listen` stream open to a 2026-07-28 peer, for the three places
//! that keep one: the bridge's stream to its remote Warden ([`crate::bridge`]), an upstream's
//! list changes and an upstream's resource subscriptions ([`crate::upstream`]). A stream that
//! ends, or cannot be opened, is tried again after a pause that doubles each time — also when
//! a stream ends sooner than the pause before it, so that a peer which closes every stream at
//! once is not asked again every second — and starts over once a stream has lasted longer
//! than that pause (a proxy that cuts streams after a while), or [`STABLE_AFTER`].

use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::SubscriptionFilter;
use rmcp::service::{Peer, Subscription};

/// How long opening a stream may take.
pub(crate) const OPEN_TIMEOUT: Duration = Duration::from_secs(15);
/// The first pause before trying again.
const FIRST_PAUSE: Duration = Duration::from_secs(1);
/// The longest pause.
const LONGEST_PAUSE: Duration = Duration::from_secs(30);
/// A stream that lasted this long starts the pauses over.
pub(crate) const STABLE_AFTER: Duration = Duration::from_secs(30);

/// Opens a listen stream on `peer` for `filter`; why not, in a few words.
pub(crate) async fn open(
    peer: &Peer<RoleClient>,
    filter: SubscriptionFilter,
) -> Result<Subscription, String> {
    match tokio::time::timeout(OPEN_TIMEOUT, peer.listen(filter)).await {
        Ok(Ok(stream)) => Ok(stream),
        Ok(Err(e)) => Err(crate::http_client::request_failure(&e)),
        Err(_) => Err(format!("no answer in {} s", OPEN_TIMEOUT.as_secs())),
    }
}

/// The pauses between tries to open a stream.
#[derive(Debug)]
pub(crate) struct Pacing {
    /// The pause before the last try (none yet: the first pause).
    last: Duration,
    next: Duration,
}

impl Default for Pacing {
    fn default() -> Self {
        Self {
            last: FIRST_PAUSE,
            next: FIRST_PAUSE,
        }
    }
}

impl Pacing {
    /// The pause before the next try, after a stream that lasted `lasted` ended (`None`: it
    /// did not open).
    pub(crate) fn pause(&mut self, lasted: Option<Duration>) -> Duration {
        if lasted.is_some_and(|l| l >= STABLE_AFTER || l > self.last) {
            self.next = FIRST_PAUSE;
        }
        let pause = self.next;
        self.last = pause;
        self.next = (self.next * 2).min(LONGEST_PAUSE);
        pause
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn failures_double_the_pause_up_to_the_longest() {
        let mut p = Pacing::default();
        let pauses: Vec<u64> = (0..7).map(|_| p.pause(None).as_secs()).collect();
        assert_eq!(pauses, [1, 2, 4, 8, 16, 30, 30]);
    }

    #[test]
    fn a_stream_that_ends_at_once_does_not_start_the_pauses_over() {
        let mut p = Pacing::default();
        let pauses: Vec<u64> = (0..4)
            .map(|_| p.pause(Some(Duration::from_millis(5))).as_secs())
            .collect();
        assert_eq!(pauses, [1, 2, 4, 8]);
    }

    #[test]
    fn a_stream_that_lasted_starts_the_pauses_over() {
        let mut p = Pacing::default();
        for _ in 0..5 {
            p.pause(None);
        }
        assert_eq!(p.pause(Some(STABLE_AFTER)), secs(1));
        assert_eq!(p.pause(None), secs(2));
    }

    #[test]
    fn a_stream_cut_after_a_while_is_reopened_at_once_each_time() {
        // A proxy that ends every stream after 20 s: healthy, longer than any pause so far.
        let mut p = Pacing::default();
        let pauses: Vec<u64> = (0..4).map(|_| p.pause(Some(secs(20))).as_secs()).collect();
        assert_eq!(pauses, [1, 1, 1, 1]);
        // After failures, a stream that outlasted the last pause starts over too.
        for _ in 0..3 {
            p.pause(None);
        }
        assert_eq!(p.pause(Some(secs(9))), secs(1));
    }
}
