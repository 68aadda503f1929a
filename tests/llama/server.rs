//! llama.cpp's own HTTP server with a small real instruction model, for the wire tests:
//! installed, pinned, by `tests/llama/install.sh` under the cargo target directory (once per
//! target directory; later runs find it there), started once per test process on a free
//! loopback port. A test that cannot get the server fails; none is skipped.

#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The repository's root: the folder above this package.
fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests package is inside the repository")
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

/// The running server; it stops when the test process ends (its standard input closes).
#[derive(Debug)]
pub struct LlamaServer {
    child: Child,
    /// Held open for the server's life: the server exits when it closes.
    _stdin: ChildStdin,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
}

/// The server of this test process, installed and started on first use.
pub fn server() -> &'static LlamaServer {
    static SERVER: OnceLock<LlamaServer> = OnceLock::new();
    SERVER.get_or_init(LlamaServer::start)
}

impl LlamaServer {
    fn start() -> LlamaServer {
        let script = repository().join("tests/llama/install.sh");
        let output = Command::new("bash")
            .arg(&script)
            .arg(target_dir())
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|error| panic!("cannot run {}: {error}", script.display()));
        assert!(
            output.status.success(),
            "{} failed ({}); the llama.cpp tests need python3 with venv and the PyPI \
             registry:\n{}",
            script.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|listener| listener.local_addr())
            .expect("a free port")
            .port();
        let mut child = Command::new(target_dir().join("llama-venv/bin/python"))
            .arg(repository().join("tests/llama/server.py"))
            .arg(target_dir().join("llama-model/model.gguf"))
            .arg(port.to_string())
            .arg(repository().join("tests/llama/chatml-tools.jinja"))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the llama.cpp server starts");
        let stdin = child.stdin.take().expect("piped stdin");
        // The server's log goes to a file, read back if it never gets ready.
        let log_path = target_dir().join(format!("llama-server-{port}.log"));
        let mut stderr = BufReader::new(child.stderr.take().expect("piped stderr"));
        let log = log_path.clone();
        std::thread::spawn(move || {
            let mut file = std::fs::File::create(&log).expect("the log file");
            let mut line = String::new();
            while stderr.read_line(&mut line).is_ok_and(|read| read > 0) {
                let _ = file.write_all(line.as_bytes());
                line.clear();
            }
        });
        let url = format!("http://127.0.0.1:{port}");
        let ready = wait_until_healthy(port, &mut child);
        assert!(
            ready,
            "the llama.cpp server at {url} did not get ready:\n{}",
            std::fs::read_to_string(&log_path).unwrap_or_default()
        );
        LlamaServer {
            child,
            _stdin: stdin,
            url,
        }
    }
}

/// Polls `GET /health` until it answers 200 (the model is loaded), the server exits, or
/// five minutes pass (a busy 2-core machine loads the model in seconds).
fn wait_until_healthy(port: u16, child: &mut Child) -> bool {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(300) {
        if child.try_wait().ok().flatten().is_some() {
            return false;
        }
        if healthy(port).unwrap_or(false) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    false
}

/// One `GET /health`: whether its status is 200.
fn healthy(port: u16) -> std::io::Result<bool> {
    let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, port))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
    let mut status = String::new();
    BufReader::new(stream).read_line(&mut status)?;
    Ok(status.split_whitespace().nth(1) == Some("200"))
}
