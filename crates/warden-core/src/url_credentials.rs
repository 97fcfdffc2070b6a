//! Credentials written into URLs (`https://user:password@host/…`, or a token as the user, as
//! git forges take it): found, removed and redacted in one place, so that no message, log
//! line, API answer or console page shows one (REL-4).

/// Where the user information of the first `scheme://` URL of `text` starting at `from` is:
/// the byte range of `user:password` (without the `@`), and where the authority ends.
fn userinfo(text: &str, from: usize) -> Option<(usize, usize, usize)> {
    let scheme_end = text.get(from..)?.find("://")? + from + 3;
    let tail = text.get(scheme_end..)?;
    let authority_len = tail
        .find(|c: char| {
            matches!(c, '/' | '?' | '#' | '\'' | '"' | '`' | '<' | '>') || c.is_whitespace()
        })
        .unwrap_or(tail.len());
    let authority = tail.get(..authority_len)?;
    match authority.rfind('@') {
        Some(at) => Some((scheme_end, scheme_end + at, scheme_end + authority_len)),
        None => Some((scheme_end, scheme_end, scheme_end + authority_len)),
    }
}

/// `text` with the user information of every `scheme://` URL in it replaced by `***`
/// (`http://***@host/mcp`). Text without any comes back unchanged.
pub fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut done = 0;
    while let Some((start, at, end)) = userinfo(text, done) {
        out.push_str(text.get(done..start).unwrap_or_default());
        if at > start {
            out.push_str("***");
            out.push_str(text.get(at..end).unwrap_or_default());
        } else {
            out.push_str(text.get(start..end).unwrap_or_default());
        }
        done = end;
    }
    out.push_str(text.get(done..).unwrap_or_default());
    out
}

/// Whether `url` carries user information (`user@`, `user:password@`).
pub fn has_credentials(url: &str) -> bool {
    userinfo(url, 0).is_some_and(|(start, at, _)| at > start)
}

/// `url` without its user information, and that information percent-decoded
/// (`user:password`), when it has any.
pub fn split(url: &str) -> Option<(String, String)> {
    let (start, at, _) = userinfo(url, 0)?;
    if at == start {
        return None;
    }
    let info = url.get(start..at)?;
    let bare = format!("{}{}", url.get(..start)?, url.get(at + 1..)?);
    Some((bare, percent_decode(info)))
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (b, hex) {
            (b'%', Some(decoded)) => {
                out.push(decoded);
                i += 3;
            }
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_url_in_a_text_loses_its_user_information_and_nothing_else() {
        assert_eq!(
            redact("cannot connect to http://svc:secretproj_pw_777@127.0.0.1:18801/mcp: refused"),
            "cannot connect to http://***@127.0.0.1:18801/mcp: refused"
        );
        assert_eq!(
            redact("`https://ghp_token@github.com/a/b.git` and postgres://u:p@h/db"),
            "`https://***@github.com/a/b.git` and postgres://***@h/db"
        );
        for plain in [
            "no url here",
            "http://127.0.0.1:8600/mcp",
            "mailto user@example.com",
            "http://h/path@not-userinfo",
            "",
        ] {
            assert_eq!(redact(plain), plain);
        }
    }

    #[test]
    fn credentials_are_found_and_split_off_decoded() {
        assert!(has_credentials("http://a:b@h/mcp"));
        assert!(has_credentials("https://token@h/mcp"));
        assert!(!has_credentials("http://h/mcp?x=a@b"));
        assert_eq!(
            split("http://svc:p%40ss@127.0.0.1:1/mcp"),
            Some(("http://127.0.0.1:1/mcp".into(), "svc:p@ss".into()))
        );
        assert_eq!(split("http://127.0.0.1:1/mcp"), None);
    }
}
