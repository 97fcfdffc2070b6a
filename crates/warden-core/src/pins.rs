//! Pinned tool definitions (GOV-9): the first definition Warden sees of an upstream's tool is
//! pinned; a different one later, or a tool that appears after the upstream's first pinning,
//! is held out of every catalog until someone holding `tools:review` accepts or rejects it.
//!
//! A definition is what an agent reads and what its arguments are checked against: the name,
//! title, description, input and output schemas and annotations, hashed in canonical JSON
//! (icons and `_meta` do not count). This module judges one offered tool against the pins;
//! the gateway applies the judgement to its catalog and writes what changed to the store, so
//! that every replica agrees.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::audit::{canonical_json, hash_value};
use crate::config::Pinning;
use crate::time::Millis;
use crate::tool::UpstreamTool;

/// The rule operators see for a held tool: `pin:changed:<catalog name>`.
pub fn rule(catalog_name: &str) -> String {
    format!("pin:changed:{catalog_name}")
}

/// A tool's definition as pinned: its canonical JSON and the hash of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Definition {
    /// `sha256:` and the hex digest of `json`.
    pub hash: String,
    /// The canonical JSON of the definition.
    pub json: String,
}

impl Definition {
    /// The definition of an upstream's tool, as the upstream names it.
    pub fn of(tool: &UpstreamTool) -> Self {
        let mut object = Map::new();
        object.insert("name".into(), Value::String(tool.name.clone()));
        if let Some(title) = &tool.title {
            object.insert("title".into(), Value::String(title.clone()));
        }
        if let Some(description) = &tool.description {
            object.insert("description".into(), Value::String(description.clone()));
        }
        object.insert(
            "inputSchema".into(),
            Value::Object(tool.input_schema.to_object()),
        );
        if let Some(output) = &tool.output_schema {
            object.insert("outputSchema".into(), Value::Object(output.to_object()));
        }
        if let Some(annotations) = &tool.annotations {
            object.insert("annotations".into(), annotations.as_ref().clone());
        }
        let object = Value::Object(object);
        Self {
            hash: format!("sha256:{}", hash_value(&object)),
            json: canonical_json(&object),
        }
    }
}

/// What the store keeps of one upstream tool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pin {
    /// The upstream's name.
    pub upstream: String,
    /// The tool, as the upstream names it.
    pub tool: String,
    /// The accepted definition; `None` for a tool that appeared after the first pinning and
    /// was never accepted.
    pub pinned: Option<Definition>,
    /// A different definition the upstream offers, awaiting review; `None` when it offers the
    /// pinned one.
    pub offered: Option<Definition>,
    /// When `offered` was first seen.
    pub offered_at: Option<Millis>,
    /// The hash of an offered definition someone rejected: held until the upstream offers
    /// another.
    pub rejected: Option<String>,
    /// Who accepted or rejected last (`user:alice`), and when.
    pub decided_by: Option<String>,
    /// When.
    pub decided_at: Option<Millis>,
}

/// Where a pinned tool stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PinState {
    /// The upstream offers the accepted definition.
    Pinned,
    /// The upstream offers a different definition, awaiting review.
    Changed,
    /// A tool that appeared after the upstream's first pinning, awaiting review.
    New,
    /// The offered definition was rejected: held until the upstream offers another.
    Rejected,
}

impl PinState {
    /// Its name in views and filters.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pinned => "pinned",
            Self::Changed => "changed",
            Self::New => "new",
            Self::Rejected => "rejected",
        }
    }
}

impl Pin {
    /// Where it stands.
    pub fn state(&self) -> PinState {
        match (&self.offered, &self.pinned) {
            (None, _) => PinState::Pinned,
            (Some(o), _) if self.rejected.as_deref() == Some(o.hash.as_str()) => PinState::Rejected,
            (Some(_), Some(_)) => PinState::Changed,
            (Some(_), None) => PinState::New,
        }
    }

    /// This pin after someone accepted the offered definition `hash` (`None` when nothing
    /// with that hash awaits review).
    pub fn accepted(&self, hash: &str, by: &str, at: Millis) -> Option<Self> {
        let offered = self.offered.clone().filter(|o| o.hash == hash)?;
        Some(Self {
            pinned: Some(offered),
            offered: None,
            offered_at: None,
            rejected: None,
            decided_by: Some(by.to_owned()),
            decided_at: Some(at),
            ..self.clone()
        })
    }

