//! The audit spool's frame reader (REL-1): any bytes, read as the replay of a spool file reads
//! them (frames, checksums, what follows them) and as one frame's payload (the records' binary
//! form). It must read records or stop, never panic or allocate without bound.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = warden_store::fuzz_spool_file(data);
});
