//! When schedules fire: the agents' schedules and the Reconcilers', checked every second by
//! their loops against the gateway's clock.

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use warden_core::cron::Schedule;
use warden_core::time::Millis;

/// Calls `fire(since)` every second until `cancel`, `since` being what the call before
/// returned (the time it looked), the first time `start`.
pub(crate) async fn every_second<F, Fut>(start: Millis, cancel: CancellationToken, mut fire: F)
where
    F: FnMut(Millis) -> Fut,
    Fut: Future<Output = Millis>,
{
    let mut since = start;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            () = cancel.cancelled() => return,
            _ = tick.tick() => since = fire(since).await,
        }
    }
}

/// When each schedule (by owner and key) fires next.
#[derive(Debug, Default)]
pub(crate) struct FireTimes(HashMap<(String, String), Millis>);

impl FireTimes {
    /// The schedules due at `now` (owner, key, the time each fires for), of `schedules` given
    /// as (owner, key, cron), the last check having been at `since`; each one's next time is
    /// then after `now` (missed times are not replayed). A schedule seen for the first time
    /// fires at its first time after `since`: one applied a moment ago waits for its next time,
    /// not the last one before it (a `*/5` schedule applied at 01:32:27 fires at 01:35:00).
    pub(crate) fn due<'a>(
        &mut self,
        schedules: impl IntoIterator<Item = (String, String, &'a str)>,
        since: Millis,
        now: Millis,
    ) -> Vec<(String, String, Millis)> {
        let mut due = Vec::new();
        for (owner, key, cron) in schedules {
            let Ok(schedule) = Schedule::parse(cron) else {
                continue;
            };
            let key = (owner, key);
            let never = Millis(i64::MAX);
            let at = *self
                .0
                .entry(key.clone())
                .or_insert_with(|| schedule.next_after(since).unwrap_or(never));
            if now >= at {
                self.0
                    .insert(key.clone(), schedule.next_after(now).unwrap_or(never));
                due.push((key.0, key.1, at));
            }
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 45 (observed: `*/5` applied at 01:32:27 ran at 01:32:29).
    #[test]
    fn a_schedule_applied_after_the_scheduler_started_waits_for_its_next_time() {
        let schedules = || [("sre".to_owned(), "0:*/5 * * * *".to_owned(), "*/5 * * * *")];
        let at = |h: i64, m: i64, s: i64| Millis(((h * 60 + m) * 60 + s) * 1000);
        let mut times = FireTimes::default();
        // The scheduler started at 01:20:00 and checked every second since; the schedule is
        // first seen at the check of 01:32:28.
        assert!(
            times
                .due(schedules(), at(1, 32, 27), at(1, 32, 28))
                .is_empty()
        );
        assert!(
            times
                .due(schedules(), at(1, 32, 28), at(1, 34, 59))
                .is_empty()
        );
        let due = times.due(schedules(), at(1, 34, 59), at(1, 35, 0));
        assert_eq!(
            due,
            vec![("sre".into(), "0:*/5 * * * *".into(), at(1, 35, 0))]
        );
        // Once only; the next at 01:40.
        assert!(
            times
                .due(schedules(), at(1, 35, 0), at(1, 35, 1))
                .is_empty()
        );
        assert_eq!(times.due(schedules(), at(1, 39, 59), at(1, 40, 0)).len(), 1);
        // A schedule seen first just after its time, applied before it, fires at once.
        let mut late = FireTimes::default();
        assert_eq!(late.due(schedules(), at(1, 34, 59), at(1, 35, 0)).len(), 1);
    }
}
