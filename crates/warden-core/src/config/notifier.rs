//! `kind: Notifier`: where Warden tells humans that something waits for them or changed
//! (NOTIFY-1). What is sent and how it is signed is [`crate::notify`]'s.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::name::Name;
use crate::notify::{Event, Format};

/// `kind: Notifier`
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NotifierSpec {
    /// The notifier's name.
    pub name: Name,
    /// Where deliveries are POSTed: an http(s) URL, or a `${secret:NAME}` / `${env:NAME}`
    /// reference to one (a Slack incoming webhook's URL is itself a secret).
    pub url: String,
    /// The key deliveries are signed with (`Warden-Signature`): a `${secret:NAME}` or
    /// `${env:NAME}` reference, never the key itself.
    pub secret: String,
    /// The events delivered.
    pub events: Vec<Event>,
    /// The body's shape: `json` (default) or `slack` (an incoming webhook's `text`).
    #[serde(default)]
    pub format: Format,
}

impl NotifierSpec {
    /// Whether it is told of `event`.
    pub fn wants(&self, event: Event) -> bool {
        self.events.contains(&event)
    }

    /// What is wrong with it, by field (empty when nothing is).
    pub(super) fn problems(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if super::reference::is_sole_reference(&self.url) {
            if let Err(e) = super::reference::check_reference(&self.url) {
                out.push(("url", e));
            }
        } else if !(self.url.starts_with("http://") || self.url.starts_with("https://")) {
            out.push((
                "url",
                format!(
                    "`{}` is not an http:// or https:// URL, nor a `${{secret:NAME}}` reference to one",
                    crate::url_credentials::redact(&self.url)
                ),
            ));
        } else if crate::url_credentials::has_credentials(&self.url) {
            out.push((
                "url",
                format!(
                    "`{}` carries credentials; write the whole URL as a `${{secret:NAME}}` reference",
                    crate::url_credentials::redact(&self.url)
                ),
            ));
        }
        if !super::reference::is_sole_reference(&self.secret) {
            out.push((
                "secret",
                "write a reference, `${secret:NAME}` or `${env:NAME}`, not the key itself".into(),
            ));
        } else if let Err(e) = super::reference::check_reference(&self.secret) {
            out.push(("secret", e));
        }
        if self.events.is_empty() {
            out.push((
                "events",
                format!("name at least one event: {}", Event::list()),
            ));
        }
        out
    }
}
