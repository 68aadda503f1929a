//! Checks Gemini bodies against Google's official Python SDK (PyPI `google-genai`, pinned in
//! `golem/tests/gemini/requirements.txt`), installed by `golem/tests/gemini/install.sh` under
//! the cargo target directory. A test that cannot install it fails; none is skipped.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;

use serde_json::{Value, json};

fn here() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/gemini")
}

/// The cargo target directory these tests were built in (`CARGO_TARGET_TMPDIR` is its
/// `tmp`).
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is inside the target directory")
        .to_path_buf()
}

/// The venv's Python, installed once per test process.
fn python() -> PathBuf {
    static DONE: Mutex<bool> = Mutex::new(false);
    let mut done = DONE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !*done {
        let script = here().join("install.sh");
        let output = Command::new("bash")
            .arg(&script)
            .arg(target_dir())
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|error| panic!("cannot run {}: {error}", script.display()));
        assert!(
            output.status.success(),
            "{} failed ({}); the Gemini tests need python3 with venv and the PyPI registry:\n{}",
            script.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        *done = true;
    }
    target_dir().join("gemini-venv/bin/python")
}

/// The validator: one `validate.py` per test process, answering a line per line.
struct Validator {
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    _child: Child,
}

/// Validates request bodies and response bodies against the SDK's types; panics with what
/// is wrong.
pub fn validate(requests: &[Value], responses: &[Value]) {
    static VALIDATOR: Mutex<Option<Validator>> = Mutex::new(None);
    let items: Vec<Value> = requests
        .iter()
        .map(|body| json!({"kind": "request", "body": body}))
        .chain(
            responses
                .iter()
                .map(|body| json!({"kind": "response", "body": body})),
        )
        .collect();
    let mut validator = VALIDATOR
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let validator = validator.get_or_insert_with(|| {
        let mut child = Command::new(python())
            .arg(here().join("validate.py"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the venv's python starts");
        Validator {
            stdin: child.stdin.take().expect("stdin"),
            stdout: BufReader::new(child.stdout.take().expect("stdout")),
            _child: child,
        }
    });
    let mut line = serde_json::to_string(&items).unwrap();
    line.push('\n');
    validator
        .stdin
        .write_all(line.as_bytes())
        .and_then(|()| validator.stdin.flush())
        .expect("validate.py takes the bodies");
    let mut answer = String::new();
    validator
        .stdout
        .read_line(&mut answer)
        .expect("validate.py answers");
    let errors: Vec<String> = serde_json::from_str(&answer)
        .unwrap_or_else(|error| panic!("validate.py answered {answer:?}: {error}"));
    assert!(
        errors.is_empty(),
        "bodies that google-genai's types refuse:\n{}",
        errors.join("\n")
    );
}
