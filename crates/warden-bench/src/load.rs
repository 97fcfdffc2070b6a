//! Closed-loop load: N clients, each sending its next request when the previous one answered,
//! for a duration or a request count, after a warm-up; latencies per operation in HDR
//! histograms (nanoseconds, 3 significant digits).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde_json::Value;

use crate::client::{CallError, Conn, Endpoint};

/// What one request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    /// `tools/call` of a read tool; must execute.
    Read,
    /// `tools/call` of a mutation; must execute.
    Write,
    /// `tools/call` that the gateway must deny (`isError` with status `denied`).
    Denied,
    /// `tools/list`.
    List,
}

impl Op {
    /// Its name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::Denied => "denied",
            Self::List => "list",
        }
    }
}

/// The call mix: weights per operation.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Mix(pub BTreeMap<Op, u32>);

impl Mix {
    /// Parses `read=8,write=1,denied=1,list=0`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut weights = BTreeMap::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (op, weight) = part
                .split_once('=')
                .ok_or_else(|| format!("`{part}`: expected OP=WEIGHT, e.g. read=8"))?;
            let op = match op.trim() {
                "read" => Op::Read,
                "write" => Op::Write,
                "denied" => Op::Denied,
                "list" => Op::List,
                other => {
                    return Err(format!(
                        "`{other}` is not an operation (read, write, denied, list)"
                    ));
                }
            };
            let weight: u32 = weight
                .trim()
                .parse()
                .map_err(|_| format!("`{part}`: the weight must be a whole number"))?;
            if weight > 1000 {
                return Err(format!("`{part}`: weights go up to 1000"));
            }
            weights.insert(op, weight);
        }
        if weights.values().all(|w| *w == 0) {
            return Err("the mix has no operation with a weight above 0".into());
        }
        Ok(Self(weights))
    }

    /// The operations in a fixed interleaved order, each as often as its weight.
    fn sequence(&self) -> Vec<Op> {
        let max = self.0.values().copied().max().unwrap_or(0);
        let mut seq = Vec::new();
        for round in 0..max {
            for (op, weight) in &self.0 {
                if round < *weight {
                    seq.push(*op);
                }
            }
        }
        seq
    }

    /// The mix without `op` (for targets that cannot do it), if anything is left.
    pub fn without(&self, op: Op) -> Option<Self> {
        let mut weights = self.0.clone();
        weights.remove(&op);
        weights.values().any(|w| *w > 0).then_some(Self(weights))
    }
}

/// What the tools of one target are called, with their arguments.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Tools {
    /// The read tool.
    pub read: String,
    /// The mutation.
    pub write: String,
    /// A tool the caller may not call.
    pub denied: String,
    /// Arguments for every call.
    pub arguments: Value,
}

/// How long, or how much, to run.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct Amount {
    /// Concurrent clients.
    pub clients: usize,
    /// Measure this long, unless `requests` is set.
    #[serde(with = "millis")]
    pub duration: Duration,
    /// Measure this many requests in total.
    pub requests: Option<u64>,
    /// Run unmeasured this long first.
    #[serde(with = "millis")]
    pub warmup: Duration,
}

mod millis {
    pub(super) fn serialize<S: serde::Serializer>(
        d: &std::time::Duration,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}

/// The measurements of one operation.
#[derive(Clone, Debug)]
pub struct OpStats {
    /// Latencies of successful requests (ns).
    pub latency: Histogram<u64>,
    /// Errors by kind.
    pub errors: BTreeMap<String, u64>,
}

impl OpStats {
    #[allow(
        clippy::expect_used,
        reason = "constant bounds that the constructor accepts"
    )]
    fn new() -> Self {
        Self {
            // 1 ns .. 60 s, 3 significant digits.
            latency: Histogram::new_with_bounds(1, 60_000_000_000, 3)
                .expect("valid histogram bounds"),
            errors: BTreeMap::new(),
        }
    }

    fn merge(&mut self, other: &Self) {
        let _ = self.latency.add(&other.latency);
        for (k, v) in &other.errors {
            *self.errors.entry(k.clone()).or_default() += v;
        }
    }

    /// Successful plus failed requests.
    pub fn requests(&self) -> u64 {
        self.latency.len() + self.errors.values().sum::<u64>()
    }
}

/// The measurements of one target over one or more rounds.
#[derive(Clone, Debug)]
pub struct Measured {
    /// Per operation.
    pub ops: BTreeMap<Op, OpStats>,
    /// Measured wall time, summed over rounds.
    pub elapsed: Duration,
    /// The first error message of each kind, to say what went wrong.
    pub samples: BTreeMap<String, String>,
}

impl Measured {
    fn empty() -> Self {
        Self {
            ops: BTreeMap::new(),
            elapsed: Duration::ZERO,
            samples: BTreeMap::new(),
        }
    }

