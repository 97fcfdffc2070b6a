//! Refusals that leave no audit record — a kill switch and a schema validation failure come
//! before the audit step (GOV-2), and a call refused while the store is unreachable — counted
//! per minute for the last hour, by code and tool, so that the console's Overview can show
//! them beside the audit trail's. Each process counts its own refusals (as `/metrics` does).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use warden_core::decision::DenyCode;
use warden_core::time::Millis;

/// Minutes kept.
const MINUTES: usize = 60;
/// Distinct (code, tool) pairs counted in one minute; past it, new tools count as `OTHER`.
const MAX_PAIRS: usize = 1_000;
/// The tool of a refusal of a name outside the catalog, or past [`MAX_PAIRS`].
pub const OTHER: &str = "(other)";

/// Refusals of one code and tool in one minute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unaudited {
    /// The minute's start.
    pub minute: Millis,
    /// The code.
    pub code: DenyCode,
    /// The tool, by catalog name, or [`OTHER`].
    pub tool: String,
    /// How many.
    pub count: u64,
}

/// One minute's counts, by code and tool.
type Minute = (i64, HashMap<(DenyCode, String), u64>);

/// The tally of the last hour, oldest minute first.
#[derive(Debug, Default)]
pub(super) struct Tally {
    minutes: Mutex<VecDeque<Minute>>,
}

impl Tally {
    /// Counts one refusal at `at` of `tool` (`None`: a name outside the catalog).
    pub(super) fn note(&self, at: Millis, code: DenyCode, tool: Option<&str>) {
        let minute = at.0.div_euclid(60_000);
        let Ok(mut minutes) = self.minutes.lock() else {
            return;
        };
        if minutes.back().is_none_or(|(m, _)| *m < minute) {
            minutes.push_back((minute, HashMap::new()));
            while minutes.len() > MINUTES {
                minutes.pop_front();
            }
        }
        // A clock that stepped back counts in the newest minute.
        let Some((_, counts)) = minutes.back_mut() else {
            return;
        };
        let tool = match tool {
            Some(t) if counts.len() < MAX_PAIRS || counts.contains_key(&(code, t.to_owned())) => t,
            _ => OTHER,
        };
        *counts.entry((code, tool.to_owned())).or_default() += 1;
    }

    /// The counts of the hour before `now`.
    pub(super) fn last_hour(&self, now: Millis) -> Vec<Unaudited> {
        let first = now.0.div_euclid(60_000) - (MINUTES as i64 - 1);
        let Ok(minutes) = self.minutes.lock() else {
            return Vec::new();
        };
        minutes
            .iter()
            .filter(|(m, _)| *m >= first)
            .flat_map(|(m, counts)| {
                counts.iter().map(move |((code, tool), count)| Unaudited {
                    minute: Millis(m * 60_000),
                    code: *code,
                    tool: tool.clone(),
                    count: *count,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_counted_by_minute_code_and_tool_for_an_hour() {
        let tally = Tally::default();
        let t0 = 1_000 * 60_000;
        tally.note(Millis(t0), DenyCode::KillSwitch, Some("a"));
        tally.note(Millis(t0 + 1), DenyCode::KillSwitch, Some("a"));
        tally.note(Millis(t0 + 60_000), DenyCode::Validation, None);
        let mut hour = tally.last_hour(Millis(t0 + 60_000));
        hour.sort_by_key(|u| u.minute);
        assert_eq!(
            hour,
            vec![
                Unaudited {
                    minute: Millis(t0),
                    code: DenyCode::KillSwitch,
                    tool: "a".into(),
                    count: 2
                },
                Unaudited {
                    minute: Millis(t0 + 60_000),
                    code: DenyCode::Validation,
                    tool: OTHER.into(),
                    count: 1
                },
            ]
        );
        // An hour later the first minute is gone.
        assert_eq!(tally.last_hour(Millis(t0 + 60 * 60_000)).len(), 1);
        assert!(tally.last_hour(Millis(t0 + 61 * 60_000)).is_empty());
    }

    #[test]
    fn a_flood_of_made_up_names_is_bounded() {
        let tally = Tally::default();
        for i in 0..(MAX_PAIRS + 50) {
            tally.note(Millis(0), DenyCode::Validation, Some(&format!("t{i}")));
        }
        let hour = tally.last_hour(Millis(0));
        assert_eq!(hour.len(), MAX_PAIRS + 1);
        assert_eq!(
            hour.iter().map(|u| u.count).sum::<u64>(),
            (MAX_PAIRS + 50) as u64
        );
    }
}
