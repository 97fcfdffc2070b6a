//! The work domain's resources: `kind: ReviewPolicy` (WORK-2), the review gate's numbers for a
//! project, `kind: GitProvider` (WORK-3), a forge its repositories live in, and
//! `kind: Reconciler` (WORK-4), the periodic job that moves stale work along.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

use crate::name::Name;
pub use crate::principal::RECONCILER_INTENT;
use crate::work::{Risk, reviews_needed};

/// The most approving reviews a ReviewPolicy may ask for at one risk.
pub const MOST_APPROVALS: u8 = 10;

/// `kind: ReviewPolicy`: how many approving reviews an epic task needs before it is accepted,
/// by its epic's risk, in one project (WORK-2). Its key is the project; without one a project
/// uses 1, 1, 2 and 2.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReviewPolicySpec {
    /// The project it holds for.
    pub project: Name,
    /// Approving reviews needed at each risk; a risk left out keeps its default.
    #[serde(default)]
    pub approvals: Approvals,
}

/// Approving reviews needed, by risk (each 1 to 10). At `critical`, one of them is by a holder
/// of `work:accept-critical` whatever the number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Approvals {
    /// At `low` (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low: Option<u8>,
    /// At `medium` (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub medium: Option<u8>,
    /// At `high` (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub high: Option<u8>,
    /// At `critical` (default 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critical: Option<u8>,
}

impl Approvals {
    /// The approving reviews needed at `risk`.
    pub fn needed(&self, risk: Risk) -> usize {
        let set = match risk {
            Risk::Low => self.low,
            Risk::Medium => self.medium,
            Risk::High => self.high,
            Risk::Critical => self.critical,
        };
        set.map_or_else(|| reviews_needed(risk), usize::from)
    }

    /// What is wrong with it, by field (empty when nothing is).
    pub(super) fn problems(&self) -> Vec<(String, String)> {
        [
            ("low", self.low),
            ("medium", self.medium),
            ("high", self.high),
            ("critical", self.critical),
        ]
        .into_iter()
        .filter_map(|(risk, n)| {
            n.filter(|n| !(1..=MOST_APPROVALS).contains(n)).map(|_| {
                (
                    format!("approvals.{risk}"),
                    format!("must be between 1 and {MOST_APPROVALS}"),
                )
            })
        })
        .collect()
    }
}

/// What a GitProvider speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GitProviderType {
    /// Any remote git understands: a directory of bare repositories, `file://`, `ssh://`,
    /// `https://`.
    Git,
}

/// `kind: GitProvider`: a forge a project's repositories live in (WORK-3) — discovered and
/// imported into workspaces, merged into on acceptance, and reporting CI back through
/// `POST /hooks/git/{name}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GitProviderSpec {
    /// The provider's name (the webhook's address names it).
    pub name: Name,
    /// The project it serves.
    pub project: Name,
    /// `git`.
    #[serde(rename = "type")]
    pub provider_type: GitProviderType,
    /// A directory of bare repositories (a local path or `file://`), or the base of remote
    /// ones (`https://git.example/org`, `ssh://…`).
    pub url: String,
    /// The repositories of a remote provider, full URLs or paths under `url`; discovery
    /// checks each with `git ls-remote`. A directory's are found by looking.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repositories: Vec<String>,
    /// A token for `https://` remotes, as a `${secret:NAME}` or `${env:NAME}` reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
    /// The key CI signs its reports with (`X-Hub-Signature-256`). Applied as a value it is
    /// moved into the secrets directory and only its `${secret:…}` reference is kept; left out
    /// of an update it keeps the one set, `null` clears it. Without one the webhook refuses
    /// every delivery.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub webhook_secret: Option<Option<String>>,
}

/// `Some` for a field that is there, `null` included: left out and `null` differ. A YAML
/// scalar is taken as written (`007123` stays `007123`); anything else is refused without
/// echoing it (it is a secret).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some).map_err(|_| {
        serde::de::Error::custom(
            "give the secret as a quoted string, a `${secret:NAME}` reference, or null",
        )
    })
}

impl GitProviderSpec {
    /// The reference its webhook secret is read from, if it has one.
    pub fn webhook_secret(&self) -> Option<&str> {
        self.webhook_secret.as_ref()?.as_deref()
    }

    /// The stem of the names a webhook secret given as a value is stored under
    /// (`gitprovider-NAME-webhook-<random>`).
    pub fn stored_secret_name(&self) -> String {
        format!("gitprovider-{}-webhook", self.name)
    }

