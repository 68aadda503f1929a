//! A throwaway Postgres server for the thread store's tests: started once per test process by
//! `tests/postgres/start.sh` (which installs Debian's `postgresql` when its binaries are
//! missing) on a free loopback port, its cluster under the cargo target directory, stopped
//! and removed when the test process ends. A test that cannot get the server fails; none is
//! skipped.

#![allow(dead_code, unreachable_pub)]

use std::io::{BufRead, BufReader, Read};
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use sqlx::{Connection, Executor, PgConnection};

/// How often the server is started on a fresh port when the one it was given was taken in
/// the meantime.
const START_ATTEMPTS: u32 = 3;

/// The running server; it stops when the test process ends (the script's standard input
/// closes).
#[derive(Debug)]
pub struct PostgresServer {
    child: Child,
    /// Held open for the server's life: the script stops the server when it closes.
    _stdin: ChildStdin,
    /// `postgres://postgres@127.0.0.1:PORT/postgres`, the maintenance database.
    pub url: String,
}

/// The server of this test process, started on first use.
///
/// # Panics
/// If it cannot start.
pub fn server() -> &'static PostgresServer {
    static SERVER: OnceLock<PostgresServer> = OnceLock::new();
    SERVER.get_or_init(|| {
        let mut failures = Vec::new();
        for _ in 0..START_ATTEMPTS {
            match PostgresServer::start() {
                Ok(server) => return server,
                Err(failure) => failures.push(failure),
            }
        }
        panic!(
            "the Postgres server did not start (the script installs Debian's postgresql \
             with apt-get when it is missing):\n{}",
            failures.join("\n")
        )
    })
}

/// A new, empty database on the server, for one test: its URL.
///
/// # Panics
/// If it cannot be created.
pub async fn database() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let server = server();
    let name = format!("golem_test_{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let mut connection = PgConnection::connect(&server.url)
        .await
        .unwrap_or_else(|error| panic!("cannot connect to {}: {error}", server.url));
    connection
        .execute(format!("CREATE DATABASE {name}").as_str())
        .await
        .unwrap_or_else(|error| panic!("cannot create the database {name}: {error}"));
    let (base, _) = server
        .url
        .rsplit_once('/')
        .expect("the URL names a database");
    format!("{base}/{name}")
}

impl PostgresServer {
    fn start() -> Result<PostgresServer, String> {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/postgres/start.sh");
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .and_then(|listener| listener.local_addr())
            .map_err(|error| format!("no free port: {error}"))?
            .port();
        let mut child = Command::new("bash")
            .arg(&script)
            .arg(port.to_string())
            .arg(target_dir())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| format!("cannot run {}: {error}", script.display()))?;
        let stdin = child.stdin.take().expect("piped stdin");
        // The script's messages are kept, to be shown if it fails.
        let log = Arc::new(Mutex::new(String::new()));
        let mut stderr = child.stderr.take().expect("piped stderr");
        let reader = std::thread::spawn({
            let log = Arc::clone(&log);
            move || {
                let mut buffer = [0; 4096];
                while let Ok(read @ 1..) = stderr.read(&mut buffer) {
                    let text = String::from_utf8_lossy(&buffer[..read]);
                    log.lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push_str(&text);
                }
            }
        });
        let mut line = String::new();
        let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
        let _ = stdout.read_line(&mut line);
        if let Some(url) = line.trim_end().strip_prefix("ready ") {
            return Ok(PostgresServer {
                child,
                _stdin: stdin,
                url: url.to_owned(),
            });
        }
        let status = child.wait().map_err(|error| error.to_string())?;
        let _ = reader.join();
        let log = log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Err(format!("{} exited ({status}):\n{log}", script.display()))
    }
}

/// The cargo target directory these tests were built in (`CARGO_TARGET_TMPDIR` is its
/// `tmp`).
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is inside the target directory")
        .to_path_buf()
}
