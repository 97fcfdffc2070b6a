//! Time as plain values: the core never reads a clock, callers pass `now` in.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Milliseconds since the Unix epoch.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Millis(pub i64);

impl Millis {
    /// `self + d`, saturating.
    pub fn plus(self, d: Duration) -> Self {
        Self(
            self.0
                .saturating_add(i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
        )
    }

    /// The start of the fixed window of length `window` that contains `self`.
    pub fn window_start(self, window: Duration) -> Self {
        let w = i64::try_from(window.as_millis()).unwrap_or(i64::MAX).max(1);
        Self(self.0 - self.0.rem_euclid(w))
    }
}

impl fmt::Debug for Millis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}ms", self.0)
    }
}

/// `at` as an RFC 3339 time (UTC, seconds).
pub fn rfc3339(at: Millis) -> String {
    chrono::DateTime::from_timestamp_millis(at.0)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|| format!("{} ms", at.0))
}

/// A duration as it is written in configuration (`2h`, `1h 30m`).
pub fn format_duration(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

/// Parses a duration such as `10m`, `2s`, `1h30m` or `500ms`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s.trim())
        .map_err(|e| format!("`{s}` is not a duration ({e}); write e.g. `30s`, `10m`, `1h`"))
}

/// Serde helpers for durations written as human strings (`10m`).
pub mod human_duration {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    /// Serializes as `humantime` text.
    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_str(&humantime::format_duration(*d).to_string()),
            None => s.serialize_none(),
        }
    }

    /// Deserializes from `humantime` text.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let raw = Option::<String>::deserialize(d)?;
        raw.map(|r| super::parse_duration(&r).map_err(serde::de::Error::custom))
            .transpose()
    }
}
