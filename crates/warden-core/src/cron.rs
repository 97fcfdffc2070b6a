//! Cron schedules of agents (RUN-2 `agent` mode), evaluated in UTC.

use std::str::FromStr;

use chrono::{DateTime, Utc};

use crate::time::Millis;

/// A parsed five-field cron expression.
#[derive(Clone, Debug)]
pub struct Schedule {
    cron: croner::Cron,
}

impl Schedule {
    /// Parses a five-field cron expression (`*/15 * * * *`).
    pub fn parse(expr: &str) -> Result<Self, String> {
        if expr.split_whitespace().count() != 5 {
            return Err(format!(
                "`{expr}` is not a five-field cron expression (minute hour day-of-month month day-of-week)"
            ));
        }
        croner::Cron::from_str(expr)
            .map(|cron| Self { cron })
            .map_err(|e| format!("`{expr}` is not a cron expression: {e}"))
    }

    /// The first time strictly after `after` at which the schedule fires.
    pub fn next_after(&self, after: Millis) -> Option<Millis> {
        let t: DateTime<Utc> = DateTime::from_timestamp_millis(after.0)?;
        self.cron
            .find_next_occurrence(&t, false)
            .ok()
            .map(|d| Millis(d.timestamp_millis()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_parse_and_fire_in_utc() {
        let s = Schedule::parse("*/15 * * * *").unwrap();
        // 2026-01-01T00:07:00Z
        let t = Millis(1_767_226_020_000);
        assert_eq!(s.next_after(t), Some(Millis(1_767_226_500_000)));
        assert!(Schedule::parse("* * *").is_err());
        assert!(Schedule::parse("99 * * * *").is_err());
    }
}