    /// Adds another round.
    pub fn merge(&mut self, other: &Self) {
        for (op, stats) in &other.ops {
            self.ops
                .entry(*op)
                .or_insert_with(OpStats::new)
                .merge(stats);
        }
        self.elapsed += other.elapsed;
        for (k, v) in &other.samples {
            self.samples.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }

    /// Every request's latency together.
    pub fn all(&self) -> OpStats {
        let mut all = OpStats::new();
        for stats in self.ops.values() {
            all.merge(stats);
        }
        all
    }
}

/// Runs one round of closed-loop load against `endpoint`.
pub async fn run(
    endpoint: Arc<Endpoint>,
    tools: Arc<Tools>,
    mix: &Mix,
    amount: Amount,
) -> Result<Measured, String> {
    // The TLS provider (`warden_mcp::http_client::install_tls`), for a load generator used
    // as a library.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(amount.clients.max(1))
        .tcp_nodelay(true)
        .build()
        .map_err(|e| format!("cannot build an HTTP client: {e}"))?;
    // Connect every client first (2025-11-25: the handshake), outside the measurement.
    let mut conns = Vec::with_capacity(amount.clients);
    for _ in 0..amount.clients.max(1) {
        let conn = Conn::open(http.clone(), endpoint.clone())
            .await
            .map_err(|e| format!("{}: cannot connect: {e}", endpoint.url))?;
        conns.push(conn);
    }
    let sequence = Arc::new(mix.sequence());
    let start = Instant::now() + Duration::from_millis(20);
    let measure_from = start + amount.warmup;
    let measure_until = amount
        .requests
        .is_none()
        .then(|| measure_from + amount.duration);
    let budget = Arc::new(AtomicU64::new(amount.requests.unwrap_or(u64::MAX)));
    let mut tasks = Vec::with_capacity(conns.len());
    for (i, conn) in conns.into_iter().enumerate() {
        let sequence = sequence.clone();
        let tools = tools.clone();
        let budget = budget.clone();
        tasks.push(tokio::spawn(client_loop(
            conn,
            sequence,
            i,
            tools,
            start,
            measure_from,
            measure_until,
            budget,
        )));
    }
    let mut measured = Measured::empty();
    let mut last_end = measure_from;
    for task in tasks {
        let (m, ended) = task.await.map_err(|e| format!("a client failed: {e}"))?;
        last_end = last_end.max(ended);
        measured.merge(&m);
    }
    measured.elapsed = last_end.saturating_duration_since(measure_from);
    Ok(measured)
}

#[allow(
    clippy::too_many_arguments,
    reason = "one task's whole configuration, passed once"
)]
async fn client_loop(
    mut conn: Conn,
    sequence: Arc<Vec<Op>>,
    offset: usize,
    tools: Arc<Tools>,
    start: Instant,
    measure_from: Instant,
    measure_until: Option<Instant>,
    budget: Arc<AtomicU64>,
) -> (Measured, Instant) {
    tokio::time::sleep_until(start.into()).await;
    let mut measured = Measured::empty();
    let mut next = offset;
    while let Some(op) = sequence.get(next % sequence.len().max(1)).copied() {
        next += 1;
        let now = Instant::now();
        let counting = now >= measure_from;
        if counting {
            if measure_until.is_some_and(|until| now >= until) {
                break;
            }
            if budget
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| b.checked_sub(1))
                .is_err()
            {
                break;
            }
        }
        let began = Instant::now();
        let outcome = perform(&mut conn, op, &tools).await;
        let took = began.elapsed();
        if counting {
            let stats = measured.ops.entry(op).or_insert_with(OpStats::new);
            match outcome {
                Ok(()) => {
                    stats
                        .latency
                        .saturating_record(u64::try_from(took.as_nanos()).unwrap_or(u64::MAX));
                }
                Err((kind, message)) => {
                    *stats.errors.entry(kind.clone()).or_default() += 1;
                    measured.samples.entry(kind).or_insert(message);
                }
            }
        }
    }
    (measured, Instant::now())
}

/// One request and the check of its answer.
async fn perform(conn: &mut Conn, op: Op, tools: &Tools) -> Result<(), (String, String)> {
    let rpc = |e: CallError| (e.kind(), e.to_string());
    match op {
        Op::List => {
            let result = conn.list_tools().await.map_err(rpc)?;
            match result.get("tools").and_then(Value::as_array) {
                Some(_) => Ok(()),
                None => Err(("protocol".into(), "tools/list without tools".into())),
            }
        }
        Op::Read | Op::Write => {
            let name = if op == Op::Read {
                &tools.read
            } else {
                &tools.write
            };
            let result = conn.call_tool(name, &tools.arguments).await.map_err(rpc)?;
            if result.get("isError").and_then(Value::as_bool) == Some(true) {
                return Err(("tool_error".into(), snippet(&result)));
            }
            match decision_status(&result) {
                None | Some("executed") => Ok(()),
                Some(other) => Err((format!("status_{other}"), snippet(&result))),
            }
        }
        Op::Denied => {
            let result = conn
                .call_tool(&tools.denied, &tools.arguments)
                .await
                .map_err(rpc)?;
            match decision_status(&result) {
                Some("denied") => Ok(()),
                _ => Err(("not_denied".into(), snippet(&result))),
            }
        }
    }
}

/// Warden's decision status in a result's `_meta`, if it has one.
fn decision_status(result: &Value) -> Option<&str> {
    result
        .get("_meta")
        .and_then(|m| m.get("warden/decision"))
        .and_then(|d| d.get("status"))
        .and_then(Value::as_str)
}

fn snippet(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", text.get(..i).unwrap_or_default()),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixes_parse_and_interleave() {
        let mix = Mix::parse("read=2, write=1,list=0").unwrap();
        assert_eq!(mix.sequence(), vec![Op::Read, Op::Write, Op::Read]);
        assert!(Mix::parse("read=0").unwrap_err().contains("no operation"));
        assert!(Mix::parse("reed=1").unwrap_err().contains("`reed`"));
        assert!(Mix::parse("read").unwrap_err().contains("OP=WEIGHT"));
        assert!(Mix::parse("read=x").unwrap_err().contains("whole number"));
        assert_eq!(
            Mix::parse("read=1,denied=1").unwrap().without(Op::Denied),
            Some(Mix::parse("read=1").unwrap())
        );
        assert_eq!(Mix::parse("denied=1").unwrap().without(Op::Denied), None);
    }
}
