//! SEP-2243 parameter headers: the arguments a tool mirrors into `Mcp-Param-<Name>` HTTP
//! headers (the properties of its input schema marked `x-mcp-header`), and whether a
//! request's headers agree with its arguments.
//!
//! Intermediaries route on these headers without reading the body, so a server that reads
//! the body must refuse a request whose headers say something else (HTTP 400, -32020). Warden
//! forwards the body to the upstream, which never sees the client's headers: Warden checks
//! them itself, for the tools the run may see (a hidden tool is never checked, RUN-6).

use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value};

use crate::schema::SchemaText;

/// The header prefix, lower-case as HTTP header names are compared.
pub const PREFIX: &str = "mcp-param-";
const BASE64_PREFIX: &str = "=?base64?";
const BASE64_SUFFIX: &str = "?=";

/// One argument a tool mirrors into a header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderArgument {
    /// Property names from the schema's root to the argument.
    pub path: Vec<String>,
    /// The header as the schema names it (`Region` for `Mcp-Param-Region`).
    pub header: String,
}

impl HeaderArgument {
    /// The full header name as a client writes it.
    pub fn header_name(&self) -> String {
        format!("Mcp-Param-{}", self.header)
    }
}

/// The arguments `schema` mirrors into headers: every `x-mcp-header` string on a property
/// reached from the root through `properties` alone. The text is parsed only when it can
/// hold one.
pub fn header_arguments(schema: &SchemaText) -> Arc<[HeaderArgument]> {
    if !schema.as_str().contains("x-mcp-header") {
        return Arc::from([]);
    }
    let mut out = Vec::new();
    collect(
        schema.to_object().get("properties"),
        &mut Vec::new(),
        &mut out,
    );
    Arc::from(out)
}

fn collect(properties: Option<&Value>, path: &mut Vec<String>, out: &mut Vec<HeaderArgument>) {
    let Some(Value::Object(properties)) = properties else {
        return;
    };
    for (name, property) in properties {
        path.push(name.clone());
        if let Some(Value::String(header)) = property.get("x-mcp-header")
            && !header.is_empty()
        {
            out.push(HeaderArgument {
                path: path.clone(),
                header: header.clone(),
            });
        }
        collect(property.get("properties"), path, out);
        path.pop();
    }
}

