//! What the engine test files share: where the target directory is, the service binary, and
//! a fresh side-effect file per test.

use std::path::{Path, PathBuf};

use golem_restate_engine_tests::agent::Effects;

/// The service binary the tests start, kill and restart.
pub(crate) const SERVICE: &str = env!("CARGO_BIN_EXE_golem-restate-test-service");

/// The cargo target directory (`CARGO_TARGET_TMPDIR` is its `tmp`).
pub(crate) fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is inside the target directory")
        .to_path_buf()
}

/// A side-effect file of its own for the test `name`, empty.
pub(crate) fn effects(name: &str) -> Effects {
    Effects::fresh(Path::new(env!("CARGO_TARGET_TMPDIR")), "restate", name)
}
