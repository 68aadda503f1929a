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
pub mod sys;
