//! Pinned tool definitions in the catalog (GOV-9): each upstream tool is judged against the
//! store's pins ([`warden_core::pins::judge`]) while the catalog is built. A held tool is left
//! out of the catalog and remembered by name, so that a call to it is refused exactly like an
//! unknown tool, with the rule `pin:changed:<tool>` for operators. What the store does not
//! know yet — a first pinning, a change — is written by the watcher ([`write`]), after which
//! every replica reloads the pins at its next poll.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use serde_json::json;
use tokio::sync::mpsc;
use warden_core::config::{Pinning, UpstreamSpec};
use warden_core::name::Name;
use warden_core::pins::{self, Definition, PinState, Pins};
use warden_core::time::Millis;
use warden_core::tool::UpstreamTool;
use warden_store::{PinWrite, Store, StoreError};

/// Who the audit trail names for what Warden pins by itself.
const ACTOR: &str = "warden:pinning";

/// A write of pins waiting for the watcher: made on the revision it was judged against, or not
/// at all (another replica made it first; the next build judges again).
#[derive(Debug)]
pub(super) struct PendingPins {
    write: PinWrite,
    /// The tools this write holds out of the catalog (its record says so: NOTIFY-1's
    /// `tool.quarantined`).
    held: Vec<serde_json::Value>,
    revision: u64,
    /// Whether it failed before (said once in the log).
    failed: bool,
}

/// The definitions of the tools offered, kept from one build to the next: an offer's
/// schemas are shared (`Arc`) until the upstream lists its tools again, so a build that finds
/// the same ones (a revision moved, another upstream changed) hashes nothing again.
#[derive(Debug, Default)]
pub(super) struct Definitions(Mutex<HashMap<(String, String), (Shape, Definition)>>);

/// What tells one offered tool from another without hashing it: where its shared schemas and
/// annotations are, and its title and description.
#[derive(Debug, PartialEq, Eq)]
struct Shape {
    input: usize,
    output: Option<usize>,
    annotations: Option<usize>,
    title: Option<String>,
    description: Option<String>,
}

impl Shape {
    fn of(raw: &UpstreamTool) -> Self {
        Self {
            input: raw.input_schema.as_str().as_ptr() as usize,
            output: raw
                .output_schema
                .as_ref()
                .map(|o| o.as_str().as_ptr() as usize),
            annotations: raw.annotations.as_ref().map(|a| Arc::as_ptr(a) as usize),
            title: raw.title.clone(),
            description: raw.description.clone(),
        }
    }
}

/// One build's pass over the upstream tools.
pub(super) struct Pass<'a> {
    pins: &'a Pins,
    definitions: &'a Definitions,
    now: Millis,
    /// The tools judged, by upstream and name: a name an upstream lists twice is judged once.
    seen: HashSet<(String, String)>,
    held: HashMap<String, Name>,
    write: PinWrite,
    /// The tools the write holds out, for its record.
    newly_held: Vec<serde_json::Value>,
    problems: Vec<String>,
}

impl<'a> Pass<'a> {
    pub(super) fn new(pins: &'a Pins, definitions: &'a Definitions, now: Millis) -> Self {
        Self {
            pins,
            definitions,
            now,
            seen: HashSet::new(),
            held: HashMap::new(),
            write: PinWrite::default(),
            newly_held: Vec::new(),
            problems: Vec::new(),
        }
    }

    /// The definition of `upstream`'s `raw`, hashed when it was not at the last build.
    fn definition(&self, upstream: &str, raw: &UpstreamTool) -> Definition {
        let shape = Shape::of(raw);
        let key = (upstream.to_owned(), raw.name.clone());
        let Ok(mut known) = self.definitions.0.lock() else {
            return Definition::of(raw);
        };
        match known.get(&key) {
            Some((s, d)) if *s == shape => d.clone(),
            _ => {
                let d = Definition::of(raw);
                known.insert(key, (shape, d.clone()));
                d
            }
        }
    }

    /// Whether `spec`'s tool `raw`, named `name` in the catalog, joins it. `up`: whether the
    /// upstream is connected now (only a connected upstream's offer is pinned first).
    pub(super) fn admits(
        &mut self,
        spec: &UpstreamSpec,
        up: bool,
        name: &str,
        raw: &UpstreamTool,
    ) -> bool {
        if spec.pinning == Pinning::Off {
            return true;
        }
        let upstream = spec.name.as_str();
        if !self.seen.insert((upstream.to_owned(), raw.name.clone())) {
            // Listed twice: the first is the one judged (the catalog keeps the first too).
            return false;
        }
        let first = !self.pins.pinned(upstream);
        if first && !up {
            return true;
        }
        let offered = self.definition(upstream, raw);
        let judged = pins::judge(
            spec.pinning,
            self.pins,
            upstream,
            &raw.name,
            &offered,
            self.now,
        );
        if first && !self.write.first.iter().any(|u| u == upstream) {
            self.write.first.push(upstream.to_owned());
        }
        if let Some(pin) = judged.write {
            if !judged.serve {
                self.newly_held.push(json!({
                    "upstream": upstream,
                    "tool": raw.name,
                    "catalog": name,
                    "project": spec.project,
                    "state": pin.state().as_str(),
                }));
            }
            self.write.pins.push(pin);
        }
        if let Some(change) = judged.change {
            self.problems
                .push(problem(spec, name, change, judged.serve));
        }
        if !judged.serve {
            self.held.insert(name.to_owned(), spec.project.clone());
        }
        judged.serve
    }

