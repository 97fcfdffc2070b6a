//! One schema source (GOV-1): the input schema advertised in `tools/list` is the very object
//! used to validate `tools/call`, compiled once per tool.

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

/// A tool's input schema: what is advertised, and its compiled validator.
#[derive(Clone)]
pub struct InputSchema {
    advertised: Arc<Map<String, Value>>,
    /// Compiled on the first validation: most tools of a large catalog are never called, and
    /// a compiled validator is the biggest part of a catalog entry (PERF-3). `None` if it
    /// could not be compiled then (it compiled in [`InputSchema::compile`], so never in
    /// practice); validation then refuses everything.
    validator: Arc<std::sync::OnceLock<Option<jsonschema::Validator>>>,
}

impl fmt::Debug for InputSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InputSchema")
            .field("advertised", &self.advertised)
            .finish_non_exhaustive()
    }
}

/// Why arguments were refused: the offending fields and one line per problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidationFailure {
    /// JSON pointers of the offending fields (`/amount`, `/foo`), `` for the whole object.
    pub fields: Vec<String>,
    /// `field: problem` lines.
    pub problems: Vec<String>,
}

impl fmt::Display for ValidationFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid arguments: {}", self.problems.join("; "))
    }
}

const MAX_PROBLEMS: usize = 10;
const MAX_PROBLEM_LEN: usize = 200;

impl InputSchema {
    /// Compiles a schema. With `strict`, an object schema is tightened to reject properties it
    /// does not declare (`additionalProperties: false`), and the tightened schema is the one
    /// advertised: Warden never advertises more than it validates.
    pub fn compile(mut schema: Map<String, Value>, strict: bool) -> Result<Self, String> {
        if !schema.contains_key("type") && !schema.contains_key("$ref") {
            schema.insert("type".into(), Value::String("object".into()));
        }
        if strict && schema.get("type").and_then(Value::as_str) == Some("object") {
            schema.insert("additionalProperties".into(), Value::Bool(false));
        }
        let as_value = Value::Object(schema);
        // Compiled once here so that a bad schema is refused when the catalog is built, then
        // dropped: the validator that serves calls is built on the first call.
        jsonschema::validator_for(&as_value)
            .map_err(|e| format!("the input schema is not a valid JSON Schema: {e}"))?;
        let Value::Object(schema) = as_value else {
            return Err("the input schema must be an object".into());
        };
        Ok(Self {
            advertised: Arc::new(schema),
            validator: Arc::new(std::sync::OnceLock::new()),
        })
    }

    fn validator(&self) -> Option<&jsonschema::Validator> {
        self.validator
            .get_or_init(|| {
                jsonschema::validator_for(&Value::Object(self.advertised.as_ref().clone())).ok()
            })
            .as_ref()
    }

    /// The schema exactly as advertised in `tools/list`.
    pub fn advertised(&self) -> &Arc<Map<String, Value>> {
        &self.advertised
    }

    /// Validates arguments (`None` is treated as `{}`).
    pub fn validate(&self, args: Option<&Map<String, Value>>) -> Result<(), ValidationFailure> {
        let empty = Value::Object(Map::new());
        let owned;
        let instance = match args {
            Some(map) => {
                owned = Value::Object(map.clone());
                &owned
            }
            None => &empty,
        };
        let Some(validator) = self.validator() else {
            return Err(ValidationFailure {
                fields: vec![String::new()],
                problems: vec!["`/`: the tool's input schema cannot be compiled".into()],
            });
        };
        if validator.is_valid(instance) {
            return Ok(());
        }
        let mut fields = Vec::new();
        let mut problems = Vec::new();
        for error in validator.iter_errors(instance).take(MAX_PROBLEMS) {
            let path = error.instance_path().to_string();
            let mut message = error.to_string();
            if message.len() > MAX_PROBLEM_LEN {
                let mut cut = MAX_PROBLEM_LEN;
                while !message.is_char_boundary(cut) {
                    cut -= 1;
                }
                message.truncate(cut);
                message.push('…');
            }
            let shown = if path.is_empty() {
                "/".to_owned()
            } else {
                path.clone()
            };
            problems.push(format!("`{shown}`: {message}"));
            fields.push(path);
        }
        fields.dedup();
        Err(ValidationFailure { fields, problems })
    }
}

/// Builds the schema of a built-in tool from its Rust argument type (serde + schemars):
/// only declared fields, unknown fields rejected, closed sets as enums.
pub fn schema_for<T: schemars::JsonSchema>() -> Map<String, Value> {
    let settings = schemars::generate::SchemaSettings::draft2020_12();
    let schema = settings.into_generator().into_root_schema_for::<T>();
    match serde_json::to_value(schema) {
        Ok(Value::Object(mut map)) => {
            map.remove("$schema");
            map.remove("title");
            map
        }
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    #[test]
    fn invalid_arguments_name_the_offending_field() {
        let s = InputSchema::compile(
            obj(json!({"type":"object","properties":{"amount":{"type":"integer"}},"required":["amount"]})),
            false,
        )
        .unwrap();
        assert!(s.validate(Some(&obj(json!({"amount": 3})))).is_ok());
        let err = s.validate(Some(&obj(json!({"amount": "x"})))).unwrap_err();
        assert_eq!(err.fields, vec!["/amount".to_owned()]);
        assert_eq!(
            err.to_string(),
            "invalid arguments: `/amount`: \"x\" is not of type \"integer\""
        );
        let err = s.validate(None).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid arguments: `/`: \"amount\" is a required property"
        );
    }

    #[test]
    fn strict_schemas_reject_unknown_fields_and_advertise_it() {
        let loose = obj(json!({"type":"object","properties":{"a":{"type":"string"}}}));
        let s = InputSchema::compile(loose.clone(), false).unwrap();
        assert!(s.validate(Some(&obj(json!({"a":"x","b":1})))).is_ok());
        let s = InputSchema::compile(loose, true).unwrap();
        assert_eq!(
            s.advertised().get("additionalProperties"),
            Some(&json!(false))
        );
        let err = s.validate(Some(&obj(json!({"a":"x","b":1})))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid arguments: `/`: Additional properties are not allowed ('b' was unexpected)"
        );
    }
}
