//! Running a server's install script once per process: the engine tests' servers are
//! installed, pinned, under the target directory by scripts of the repository.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, PoisonError};

/// Runs `script` with `target_dir` as its argument, once per process for each script.
///
/// # Panics
/// If the script fails; the message says it `needs` (e.g. "node/npm and the npm registry").
pub fn run_once(script: &Path, target_dir: &Path, needs: &str) {
    static DONE: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);
    let mut done = DONE.lock().unwrap_or_else(PoisonError::into_inner);
    let done = done.get_or_insert_with(HashSet::new);
    if done.contains(script) {
        return;
    }
    let output = Command::new("bash")
        .arg(script)
        .arg(target_dir)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", script.display()));
    assert!(
        output.status.success(),
        "{} failed ({}); it needs {needs}:\n{}",
        script.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    done.insert(script.to_path_buf());
}