    /// The tools held out, by catalog name; what to tell the logs; and the write to make, sent
    /// to the watcher on `to`.
    pub(super) fn finish(
        self,
        revision: u64,
        to: &mpsc::UnboundedSender<PendingPins>,
    ) -> (HashMap<String, Name>, Vec<String>) {
        // What is no longer offered is forgotten.
        if let Ok(mut known) = self.definitions.0.lock() {
            known.retain(|key, _| self.seen.contains(key));
        }
        if !self.write.first.is_empty() || !self.write.pins.is_empty() {
            let _ = to.send(PendingPins {
                write: self.write,
                held: self.newly_held,
                revision,
                failed: false,
            });
        }
        metrics::gauge!("warden_tools_held").set(self.held.len() as f64);
        (self.held, self.problems)
    }
}

fn problem(spec: &UpstreamSpec, name: &str, change: PinState, served: bool) -> String {
    let what = match change {
        PinState::New => "appeared after the upstream's tools were pinned",
        PinState::Rejected => "offers a definition that was rejected",
        PinState::Changed | PinState::Pinned => "changed its definition",
    };
    let then = if served {
        "served (pinning: warn)".to_owned()
    } else {
        format!(
            "held out of every catalog until reviewed (rule {})",
            pins::rule(name)
        )
    };
    format!(
        "upstream `{}`: tool `{name}` {what}: {then}; see `warden tools changes`",
        spec.name
    )
}

/// What became of a write of pins.
pub(super) enum Written {
    /// Written, or another replica wrote first: reload the snapshot.
    Reload,
    /// Failed (the store is away): try again at the next poll.
    Retry(PendingPins),
}

/// Writes `pending` (the latest of those waiting) to `store` at `now`.
pub(super) async fn write(store: &Store, now: Millis, pending: PendingPins) -> Written {
    let PendingPins {
        write,
        held,
        revision,
        failed,
    } = pending;
    let action = if write.pins.iter().any(|p| p.offered.is_some()) {
        "tools.change"
    } else {
        "tools.pin"
    };
    // Each change by name; a first pinning by its count (an upstream may offer a thousand).
    let details = json!({
        "first": write.first,
        "pinned": write.pins.iter().filter(|p| p.offered.is_none()).count(),
        "changes": write.pins.iter().filter(|p| p.offered.is_some()).map(|p| json!({
            "upstream": p.upstream,
            "tool": p.tool,
            "state": p.state().as_str(),
            "pinned": p.pinned.as_ref().map(|d| &d.hash),
            "offered": p.offered.as_ref().map(|d| &d.hash),
        })).collect::<Vec<_>>(),
        "held": held,
    });
    match store
        .write_pins(write.clone(), ACTOR, action, details, now, Some(revision))
        .await
    {
        Ok(_) | Err(StoreError::Conflict(_)) => Written::Reload,
        Err(e) => {
            if failed {
                tracing::debug!(error = %e, "the pins could not be written again");
            } else {
                tracing::warn!(error = %e, "the pins could not be written; trying again at each poll");
            }
            Written::Retry(PendingPins {
                write,
                held,
                revision,
                failed: true,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use serde_json::json;
    use warden_core::config::{Resource, parse_documents};
    use warden_core::pins::Pin;
    use warden_core::schema::SchemaText;

    use super::*;

    fn spec() -> UpstreamSpec {
        let docs =
            parse_documents("t.yaml", "kind: Upstream\nname: notes\nproject: demo\nhttp: { url: \"http://127.0.0.1:1/mcp\" }\n")
                .unwrap();
        match &docs[0].resource {
            Resource::Upstream(u) => u.clone(),
            _ => unreachable!(),
        }
    }

    fn tool(description: &str) -> UpstreamTool {
        UpstreamTool {
            name: "echo".into(),
            title: None,
            description: Some(description.into()),
            input_schema: SchemaText::new(json!({"type": "object"}).as_object().unwrap()),
            output_schema: None,
            annotations: None,
            icons: None,
            meta: None,
        }
    }

    /// A name an upstream lists twice is judged once, as the first listed: two definitions
    /// under one name cannot make each build record the other (a hostile upstream churning
    /// the store).
    #[test]
    fn a_tool_listed_twice_is_judged_once_as_the_first() {
        let pinned = Definition::of(&tool("a"));
        let pins = Pins::new(
            ["notes".to_owned()],
            vec![Pin {
                upstream: "notes".into(),
                tool: "echo".into(),
                pinned: Some(pinned),
                offered: None,
                offered_at: None,
                rejected: None,
                decided_by: None,
                decided_at: None,
            }],
        );
        let definitions = Definitions::default();
        let (to, mut written) = mpsc::unbounded_channel();
        let spec = spec();
        for _ in 0..2 {
            let mut pass = Pass::new(&pins, &definitions, Millis(1));
            assert!(pass.admits(&spec, true, "notes__echo", &tool("a")));
            assert!(!pass.admits(&spec, true, "notes__echo", &tool("b")));
            let (held, problems) = pass.finish(1, &to);
            assert!(held.is_empty() && problems.is_empty(), "{problems:?}");
        }
        assert!(written.try_recv().is_err(), "nothing to write");
    }
}