    /// This pin after someone rejected the offered definition `hash`.
    pub fn rejected(&self, hash: &str, by: &str, at: Millis) -> Option<Self> {
        self.offered.as_ref().filter(|o| o.hash == hash)?;
        Some(Self {
            rejected: Some(hash.to_owned()),
            decided_by: Some(by.to_owned()),
            decided_at: Some(at),
            ..self.clone()
        })
    }
}

/// The pins of every upstream, as the store held them at one revision.
#[derive(Clone, Debug, Default)]
pub struct Pins {
    /// Upstreams pinned at least once: a tool they offer without a pin is new.
    upstreams: HashSet<String>,
    rows: HashMap<(String, String), Pin>,
}

impl Pins {
    /// Pins from the store's rows.
    pub fn new(upstreams: impl IntoIterator<Item = String>, pins: Vec<Pin>) -> Self {
        Self {
            upstreams: upstreams.into_iter().collect(),
            rows: pins
                .into_iter()
                .map(|p| ((p.upstream.clone(), p.tool.clone()), p))
                .collect(),
        }
    }

    /// Whether `upstream` was pinned at least once.
    pub fn pinned(&self, upstream: &str) -> bool {
        self.upstreams.contains(upstream)
    }

    /// The pin of `upstream`'s tool `tool`.
    pub fn get(&self, upstream: &str, tool: &str) -> Option<&Pin> {
        self.rows.get(&(upstream.to_owned(), tool.to_owned()))
    }

    /// Every pin.
    pub fn iter(&self) -> impl Iterator<Item = &Pin> {
        self.rows.values()
    }
}

/// What to do with one tool an upstream offers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Judgement {
    /// Whether the tool joins the catalog.
    pub serve: bool,
    /// How it differs from its pin (`Changed`, `New`, `Rejected`), when it does.
    pub change: Option<PinState>,
    /// The pin to store, when it is not stored yet as it should be.
    pub write: Option<Pin>,
}

/// Judges the definition `offered` of `upstream`'s tool `tool` against `pins`, under the
/// upstream's `mode`, at `now`.
///
/// - `off`: served, nothing written.
/// - The upstream's first pinning: served, pinned as offered.
/// - The pinned definition: served.
/// - A definition someone rejected: held, whatever the mode.
/// - Anything else is held under `enforce` and served under `warn`, and recorded for review
///   unless another change awaits it already: one review at a time, so that two replicas
///   offered different definitions (a rolling upgrade) do not overwrite each other's; the next
///   is recorded once the first is decided.
pub fn judge(
    mode: Pinning,
    pins: &Pins,
    upstream: &str,
    tool: &str,
    offered: &Definition,
    now: Millis,
) -> Judgement {
    if mode == Pinning::Off {
        return Judgement {
            serve: true,
            change: None,
            write: None,
        };
    }
    let recorded = |pin: Pin| Pin {
        offered: Some(offered.clone()),
        offered_at: Some(now),
        ..pin
    };
    let Some(pin) = pins.get(upstream, tool) else {
        let fresh = Pin {
            upstream: upstream.to_owned(),
            tool: tool.to_owned(),
            pinned: None,
            offered: None,
            offered_at: None,
            rejected: None,
            decided_by: None,
            decided_at: None,
        };
        if !pins.pinned(upstream) {
            return Judgement {
                serve: true,
                change: None,
                write: Some(Pin {
                    pinned: Some(offered.clone()),
                    ..fresh
                }),
            };
        }
        return Judgement {
            serve: mode == Pinning::Warn,
            change: Some(PinState::New),
            write: Some(recorded(fresh)),
        };
    };
    if pin.pinned.as_ref().is_some_and(|p| p.hash == offered.hash) {
        return Judgement {
            serve: true,
            change: None,
            write: None,
        };
    }
    if pin.rejected.as_deref() == Some(offered.hash.as_str()) {
        return Judgement {
            serve: false,
            change: Some(PinState::Rejected),
            write: None,
        };
    }
    // Recorded when nothing awaits review: no offer, the same one, or one rejected already.
    let awaiting = pin
        .offered
        .as_ref()
        .filter(|o| pin.rejected.as_deref() != Some(o.hash.as_str()));
    let write = awaiting.is_none().then(|| recorded(pin.clone()));
    let change = if pin.pinned.is_some() {
        PinState::Changed
    } else {
        PinState::New
    };
    Judgement {
        serve: mode == Pinning::Warn,
        change: Some(change),
        write,
    }
}

#[cfg(test)]
mod tests;
