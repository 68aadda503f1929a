//! The real MCP servers the tests start: installed, pinned, by `tests/mcp/install.sh` under
//! the cargo target directory (once per target directory; later runs find them there).
//! A test that cannot get its server fails; none is skipped.

#![allow(dead_code, unreachable_pub)]

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The repository's root: the nearest folder above the test's package (`tests/`,
/// `examples/mcp/`) that holds `tests/mcp/install.sh`.
fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|dir| dir.join("tests/mcp/install.sh").is_file())
        .expect("the package is inside the repository")
        .to_path_buf()
}

/// The cargo target directory these tests were built in (`CARGO_TARGET_TMPDIR` is its
/// `tmp`).
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is inside the target directory")
        .to_path_buf()
}

/// Runs the install script for `what` (`node` or `python`), once per test process.
fn install(what: &str) {
    static DONE: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut done = DONE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if done.iter().any(|installed| installed == what) {
        return;
    }
    let script = repository().join("tests/mcp/install.sh");
    let output = Command::new("bash")
        .arg(&script)
        .arg(target_dir())
        .arg(what)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", script.display()));
    assert!(
        output.status.success(),
        "{} {what} failed ({}); the MCP tests need node/npm and python3 with venv, and the \
         npm and PyPI registries:\n{}",
        script.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    done.push(what.to_owned());
}

/// `@modelcontextprotocol/server-everything`'s entry point, installed if need be.
pub fn everything_server() -> PathBuf {
    install("node");
    let entry = target_dir()
        .join("mcp-node/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        entry.is_file(),
        "{} is missing after the install",
        entry.display()
    );
    entry
}

/// The command that starts the reference server on stdio (`node …/index.js stdio`).
pub fn everything_command() -> Command {
    let mut command = Command::new("node");
    command.arg(everything_server()).arg("stdio");
    command
}

/// The reference server on stdio behind a launcher script that logs each message it
/// forwards to the server on its stderr, as wrappers and proxies do. A launcher whose
/// stderr is a closed pipe dies at its next log line (SIGPIPE), and the server with it.
pub fn everything_behind_a_logging_launcher() -> Command {
    let launcher = r#"
        while IFS= read -r message; do
            printf 'launcher: forwarding %.60s\n' "$message" >&2
            printf '%s\n' "$message"
        done | exec node "$1" stdio
    "#;
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(launcher)
        .arg("launcher")
        .arg(everything_server());
    command
}

/// The Python server (`tests/mcp/server.py`, on the `mcp` package) on streamable HTTP at
/// 127.0.0.1; killed when dropped.
#[derive(Debug)]
pub struct PythonServer {
    child: Child,
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
}

impl PythonServer {
    /// Installs the venv if need be, starts the server on a free port, and waits until it
    /// accepts connections.
    pub fn start() -> PythonServer {
        PythonServer::start_with(&[])
    }

    /// As [`start`](Self::start), with the server's options (`--looping-pages`).
    pub fn start_with(options: &[&str]) -> PythonServer {
        install("python");
        let python = target_dir().join("mcp-venv/bin/python");
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(&python)
            .arg(repository().join("tests/mcp/server.py"))
            .arg(port.to_string())
            .args(options)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {}: {error}", python.display()));
        let mut server = PythonServer {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        };
        let started = Instant::now();
        while TcpStream::connect((Ipv4Addr::LOCALHOST, port)).is_err() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("the Python MCP server exited before listening: {status}");
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "the Python MCP server did not listen on port {port} within 60 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        server
    }

    /// Kills the server now (SIGKILL) and waits for it to exit.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for PythonServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Kills the process `pid` (SIGKILL), as a crash would.
pub fn kill_process(pid: u32) {
    let status = Command::new("kill")
        .arg("-KILL")
        .arg(pid.to_string())
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill -KILL {pid}: {status}");
}

/// Whether the process `pid` is gone (exited and reaped, or a zombie no one waited for).
pub fn process_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}
