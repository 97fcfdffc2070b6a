//! In-memory implementations of the pipeline's traits: for tests, golden fixtures and dry
//! runs. Not durable; the real ones live in `warden-store`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

use warden_core::audit::{AuditRecord, GENESIS_HASH, NewRecord};
use warden_core::contract::ToolOutput;
use warden_core::error::{EnvError, ExecError};
use warden_core::pipeline::{AuditLog, Clock, Counters, Execution, Executor};
use warden_core::policy::CounterSpec;
use warden_core::time::Millis;

/// An audit log in memory, chained like the real one. Can be switched to fail.
#[derive(Debug, Default)]
pub struct MemoryAudit {
    records: Mutex<Vec<AuditRecord>>,
    down: AtomicBool,
}

impl MemoryAudit {
    /// Makes every append fail (a store that cannot be reached).
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    /// The records so far.
    pub fn records(&self) -> Vec<AuditRecord> {
        self.records.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

impl AuditLog for MemoryAudit {
    async fn append(&self, batch: Vec<NewRecord>) -> Result<(), EnvError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(EnvError("store down".into()));
        }
        let mut records = self
            .records
            .lock()
            .map_err(|_| EnvError("poisoned".into()))?;
        for r in batch {
            let (seq, prev) = records.last().map_or((1, GENESIS_HASH.to_owned()), |l| {
                (l.seq + 1, l.hash.clone())
            });
            records.push(r.chain(seq, &prev));
        }
        Ok(())
    }
}

/// Exact counters in memory.
#[derive(Debug, Default)]
pub struct MemoryCounters {
    counts: Mutex<HashMap<(String, i64), u32>>,
    down: AtomicBool,
}

impl MemoryCounters {
    /// Makes every take fail.
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }
}

impl Counters for MemoryCounters {
    async fn take(&self, counter: &CounterSpec, now: Millis) -> Result<bool, EnvError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(EnvError("store down".into()));
        }
        let window = now.window_start(counter.window).0;
        let mut counts = self
            .counts
            .lock()
            .map_err(|_| EnvError("poisoned".into()))?;
        let n = counts.entry((counter.key.clone(), window)).or_insert(0);
        if *n >= counter.limit {
            return Ok(false);
        }
        *n += 1;
        Ok(true)
    }
}

/// A clock that only moves when told to.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    /// A clock at `t`.
    pub fn at(t: Millis) -> Self {
        Self(AtomicI64::new(t.0))
    }

    /// Moves the clock.
    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Millis {
        Millis(self.0.load(Ordering::SeqCst))
    }
}

/// An executor that echoes the call and counts executions.
#[derive(Debug, Default)]
pub struct EchoExecutor {
    executed: Mutex<Vec<String>>,
}

impl EchoExecutor {
    /// Names of the tools executed, in order.
    pub fn executed(&self) -> Vec<String> {
        self.executed.lock().map(|e| e.clone()).unwrap_or_default()
    }
}

impl Executor for EchoExecutor {
    type Context = ();

    async fn execute(&self, call: Execution<'_, ()>) -> Result<ToolOutput, ExecError> {
        if let Ok(mut e) = self.executed.lock() {
            e.push(call.tool.name.to_string());
        }
        Ok(ToolOutput::Data(serde_json::json!({
            "tool": &*call.tool.name,
            "args": call.args,
        })))
    }
}

/// Parked calls in memory.
#[derive(Debug, Default)]
pub struct MemoryApprovals {
    parked: Mutex<Vec<(String, warden_core::approval::Parked)>>,
}

impl MemoryApprovals {
    /// The parked calls, with their ids.
    pub fn parked(&self) -> Vec<(String, warden_core::approval::Parked)> {
        self.parked.lock().map(|p| p.clone()).unwrap_or_default()
    }
}

impl warden_core::approval::ApprovalQueue for MemoryApprovals {
    async fn park(&self, parked: &warden_core::approval::Parked) -> Result<String, EnvError> {
        let mut all = self
            .parked
            .lock()
            .map_err(|_| EnvError("poisoned".into()))?;
        let id = format!("apr_{}", all.len() + 1);
        all.push((id.clone(), parked.clone()));
        Ok(id)
    }
}
