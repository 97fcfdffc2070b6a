//! Output helpers: aligned tables, timestamps, JSON and YAML.

use warden_core::time::Millis;

/// Prints rows as aligned columns under a header.
pub(crate) fn table(header: &[&str], rows: &[Vec<String>]) {
    print!("{}", render_table(header, rows));
}

pub(crate) fn render_table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let mut out = String::new();
    let line = |cells: Vec<&str>, out: &mut String| {
        let last = cells.len().saturating_sub(1);
        for (i, cell) in cells.iter().enumerate() {
            out.push_str(cell);
            if i < last {
                let pad = widths.get(i).copied().unwrap_or(0) - cell.chars().count() + 2;
                out.push_str(&" ".repeat(pad));
            }
        }
        out.push('\n');
    };
    line(header.to_vec(), &mut out);
    for row in rows {
        line(row.iter().map(String::as_str).collect(), &mut out);
    }
    out
}

/// RFC 3339 in UTC, to the second.
pub(crate) fn time(m: Millis) -> String {
    chrono::DateTime::from_timestamp_millis(m.0)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|| m.0.to_string())
}

/// Parses `--since`/`--until`: RFC 3339, or an age such as `1h` meaning that long ago.
pub(crate) fn parse_time(s: &str, now: Millis) -> Result<Millis, String> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Ok(Millis(t.timestamp_millis()));
    }
    match humantime::parse_duration(s) {
        Ok(age) => Ok(Millis(
            now.0 - i64::try_from(age.as_millis()).unwrap_or(i64::MAX),
        )),
        Err(_) => Err(format!(
            "`{s}` is neither an RFC 3339 time (2026-11-29T10:00:00Z) nor an age (1h, 30m)"
        )),
    }
}

/// Pretty JSON on stdout.
pub(crate) fn json<T: serde::Serialize>(value: &T) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

/// YAML documents on stdout, separated by `---`.
pub(crate) fn yaml_docs<T: serde::Serialize>(values: &[T]) -> anyhow::Result<()> {
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            println!("---");
        }
        print!("{}", yaml_serde::to_string(v)?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_columns() {
        let out = render_table(
            &["NAME", "X"],
            &[
                vec!["a".into(), "1".into()],
                vec!["long-name".into(), "2".into()],
            ],
        );
        assert_eq!(out, "NAME       X\na          1\nlong-name  2\n");
    }

    #[test]
    fn times_parse_as_rfc3339_or_age() {
        let now = Millis(1_800_000_000_000);
        assert_eq!(
            parse_time("1h", now),
            Ok(Millis(1_800_000_000_000 - 3_600_000))
        );
        assert_eq!(
            parse_time("2027-01-15T08:00:00Z", now),
            Ok(Millis(1_800_000_000_000))
        );
        assert!(parse_time("yesterday", now).is_err());
        assert_eq!(time(Millis(1_800_000_000_000)), "2027-01-15T08:00:00Z");
    }
}
