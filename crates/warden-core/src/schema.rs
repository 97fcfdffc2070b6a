//! One schema source (GOV-1): the input schema advertised in `tools/list` is the very object
//! used to validate `tools/call`, compiled once per tool.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// A JSON object (a tool's input or output schema) kept as its compact JSON text (PERF-3).
///
/// A parsed `serde_json::Map` costs a B-tree node of ~630 bytes per object it holds, so a
/// small three-object schema took ~1.9 KB and the 10,000 schemas of a 100 × 100 catalog took
/// 19 MB; as text the same schema takes ~100 bytes. The text is parsed where a map is really
/// needed: to compile a validator on a tool's first call, and to build rmcp's `Tool` for an
/// rmcp-served `tools/list`. Answers built by Warden itself copy the text as it is.
///
/// The text is written by `serde_json` from a map, whose keys are sorted: equal objects have
/// equal texts.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct SchemaText(Arc<str>);

impl SchemaText {
    /// The text of `object`.
    pub fn new(object: &Map<String, Value>) -> Self {
        // Writing a map of JSON values cannot fail (its keys are strings).
        Self(
            serde_json::to_string(object)
                .unwrap_or_else(|_| "{}".into())
                .into(),
        )
    }

    /// The compact JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The object, parsed anew.
    pub fn to_object(&self) -> Map<String, Value> {
        // The text was written from a map, so it parses back into one.
        serde_json::from_str(&self.0).unwrap_or_default()
    }

    /// The text as a raw JSON value, for writing it into JSON without parsing it (the
    /// syntax is checked, nothing is allocated; it cannot fail for text written by
    /// [`SchemaText::new`]).
    pub fn raw(&self) -> serde_json::Result<&serde_json::value::RawValue> {
        serde_json::from_str(&self.0)
    }
}

impl From<&Map<String, Value>> for SchemaText {
    fn from(object: &Map<String, Value>) -> Self {
        Self::new(object)
    }
}

impl fmt::Debug for SchemaText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for SchemaText {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // As the object itself, for any serializer (JSON, YAML).
        self.to_object().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for SchemaText {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Map::deserialize(deserializer).map(|m| Self::new(&m))
    }
}

/// A tool's input schema: what is advertised, and its compiled validator.
#[derive(Clone)]
pub struct InputSchema {
    advertised: SchemaText,
    /// The schema it was compiled from and how (the upstream's own text, shared): a catalog
    /// rebuild reuses this compiled schema for the same source (PERF-3).
    source: SchemaText,
    strict: bool,
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
    pub fn compile(schema: Map<String, Value>, strict: bool) -> Result<Self, String> {
        Self::compile_shared(SchemaText::new(&schema), strict)
    }

    /// [`InputSchema::compile`] for a schema held elsewhere too (an upstream's tool list):
    /// when it needs no tightening, the advertised schema is that very text, not a copy.
    pub fn compile_shared(source: SchemaText, strict: bool) -> Result<Self, String> {
        let mut schema = source.to_object();
        let add_type = !schema.contains_key("type") && !schema.contains_key("$ref");
        let is_object = add_type || schema.get("type").and_then(Value::as_str) == Some("object");
        let tighten =
            strict && is_object && schema.get("additionalProperties") != Some(&Value::Bool(false));
        if add_type {
            schema.insert("type".into(), Value::String("object".into()));
        }
        if tighten {
            schema.insert("additionalProperties".into(), Value::Bool(false));
        }
        let advertised = if add_type || tighten {
            SchemaText::new(&schema)
        } else {
            source.clone()
        };
        // Compiled once here so that a bad schema is refused when the catalog is built, then
        // dropped with the parsed object: the validator that serves calls is built on the
        // first call.
        jsonschema::validator_for(&Value::Object(schema))
            .map_err(|e| format!("the input schema is not a valid JSON Schema: {e}"))?;
        Ok(Self {
            advertised,
            source,
            strict,
            validator: Arc::new(std::sync::OnceLock::new()),
        })
    }

    /// This schema again when it was compiled from the same `source` text the same way (no
    /// copy, no recompilation, and a validator already built stays built); else
    /// [`InputSchema::compile_shared`].
    pub fn recompile(&self, source: &SchemaText, strict: bool) -> Result<Self, String> {
        if self.source == *source && self.strict == strict {
            Ok(self.clone())
        } else {
            Self::compile_shared(source.clone(), strict)
        }
    }

    /// Whether this schema was compiled from `source`.
    pub fn compiled_from(&self, source: &SchemaText) -> bool {
        self.source == *source
    }

    fn validator(&self) -> Option<&jsonschema::Validator> {
        self.validator
            .get_or_init(|| {
                jsonschema::validator_for(&Value::Object(self.advertised.to_object())).ok()
            })
            .as_ref()
    }

