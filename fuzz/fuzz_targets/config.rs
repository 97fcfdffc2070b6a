//! The YAML configuration loader (REL-1): any text, parsed as `warden apply -f` parses a file,
//! then validated as a whole. It must answer with resources or errors, never panic or hang.
#![no_main]

use libfuzzer_sys::fuzz_target;
use warden_core::config::{Config, parse_documents};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(docs) = parse_documents("fuzz.yaml", text) {
        let _ = Config::validate(docs);
    }
});
