//! golem-evals' tests, one module per subject, in one test binary: each binary links golem
//! and its providers, so one binary instead of one per file keeps a build after a change
//! short.

#[path = "../common/mod.rs"]
mod common;
/// llama.cpp's server with a small real model, started once for the binary.
#[path = "../../../tests/llama/server.rs"]
mod llama;

mod cassette;
mod cassette_llama;
mod dataset;
mod evaluators;
#[cfg(feature = "prices")]
mod prices;
mod report;
mod runner;
