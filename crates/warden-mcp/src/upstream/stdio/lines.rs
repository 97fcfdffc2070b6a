//! A stdio upstream's stdout as JSON-RPC messages, one per line, never holding more than
//! [`MAX_MESSAGE`] bytes of one. A longer line is dropped as it is read; what it answered is
//! told at once: while the line goes by, its top-level `id` is picked out, so the request it
//! answers can be answered with the real reason instead of waiting out its timeout.

use tokio::io::{AsyncBufRead, AsyncBufReadExt as _};

/// The largest message taken from a stdio upstream (as rmcp's own stdio transport).
pub(crate) const MAX_MESSAGE: usize = 16 * 1024 * 1024;

/// What a read gave.
#[derive(Debug, PartialEq)]
pub(super) enum Line {
    /// A whole line, without its newline.
    Whole(Vec<u8>),
    /// A line longer than the limit, dropped: its length and its top-level `id` when it had one
    /// (as JSON: a number or a string).
    TooLong {
        bytes: usize,
        id: Option<serde_json::Value>,
    },
}

/// Reads lines of at most `limit` bytes from `read`.
#[derive(Debug)]
pub(super) struct Lines<R> {
    read: R,
    limit: usize,
    line: Vec<u8>,
    /// Set while the rest of a line longer than the limit is dropped.
    dropping: Option<(usize, IdScanner)>,
}

impl<R: AsyncBufRead + Unpin> Lines<R> {
    pub(super) fn new(read: R, limit: usize) -> Self {
        Self {
            read,
            limit,
            line: Vec::new(),
            dropping: None,
        }
    }

    /// The next line; `None` at the end of the stream (or when it cannot be read).
    /// Cancel-safe: a read cut short resumes where it stopped.
    pub(super) async fn next(&mut self) -> Option<Line> {
        loop {
            let available = match self.read.fill_buf().await {
                Ok([]) | Err(_) => return None,
                Ok(available) => available,
            };
            let newline = available.iter().position(|&b| b == b'\n');
            let take = newline.map_or(available.len(), |at| at + 1);
            let chunk = available.get(..take).unwrap_or_default();
            let body = newline.map_or(chunk, |at| chunk.get(..at).unwrap_or_default());
            let done = match &mut self.dropping {
                Some((bytes, scanner)) => {
                    *bytes += body.len();
                    scanner.feed(body);
                    newline.is_some()
                }
                None if self.line.len() + body.len() > self.limit => {
                    let mut scanner = IdScanner::default();
                    scanner.feed(&self.line);
                    scanner.feed(body);
                    self.dropping = Some((self.line.len() + body.len(), scanner));
                    self.line = Vec::new();
                    newline.is_some()
                }
                None => {
                    self.line.extend_from_slice(body);
                    newline.is_some()
                }
            };
            self.read.consume(take);
            if done {
                return Some(match self.dropping.take() {
                    Some((bytes, scanner)) => Line::TooLong {
                        bytes,
                        id: scanner.id(),
                    },
                    None => Line::Whole(std::mem::take(&mut self.line)),
                });
            }
        }
    }
}

/// Picks the value of the top-level `id` out of a JSON object read in pieces, keeping no more
/// than that value.
#[derive(Debug, Default)]
pub(super) struct IdScanner {
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// The top-level key being read, or the last one read.
    key: Vec<u8>,
    reading_key: bool,
    /// After a top-level `"id":`: its value so far.
    value: Option<Vec<u8>>,
    found: Option<Vec<u8>>,
    expect_key: bool,
}

/// The longest `id` value kept.
const MAX_ID: usize = 256;

impl IdScanner {
    pub(super) fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if let Some(value) = &mut self.value {
                let ends = !self.in_string && self.depth == 1 && matches!(b, b',' | b'}');
                if ends {
                    self.found = self.value.take();
                } else if value.len() < MAX_ID {
                    value.push(b);
                }
            }
            if self.in_string {
                if self.reading_key && (b != b'"' || self.escaped) && self.key.len() < MAX_ID {
                    self.key.push(b);
                }
                if self.escaped {
                    self.escaped = false;
                } else if b == b'\\' {
                    self.escaped = true;
                } else if b == b'"' {
                    self.in_string = false;
                    self.reading_key = false;
                }
                continue;
            }
            match b {
                b'"' => {
                    self.in_string = true;
                    if self.depth == 1 && self.expect_key {
                        self.reading_key = true;
                        self.key.clear();
                    }
                }
                b'{' | b'[' => {
                    self.depth += 1;
                    if self.depth == 1 {
                        self.expect_key = true;
                    }
                }
                b'}' | b']' => self.depth = self.depth.saturating_sub(1),
                b':' if self.depth == 1 => {
                    self.expect_key = false;
                    if self.key == b"id" && self.found.is_none() {
                        self.value = Some(Vec::new());
                    }
                }
                b',' if self.depth == 1 => self.expect_key = true,
                _ => {}
            }
        }
    }

    /// The `id` found, as JSON, when it is a number or a string.
    pub(super) fn id(&self) -> Option<serde_json::Value> {
        let raw = self.found.as_ref().or(self.value.as_ref())?;
        let text = std::str::from_utf8(raw).ok()?.trim();
        match serde_json::from_str::<serde_json::Value>(text).ok()? {
            v @ (serde_json::Value::Number(_) | serde_json::Value::String(_)) => Some(v),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn id_of(text: &str, pieces: usize) -> Option<serde_json::Value> {
        let mut scanner = IdScanner::default();
        let bytes = text.as_bytes();
        let size = bytes.len().div_ceil(pieces).max(1);
        for chunk in bytes.chunks(size) {
            scanner.feed(chunk);
        }
        scanner.id()
    }

    #[test]
    fn the_top_level_id_is_found_wherever_it_is_and_in_pieces() {
        for pieces in [1, 3, 50] {
            assert_eq!(
                id_of(
                    r#"{"jsonrpc":"2.0","id":7,"result":{"id":"inner"}}"#,
                    pieces
                ),
                Some(json!(7))
            );
            assert_eq!(
                id_of(
                    r#"{"result":{"content":[{"id":1,"text":"a \"id\": 9"}]},"jsonrpc":"2.0","id":"req-3"}"#,
                    pieces
                ),
                Some(json!("req-3"))
            );
        }
        assert_eq!(id_of(r#"{"method":"notifications/progress"}"#, 1), None);
    }

    #[tokio::test]
    async fn a_line_past_the_limit_is_dropped_with_its_length_and_id() {
        let big = format!(
            r#"{{"jsonrpc":"2.0","id":42,"result":"{}"}}"#,
            "z".repeat(100)
        );
        let text = format!("{{\"a\":1}}\n{big}\n{{\"b\":2}}\n");
        let mut lines = Lines::new(tokio::io::BufReader::with_capacity(16, text.as_bytes()), 64);
        assert_eq!(
            lines.next().await,
            Some(Line::Whole(br#"{"a":1}"#.to_vec()))
        );
        assert_eq!(
            lines.next().await,
            Some(Line::TooLong {
                bytes: big.len(),
                id: Some(json!(42))
            })
        );
        assert_eq!(
            lines.next().await,
            Some(Line::Whole(br#"{"b":2}"#.to_vec()))
        );
        assert_eq!(lines.next().await, None);
    }
}
