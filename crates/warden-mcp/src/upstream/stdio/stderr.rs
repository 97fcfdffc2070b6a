//! A stdio upstream's stderr, to Warden's log one line at a time — bounded, whatever the child
//! writes (FED-1):
//!
//! - read as bytes and decoded lossily: a byte that is not UTF-8 is shown as `�`, and the pipe
//!   is read to its end (a child whose stderr Warden stopped reading would die of `SIGPIPE` at
//!   its next write);
//! - a line is logged up to [`MAX_LINE`] bytes; the rest of a longer one is dropped and its
//!   length said (1 GiB without a newline was held whole, then logged as one line);
//! - at most [`LINES_PER_WINDOW`] lines per [`WINDOW`] per upstream are logged; the others
//!   are counted and one line says how many were suppressed (a flood of 1 GB of lines made
//!   a gigabyte of log and nine seconds of CPU).

use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt as _};
use warden_core::name::Name;

/// The longest stderr line logged whole.
pub(super) const MAX_LINE: usize = 8 * 1024;
/// Lines logged per upstream and window.
pub(super) const LINES_PER_WINDOW: u32 = 100;
/// The window of [`LINES_PER_WINDOW`].
pub(super) const WINDOW: Duration = Duration::from_secs(1);

/// One upstream's stderr, as lines.
#[derive(Debug)]
struct Lines {
    upstream: Name,
    line: Vec<u8>,
    /// Bytes of the current line past [`MAX_LINE`], dropped.
    cut: usize,
    window: Instant,
    logged: u32,
    suppressed: u64,
}

impl Lines {
    fn new(upstream: Name) -> Self {
        Self {
            upstream,
            line: Vec::with_capacity(256),
            cut: 0,
            window: Instant::now(),
            logged: 0,
            suppressed: 0,
        }
    }

    fn take(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while !rest.is_empty() {
            match rest.iter().position(|&b| b == b'\n') {
                Some(end) => {
                    self.append(rest.get(..end).unwrap_or_default());
                    self.end_line();
                    rest = rest.get(end + 1..).unwrap_or_default();
                }
                None => {
                    self.append(rest);
                    rest = &[];
                }
            }
        }
    }

    fn append(&mut self, bytes: &[u8]) {
        let room = MAX_LINE.saturating_sub(self.line.len());
        let (kept, dropped) = bytes.split_at(bytes.len().min(room));
        self.line.extend_from_slice(kept);
        self.cut += dropped.len();
    }

    fn end_line(&mut self) {
        let now = Instant::now();
        if now.duration_since(self.window) >= WINDOW {
            self.summarise();
            self.window = now;
            self.logged = 0;
        }
        if self.logged < LINES_PER_WINDOW {
            self.logged += 1;
            let text = String::from_utf8_lossy(&self.line);
            let text = text.trim_end_matches('\r');
            if self.cut > 0 {
                tracing::info!(upstream = %self.upstream, "{text}… ({} more bytes of this line cut)", self.cut);
            } else {
                tracing::info!(upstream = %self.upstream, "{text}");
            }
        } else {
            self.suppressed += 1;
        }
        self.line.clear();
        self.cut = 0;
    }

    /// Says how many lines were suppressed, if any.
    fn summarise(&mut self) {
        if self.suppressed > 0 {
            tracing::warn!(
                upstream = %self.upstream,
                suppressed = self.suppressed,
                "{} stderr lines of the upstream suppressed: more than {LINES_PER_WINDOW} in {}s",
                self.suppressed,
                WINDOW.as_secs()
            );
            metrics::counter!("warden_upstream_stderr_suppressed_total", "upstream" => self.upstream.to_string())
                .increment(self.suppressed);
            self.suppressed = 0;
        }
    }

    /// The end of the stream: a last line without its newline, and what was suppressed.
    fn finish(&mut self) {
        if !self.line.is_empty() || self.cut > 0 {
            self.end_line();
        }
        self.summarise();
    }
}

/// Logs `stderr` of `upstream` until it ends.
pub(super) async fn log(upstream: Name, mut stderr: impl AsyncRead + Unpin) {
    let mut lines = Lines::new(upstream);
    let mut buf = vec![0u8; 64 * 1024];
    let mut tick = tokio::time::interval(WINDOW);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            read = stderr.read(&mut buf) => match read {
                Ok(0) | Err(_) => break,
                Ok(n) => lines.take(buf.get(..n).unwrap_or_default()),
            },
            // A flood that stopped is summarised without waiting for another line.
            _ = tick.tick() => {
                if Instant::now().duration_since(lines.window) >= WINDOW {
                    lines.summarise();
                }
            }
        }
    }
    lines.finish();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines() -> Lines {
        Lines::new(Name::new("up").unwrap_or_else(|_| unreachable!()))
    }

    #[test]
    fn a_long_line_is_cut_and_a_flood_is_counted() {
        let mut l = lines();
        l.take(&vec![b'x'; 3 * MAX_LINE]);
        assert_eq!((l.line.len(), l.cut), (MAX_LINE, 2 * MAX_LINE));
        l.take(b"\n");
        assert_eq!((l.line.len(), l.cut, l.logged), (0, 0, 1));
        l.take(&b"y\n".repeat(LINES_PER_WINDOW as usize + 50));
        assert_eq!(l.logged, LINES_PER_WINDOW);
        assert_eq!(l.suppressed, 51);
        l.finish();
        assert_eq!(l.suppressed, 0, "said once");
    }

    #[test]
    fn bytes_that_are_not_utf8_are_taken_like_any_other() {
        let mut l = lines();
        l.take(b"before \xff after\nnext\n");
        assert_eq!(l.logged, 2);
    }
}
