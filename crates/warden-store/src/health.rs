//! Whether the store takes audit appends, as the last one found: a held write lock, a full
//! disk or a lost connection fails every governed call (`UNAVAILABLE`), and `/readyz` says so
//! until an append succeeds again. Each change is logged once.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::StoreError;

/// The outcome of the latest audit append.
#[derive(Debug, Default)]
pub(crate) struct AppendHealth {
    failing: AtomicBool,
    reason: Mutex<Option<String>>,
}

impl AppendHealth {
    /// Notes an append's result. An `Ok` costs one atomic load.
    pub(crate) fn record(&self, result: &Result<(), StoreError>) {
        match result {
            Ok(()) => {
                // A load first: a write on every append would bounce the line between the
                // serving threads.
                if self.failing.load(Ordering::Acquire)
                    && self.failing.swap(false, Ordering::AcqRel)
                {
                    *self.reason() = None;
                    tracing::info!("audit appends succeed again");
                }
            }
            Err(e) => {
                let reason = e.to_string();
                let mut current = self.reason();
                if current.as_deref() != Some(reason.as_str()) {
                    tracing::error!(error = %reason, "audit appends fail: governed calls are refused with UNAVAILABLE");
                }
                *current = Some(reason);
                self.failing.store(true, Ordering::Release);
            }
        }
    }

    /// Why the latest append failed, if it did.
    pub(crate) fn problem(&self) -> Option<String> {
        if self.failing.load(Ordering::Acquire) {
            self.reason().clone()
        } else {
            None
        }
    }

    fn reason(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.reason
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
