//! The work domain's two state machines (WORK-1) and an epic's risk (WORK-2), as plain values.
//!
//! An epic task moves `proposed → ready → in_progress → review → accepted → merged`, back from
//! `review` to `in_progress` when changes are asked, and from `merged` to `reopened` (its
//! post-merge CI failed) and on to `in_progress`. An epic moves `draft → open → done`, and to
//! `archived` from any other state. Every other move is refused, naming the moves allowed from
//! where it stands. Reconciliation alone moves a stale epic task from `in_progress` back to
//! `ready` (WORK-4), and makes no other move. Who may make a move, and the gates in front of
//! `accepted` and `merged`, are the work service's.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How much is at stake in an epic: it sets how many reviews its tasks need (WORK-2).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// One approving review.
    Low,
    /// One approving review.
    Medium,
    /// Two approving reviews.
    High,
    /// Two approving reviews, one by a holder of `work:accept-critical`.
    Critical,
}

impl Risk {
    /// Every risk, lowest first.
    pub const ALL: [Self; 4] = [Self::Low, Self::Medium, Self::High, Self::Critical];

    /// As written and stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Critical => "critical",
        }
    }

    /// From its written form.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

/// A review's verdict (WORK-2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The work may be accepted.
    Approve,
    /// Changes are asked for.
    Changes,
}

impl Verdict {
    /// As written and stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::Changes => "changes",
        }
    }

    /// From its written form.
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Approve, Self::Changes]
            .into_iter()
            .find(|v| v.as_str() == s)
    }
}

/// Where an epic stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EpicState {
    /// Being written.
    Draft,
    /// Its tasks are being worked on.
    Open,
    /// Every task merged.
    Done,
    /// Put away; no move leaves it.
    Archived,
}

/// Where an epic task stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EpicTaskState {
    /// Suggested, not yet agreed.
    Proposed,
    /// Agreed, waiting for someone to start.
    Ready,
    /// Being worked on.
    InProgress,
    /// Waiting for reviews.
    Review,
    /// Reviewed enough; its work branch is to be merged.
    Accepted,
    /// Merged into its base branch.
    Merged,
    /// Merged, then its post-merge CI failed.
    Reopened,
}

/// A state of one of the two machines.
pub trait State: Copy + Eq + 'static {
    /// What moves: `an epic`, `an epic task`.
    const WHAT: &'static str;
    /// Every state, in the order of the machine.
    const ALL: &'static [Self];
    /// The states it may move to.
    fn next(self) -> &'static [Self];
    /// As written and stored.
    fn as_str(self) -> &'static str;

    /// From its written form.
    fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|state| state.as_str() == s)
    }

    /// Whether `self → to` is a move of the machine; refused naming the allowed ones.
    fn check_move(self, to: Self) -> Result<(), MoveRefused> {
        if self.next().contains(&to) {
            return Ok(());
        }
        Err(MoveRefused {
            what: Self::WHAT,
            from: self.as_str(),
            to: to.as_str(),
            allowed: self.next().iter().map(|s| s.as_str()).collect(),
        })
    }
}

impl State for EpicState {
    const WHAT: &'static str = "an epic";
    const ALL: &'static [Self] = &[Self::Draft, Self::Open, Self::Done, Self::Archived];

    fn next(self) -> &'static [Self] {
        match self {
            Self::Draft => &[Self::Open, Self::Archived],
            Self::Open => &[Self::Done, Self::Archived],
            Self::Done => &[Self::Archived],
            Self::Archived => &[],
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Draft => "draft",
            Self::Open => "open",
            Self::Done => "done",
            Self::Archived => "archived",
        }
    }
}

