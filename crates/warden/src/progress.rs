//! Progress of long CLI work (`warden bench fill-audit`, long `warden audit` listings,
//! `warden audit verify`): a bar on stderr while a person watches, and nothing otherwise.
//!
//! The bar is drawn only when stderr is a terminal, so logs and scripts never see it, and
//! never for a command whose output is for programs (`-o json`), whatever the terminal: a
//! program reading that output may read stderr too, and the JSON Lines of `warden audit` are
//! printed as they are read, line by line, where a bar would be drawn over them. Short work
//! gets no bar either.

use std::io::IsTerminal as _;

use crate::cli::Output;

/// Work below this many items is over before a bar would help.
const WORTH_A_BAR: u64 = 10_000;

/// A progress bar, or nothing.
#[derive(Debug)]
pub(crate) struct Progress(Option<indicatif::ProgressBar>);

/// Whether `total` items of work printed as `output` (`None`: the command has no output
/// format) get a bar, when stderr is or is not a terminal.
fn wanted(total: u64, output: Option<Output>, stderr_is_terminal: bool) -> bool {
    total >= WORTH_A_BAR && stderr_is_terminal && output != Some(Output::Json)
}

impl Progress {
    /// A bar for `total` items of `what` (`records`) of a command without an output format,
    /// when stderr is a terminal and the work is long enough.
    pub(crate) fn new(total: u64, what: &'static str) -> Self {
        Self::drawn(
            wanted(total, None, std::io::stderr().is_terminal()),
            total,
            what,
        )
    }

    /// [`Progress::new`] for a command that prints as `output`: never a bar for JSON.
    pub(crate) fn for_output(total: u64, what: &'static str, output: Output) -> Self {
        let shown = wanted(total, Some(output), std::io::stderr().is_terminal());
        Self::drawn(shown, total, what)
    }

    fn drawn(shown: bool, total: u64, what: &'static str) -> Self {
        if !shown {
            return Self(None);
        }
        let bar = indicatif::ProgressBar::with_draw_target(
            Some(total),
            indicatif::ProgressDrawTarget::stderr(),
        );
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{wide_bar} {human_pos}/{human_len} {msg} ({elapsed}, {eta} left)",
        ) {
            bar.set_style(style);
        }
        bar.set_message(what);
        Self(Some(bar))
    }

    /// Whether a bar is drawn.
    pub(crate) fn shown(&self) -> bool {
        self.0.is_some()
    }

    /// `done` items so far.
    pub(crate) fn set(&self, done: u64) {
        if let Some(bar) = &self.0 {
            bar.set_position(done);
        }
    }

    /// Takes the bar off the screen.
    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_output_never_gets_a_bar_whatever_the_terminal() {
        for terminal in [true, false] {
            assert!(!wanted(1_000_000, Some(Output::Json), terminal));
        }
        assert!(!Progress::for_output(1_000_000, "records", Output::Json).shown());
    }

    #[test]
    fn long_work_gets_a_bar_on_a_terminal_only() {
        for output in [None, Some(Output::Table), Some(Output::Yaml)] {
            assert!(wanted(WORTH_A_BAR, output, true), "{output:?}");
            assert!(!wanted(WORTH_A_BAR, output, false), "{output:?}");
            assert!(!wanted(WORTH_A_BAR - 1, output, true), "{output:?}");
        }
    }
}
