//! What the engine test files share: where the target directory is, the worker binary, a
//! fresh side-effect file per test, and the notes agent's step names.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use golem_restate_engine_tests::agent::Effects;

/// The steps of the notes agent's run, as golem names them (a compatibility promise), each
/// recorded once in the history.
pub(crate) const NAMES: [&str; 7] = [
    "model:1",
    "tool:1:call_1",
    "model:2",
    "tool:2:call_2",
    "model:3",
    "tool:3:call_3",
    "model:4",
];

/// The worker binary the tests start, kill and restart.
pub(crate) const WORKER: &str = env!("CARGO_BIN_EXE_golem-temporal-test-worker");

/// The cargo target directory (`CARGO_TARGET_TMPDIR` is its `tmp`).
pub(crate) fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is inside the target directory")
        .to_path_buf()
}

/// A side-effect file of its own for the test `name`, empty.
pub(crate) fn effects(name: &str) -> Effects {
    Effects::fresh(Path::new(env!("CARGO_TARGET_TMPDIR")), "temporal", name)
}
