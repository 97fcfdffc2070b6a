//! Times and short texts as the console's pages show them, and the times its forms take.

use std::time::Duration;

use warden_core::time::Millis;

/// `at` as `2026-12-02 14:03:09Z`.
pub(crate) fn time(at: i64) -> String {
    warden_core::time::rfc3339(Millis(at))
        .replacen('T', " ", 1)
        .to_string()
}

/// A span such as `3m 12s`, `2h 5m` or `4d 1h`.
pub(crate) fn span(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m {}s", s / 60, s % 60),
        3600..86_400 => format!("{}h {}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d {}h", s / 86_400, (s % 86_400) / 3600),
    }
}

/// A message as prose: what it puts between backticks (names, commands) shown as code, not
/// as backticks.
pub(crate) fn prose(text: &str) -> maud::Markup {
    maud::html! {
        @for (i, part) in text.split('`').enumerate() {
            @if i % 2 == 1 { code { (part) } } @else { (part) }
        }
    }
}

/// `text` cut to `max` characters, with an ellipsis when cut.
pub(crate) fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_owned()
    } else {
        let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}

/// Percent-encoding for a query value or a path segment.
pub(crate) fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A time a search form gives: a duration ago (`15m`, `2h`), or a UTC date and time
/// (`2026-12-02`, `2026-12-02T14:03`, `2026-12-02 14:03:09Z`, as `datetime-local` inputs send).
pub(crate) fn parse_time(text: &str, now: Millis) -> Result<Millis, String> {
    let text = text.trim();
    if let Some(at) = parse_utc(text) {
        return Ok(Millis(at));
    }
    warden_core::time::parse_duration(text)
        .map(|ago: Duration| {
            Millis(
                now.0
                    .saturating_sub(i64::try_from(ago.as_millis()).unwrap_or(i64::MAX)),
            )
        })
        .map_err(|_| {
            format!(
                "`{}` is neither a time (2026-12-02T14:03) nor a duration ago (15m, 2h)",
                cut(text, 40)
            )
        })
}

/// `YYYY-MM-DD[(T| )HH:MM[:SS]][Z]` as milliseconds since the epoch, UTC.
fn parse_utc(text: &str) -> Option<i64> {
    let text = text.strip_suffix('Z').unwrap_or(text);
    let (date, clock) = match text.split_once(['T', ' ']) {
        Some((d, c)) => (d, Some(c)),
        None => (text, None),
    };
    let mut d = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || !(1970..=9999).contains(&y) {
        return None;
    }
    let mut seconds = 0;
    if let Some(clock) = clock {
        let mut c = clock.splitn(3, ':').map(|p| p.parse::<i64>().ok());
        let (h, min) = (c.next()??, c.next()??);
        let s = c.next().map_or(Some(0), |s| s)?;
        if !(0..24).contains(&h) || !(0..60).contains(&min) || !(0..61).contains(&s) {
            return None;
        }
        seconds = h * 3600 + min * 60 + s;
    }
    Some((days_from_civil(y, m, day) * 86_400 + seconds) * 1000)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_times_are_dates_in_utc_or_durations_ago() {
        let now = Millis(1_800_000_000_000);
        assert_eq!(
            parse_time("2026-12-02T14:03", now),
            Ok(Millis(1_796_220_180_000))
        );
        assert_eq!(
            parse_time("2026-12-02 14:03:09Z", now),
            Ok(Millis(1_796_220_189_000))
        );
        assert_eq!(parse_time("1970-01-01", now), Ok(Millis(0)));
        assert_eq!(
            parse_time("15m", now),
            Ok(Millis(1_800_000_000_000 - 900_000))
        );
        assert_eq!(
            parse_time("yesterday", now),
            Err(
                "`yesterday` is neither a time (2026-12-02T14:03) nor a duration ago (15m, 2h)"
                    .into()
            )
        );
        assert_eq!(time(1_796_220_189_000), "2026-12-02 14:03:09Z");
    }

    #[test]
    fn spans_read_in_the_two_largest_units() {
        assert_eq!(span(59_999), "59s");
        assert_eq!(span(192_000), "3m 12s");
        assert_eq!(span(7_500_000), "2h 5m");
        assert_eq!(span(-5), "0s");
    }
}
