//! The copy of a call's arguments that the audit trail keeps beside their hash (AUD-3).
//!
//! What is kept follows the tool's ToolPolicy (`audit: { arguments: hash | redacted | full }`,
//! default `redacted`, [`ArgumentsAudit`]). Whatever it says, a value the tool's own schema
//! marks secret — `writeOnly: true` or `format: "password"`, at any depth it declares — is
//! never copied ([`sensitive_paths`]). `redacted` also replaces the values under
//! secret-looking keys (a key containing one of [`SECRET_MARKERS`], or with a `_`-, `-`- or
//! camel-case-separated word among [`SECRET_WORDS`]), cuts long strings and arrays, and elides
//! deep nesting.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Keys containing one of these (ASCII case folded, `-` read as `_`) hold secrets.
pub const SECRET_MARKERS: [&str; 14] = [
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "api_key",
    "authorization",
    "bearer",
    "credential",
    "cookie",
    "private",
    "session",
    "prompt",
];

/// Keys with one of these as a word (`pin`, `card_pin`, `ssnNumber`) hold secrets: short
/// markers match whole words only, so that `shipping` or `keyword` keep their values.
pub const SECRET_WORDS: [&str; 7] = ["key", "pin", "ssn", "pwd", "otp", "cvv", "cvc"];

/// What the audit trail keeps of a tool's arguments beside their hash.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ArgumentsAudit {
    /// The hash only.
    Hash,
    /// A redacted copy (the default).
    #[default]
    Redacted,
    /// The arguments as they were, but for the values the tool's schema marks secret.
    Full,
}

/// The placeholder of a value that is not kept.
const REDACTED: &str = "[redacted]";
const MAX_STRING: usize = 256;
const MAX_ITEMS: usize = 50;
const MAX_DEPTH: usize = 8;

/// A redacted copy of arguments for the audit trail (AUD-3): values under secret-looking keys
/// are replaced, long strings and arrays are cut, deep nesting is elided.
pub fn redact(args: Option<&Map<String, Value>>) -> Value {
    keep(args, ArgumentsAudit::Redacted, &[])
}

/// What the audit trail keeps of `args` under `mode`, never the values at `sensitive` paths
/// (from [`sensitive_paths`]; `None`, `Hash`: nothing is kept but the hash, beside it).
pub fn keep(args: Option<&Map<String, Value>>, mode: ArgumentsAudit, sensitive: &[Path]) -> Value {
    if mode == ArgumentsAudit::Hash {
        return Value::Null;
    }
    let Some(args) = args else {
        return Value::Object(Map::new());
    };
    match mode {
        ArgumentsAudit::Hash => Value::Null,
        ArgumentsAudit::Redacted => {
            let mut kept = Value::Object(redact_map(args, 0));
            blank(&mut kept, sensitive);
            kept
        }
        ArgumentsAudit::Full => {
            if sensitive.is_empty() {
                return Value::Object(args.clone());
            }
            let mut kept = Value::Object(args.clone());
            blank(&mut kept, sensitive);
            kept
        }
    }
}

/// A path into arguments: property names, `*` for every item of an array.
pub type Path = Vec<String>;

/// The paths of the values a tool's input schema marks secret: properties (at any depth of
/// `properties` and `items`, up to eight levels) with `writeOnly: true` or
/// `format: "password"`.
pub fn sensitive_paths(schema: &Map<String, Value>) -> Vec<Path> {
    let mut found = Vec::new();
    walk_schema(schema, &mut Vec::new(), &mut found);
    found
}

fn walk_schema(schema: &Map<String, Value>, at: &mut Path, found: &mut Vec<Path>) {
    if at.len() >= MAX_DEPTH {
        return;
    }
    let secret = schema.get("writeOnly") == Some(&Value::Bool(true))
        || schema.get("format").and_then(Value::as_str) == Some("password");
    if secret && !at.is_empty() {
        found.push(at.clone());
        return;
    }
    if let Some(Value::Object(properties)) = schema.get("properties") {
        for (name, sub) in properties {
            if let Value::Object(sub) = sub {
                at.push(name.clone());
                walk_schema(sub, at, found);
                at.pop();
            }
        }
    }
    if let Some(Value::Object(items)) = schema.get("items") {
        at.push("*".into());
        walk_schema(items, at, found);
        at.pop();
    }
}

