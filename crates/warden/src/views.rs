//! The admin API's answers as JSON values: what the verbs' store paths build from the store's
//! rows (in the shapes of `warden-server`'s `admin/` views) and their API paths receive, and
//! what their printers read. One value, one printer: the two paths print the same.

use serde_json::Value;

/// A field of a JSON object, or null.
pub(crate) fn field<'a>(v: &'a Value, key: &str) -> &'a Value {
    v.get(key).unwrap_or(&Value::Null)
}

/// A field as a table cell: its text, a number, or `-`.
pub(crate) fn cell(v: &Value, key: &str) -> String {
    match field(v, key) {
        Value::String(s) => s.clone(),
        Value::Null => "-".to_owned(),
        other => other.to_string(),
    }
}

/// A time field (ms since the epoch) as RFC 3339, or `-`.
pub(crate) fn time_cell(v: &Value, key: &str) -> String {
    field(v, key).as_i64().map_or_else(
        || "-".to_owned(),
        |t| crate::output::time(warden_core::time::Millis(t)),
    )
}

/// `value` as JSON (the store's rows serialize as the API's views, but for what [`unstring`]
/// fixes).
pub(crate) fn to_value<T: serde::Serialize>(value: &T) -> anyhow::Result<Value> {
    serde_json::to_value(value).map_err(|e| anyhow::anyhow!("cannot show this: {e}"))
}

/// The fields `keys` of the object `v` as the JSON they hold, not as strings of JSON (the
/// store keeps references such as `requestedBy` as text; the API answers them as JSON).
pub(crate) fn unstring(v: &mut Value, keys: &[&str]) {
    if let Some(fields) = v.as_object_mut() {
        for key in keys {
            if let Some(Value::String(text)) = fields.get(*key)
                && let Ok(parsed) = serde_json::from_str::<Value>(text)
            {
                fields.insert((*key).to_owned(), parsed);
            }
        }
    }
}

/// The items of a JSON array (none for anything else).
pub(crate) fn items(v: Value) -> Vec<Value> {
    match v {
        Value::Array(items) => items,
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn strings_of_json_become_json_and_other_strings_stay() {
        let mut v = json!({"a": "{\"kind\":\"principal\"}", "b": "plain", "c": 1});
        unstring(&mut v, &["a", "b", "c"]);
        assert_eq!(v, json!({"a": {"kind": "principal"}, "b": "plain", "c": 1}));
        assert_eq!(cell(&v, "c"), "1");
        assert_eq!(cell(&v, "missing"), "-");
    }
}
