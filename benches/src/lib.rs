//! What golem's benchmarks share: the three-turn scenario, an OpenAI-compatible loopback
//! server answering recorded completions, the raw reqwest floor, and the measuring helpers
//! (thread CPU time, resident memory, a counting allocator).
//!
//! The benchmarks themselves are in `benches/`; results and how to run them are in
//! `docs/benchmarks.md`.

pub mod alloc;
pub mod floor;
pub mod scenario;
pub mod server;
pub mod sse_server;
pub mod sys;

/// Whether the binary runs as `cargo bench` runs it, and not under `cargo test --benches`
/// or criterion's `--profile-time`: the summaries after criterion's own output run only then.
pub fn is_bench_run() -> bool {
    let mut bench = false;
    for arg in std::env::args() {
        if arg.starts_with("--profile-time") {
            return false;
        }
        bench |= arg == "--bench";
    }
    bench
}