/// Replaces the values at `paths` with the placeholder.
fn blank(value: &mut Value, paths: &[Path]) {
    for path in paths {
        blank_at(value, path);
    }
}

fn blank_at(value: &mut Value, path: &[String]) {
    let Some((first, rest)) = path.split_first() else {
        *value = Value::String(REDACTED.into());
        return;
    };
    match value {
        Value::Object(map) => {
            if let Some(v) = map.get_mut(first) {
                blank_at(v, rest);
            }
        }
        Value::Array(items) if first == "*" => {
            for item in items {
                blank_at(item, rest);
            }
        }
        _ => {}
    }
}

/// Whether the values under `key` are secrets (see the module's doc).
pub(super) fn is_secret_key(key: &str) -> bool {
    // Lowercase with `-` read as `_`, compared in place: no folded copy of every argument name
    // on the call path. The markers are ASCII, so byte windows cannot match inside a UTF-8
    // sequence.
    let bytes = key.as_bytes();
    let contains = |marker: &str| {
        bytes
            .windows(marker.len())
            .any(|w| folded_eq(w, marker.as_bytes()))
    };
    SECRET_MARKERS.iter().any(|m| contains(m))
        || words(bytes).any(|w| SECRET_WORDS.iter().any(|s| folded_eq(w, s.as_bytes())))
}

/// The words of a key: separated by `_` or `-`, or where a lowercase letter or digit is
/// followed by an uppercase one (`apiKey` → `api`, `Key`).
fn words(key: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut start = 0;
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < key.len() {
            let at = i;
            i += 1;
            let byte = key.get(at).copied().unwrap_or_default();
            if byte == b'_' || byte == b'-' {
                let word = key.get(start..at);
                start = i;
                if let Some(w) = word.filter(|w| !w.is_empty()) {
                    return Some(w);
                }
            } else if byte.is_ascii_uppercase()
                && at > start
                && key
                    .get(at - 1)
                    .is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit())
            {
                let word = key.get(start..at);
                start = at;
                if let Some(w) = word {
                    return Some(w);
                }
            }
        }
        let word = key.get(start..).filter(|w| !w.is_empty());
        start = key.len();
        word
    })
}

/// Whether `bytes`, ASCII-lowercased with `-` as `_`, equal `folded`.
fn folded_eq(bytes: &[u8], folded: &[u8]) -> bool {
    bytes.len() == folded.len()
        && bytes.iter().zip(folded).all(|(b, f)| {
            let b = if *b == b'-' {
                b'_'
            } else {
                b.to_ascii_lowercase()
            };
            b == *f
        })
}

fn redact_map(map: &Map<String, Value>, depth: usize) -> Map<String, Value> {
    map.iter()
        .map(|(k, v)| {
            let v = if is_secret_key(k) {
                Value::String(REDACTED.into())
            } else {
                redact_value(v, depth + 1)
            };
            (k.clone(), v)
        })
        .collect()
}

fn redact_value(value: &Value, depth: usize) -> Value {
    if depth >= MAX_DEPTH {
        return Value::String("[nested too deep]".into());
    }
    match value {
        Value::Object(map) => Value::Object(redact_map(map, depth)),
        Value::Array(items) => {
            let mut out: Vec<Value> = items
                .iter()
                .take(MAX_ITEMS)
                .map(|v| redact_value(v, depth + 1))
                .collect();
            if items.len() > MAX_ITEMS {
                out.push(Value::String(format!(
                    "[{} more items]",
                    items.len() - MAX_ITEMS
                )));
            }
            Value::Array(out)
        }
        Value::String(s) if s.len() > MAX_STRING => {
            let mut cut = MAX_STRING;
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            Value::String(format!(
                "{}…[{} chars]",
                s.get(..cut).unwrap_or_default(),
                s.chars().count()
            ))
        }
        other => other.clone(),
    }
}
