//! Validated names of configuration objects (projects, users, agents, …).

use std::fmt;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

/// The longest name Warden accepts.
pub const MAX_NAME_LEN: usize = 63;

/// A validated resource name: 1–63 characters of lowercase ASCII letters, digits, `-`, `_`,
/// `.` and `@`, starting and ending with a letter or digit. `@` is there for users named by
/// an address (`alice@example.com`, as an issuer's `email` claim names them, AUTH-4);
/// configuration allows it in the names of users and groups only (`config::check_resource`).
///
/// Names are cheap to clone: they are shared, immutable strings.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct Name(Arc<str>);

/// Why a string is not a valid [`Name`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{value}` is not a valid name: {reason}")]
pub struct InvalidName {
    /// The rejected input.
    pub value: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl Name {
    /// Parses and validates a name.
    pub fn new(value: &str) -> Result<Self, InvalidName> {
        let fail = |reason| {
            Err(InvalidName {
                value: value.to_owned(),
                reason,
            })
        };
        if value.is_empty() {
            return fail("it is empty");
        }
        if value.len() > MAX_NAME_LEN {
            return fail("it is longer than 63 characters");
        }
        let ok_inner = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_.@".contains(c);
        let ok_edge = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
        if !value.chars().all(ok_inner) {
            return fail("use lowercase letters, digits, `-`, `_`, `.` and `@` only");
        }
        let first_last_ok = value.chars().next().is_some_and(ok_edge)
            && value.chars().next_back().is_some_and(ok_edge);
        if !first_last_ok {
            return fail("it must start and end with a letter or a digit");
        }
        if value.contains("__") {
            return fail("`__` is reserved as the separator of catalog names");
        }
        Ok(Self(Arc::from(value)))
    }

    /// A name from a constant known to be valid (built-in roles, tool sets, users).
    ///
    /// INVARIANT: callers pass literals that satisfy [`Name::new`]; debug builds check it.
    pub fn from_static(value: &'static str) -> Self {
        debug_assert!(Self::new(value).is_ok(), "invalid built-in name {value}");
        Self(Arc::from(value))
    }

    /// The name as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", &*self.0)
    }
}

impl AsRef<str> for Name {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for Name {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl std::str::FromStr for Name {
    type Err = InvalidName;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::new(s)
    }
}

impl<'de> Deserialize<'de> for Name {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(deserializer)?;
        Self::new(&raw).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Name {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Name".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "minLength": 1,
            "maxLength": MAX_NAME_LEN,
            "pattern": "^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$",
            "description": "lowercase letters, digits, `-`, `_` and `.`; starts and ends with a letter or digit"
        })
    }
}

/// Matches `text` against a glob `pattern` in which `*` stands for any run of characters
/// (including none). No other character is special.
///
/// Hand-written rather than pulled from a glob crate: tool and capability patterns only need
/// `*`, and this is a dozen lines without allocation on the call path.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let (mut pi, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some(b'*') => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(&c) if Some(&c) == t.get(ti) => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p.get(pi..)
        .is_some_and(|rest| rest.iter().all(|&c| c == b'*'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_documented_alphabet() {
        assert!(Name::new("payments").is_ok());
        assert!(Name::new("sre-bot.v2").is_ok());
        assert!(Name::new("alice@example.com").is_ok());
        assert!(Name::new("@alice").is_err());
        assert_eq!(
            Name::new("Payments").unwrap_err().to_string(),
            "`Payments` is not a valid name: use lowercase letters, digits, `-`, `_`, `.` and `@` only"
        );
        assert_eq!(
            Name::new("-x").unwrap_err().to_string(),
            "`-x` is not a valid name: it must start and end with a letter or a digit"
        );
        assert_eq!(
            Name::new("a__b").unwrap_err().to_string(),
            "`a__b` is not a valid name: `__` is reserved as the separator of catalog names"
        );
        assert!(Name::new("").is_err());
        assert!(Name::new(&"a".repeat(64)).is_err());
    }

    #[test]
    fn globs_match_stars_only() {
        assert!(glob_match("*", ""));
        assert!(glob_match("ledger__*", "ledger__refund"));
        assert!(!glob_match("ledger__*", "billing__refund"));
        assert!(glob_match("*__refund", "ledger__refund"));
        assert!(glob_match("a*b*c", "axxbyyc"));
        assert!(!glob_match("a*b*c", "axxbyy"));
        assert!(glob_match("exact", "exact"));
        assert!(!glob_match("exact", "exactly"));
        assert!(glob_match("run:projects:*", "run:projects:payments"));
    }
}