    /// For checking a file alone (`warden config validate`): a webhook secret given as a
    /// value, which an apply stores, stands in as a reference.
    pub fn stand_in_for_value(&mut self) {
        if let Some(Some(value)) = &self.webhook_secret
            && !value.is_empty()
            && !super::reference::is_sole_reference(value)
        {
            let stand_in = format!("${{secret:{}-value}}", self.stored_secret_name());
            self.webhook_secret = Some(Some(stand_in));
        }
    }

    /// The URL of its repository `entry` (a full URL, or a path under `url`).
    pub fn repository_url(&self, entry: &str) -> String {
        if entry.contains("://") || entry.starts_with('/') || entry.contains(':') {
            entry.to_owned()
        } else {
            format!("{}/{}", self.url.trim_end_matches('/'), entry)
        }
    }

    /// What is wrong with it, by field (empty when nothing is). A webhook secret given as a
    /// value is refused here: it reaches the store only as a reference.
    pub(super) fn problems(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let url_problem = |url: &str| {
            let wildcard = url.contains('*').then(|| {
                format!(
                    "`{}` has a `*`, which git reads as a wildcard of hosts; name one",
                    crate::url_credentials::redact(url)
                )
            });
            crate::git_url::classify(url).err().or(wildcard).or_else(|| {
                crate::url_credentials::has_credentials(url).then(|| {
                    format!(
                        "`{}` carries credentials; give a token as `credentials: \"${{secret:NAME}}\"`",
                        crate::url_credentials::redact(url)
                    )
                })
            })
        };
        if let Some(problem) = url_problem(&self.url) {
            out.push(("url".to_owned(), problem));
        }
        for (i, entry) in self.repositories.iter().enumerate() {
            if let Some(problem) = url_problem(&self.repository_url(entry)) {
                out.push((format!("repositories[{i}]"), problem));
            }
        }
        if let Some(credentials) = &self.credentials {
            if !super::reference::is_sole_reference(credentials) {
                out.push((
                    "credentials".into(),
                    "write a reference, `${secret:NAME}` or `${env:NAME}`, not the token itself"
                        .into(),
                ));
            } else if let Err(e) = super::reference::check_reference(credentials) {
                out.push(("credentials".into(), e));
            }
        }
        match self.webhook_secret.as_ref().and_then(Option::as_deref) {
            Some("") => out.push(("webhookSecret".into(), EMPTY_SECRET.into())),
            Some(value) if !super::reference::is_sole_reference(value) => out.push((
                "webhookSecret".into(),
                "is a value; `warden apply` and the admin API store it as a secret, a \
                 configuration holds only a `${secret:NAME}` or `${env:NAME}` reference"
                    .into(),
            )),
            Some(value) => {
                if let Err(e) = super::reference::check_reference(value) {
                    out.push(("webhookSecret".into(), e));
                }
            }
            None => {}
        }
        out
    }
}

/// Why an empty webhook secret is refused.
pub const EMPTY_SECRET: &str =
    "is empty; give the secret, a `${secret:NAME}` reference, or `null` to remove it";

#[cfg(test)]
mod tests {
    use super::*;

    fn provider(yaml: &str) -> GitProviderSpec {
        yaml_serde::from_str(yaml).unwrap()
    }

    #[test]
    fn a_left_out_secret_and_a_null_one_differ() {
        let base = "name: forge\nproject: p\ntype: git\nurl: /srv/git\n";
        assert_eq!(provider(base).webhook_secret, None);
        let null = provider(&format!("{base}webhookSecret: null\n"));
        assert_eq!(null.webhook_secret, Some(None));
        let set = provider(&format!("{base}webhookSecret: \"${{secret:hook}}\"\n"));
        assert_eq!(set.webhook_secret(), Some("${secret:hook}"));
        assert!(set.problems().is_empty());
        let empty = provider(&format!("{base}webhookSecret: \"\"\n"));
        assert_eq!(
            empty.problems(),
            vec![("webhookSecret".to_owned(), EMPTY_SECRET.to_owned())]
        );
        let value = provider(&format!("{base}webhookSecret: s3cret\n"));
        assert_eq!(value.problems()[0].0, "webhookSecret");
        // An unquoted number keeps its text; a list is refused without echoing it.
        let number = provider(&format!("{base}webhookSecret: 007123\n"));
        assert_eq!(number.webhook_secret(), Some("007123"));
        let refused =
            yaml_serde::from_str::<GitProviderSpec>(&format!("{base}webhookSecret: [s3cret]\n"))
                .unwrap_err()
                .to_string();
        assert!(
            refused.contains("quoted string") && !refused.contains("s3cret"),
            "{refused}"
        );
        let with_token = provider(
            "name: forge\nproject: p\ntype: git\nurl: \"https://u:tok@git.example/org\"\n",
        );
        assert_eq!(with_token.problems()[0].0, "url");
    }

