//! The `warden` binary: a thin main over the library, so tests start exactly what users start.

fn main() -> std::process::ExitCode {
    warden::main()
}
