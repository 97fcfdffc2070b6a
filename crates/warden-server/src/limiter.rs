//! The per-address count of failed authentications (AUTH-5): past the limit, a bad
//! credential from that address is answered 429. Valid credentials are never counted nor
//! limited (`auth`).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failed authentications allowed per source address and [`WINDOW`], unless configured
/// (`warden serve --auth-failure-limit`).
pub const DEFAULT_FAILURE_LIMIT: u32 = 30;

/// The window failures are counted in.
const WINDOW: Duration = Duration::from_secs(60);

/// Counts failed authentications per source, and keeps the store's re-reads for unknown
/// tokens to one at a time.
#[derive(Debug, Default)]
pub(crate) struct FailureLimiter {
    failures: Mutex<HashMap<IpAddr, (Instant, u32)>>,
    /// When the latest re-read of the store for an unknown token began; held while one runs.
    reread: tokio::sync::Mutex<Option<Instant>>,
}

impl FailureLimiter {
    /// The lock that keeps re-reads of the store one at a time, with when the latest began.
    pub(crate) fn reread(&self) -> &tokio::sync::Mutex<Option<Instant>> {
        &self.reread
    }

    pub(crate) fn blocked(&self, ip: IpAddr, limit: u32) -> bool {
        let Ok(map) = self.failures.lock() else {
            return false;
        };
        map.get(&ip)
            .is_some_and(|(start, n)| start.elapsed() < WINDOW && *n >= limit)
    }

    /// How long until the window of `ip` ends.
    pub(crate) fn retry_after(&self, ip: IpAddr) -> Duration {
        self.failures
            .lock()
            .ok()
            .and_then(|map| {
                map.get(&ip)
                    .map(|(start, _)| WINDOW.saturating_sub(start.elapsed()))
            })
            .unwrap_or(WINDOW)
    }

    pub(crate) fn record(&self, ip: IpAddr) {
        let Ok(mut map) = self.failures.lock() else {
            return;
        };
        if map.len() > 10_000 {
            map.retain(|_, (start, _)| start.elapsed() < WINDOW);
        }
        let entry = map.entry(ip).or_insert((Instant::now(), 0));
        if entry.0.elapsed() >= WINDOW {
            *entry = (Instant::now(), 0);
        }
        entry.1 += 1;
    }
}