impl State for EpicTaskState {
    const WHAT: &'static str = "an epic task";
    const ALL: &'static [Self] = &[
        Self::Proposed,
        Self::Ready,
        Self::InProgress,
        Self::Review,
        Self::Accepted,
        Self::Merged,
        Self::Reopened,
    ];

    fn next(self) -> &'static [Self] {
        match self {
            Self::Proposed => &[Self::Ready],
            Self::Ready => &[Self::InProgress],
            Self::InProgress => &[Self::Review],
            Self::Review => &[Self::InProgress, Self::Accepted],
            Self::Accepted => &[Self::Merged],
            Self::Merged => &[Self::Reopened],
            Self::Reopened => &[Self::InProgress],
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Proposed => "proposed",
            Self::Ready => "ready",
            Self::InProgress => "in_progress",
            Self::Review => "review",
            Self::Accepted => "accepted",
            Self::Merged => "merged",
            Self::Reopened => "reopened",
        }
    }
}

impl fmt::Display for EpicState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl EpicTaskState {
    /// Where reconciliation alone moves an epic task from here (WORK-4): a stale one from
    /// `in_progress` back to `ready`. No one else makes this move, and reconciliation makes no
    /// other.
    pub fn reconciled(self) -> Option<Self> {
        match self {
            Self::InProgress => Some(Self::Ready),
            _ => None,
        }
    }
}

impl fmt::Display for EpicTaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A move the machine does not have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MoveRefused {
    /// What was moved: `an epic`, `an epic task`.
    pub what: &'static str,
    /// Where it stands.
    pub from: &'static str,
    /// Where it was asked to go.
    pub to: &'static str,
    /// Where it may go from `from`.
    pub allowed: Vec<&'static str>,
}

impl fmt::Display for MoveRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} cannot move from `{}` to `{}`",
            self.what, self.from, self.to
        )?;
        match self.allowed.as_slice() {
            [] => write!(f, "; no move leaves `{}`", self.from),
            allowed => {
                let names: Vec<String> = allowed.iter().map(|s| format!("`{s}`")).collect();
                write!(
                    f,
                    "; from `{}` it can move to {}",
                    self.from,
                    names.join(" or ")
                )
            }
        }
    }
}

impl std::error::Error for MoveRefused {}

/// How many approving reviews an epic task of an epic at `risk` needs (WORK-2).
pub fn reviews_needed(risk: Risk) -> usize {
    match risk {
        Risk::Low | Risk::Medium => 1,
        Risk::High | Risk::Critical => 2,
    }
}

/// A review as the gate counts it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counted<'a> {
    /// Who gave it (never an author of the task: those are left out before).
    pub reviewer: &'a str,
    /// It approves.
    pub approves: bool,
    /// It was given on the work branch's current commit (no push since).
    pub current: bool,
    /// Its reviewer held `work:accept-critical`.
    pub critical: bool,
}

/// Why the review gate stays closed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateClosed {
    /// The epic's risk.
    pub risk: Risk,
    /// The approving reviews it needs.
    pub needed: usize,
    /// Who approves the current commit.
    pub approved_by: Vec<String>,
    /// Who approved an earlier commit of the work branch.
    pub stale: Vec<String>,
    /// A `critical` task still lacks an approval by a holder of `work:accept-critical`.
    pub needs_critical: bool,
}

impl fmt::Display for GateClosed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "it needs {} approving review{} by principals other than its authors (risk `{}`)",
            self.needed,
            if self.needed == 1 { "" } else { "s" },
            self.risk.as_str()
        )?;
        if self.needs_critical {
            f.write_str(", one of them by a holder of `work:accept-critical`")?;
        }
        match self.approved_by.as_slice() {
            [] => f.write_str("; it has none")?,
            names => write!(f, "; it has {} ({})", names.len(), names.join(", "))?,
        }
        if !self.stale.is_empty() {
            write!(
                f,
                "; the approvals of {} were of an earlier commit of the work branch",
                self.stale.join(", ")
            )?;
        }
        Ok(())
    }
}

