//! The input schemas of the built-in tools, derived from their argument types (GOV-1): an
//! optional argument is omitted, never `null`.

use schemars::JsonSchema;
use serde_json::{Map, Value};

/// A schema without `null` for optional fields: an optional argument is omitted, never
/// `null` (schemars admits `null` for an `Option`), and has no default.
fn omit_not_null(mut value: Value) -> Value {
    match &mut value {
        Value::Object(map) => {
            if let Some(Value::Array(types)) = map.get("type") {
                let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
                if let [one] = kept.as_slice() {
                    map.insert("type".into(), one.clone());
                }
            }
            if map.get("default") == Some(&Value::Null) {
                map.remove("default");
            }
            // `anyOf: [{…}, {type: null}]` (schemars' `Option` of a referenced type): the
            // null branch goes, and a single branch left stands for itself.
            for key in ["anyOf", "oneOf"] {
                let Some(Value::Array(branches)) = map.get_mut(key) else {
                    continue;
                };
                branches.retain(|b| b.get("type") != Some(&Value::String("null".into())));
                if let [Value::Object(only)] = branches.as_slice() {
                    let only = only.clone();
                    map.remove(key);
                    for (k, v) in only {
                        map.entry(k).or_insert(v);
                    }
                }
            }
            for v in map.values_mut() {
                *v = omit_not_null(std::mem::take(v));
            }
        }
        Value::Array(items) => {
            for v in items.iter_mut() {
                *v = omit_not_null(std::mem::take(v));
            }
        }
        _ => {}
    }
    value
}

/// The schema of argument type `T`, optional fields omitted-not-null.
pub(super) fn schema<T: JsonSchema>() -> Map<String, Value> {
    match omit_not_null(Value::Object(warden_core::schema::schema_for::<T>())) {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}