    #[test]
    fn repositories_are_under_the_url_or_their_own() {
        let p = provider(
            "name: forge\nproject: p\ntype: git\nurl: https://git.example/org/\nrepositories: [app.git, \"ssh://other/x.git\"]\n",
        );
        assert_eq!(
            p.repository_url("app.git"),
            "https://git.example/org/app.git"
        );
        assert_eq!(p.repository_url("ssh://other/x.git"), "ssh://other/x.git");
    }

    #[test]
    fn a_review_policy_sets_what_it_names_and_keeps_the_rest() {
        let a = Approvals {
            high: Some(3),
            ..Approvals::default()
        };
        assert_eq!(a.needed(Risk::Low), 1);
        assert_eq!(a.needed(Risk::High), 3);
        assert_eq!(a.needed(Risk::Critical), 2);
        let bad = Approvals {
            low: Some(0),
            critical: Some(11),
            ..Approvals::default()
        };
        assert_eq!(
            bad.problems(),
            vec![
                (
                    "approvals.low".to_owned(),
                    "must be between 1 and 10".to_owned()
                ),
                (
                    "approvals.critical".to_owned(),
                    "must be between 1 and 10".to_owned()
                ),
            ]
        );
    }
}

/// The shortest `staleAfter` a Reconciler may have.
pub const SHORTEST_STALE_AFTER: Duration = Duration::from_secs(60);

/// `kind: Reconciler`: a periodic job of one project (WORK-4). On its `schedule` it moves the
/// epic tasks `in_progress` with no activity for `staleAfter` back to `ready` (stopping their
/// sessions), and the open epics whose tasks are all merged to `done`. It acts as the agent
/// role `agentRole:<role>/reconciler:<name>` (APR-3): exactly the capabilities of `role`, in
/// its project only, through the governed pipeline, at an autonomy level of at most
/// `autonomyCap`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReconcilerSpec {
    /// Its name.
    pub name: Name,
    /// The project whose epics it reconciles.
    pub project: Name,
    /// When it runs: a cron expression (five fields, UTC).
    pub schedule: String,
    /// The Role whose capabilities bound it (it needs `run:projects:<project>` and
    /// `work:write` to move anything).
    pub role: Name,
    /// The highest autonomy level its moves run at (0 to 4, default 2): at 0 or 1 every move
    /// parks for approval.
    #[serde(default = "default_autonomy_cap")]
    pub autonomy_cap: u8,
    /// How long an epic task `in_progress` goes without activity before it is stale
    /// (default 24h, at least 1m).
    #[serde(
        default,
        with = "crate::time::human_duration",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Option<String>")]
    pub stale_after: Option<Duration>,
}

/// A Reconciler's `autonomyCap` when it gives none: the level of an unconfigured install
/// (APR-1's L2), so that a Reconciler is neither freer nor tighter than anything else by default.
pub const DEFAULT_AUTONOMY_CAP: u8 = 2;

fn default_autonomy_cap() -> u8 {
    DEFAULT_AUTONOMY_CAP
}

/// How long an epic task goes without activity before a Reconciler with no `staleAfter` calls
/// it stale.
pub const DEFAULT_STALE_AFTER: Duration = Duration::from_secs(24 * 3600);

impl ReconcilerSpec {
    /// The intent its work serves (`reconciler:<name>`).
    pub fn intent(&self) -> String {
        format!("{RECONCILER_INTENT}{}", self.name)
    }

    /// How long an epic task goes without activity before it is stale.
    pub fn stale_after(&self) -> Duration {
        self.stale_after.unwrap_or(DEFAULT_STALE_AFTER)
    }

    /// What is wrong with it, by field (empty when nothing is).
    pub(super) fn problems(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if let Err(e) = crate::cron::Schedule::parse(&self.schedule) {
            out.push(("schedule".to_owned(), e));
        }
        if self.autonomy_cap > 4 {
            out.push((
                "autonomyCap".to_owned(),
                format!("{} is not a level; use 0, 1, 2, 3 or 4", self.autonomy_cap),
            ));
        }
        if self.stale_after() < SHORTEST_STALE_AFTER {
            out.push(("staleAfter".to_owned(), "must be at least 1m".to_owned()));
        }
        out
    }
}
