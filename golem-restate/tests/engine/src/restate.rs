//! The Restate server, installed by `golem-restate/tests/restate/install.sh` (pinned, under
//! the target directory) and started on free loopback ports in a fresh base directory; and
//! the service process the tests kill and restart. Whoever cannot get a server fails.

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

/// The version the install script pins.
pub const VERSION: &str = "1.7.12";

/// Runs the install script (once per process) into `target_dir` and returns the server's
/// binary.
///
/// # Panics
/// If the install fails (it needs node/npm and the npm registry) or the binary is missing.
pub fn install(target_dir: &Path) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../restate/install.sh");
    crate::install::run_once(&script, target_dir, "node/npm and the npm registry");
    let binary = target_dir.join(format!(
        "restate-node/node_modules/@restatedev/restate-server-{}/bin/restate-server",
        platform()
    ));
    assert!(
        binary.is_file(),
        "{} is missing after the install",
        binary.display()
    );
    binary
}

fn platform() -> &'static str {
    match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => "linux-x64",
        ("linux", "aarch64") => "linux-arm64",
        ("macos", "x86_64") => "darwin-x64",
        ("macos", "aarch64") => "darwin-arm64",
        (os, arch) => panic!("restate-server has no npm package for {os}/{arch}"),
    }
}

/// A free loopback port.
///
/// # Panics
/// If the OS has none.
pub fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// Waits until something listens on `port`, or panics after `within`; `Err` with the exit
/// status when the child exits first.
fn wait_for_port(
    port: u16,
    within: Duration,
    what: &str,
    child: &mut Child,
) -> Result<(), std::process::ExitStatus> {
    let started = Instant::now();
    while TcpStream::connect(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(status);
        }
        assert!(
            started.elapsed() < within,
            "{what} did not listen on port {port} within {within:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// How often the server is started on fresh ports when one it was given was taken in the
/// meantime (the tests of a binary start their servers at once, and a free port can be
/// taken between its choice and the server's bind).
const START_ATTEMPTS: u32 = 5;

/// A running `restate-server` on 127.0.0.1, in its own base directory; killed and its
/// directory removed when dropped.
#[derive(Debug)]
pub struct RestateServer {
    child: Child,
    base_dir: PathBuf,
    /// `http://127.0.0.1:PORT`, where invocations go.
    pub ingress: String,
    /// `http://127.0.0.1:PORT`, the admin API.
    pub admin: String,
    client: reqwest::Client,
}

impl RestateServer {
    /// Installs the server if need be (into `target_dir`), starts it on free ports with its
    /// data under `target_dir/tmp`, and waits until its admin API and ingress answer.
    ///
    /// # Panics
    /// If the server cannot be installed or started.
    pub async fn start(target_dir: &Path) -> RestateServer {
        let binary = install(target_dir);
        for attempt in 1..=START_ATTEMPTS {
            match RestateServer::spawn(&binary, target_dir) {
                Ok(server) => {
                    server.wait_healthy().await;
                    return server;
                }
                Err((status, log))
                    if log.contains("Address in use") && attempt < START_ATTEMPTS =>
                {
                    eprintln!("restate-server found a port taken ({status}); starting it again");
                }
                Err((status, log)) => {
                    panic!("restate-server exited before listening: {status}\n{log}")
                }
            }
        }
        unreachable!("the last attempt returns or panics")
    }

    /// Starts the server on fresh free ports and waits until they listen; when it exits
    /// first, its exit status and log.
    fn spawn(
        binary: &Path,
        target_dir: &Path,
    ) -> Result<RestateServer, (std::process::ExitStatus, String)> {
        // Unique to this server: the process, a count of the servers it started (two that
        // start in the same tick of the clock must not share a directory, whose database
        // lock the second would find taken), and the time (a process id used again).
        static STARTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let count = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let unique = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos());
        let base_dir = target_dir
            .join("tmp")
            .join(format!("restate-{}-{count}-{unique}", std::process::id()));
        std::fs::create_dir_all(&base_dir).expect("a base directory");
        let (ingress, admin, node) = (free_port(), free_port(), free_port());
        let log = std::fs::File::create(base_dir.join("server.log")).expect("a log file");
        let mut child = Command::new(binary)
            .args([
                "--no-logo",
                "--listen-mode",
                "tcp",
                "--bind-ip",
                "127.0.0.1",
            ])
            .args(["--advertised-host", "127.0.0.1", "--base-dir"])
            .arg(&base_dir)
            .env(
                "RESTATE_INGRESS__BIND_ADDRESS",
                format!("127.0.0.1:{ingress}"),
            )
            .env("RESTATE_ADMIN__BIND_ADDRESS", format!("127.0.0.1:{admin}"))
            .env("RESTATE_BIND_ADDRESS", format!("127.0.0.1:{node}"))
            // Small and quiet: one partition, a small cache, no telemetry, no web UI.
            .env("RESTATE_DEFAULT_NUM_PARTITIONS", "1")
            .env("RESTATE_ROCKSDB_TOTAL_MEMORY_SIZE", "256MB")
            .env("RESTATE_DISABLE_TELEMETRY", "true")
            .env("RESTATE_ADMIN__DISABLE_WEB_UI", "true")
            // A retried invocation comes back within a second of the service's return.
            .env("RESTATE_DEFAULT_RETRY_POLICY__INITIAL_INTERVAL", "100ms")
            .env("RESTATE_DEFAULT_RETRY_POLICY__MAX_INTERVAL", "500ms")
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("a log file"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {}: {error}", binary.display()));
        let listening = wait_for_port(admin, Duration::from_secs(60), "restate-server", &mut child)
            .and_then(|()| {
                wait_for_port(
                    ingress,
                    Duration::from_secs(60),
                    "restate-server",
                    &mut child,
                )
            });
        if let Err(status) = listening {
            let log = std::fs::read_to_string(base_dir.join("server.log")).unwrap_or_default();
            let _ = std::fs::remove_dir_all(&base_dir);
            return Err((status, log));
        }
        Ok(RestateServer {
            child,
            base_dir,
            ingress: format!("http://127.0.0.1:{ingress}"),
            admin: format!("http://127.0.0.1:{admin}"),
            client: reqwest::Client::new(),
        })
    }

    async fn wait_healthy(&self) {
        let started = Instant::now();
        loop {
            let health = self
                .client
                .get(format!("{}/health", self.admin))
                .send()
                .await;
            if health.is_ok_and(|response| response.status().is_success()) {
                return;
            }
            // Generous: six servers start at once on two cores while other tests run.
            if started.elapsed() >= Duration::from_secs(120) {
                // The log goes with the server's directory when it drops: its end is kept here.
                let log =
                    std::fs::read_to_string(self.base_dir.join("server.log")).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(40).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                panic!(
                    "restate-server was not healthy within 120 s; the end of its log:\n{}",
                    tail.join("\n")
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Registers the service deployment at `uri` (`http://127.0.0.1:PORT`).
    ///
    /// # Panics
    /// If Restate refuses it.
    pub async fn register(&self, uri: &str) {
        let response = self
            .client
            .post(format!("{}/deployments", self.admin))
            .json(&json!({"uri": uri}))
            .send()
            .await
            .expect("the admin API answers");
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        assert!(
            status.is_success(),
            "registering {uri} failed: {status}: {body}"
        );
    }

    /// Invokes `service/handler` with the JSON `input` through the ingress and waits for
    /// its result: the invocation's id and its JSON output.
    ///
    /// # Panics
    /// If the invocation fails.
    pub async fn invoke(&self, service: &str, handler: &str, input: &Value) -> (String, Value) {
        let response = self
            .client
            .post(format!("{}/{service}/{handler}", self.ingress))
            .json(input)
            .timeout(Duration::from_secs(120))
            .send()
            .await
            .expect("the ingress answers");
        let status = response.status();
        let id = response
            .headers()
            .get("x-restate-id")
            .and_then(|id| id.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let body = response.text().await.unwrap_or_default();
        assert!(
            status.is_success(),
            "{service}/{handler} failed: {status}: {body}"
        );
        (id, serde_json::from_str(&body).expect("a JSON output"))
    }

    /// The rows of an SQL query on Restate's introspection tables (`sys_journal`, …).
    ///
    /// # Panics
    /// If the query fails.
    pub async fn query(&self, sql: &str) -> Vec<Value> {
        let response = self
            .client
            .post(format!("{}/query", self.admin))
            .header("accept", "application/json")
            .json(&json!({"query": sql}))
            .send()
            .await
            .expect("the admin API answers");
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        assert!(status.is_success(), "{sql} failed: {status}: {body}");
        let rows: Value = serde_json::from_str(&body).expect("JSON rows");
        rows["rows"].as_array().cloned().unwrap_or_default()
    }

    /// The names of the `ctx.run` steps Restate recorded for invocation `id`, in order.
    ///
    /// # Panics
    /// If the query fails.
    pub async fn step_names(&self, id: &str) -> Vec<String> {
        self.query(&format!(
            "SELECT name FROM sys_journal WHERE id = '{id}' AND entry_type = 'Command: Run' \
             ORDER BY index"
        ))
        .await
        .iter()
        .filter_map(|row| row["name"].as_str().map(str::to_owned))
        .collect()
    }
}

impl Drop for RestateServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.base_dir);
    }
}

/// The service binary (`golem-restate-test-service`) on a loopback port; killed when dropped.
#[derive(Debug)]
pub struct ServiceProcess {
    child: Child,
    /// `http://127.0.0.1:PORT`, the deployment's URI.
    pub uri: String,
}

impl ServiceProcess {
    /// Starts `binary` on `port`, its agent on the model server at `model_url`, its side
    /// effects in `effects`, and waits until it listens.
    ///
    /// # Panics
    /// If it cannot start.
    pub fn start(binary: &Path, port: u16, model_url: &str, effects: &Path) -> ServiceProcess {
        Self::spawn(Command::new(binary), binary, port, model_url, effects)
    }

    /// Starts `binary` as [`start`](Self::start) does, with the `Toolsets` service too, its
    /// tools listed by the toolset server at `toolset_url`.
    ///
    /// # Panics
    /// If it cannot start.
    pub fn with_toolset(
        binary: &Path,
        port: u16,
        model_url: &str,
        effects: &Path,
        toolset_url: &str,
    ) -> ServiceProcess {
        let mut command = Command::new(binary);
        command.env("TOOLSET_URL", toolset_url);
        Self::spawn(command, binary, port, model_url, effects)
    }

    fn spawn(
        mut command: Command,
        binary: &Path,
        port: u16,
        model_url: &str,
        effects: &Path,
    ) -> ServiceProcess {
        let mut child = command
            .env("PORT", port.to_string())
            .env("MODEL_URL", model_url)
            .env("EFFECTS", effects)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {}: {error}", binary.display()));
        if let Err(status) = wait_for_port(port, Duration::from_secs(30), "the service", &mut child)
        {
            panic!("the service exited before listening on port {port}: {status}");
        }
        ServiceProcess {
            child,
            uri: format!("http://127.0.0.1:{port}"),
        }
    }

    /// Kills the process (SIGKILL: no graceful shutdown) and waits until it is gone.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServiceProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
