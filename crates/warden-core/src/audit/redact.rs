//! The redacted copy of a call's arguments that the audit trail keeps beside their hash
//! (AUD-3): values under secret-looking keys replaced, long values cut, deep nesting elided.

use serde_json::{Map, Value};

pub(super) const SECRET_MARKERS: [&str; 10] = [
    "password",
    "passwd",
    "secret",
    "token",
    "apikey",
    "api_key",
    "authorization",
    "credential",
    "cookie",
    "private",
];
const MAX_STRING: usize = 256;
const MAX_ITEMS: usize = 50;
const MAX_DEPTH: usize = 8;

/// A redacted copy of arguments for the audit trail (AUD-3): values under secret-looking keys
/// are replaced, long strings and arrays are cut, deep nesting is elided.
pub fn redact(args: Option<&Map<String, Value>>) -> Value {
    match args {
        Some(m) => Value::Object(redact_map(m, 0)),
        None => Value::Object(Map::new()),
    }
}

pub(super) fn is_secret_key(key: &str) -> bool {
    // Lowercase with `-` read as `_`, compared in place: no folded copy of every argument name
    // on the call path. The markers are ASCII, so byte windows cannot match inside a UTF-8
    // sequence.
    let key = key.as_bytes();
    let contains = |marker: &str| {
        key.windows(marker.len())
            .any(|w| folded_eq(w, marker.as_bytes()))
    };
    SECRET_MARKERS.iter().any(|m| contains(m))
        || folded_eq(key, b"key")
        || key
            .len()
            .checked_sub(4)
            .and_then(|at| key.get(at..))
            .is_some_and(|tail| folded_eq(tail, b"_key"))
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
                Value::String("[redacted]".into())
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
