//! How deeply a YAML text nests flow collections (`[`, `{`), found in one linear pass before
//! the YAML parser sees it: the parser's scanner costs time in the square of that depth
//! (20,000 levels took 1.2 s, 100,000 levels 23.5 s, and a 4 MiB body holds 2,000,000), while
//! its own recursion limit is only checked after. Block nesting (indentation, `- - -`) is
//! refused by the parser at once and needs nothing here.
//!
//! The pass tells quoted scalars and comments apart only roughly (YAML's full rules need the
//! parser), so it is built to never under-count: an opening bracket always counts, inside a
//! quote or a comment too; a closing one inside a quote or comment only closes what was opened
//! in that same quote or comment. So a `]` hidden in a string cannot hide real nesting, and a
//! balanced `[a-z]` in a string costs nothing.

/// The deepest flow nesting a configuration may have.
pub(crate) const MAX_DEPTH: usize = 128;

/// Where `text` first nests flow collections deeper than `max`: its byte offset.
pub(crate) fn too_deep(text: &str, max: usize) -> Option<usize> {
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        Plain,
        Single,
        Double,
        Comment,
    }
    let mut state = State::Plain;
    let mut depth = 0usize;
    // Brackets opened inside the current quote or comment, which its closings may close.
    let mut local = 0usize;
    let mut previous = b'\n';
    let mut escaped = false;
    for (at, &b) in text.as_bytes().iter().enumerate() {
        let token_start = matches!(previous, b' ' | b'\t' | b'\n' | b'\r' | b'[' | b'{' | b',');
        match (state, b) {
            (_, b'[' | b'{') => {
                depth += 1;
                if state != State::Plain {
                    local += 1;
                }
                if depth > max {
                    return Some(at);
                }
            }
            (State::Plain, b']' | b'}') => depth = depth.saturating_sub(1),
            (_, b']' | b'}') if local > 0 => {
                local -= 1;
                depth = depth.saturating_sub(1);
            }
            (State::Plain, b'#') if token_start => (state, local) = (State::Comment, 0),
            (State::Plain, b'\'') if token_start => (state, local) = (State::Single, 0),
            (State::Plain, b'"') if token_start => (state, local) = (State::Double, 0),
            (State::Comment, b'\n') | (State::Single, b'\'') => state = State::Plain,
            (State::Double, b'"') if !escaped => state = State::Plain,
            _ => {}
        }
        escaped = state == State::Double && b == b'\\' && !escaped;
        previous = b;
    }
    None
}

/// The 1-based document (as `---` separates them), line and column of byte `at` of `text`.
pub(crate) fn position(text: &str, at: usize) -> (usize, usize, usize) {
    let before = text.get(..at).unwrap_or(text);
    let mut document = 1;
    let mut line = 1;
    let mut line_start = 0;
    for (i, l) in before.split_inclusive('\n').enumerate() {
        if i > 0 && l.starts_with("---") {
            document += 1;
        }
        if l.ends_with('\n') {
            line += 1;
            line_start += l.len();
        }
    }
    (document, line, at - line_start + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_is_measured_in_flow_collections_outside_and_inside_strings() {
        assert_eq!(too_deep("a: [[1], {b: [2]}]\n", 3), None);
        assert_eq!(too_deep("a: [[[1]]]\n", 2), Some(5));
        // Balanced brackets in strings and comments cost nothing, however many.
        let many = "p: \"[a-z]\"\nq: '[0-9]{3}' # [x]\n".repeat(1000);
        assert_eq!(too_deep(&many, 2), None);
        // A closing bracket hidden in a string cannot hide real nesting.
        let hidden = format!("a: {}\n", "[ \"]\" ".repeat(10));
        assert_eq!(too_deep(&hidden, 5), Some(3 + 5 * 6));
        // Nor can a quote the pass sees where YAML sees none.
        let fake = format!(
            "d: |\n  'unclosed\ne: {}1{}\n",
            "[".repeat(10),
            "]".repeat(10)
        );
        assert!(too_deep(&fake, 5).is_some());
        // An apostrophe inside a word starts no quote.
        assert_eq!(too_deep("a: don't [x]\n", 1), None);
    }

    #[test]
    fn a_position_names_the_document_line_and_column() {
        let text = "kind: User\nname: a\n---\nkind: User\nname: [[b]]\n";
        let at = text.find("[[").unwrap();
        assert_eq!(position(text, at), (2, 5, 7));
        assert_eq!(position("---\nx: [1]\n", 7), (1, 2, 4));
    }
}