    /// The schema exactly as advertised in `tools/list`.
    pub fn advertised(&self) -> &SchemaText {
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

/// The output schema Warden advertises for a tool whose upstream declares `original`: the
/// upstream's schema, or the decision contract of a call that did not execute (`denied`,
/// `pending_approval`).
///
/// Clients check `structuredContent` against a tool's output schema — the Python SDK on every
/// result that is not an error, the TypeScript SDK on every result that has one — so a
/// decision must match the advertised schema to reach the agent at all. The upstream's
/// schema is kept whole as the first branch of an `anyOf`; its root keywords that anchor
/// references (`$schema`, `$id`, `$defs`, `definitions`) stay at the root, so its `$ref`s
/// resolve as before.
pub fn output_schema_admitting_decisions(original: &Map<String, Value>) -> Map<String, Value> {
    let mut tool_output = original.clone();
    let mut root = Map::new();
    for anchor in ["$schema", "$id", "$defs", "definitions"] {
        if let Some(v) = tool_output.remove(anchor) {
            root.insert(anchor.to_owned(), v);
        }
    }
    root.insert("type".into(), "object".into());
    root.insert(
        "anyOf".into(),
        Value::Array(vec![Value::Object(tool_output), decision_schema()]),
    );
    root
}

/// The JSON Schema of a decision contract (GOV-3, `crate::contract::DecisionContract`) that
/// carries no tool output.
fn decision_schema() -> Value {
    serde_json::json!({
        "title": "Warden decision",
        "description": "The call did not execute: it was denied, or it waits for an approval.",
        "type": "object",
        "properties": {
            "status": {"enum": ["denied", "pending_approval"]},
            "code": {"type": "string"},
            "approvalId": {"type": "string"},
            "runId": {"type": "string", "description": "The run; absent when the call recorded nothing (a kill switch, invalid input)."},
            "message": {"type": "string"}
        },
        "required": ["status", "message"]
    })
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
    fn a_schema_that_needs_no_tightening_is_shared_not_copied() {
        let source = SchemaText::new(&obj(json!({
            "type": "object",
            "properties": {"key": {"type": "string"}},
        })));
        let loose = InputSchema::compile_shared(source.clone(), false).unwrap();
        assert!(Arc::ptr_eq(&loose.advertised().0, &source.0));
        // Tightened: a new text, and the source is left as the upstream sent it.
        let strict = InputSchema::compile_shared(source.clone(), true).unwrap();
        assert!(!Arc::ptr_eq(&strict.advertised().0, &source.0));
        assert_eq!(
            strict.advertised().to_object()["additionalProperties"],
            json!(false)
        );
        assert!(!source.to_object().contains_key("additionalProperties"));
        // A rebuild from the same text reuses the compiled schema, validator included, even
        // when the text was received again (another allocation, the same JSON).
        assert!(loose.validate(None).is_ok());
        let again = loose.recompile(&source, false).unwrap();
        assert!(Arc::ptr_eq(&again.validator, &loose.validator));
        let copy = SchemaText::new(&source.to_object());
        assert!(!Arc::ptr_eq(&copy.0, &source.0));
        let same = loose.recompile(&copy, false).unwrap();
        assert!(Arc::ptr_eq(&same.validator, &loose.validator));
        // Another text, or another strictness, compiles anew.
        let changed = SchemaText::new(&obj(json!({"type": "object"})));
        let other = loose.recompile(&changed, false).unwrap();
        assert!(!Arc::ptr_eq(&other.validator, &loose.validator));
        assert!(Arc::ptr_eq(&other.advertised().0, &changed.0));
        let tightened = loose.recompile(&source, true).unwrap();
        assert_eq!(
            tightened.advertised().to_object()["additionalProperties"],
            json!(false)
        );
        // Without a type, an object type is added (to a new text).
        let bare = SchemaText::new(&obj(json!({"properties": {}})));
        let typed = InputSchema::compile_shared(bare.clone(), false).unwrap();
        assert_eq!(typed.advertised().to_object()["type"], json!("object"));
        assert!(!bare.to_object().contains_key("type"));
    }

    #[test]
    fn schema_text_is_compact_sorted_json_and_serializes_as_the_object() {
        let text = SchemaText::new(&obj(json!({
            "type": "object",
            "properties": {"b": {"type": "string"}, "a": {"maxLength": 3}},
        })));
        assert_eq!(
            text.as_str(),
            r#"{"properties":{"a":{"maxLength":3},"b":{"type":"string"}},"type":"object"}"#
        );
        assert_eq!(text.raw().unwrap().get(), text.as_str());
        assert_eq!(
            serde_json::to_string(&text).unwrap(),
            text.as_str(),
            "serialized as the object, not as a string"
        );
        let back: SchemaText = serde_json::from_str(" { \"type\" : \"object\" } ").unwrap();
        assert_eq!(back.as_str(), r#"{"type":"object"}"#);
        assert!(serde_json::from_str::<SchemaText>("[1]").is_err());
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
            s.advertised().to_object().get("additionalProperties"),
            Some(&json!(false))
        );
        let err = s.validate(Some(&obj(json!({"a":"x","b":1})))).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid arguments: `/`: Additional properties are not allowed ('b' was unexpected)"
        );
    }
}
