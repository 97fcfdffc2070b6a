//! Progress of long CLI work (`warden bench fill-audit`, long `warden audit` listings,
//! `warden audit verify`): a bar on stderr while a person watches, and nothing otherwise.
//!
//! The bar is drawn only when stderr is a terminal, so logs and scripts never see it, and
//! never over output that goes to the same terminal line by line (JSON Lines printed as they
//! are read): a command that prints as it goes asks for a bar only when stdout is not a
//! terminal. Short work gets no bar either.

use std::io::IsTerminal as _;

/// Work below this many items is over before a bar would help.
const WORTH_A_BAR: u64 = 10_000;

/// A progress bar, or nothing.
#[derive(Debug)]
pub(crate) struct Progress(Option<indicatif::ProgressBar>);

impl Progress {
    /// A bar for `total` items of `what` (`records`), when stderr is a terminal and the work
    /// is long enough.
    pub(crate) fn new(total: u64, what: &'static str) -> Self {
        if total < WORTH_A_BAR || !std::io::stderr().is_terminal() {
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

    /// [`Progress::new`] for a command that writes to stdout as it goes: no bar when stdout is
    /// the same terminal.
    pub(crate) fn beside_stdout(total: u64, what: &'static str) -> Self {
        if std::io::stdout().is_terminal() {
            return Self(None);
        }
        Self::new(total, what)
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
    fn short_work_and_work_off_a_terminal_get_no_bar() {
        // The test harness's stderr is a pipe or a terminal; either way short work is barless.
        assert!(!Progress::new(WORTH_A_BAR - 1, "records").shown());
        if !std::io::stderr().is_terminal() {
            assert!(!Progress::new(1_000_000, "records").shown());
        }
    }
}
