//! The `warden` binary: a thin main over the library, so tests start exactly what users start.

/// mimalloc instead of the system allocator: the call path allocates and frees many small
/// objects across threads (JSON values, headers, futures); glibc's malloc was a fifth of the
/// server's CPU at 64 clients. Measured in docs/benchmarks.md. Its arenas are committed on
/// demand (a compile-time default set in .cargo/config.toml), so freed memory is returned.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    warden::main()
}
