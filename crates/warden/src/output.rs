//! Output helpers: aligned tables, timestamps, JSON and YAML, and what happens when stdout's
//! reader goes away.
//!
//! Rust ignores `SIGPIPE`, so a write to a closed pipe (`warden audit -o json | head -1`) is an
//! error, and `println!` panics on it. Writing to a closed stdout is not a failure of the
//! command: the reader has what it wanted. [`quiet_when_stdout_closes`] (for the print macros)
//! and [`StdoutClosed`] (for writes that return errors) end the command with exit status 0
//! and nothing on stderr, for every command.

use std::io::Write as _;

use warden_core::time::Millis;

/// Stdout's reader went away: the command ends quietly, exit status 0 (see the module docs).
#[derive(Debug)]
pub(crate) struct StdoutClosed;

impl std::fmt::Display for StdoutClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("stdout was closed by its reader")
    }
}

impl std::error::Error for StdoutClosed {}

/// A failed write to stdout as the command's error: [`StdoutClosed`] for a closed pipe.
pub(crate) fn stdout_error(e: std::io::Error) -> anyhow::Error {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        anyhow::Error::new(StdoutClosed)
    } else {
        anyhow::Error::new(e).context("failed to write to stdout")
    }
}

/// Whether `e` is [`StdoutClosed`].
pub(crate) fn is_stdout_closed(e: &anyhow::Error) -> bool {
    e.downcast_ref::<StdoutClosed>().is_some()
}

/// The message std's print macros panic with when stdout is a closed pipe.
fn closed_stdout_panic(message: &str) -> bool {
    let Some(error) = message.strip_prefix("failed printing to stdout: ") else {
        return false;
    };
    // EPIPE (32 on Linux, macOS and the BSDs); ERROR_BROKEN_PIPE and ERROR_NO_DATA on Windows.
    let codes: &[i32] = if cfg!(windows) { &[109, 232] } else { &[32] };
    codes
        .iter()
        .any(|code| error == std::io::Error::from_raw_os_error(*code).to_string())
}

/// Makes a print macro's panic on a closed stdout end the process quietly with exit status 0;
/// every other panic is reported as before.
pub(crate) fn quiet_when_stdout_closes() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if closed_stdout_panic(message) {
            std::process::exit(0);
        }
        report(info);
    }));
}

/// Lines on stdout that must not end the process when nobody reads them any more (what
/// `warden serve` prints at start, before serving for hours).
pub(crate) fn announce(line: &str) {
    // One write of the whole line: `writeln!` writes the text and its newline apart, and a
    // script reading the output between the two saw a line cut short (`torture.sh` did).
    let mut out = std::io::stdout().lock();
    let _ = out
        .write_all(format!("{line}\n").as_bytes())
        .and_then(|()| out.flush());
}

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
    print!("{}", render_yaml_docs(values)?);
    Ok(())
}

fn render_yaml_docs<T: serde::Serialize>(values: &[T]) -> anyhow::Result<String> {
    let mut out = String::new();
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        out.push_str(&yaml_serde::to_string(&untagged(yaml_serde::to_value(v)?))?);
    }
    Ok(out)
}

/// `value` with each enum spelt as configuration spells it, a map of one key
/// (`subject: { user: alice }`), which `warden apply` reads back, instead of the YAML tag that
/// the serializer makes of it (`subject: !user alice`), which it does not, and which cannot
/// even be written for an enum inside an enum (a kill switch's `principal` scope).
fn untagged(value: yaml_serde::Value) -> yaml_serde::Value {
    use yaml_serde::Value;
    match value {
        Value::Tagged(tagged) => {
            let tagged = *tagged;
            let tag = tagged.tag.to_string();
            let mut map = yaml_serde::Mapping::new();
            map.insert(
                Value::String(tag.trim_start_matches('!').to_owned()),
                untagged(tagged.value),
            );
            Value::Mapping(map)
        }
        Value::Mapping(map) => Value::Mapping(
            map.into_iter()
                .map(|(k, v)| (untagged(k), untagged(v)))
                .collect(),
        ),
        Value::Sequence(items) => Value::Sequence(items.into_iter().map(untagged).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_spells_enums_as_configuration_does_and_reads_back_as_the_same_resources() {
        let text = "kind: RoleBinding\nrole: reader\nsubject:\n  user: alice\n---\n\
                    kind: KillSwitch\nscope:\n  principal:\n    serviceAccount: deploy-bot\nreason: drill\n";
        let resources: Vec<warden_core::config::Resource> =
            warden_core::config::parse_documents("in.yaml", text)
                .unwrap()
                .into_iter()
                .map(|l| l.resource)
                .collect();
        let shown = render_yaml_docs(&resources).unwrap();
        assert_eq!(shown, text);
        let again: Vec<warden_core::config::Resource> =
            warden_core::config::parse_documents("out.yaml", &shown)
                .unwrap()
                .into_iter()
                .map(|l| l.resource)
                .collect();
        assert_eq!(again, resources);
    }

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
    fn only_a_closed_stdout_is_a_quiet_end() {
        let closed = format!(
            "failed printing to stdout: {}",
            std::io::Error::from_raw_os_error(if cfg!(windows) { 232 } else { 32 })
        );
        assert!(closed_stdout_panic(&closed));
        assert!(!closed_stdout_panic(
            "failed printing to stdout: No space left on device (os error 28)"
        ));
        assert!(!closed_stdout_panic("index out of bounds"));
        let e = stdout_error(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        assert!(is_stdout_closed(&e));
        let e = stdout_error(std::io::Error::other("the disk is full"));
        assert!(!is_stdout_closed(&e));
        assert_eq!(
            format!("{e:#}"),
            "failed to write to stdout: the disk is full"
        );
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
