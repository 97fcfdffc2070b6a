#![allow(clippy::unwrap_used, clippy::panic, reason = "test code")]

use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::schema::SchemaText;

fn tool(description: &str) -> UpstreamTool {
    let schema = json!({"type": "object", "properties": {"text": {"type": "string"}}});
    UpstreamTool {
        name: "echo".into(),
        title: None,
        description: Some(description.into()),
        input_schema: SchemaText::new(schema.as_object().unwrap()),
        output_schema: None,
        annotations: Some(Arc::new(json!({"readOnlyHint": true}))),
        icons: None,
        meta: None,
    }
}

fn def(description: &str) -> Definition {
    Definition::of(&tool(description))
}

fn pin(pinned: Option<&str>, offered: Option<&str>, rejected: Option<&str>) -> Pin {
    Pin {
        upstream: "notes".into(),
        tool: "echo".into(),
        pinned: pinned.map(def),
        offered: offered.map(def),
        offered_at: offered.map(|_| Millis(1)),
        rejected: rejected.map(|r| def(r).hash),
        decided_by: None,
        decided_at: None,
    }
}

fn pins(rows: Vec<Pin>) -> Pins {
    Pins::new(["notes".to_owned()], rows)
}

#[test]
fn a_definition_is_its_canonical_json_without_icons_or_meta() {
    let mut t = tool("Echo a text");
    let plain = Definition::of(&t);
    t.icons = Some(Arc::new(json!([{"src": "x"}])));
    t.meta = Some(Arc::new(json!({"ui": {}})));
    assert_eq!(Definition::of(&t), plain);
    assert!(plain.hash.starts_with("sha256:"));
    assert!(
        plain
            .json
            .starts_with(r#"{"annotations":{"readOnlyHint":true},"description""#)
    );
    t.description = Some("Echo a text, and send it to evil.example".into());
    assert_ne!(Definition::of(&t).hash, plain.hash);
}

/// GOV-9, one row per case: (mode, pins, offered) → (served, change, what is written).
#[test]
fn each_offered_definition_is_judged_against_its_pin() {
    use PinState::{Changed, New, Rejected};
    use Pinning::{Enforce, Off, Warn};
    let first = Pins::default();
    let same = pins(vec![pin(Some("a"), None, None)]);
    let pending = pins(vec![pin(Some("a"), Some("b"), None)]);
    let refused = pins(vec![pin(Some("a"), Some("b"), Some("b"))]);
    let unaccepted = pins(vec![pin(None, Some("b"), None)]);
    let other_tool = pins(vec![]);
    #[allow(clippy::type_complexity, reason = "a table")]
    #[rustfmt::skip]
    let table: Vec<(&str, Pinning, &Pins, &str, bool, Option<PinState>, Option<Pin>)> = vec![
        ("first pinning", Enforce, &first, "a", true, None, Some(pin(Some("a"), None, None))),
        ("the pinned definition", Enforce, &same, "a", true, None, None),
        ("changed", Enforce, &same, "b", false, Some(Changed), Some(pin(Some("a"), Some("b"), None))),
        ("changed, already recorded", Enforce, &pending, "b", false, Some(Changed), None),
        // One review at a time: another replica's different offer does not overwrite it.
        ("changed again while one awaits review", Enforce, &pending, "c", false, Some(Changed), None),
        // Nor does a replica still offered the pinned one clear it.
        ("back to the pin", Enforce, &pending, "a", true, None, None),
        ("rejected", Enforce, &refused, "b", false, Some(Rejected), None),
        ("rejected, then another", Enforce, &refused, "c", false, Some(Changed), Some(pin(Some("a"), Some("c"), Some("b")))),
        ("new after the first pinning", Enforce, &other_tool, "a", false, Some(New), Some(pin(None, Some("a"), None))),
        ("new, recorded", Enforce, &unaccepted, "b", false, Some(New), None),
        ("new, another while one awaits review", Enforce, &unaccepted, "c", false, Some(New), None),
        ("warn serves a change", Warn, &same, "b", true, Some(Changed), Some(pin(Some("a"), Some("b"), None))),
        ("warn serves a new tool", Warn, &other_tool, "a", true, Some(New), Some(pin(None, Some("a"), None))),
        ("warn holds what was rejected", Warn, &refused, "b", false, Some(Rejected), None),
        ("off pins nothing", Off, &first, "a", true, None, None),
        ("off serves a change", Off, &same, "b", true, None, None),
        ("off serves what was rejected", Off, &refused, "b", true, None, None),
    ];
    for (case, mode, pins, offered, serve, change, write) in table {
        let got = judge(mode, pins, "notes", "echo", &def(offered), Millis(1));
        assert_eq!(got.serve, serve, "{case}: served");
        assert_eq!(got.change, change, "{case}: change");
        assert_eq!(got.write, write, "{case}: written");
    }
}

#[test]
fn accepting_and_rejecting_bind_to_the_definition_reviewed() {
    let p = pin(Some("a"), Some("b"), None);
    let b = def("b").hash;
    assert!(
        p.accepted(&def("c").hash, "user:alice", Millis(2))
            .is_none()
    );
    let accepted = p.accepted(&b, "user:alice", Millis(2)).unwrap();
    assert_eq!(accepted.pinned, Some(def("b")));
    assert_eq!(accepted.state(), PinState::Pinned);
    assert_eq!(accepted.decided_by.as_deref(), Some("user:alice"));
    let rejected = p.rejected(&b, "user:bob", Millis(3)).unwrap();
    assert_eq!(rejected.state(), PinState::Rejected);
    assert_eq!(rejected.pinned, Some(def("a")));
    assert!(
        pin(Some("a"), None, None)
            .rejected(&b, "user:bob", Millis(3))
            .is_none()
    );
}
