//! How an upstream call fails: the failures of one round trip, whichever the exit, and how
//! failures read in messages (one short line, durations as people write them).

use std::time::Duration;

/// The first line of `s`, at most 200 characters.
pub(super) fn short(s: &str) -> String {
    let line = s.lines().next().unwrap_or_default();
    line.chars().take(200).collect()
}

/// `30s` or `1500ms`.
pub(super) fn humanize(d: Duration) -> String {
    if d.as_secs() > 0 && d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

/// Why one round trip produced no result.
#[derive(Debug)]
pub(super) enum CallError {
    /// The upstream answered with a JSON-RPC error: it executed the request and refused it.
    Refused(rmcp::ErrorData),
    /// The upstream could not be reached, or answered something that is not an answer.
    Unreachable(String),
    /// No answer within the call's timeout (the upstream was told to stop).
    TimedOut,
    /// The client cancelled the call (the upstream was told).
    Cancelled,
}
