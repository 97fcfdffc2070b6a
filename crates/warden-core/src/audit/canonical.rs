//! The canonical JSON form (object keys sorted at every level, strings as serde_json writes
//! them) that the chain and the argument hashes cover, and those hashes.

use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// Serializes JSON with object keys sorted at every level, whatever serde_json's features:
/// the canonical form hashed by the chain and by argument hashes.
pub fn canonical_json(value: &Value) -> String {
    let mut out = Vec::with_capacity(256);
    write_canonical(value, &mut out);
    // Only serde_json's output and ASCII punctuation were written: valid UTF-8.
    String::from_utf8(out).unwrap_or_default()
}

/// A JSON object written in canonical form one field at a time: the bytes of
/// [`canonical_json`] of the same object, without building a `Value` for it (four records are
/// written per governed call; docs/benchmarks.md). Fields are added in sorted key order.
#[derive(Debug)]
pub struct CanonicalObject {
    out: Vec<u8>,
}

impl Default for CanonicalObject {
    fn default() -> Self {
        Self::new()
    }
}

impl CanonicalObject {
    /// An empty object.
    pub fn new() -> Self {
        let mut out = Vec::with_capacity(256);
        out.push(b'{');
        Self { out }
    }

    fn key(&mut self, key: &str) {
        if self.out.len() > 1 {
            self.out.push(b',');
        }
        write_str(key, &mut self.out);
        self.out.push(b':');
    }

    /// A field whose serde form is canonical already: a string, number, bool, `None` (null),
    /// unit enum, or a map that serializes its keys in sorted order (a `BTreeMap` of strings
    /// or names) and whose values are canonical too. Not a struct (its fields are written in
    /// declaration order) nor a `Value` holding objects: use [`CanonicalObject::value`].
    pub fn field<T: Serialize + ?Sized>(mut self, key: &str, value: &T) -> Self {
        self.key(key);
        write_json(value, &mut self.out);
        self
    }

    /// A field holding any JSON value, written canonically.
    pub fn value(mut self, key: &str, value: &Value) -> Self {
        self.key(key);
        write_canonical(value, &mut self.out);
        self
    }

    /// The object's text.
    pub fn finish(mut self) -> String {
        self.out.push(b'}');
        // Only serde_json's output and ASCII punctuation were written: valid UTF-8.
        String::from_utf8(self.out).unwrap_or_default()
    }
}

/// Writes `value` canonically: object keys sorted at every level, no whitespace, strings and
/// numbers exactly as serde_json writes them. Straight into bytes, with no intermediate
/// strings (this runs for every audit record; see docs/benchmarks.md).
fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => write_canonical_object(map, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(v, out);
            }
            out.push(b']');
        }
        Value::String(text) => write_str(text, out),
        other => write_json(other, out),
    }
}

/// serde_json's compact form of a value (a string, number, bool or null when called by the
/// canonical writer; see [`CanonicalObject::field`] for the rest).
pub(super) fn write_json<T: Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) {
    // Writing these into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}

/// `text` as a JSON string, the bytes serde_json writes for it. Most strings here (ids, names,
/// hex digests) need no escape, and checking that in one pass is cheaper than serde_json's
/// escape loop, byte by byte (it was most of the cost of writing the chain header); the others
/// go to serde_json. serde_json escapes exactly the control characters, `"` and `\`.
pub(super) fn write_str(text: &str, out: &mut Vec<u8>) {
    // Without short-circuiting, so that the compiler may check many bytes at a time.
    let plain = text.bytes().fold(true, |plain, b| {
        plain & (b >= 0x20) & (b != b'"') & (b != b'\\')
    });
    if plain {
        out.reserve(text.len() + 2);
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    } else {
        write_json(text, out);
    }
}

fn write_canonical_object(map: &Map<String, Value>, out: &mut Vec<u8>) {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    // A map without `preserve_order` is sorted already; this keeps the form canonical either way.
    entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
    out.push(b'{');
    for (i, (k, v)) in entries.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(k, out);
        out.push(b':');
        write_canonical(v, out);
    }
    out.push(b'}');
}

/// Lowercase hex of `bytes`, written in one pass: `hex::encode` collects one `char` at a time,
/// and four digests are written per governed call (docs/benchmarks.md).
pub fn to_hex(bytes: &[u8]) -> String {
    let mut out = vec![0; bytes.len() * 2];
    match hex::encode_to_slice(bytes, &mut out) {
        Ok(()) => String::from_utf8(out).unwrap_or_else(|_| hex::encode(bytes)),
        Err(_) => hex::encode(bytes),
    }
}

/// SHA-256 of a JSON object's canonical form, without copying it (the same digest as
/// [`hash_value`] of the object).
pub fn hash_object(map: &Map<String, Value>) -> String {
    let mut out = Vec::with_capacity(256);
    write_canonical_object(map, &mut out);
    to_hex(&Sha256::digest(&out))
}

/// SHA-256 of the canonical form of arguments (AUD-3, APR-2).
pub fn hash_arguments(args: Option<&Map<String, Value>>) -> String {
    args.map_or_else(|| hash_object(&Map::new()), hash_object)
}

/// SHA-256 of any JSON value's canonical form.
pub fn hash_value(value: &Value) -> String {
    let mut out = Vec::with_capacity(256);
    write_canonical(value, &mut out);
    to_hex(&Sha256::digest(&out))
}
