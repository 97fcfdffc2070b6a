//! The protocol's two eras (docs/mcp.md): worked out once per request from the version the
//! client speaks, and once per upstream from the version it was reached in, then matched on.
//!
//! - 2025-11-25 (and before): a session opened by `initialize`; the server may send the
//!   client requests (elicitation, sampling, roots) while a call runs; `resources/subscribe`.
//! - 2026-07-28 (and after): stateless; every request carries its version and capabilities;
//!   a call that needs the client's input answers `input_required`, and the client retries.

use rmcp::model::ProtocolVersion;

/// A protocol era.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Era {
    /// 2025-11-25 and before: sessions, server-to-client requests.
    V2025_11_25,
    /// 2026-07-28 and after: stateless, `input_required`.
    V2026_07_28,
}

impl Era {
    /// The era of `version`.
    pub fn of(version: &ProtocolVersion) -> Self {
        Self::of_str(version.as_str())
    }

    /// The era of the version `version` names (`2026-07-28`); versions are dates, so they
    /// compare as strings.
    pub fn of_str(version: &str) -> Self {
        if version >= ProtocolVersion::V_2026_07_28.as_str() {
            Self::V2026_07_28
        } else {
            Self::V2025_11_25
        }
    }

    /// Whether this era is stateless: no session, no server-to-client requests.
    pub fn is_stateless(self) -> bool {
        match self {
            Self::V2025_11_25 => false,
            Self::V2026_07_28 => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_fall_in_their_era() {
        assert_eq!(Era::of_str("2024-11-05"), Era::V2025_11_25);
        assert_eq!(Era::of_str("2025-11-25"), Era::V2025_11_25);
        assert_eq!(Era::of_str("2026-07-28"), Era::V2026_07_28);
        assert_eq!(Era::of_str("2027-01-01"), Era::V2026_07_28);
        assert_eq!(Era::of(&ProtocolVersion::V_2026_07_28), Era::V2026_07_28);
        assert!(!Era::V2025_11_25.is_stateless());
    }
}
