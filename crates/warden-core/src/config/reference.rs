//! `${env:NAME}` and `${secret:NAME}` references in configuration values (FED-3): how they are
//! written. They are resolved where they are used (`warden_runtime::secrets`).

/// Checks a configuration value that may hold `${env:NAME}` / `${secret:NAME}` references.
pub fn check_reference(value: &str) -> Result<(), String> {
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        let after = rest.get(start + 2..).unwrap_or_default();
        let Some(end) = after.find('}') else {
            return Err(format!("`{value}` has an unterminated `${{`"));
        };
        let inner = after.get(..end).unwrap_or_default();
        let ok = inner
            .strip_prefix("env:")
            .or_else(|| inner.strip_prefix("secret:"))
            .is_some_and(|n| {
                !n.is_empty()
                    && n.chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
            });
        if !ok {
            return Err(format!(
                "`${{{inner}}}` is not a reference; write `${{env:NAME}}` or `${{secret:NAME}}`"
            ));
        }
        rest = after.get(end + 1..).unwrap_or_default();
    }
    Ok(())
}

/// Whether `value` is exactly one `${…}` reference and nothing else: `${env:X}sk-…` carries a
/// literal too.
pub fn is_sole_reference(value: &str) -> bool {
    value.starts_with("${") && value.ends_with('}') && value.matches("${").count() == 1
}