/// The review gate (WORK-2): each reviewer's last review stands; it opens with `needed`
/// standing approvals of the current commit by distinct reviewers ([`reviews_needed`] unless
/// the project's ReviewPolicy says otherwise), one of them by a holder of
/// `work:accept-critical` at `critical` risk. The reviewers it counted, or why it stays closed.
pub fn review_gate(
    risk: Risk,
    needed: usize,
    reviews: &[Counted<'_>],
) -> Result<Vec<String>, GateClosed> {
    let mut standing: Vec<Counted<'_>> = Vec::new();
    for review in reviews {
        standing.retain(|r| r.reviewer != review.reviewer);
        standing.push(*review);
    }
    let approving = standing.iter().filter(|r| r.approves);
    let approved_by: Vec<String> = approving
        .clone()
        .filter(|r| r.current)
        .map(|r| r.reviewer.to_owned())
        .collect();
    let stale: Vec<String> = approving
        .clone()
        .filter(|r| !r.current)
        .map(|r| r.reviewer.to_owned())
        .collect();
    let needs_critical = risk == Risk::Critical
        && !standing
            .iter()
            .any(|r| r.approves && r.current && r.critical);
    if approved_by.len() >= needed && !needs_critical {
        return Ok(approved_by);
    }
    Err(GateClosed {
        risk,
        needed,
        approved_by,
        stale,
        needs_critical,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every allowed move of each machine, as the spec draws them (WORK-1).
    const EPIC_TASK_MOVES: &[(&str, &str)] = &[
        ("proposed", "ready"),
        ("ready", "in_progress"),
        ("in_progress", "review"),
        ("review", "accepted"),
        ("review", "in_progress"),
        ("accepted", "merged"),
        ("merged", "reopened"),
        ("reopened", "in_progress"),
    ];
    const EPIC_MOVES: &[(&str, &str)] = &[
        ("draft", "open"),
        ("open", "done"),
        ("draft", "archived"),
        ("open", "archived"),
        ("done", "archived"),
    ];

    /// Every pair of states: allowed exactly when the table has it, otherwise refused naming
    /// the allowed moves.
    fn every_move<S: State + fmt::Debug>(table: &[(&str, &str)]) {
        for &from in S::ALL {
            for &to in S::ALL {
                let listed = table.contains(&(from.as_str(), to.as_str()));
                match from.check_move(to) {
                    Ok(()) => assert!(listed, "{from:?} → {to:?} is allowed, not in the table"),
                    Err(refused) => {
                        assert!(!listed, "{from:?} → {to:?} is in the table, refused");
                        let allowed: Vec<&str> = table
                            .iter()
                            .filter(|(f, _)| *f == from.as_str())
                            .map(|(_, t)| *t)
                            .collect();
                        let mut named = refused.allowed.clone();
                        named.sort_unstable();
                        let mut expected = allowed.clone();
                        expected.sort_unstable();
                        assert_eq!(named, expected, "{from:?} → {to:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn an_epic_task_moves_exactly_as_drawn() {
        every_move::<EpicTaskState>(EPIC_TASK_MOVES);
    }

    #[test]
    fn reconciliation_makes_its_one_move_which_no_one_else_makes() {
        for &from in EpicTaskState::ALL {
            for &to in EpicTaskState::ALL {
                let reconciled = from.reconciled() == Some(to);
                assert_eq!(
                    reconciled,
                    (from, to) == (EpicTaskState::InProgress, EpicTaskState::Ready),
                    "{from:?} → {to:?}"
                );
                if reconciled {
                    assert!(from.check_move(to).is_err(), "people cannot make it");
                }
            }
        }
    }

    #[test]
    fn an_epic_moves_exactly_as_drawn() {
        every_move::<EpicState>(EPIC_MOVES);
    }

    #[test]
    fn a_refused_move_says_where_it_can_go() {
        let refused = EpicTaskState::Review
            .check_move(EpicTaskState::Merged)
            .unwrap_err();
        assert_eq!(
            refused.to_string(),
            "an epic task cannot move from `review` to `merged`; from `review` it can move to `in_progress` or `accepted`"
        );
        let refused = EpicTaskState::Proposed
            .check_move(EpicTaskState::Proposed)
            .unwrap_err();
        assert_eq!(
            refused.to_string(),
            "an epic task cannot move from `proposed` to `proposed`; from `proposed` it can move to `ready`"
        );
        let refused = EpicState::Archived.check_move(EpicState::Open).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "an epic cannot move from `archived` to `open`; no move leaves `archived`"
        );
    }

    fn review(reviewer: &str, approves: bool, current: bool, critical: bool) -> Counted<'_> {
        Counted {
            reviewer,
            approves,
            current,
            critical,
        }
    }

    #[test]
    fn the_review_gate_scales_with_risk() {
        let bob = review("user:bob", true, true, false);
        let carol = review("user:carol", true, true, false);
        let chief = review("user:chief", true, true, true);
        // (risk, reviews, opens)
        let table: &[(Risk, Vec<Counted<'_>>, bool)] = &[
            (Risk::Low, vec![], false),
            (Risk::Low, vec![bob], true),
            (Risk::Medium, vec![bob], true),
            (Risk::High, vec![bob], false),
            (Risk::High, vec![bob, bob], false),
            (Risk::High, vec![bob, carol], true),
            (Risk::Critical, vec![bob, carol], false),
            (Risk::Critical, vec![bob, chief], true),
            (Risk::Critical, vec![chief], false),
            // A later review by the same reviewer is the one that stands.
            (
                Risk::Low,
                vec![bob, review("user:bob", false, true, false)],
                false,
            ),
            (
                Risk::Low,
                vec![review("user:bob", false, true, false), bob],
                true,
            ),
            // An approval of an earlier commit counts for nothing.
            (
                Risk::Low,
                vec![review("user:bob", true, false, false)],
                false,
            ),
        ];
        for (risk, reviews, opens) in table {
            assert_eq!(
                review_gate(*risk, reviews_needed(*risk), reviews).is_ok(),
                *opens,
                "{risk:?} {reviews:?}"
            );
        }
        // A project's ReviewPolicy sets the number; critical still needs its holder.
        assert!(review_gate(Risk::High, 3, &[bob, carol]).is_err());
        assert!(review_gate(Risk::High, 3, &[bob, carol, chief]).is_ok());
        assert!(review_gate(Risk::Critical, 1, &[chief]).is_ok());
        assert!(review_gate(Risk::Critical, 1, &[bob]).is_err());
    }

    #[test]
    fn a_closed_gate_says_what_it_lacks() {
        let closed = review_gate(
            Risk::Critical,
            2,
            &[
                review("user:bob", true, true, false),
                review("user:carol", true, false, false),
            ],
        )
        .unwrap_err();
        assert_eq!(
            closed.to_string(),
            "it needs 2 approving reviews by principals other than its authors (risk `critical`), one of them by a holder of `work:accept-critical`; it has 1 (user:bob); the approvals of user:carol were of an earlier commit of the work branch"
        );
        let closed = review_gate(Risk::Medium, 1, &[]).unwrap_err();
        assert_eq!(
            closed.to_string(),
            "it needs 1 approving review by principals other than its authors (risk `medium`); it has none"
        );
    }

    #[test]
    fn states_and_risks_read_back_as_written() {
        for &s in EpicTaskState::ALL {
            assert_eq!(EpicTaskState::parse(s.as_str()), Some(s));
        }
        for &s in EpicState::ALL {
            assert_eq!(EpicState::parse(s.as_str()), Some(s));
        }
        for r in Risk::ALL {
            assert_eq!(Risk::parse(r.as_str()), Some(r));
        }
        assert_eq!(EpicTaskState::parse("done"), None);
        assert_eq!(Risk::parse("extreme"), None);
    }
}