/// Checks a call's `Mcp-Param-*` headers against its arguments. `header` gives every value
/// of a header by its lower-case name (values as sent, surrounding whitespace already
/// removed by the HTTP parser). Returns what disagrees, to be answered as a header mismatch.
pub fn check<'h>(
    mirrored: &[HeaderArgument],
    arguments: Option<&Map<String, Value>>,
    header: impl Fn(&str) -> Vec<&'h [u8]>,
) -> Result<(), String> {
    for argument in mirrored {
        let full = argument.header_name();
        let values = header(&full.to_ascii_lowercase());
        let sent = match values.as_slice() {
            [] => None,
            [one] => Some(
                std::str::from_utf8(one)
                    .map_err(|_| format!("{full} header contains invalid characters"))?,
            ),
            _ => return Err(format!("duplicate {full} header")),
        };
        let property = argument.path.join(".");
        let body = value_at(arguments, &argument.path)
            .filter(|v| !v.is_null())
            .and_then(primitive);
        match (sent, body) {
            (None, None) => {}
            (Some(_), None) => {
                return Err(format!(
                    "unexpected {full} header for absent or null `{property}`"
                ));
            }
            (None, Some(_)) => return Err(format!("missing {full} header for `{property}`")),
            (Some(raw), Some(expected)) => {
                let decoded =
                    decode(raw).ok_or_else(|| format!("{full} header is not valid Base64"))?;
                if decoded != expected {
                    return Err(format!(
                        "{full} header `{decoded}` does not match body value `{expected}`"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The `Mcp-Param-*` headers a client sends for `arguments` of a tool that mirrors
/// `mirrored`: each present primitive argument, literal when it can travel as a header value,
/// else `=?base64?…?=`.
pub fn headers_for(
    mirrored: &[HeaderArgument],
    arguments: Option<&Map<String, Value>>,
) -> Vec<(String, String)> {
    mirrored
        .iter()
        .filter_map(|argument| {
            let value = value_at(arguments, &argument.path)
                .filter(|v| !v.is_null())
                .and_then(primitive)?;
            Some((argument.header_name(), encode(&value)))
        })
        .collect()
}

/// A value as a header carries it: literal when it is visible ASCII without surrounding
/// whitespace and does not look like the Base64 wrapper, else wrapped.
fn encode(value: &str) -> String {
    let bytes = value.as_bytes();
    let padded =
        matches!(bytes.first(), Some(b' ' | b'\t')) || matches!(bytes.last(), Some(b' ' | b'\t'));
    let unprintable = bytes.iter().any(|b| !(0x20..=0x7e).contains(b));
    let looks_wrapped = value.starts_with(BASE64_PREFIX) && value.ends_with(BASE64_SUFFIX);
    if padded || unprintable || looks_wrapped {
        format!("{BASE64_PREFIX}{}{BASE64_SUFFIX}", STANDARD.encode(value))
    } else {
        value.to_owned()
    }
}

fn value_at<'a>(arguments: Option<&'a Map<String, Value>>, path: &[String]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    rest.iter()
        .try_fold(arguments?.get(first)?, |value, key| value.get(key))
}

/// A primitive argument as a header carries it; anything else is not mirrored.
fn primitive(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// A header value: `=?base64?…?=` decoded (strictly: padding and alphabet), anything else
/// literal.
fn decode(raw: &str) -> Option<String> {
    match raw
        .strip_prefix(BASE64_PREFIX)
        .and_then(|inner| inner.strip_suffix(BASE64_SUFFIX))
    {
        Some(inner) => String::from_utf8(STANDARD.decode(inner).ok()?).ok(),
        None => Some(raw.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn region_tool() -> Arc<[HeaderArgument]> {
        header_arguments(&SchemaText::new(
            json!({"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "plain": {"type": "string"},
                "nested": {"type": "object", "properties": {"id": {"type": "integer", "x-mcp-header": "Id"}}}
            }})
            .as_object()
            .unwrap(),
        ))
    }

    fn run(headers: &[(&'static str, &'static str)], args: Value) -> Result<(), String> {
        check(&region_tool(), args.as_object(), |name| {
            headers
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_bytes())
                .collect()
        })
    }

    #[test]
    fn a_schema_without_the_annotation_mirrors_nothing_and_is_not_parsed() {
        let schema = SchemaText::new(json!({"type": "object"}).as_object().unwrap());
        assert!(header_arguments(&schema).is_empty());
    }

    #[test]
    fn annotated_properties_are_found_nested_ones_included() {
        let found: Vec<_> = region_tool()
            .iter()
            .map(HeaderArgument::header_name)
            .collect();
        assert_eq!(found, ["Mcp-Param-Id", "Mcp-Param-Region"]);
    }

    #[test]
    fn headers_that_agree_with_the_arguments_pass_literal_or_base64() {
        let args = json!({"region": "Hello", "nested": {"id": 7}});
        assert_eq!(
            run(
                &[("Mcp-Param-Region", "Hello"), ("mcp-param-id", "7")],
                args.clone()
            ),
            Ok(())
        );
        assert_eq!(
            run(
                &[
                    ("Mcp-Param-Region", "=?base64?SGVsbG8=?="),
                    ("Mcp-Param-Id", "7")
                ],
                args
            ),
            Ok(())
        );
        // A value without both ends of the wrapper is literal.
        assert_eq!(
            run(
                &[("Mcp-Param-Region", "=?base64?SGVsbG8=")],
                json!({"region": "=?base64?SGVsbG8="})
            ),
            Ok(())
        );
        assert_eq!(run(&[], json!({"plain": "x"})), Ok(()));
    }

    #[test]
    fn headers_are_written_as_the_check_reads_them() {
        let args = json!({"region": " é ", "nested": {"id": 7}});
        let written = headers_for(&region_tool(), args.as_object());
        assert_eq!(
            written,
            [
                ("Mcp-Param-Id".to_owned(), "7".to_owned()),
                (
                    "Mcp-Param-Region".to_owned(),
                    "=?base64?IMOpIA==?=".to_owned()
                )
            ]
        );
        let check = check(&region_tool(), args.as_object(), |name| {
            written
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_bytes())
                .collect()
        });
        assert_eq!(check, Ok(()));
    }

    #[test]
    fn a_header_that_disagrees_is_missing_or_is_bad_base64_is_refused_with_the_reason() {
        assert_eq!(
            run(&[("Mcp-Param-Region", "Other")], json!({"region": "Hello"})),
            Err("Mcp-Param-Region header `Other` does not match body value `Hello`".into())
        );
        assert_eq!(
            run(&[], json!({"region": "Hello"})),
            Err("missing Mcp-Param-Region header for `region`".into())
        );
        assert_eq!(
            run(&[("Mcp-Param-Region", "Hello")], json!({})),
            Err("unexpected Mcp-Param-Region header for absent or null `region`".into())
        );
        assert_eq!(
            run(
                &[("Mcp-Param-Region", "=?base64?SGVsbG8?=")],
                json!({"region": "Hello"})
            ),
            Err("Mcp-Param-Region header is not valid Base64".into())
        );
        assert_eq!(
            run(
                &[("Mcp-Param-Region", "=?base64?SGVs!!!bG8=?=")],
                json!({"region": "Hello"})
            ),
            Err("Mcp-Param-Region header is not valid Base64".into())
        );
        assert_eq!(
            run(
                &[("Mcp-Param-Region", "a"), ("Mcp-Param-Region", "a")],
                json!({"region": "a"})
            ),
            Err("duplicate Mcp-Param-Region header".into())
        );
    }
}
