//! The small things every Warden crate but the pure core may use: the one reading of the
//! system clock ([`SystemClock`], the core's `Clock` port), and the resolution of upstream
//! secrets ([`Secrets`]). Code that decides takes a `Clock`; only what wires a process
//! together constructs a `SystemClock`.

mod clock;
mod secrets;

pub use clock::SystemClock;
pub use secrets::Secrets;
