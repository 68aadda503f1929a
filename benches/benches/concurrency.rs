//! (3) Concurrency and memory: 10,000 concurrent runs of the scenario on one multi-threaded
//! runtime against the loopback server. Measures runs per second and the peak resident
//! memory per in-flight run, with the raw reqwest floor beside it. Target: ≤ 20 KB per
//! in-flight run, zero failures.
//!
//! The server runs in a child process (this binary again, with `GOLEM_BENCH_ROLE=server`):
//! 10,000 connections need 10,000 descriptors on each side, and one process may hold only
//! 20,000 here. It also keeps the server's memory out of the client's.
//!
//! Memory is measured in fresh child processes (`GOLEM_BENCH_ROLE=measure`), one per client,
//! so that neither sees memory the other left behind, each against a server of its own that
//! holds back the answers to the last turn until all 10,000 runs wait for one: at that moment
//! every run is in flight, with its connection open and its history at its longest. A third
//! child measures golem alone, with a model that holds the runs at their last turn and no
//! HTTP at all.

use std::cell::RefCell;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use golem::Agent;
use golem_benches::alloc::{self, Counting};
use golem_benches::floor::Floor;
use golem_benches::scenario::{self, PROMPT, ParkedModel, Table, Verdict};
use golem_benches::server::{self, ChildServer, ROLE_ENV};
use golem_benches::sys;
use tokio::runtime::Runtime;
use tokio::sync::Semaphore;

#[global_allocator]
static ALLOC: Counting = Counting;

const CLIENT_ENV: &str = "GOLEM_BENCH_CLIENT";
/// Overrides the number of concurrent runs (10,000).
const RUNS_ENV: &str = "GOLEM_BENCH_RUNS";
/// How many warm batches a measuring process runs after the first (1).
const BATCHES_ENV: &str = "GOLEM_BENCH_BATCHES";

#[derive(Clone)]
enum Client {
    Golem(Agent<Table, Verdict>),
    Floor(Arc<Floor>),
}

impl Client {
    fn new(kind: &str, base_url: &str) -> Client {
        match kind {
            "golem" => Client::Golem(scenario::agent(scenario::openai_model(base_url))),
            "floor" => Client::Floor(Arc::new(Floor::new(base_url, server::record_bodies()))),
            other => panic!("unknown client {other}"),
        }
    }

    /// Starts `runs` runs at once and waits for all of them.
    ///
    /// Every task waits at a gate until all are spawned, so that the runs are truly in
    /// flight together: without it, runs quicker than the spawning loop would end before the
    /// last ones start.
    async fn batch(&self, runs: usize) -> Batch {
        let gate = Arc::new(Semaphore::new(0));
        let in_flight = Arc::new(AtomicUsize::new(0));
        let most_in_flight = Arc::new(AtomicUsize::new(0));
        let tasks: Vec<_> = (0..runs)
            .map(|_| {
                let client = self.clone();
                let gate = Arc::clone(&gate);
                let in_flight = Arc::clone(&in_flight);
                let most_in_flight = Arc::clone(&most_in_flight);
                tokio::spawn(async move {
                    gate.acquire().await.expect("the gate stays open").forget();
                    let now = in_flight.fetch_add(1, Ordering::Relaxed) + 1;
                    most_in_flight.fetch_max(now, Ordering::Relaxed);
                    let ok = match client {
                        Client::Golem(agent) => agent
                            .run(PROMPT, Table { face: 3 })
                            .await
                            .is_ok_and(|result| scenario::is_expected(&result)),
                        Client::Floor(floor) => floor.run().await.is_ok(),
                    };
                    in_flight.fetch_sub(1, Ordering::Relaxed);
                    ok
                })
            })
            .collect();
        gate.add_permits(runs);
        let mut failures = 0;
        for task in tasks {
            if !matches!(task.await, Ok(true)) {
                failures += 1;
            }
        }
        Batch {
            failures,
            most_in_flight: most_in_flight.load(Ordering::Relaxed),
        }
    }
}

/// How a batch went.
struct Batch {
    failures: usize,
    /// The most runs in flight at once.
    most_in_flight: usize,
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

fn runs() -> usize {
    std::env::var(RUNS_ENV)
        .ok()
        .and_then(|runs| runs.parse().ok())
        .unwrap_or(10_000)
}

fn main() {
    match std::env::var(ROLE_ENV).as_deref() {
        Ok("server") => server::serve_until_stdin_closes(),
        Ok("measure") => measure(),
        _ => bench(),
    }
}

fn bench() {
    sys::raise_fd_limit();
    let runs = runs();
    let server = ChildServer::start();
    let runtime = runtime();

    let mut criterion = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(20))
        .configure_from_args();
    let mut group = criterion.benchmark_group("concurrency");
    // Elements are runs: criterion's throughput line reads as runs per second.
    group.throughput(Throughput::Elements(runs as u64));
    // One client at a time, each with its own pool: two pools of 10,000 connections would
    // not fit in the descriptor limit. Criterion calls a routine once per sample, so the
    // client lives outside it and its pool stays warm between samples.
    let current: RefCell<Option<(&str, Client)>> = RefCell::new(None);
    for name in ["golem", "floor"] {
        group.bench_function(format!("{name}/{runs}_concurrent_runs"), |b| {
            let mut current = current.borrow_mut();
            if current.as_ref().is_none_or(|(held, _)| *held != name) {
                if current.take().is_some() {
                    // Let the runtime close the old pool's connections.
                    std::thread::sleep(Duration::from_millis(500));
                }
                *current = Some((name, Client::new(name, &server.base_url())));
            }
            let client = &current.as_ref().expect("just set").1;
            b.iter_custom(|batches| {
                let start = Instant::now();
                for _ in 0..batches {
                    let batch = runtime.block_on(client.batch(runs));
                    assert_eq!(batch.failures, 0, "{name}: every run succeeds");
                }
                start.elapsed()
            });
        });
    }
    drop(current);
    group.finish();
    criterion.final_summary();

    if golem_benches::is_bench_run() {
        let agent = scenario::agent(scenario::openai_model(&server.base_url()));
        let future = agent.run(PROMPT, Table { face: 3 });
        println!(
            "\nthe future of one golem run: {} bytes before it is polled",
            std::mem::size_of_val(&future)
        );
        drop(future);
        println!("\nconcurrency summary: {runs} concurrent runs, each client in a fresh process");
        println!(
            "  {:<6} {:>8} {:>9} {:>13} {:>12} {:>12}",
            "client", "failures", "in flight", "runs/s warm", "RSS/run KB", "heap/run KB"
        );
        for name in ["golem", "floor", "parked"] {
            let output = Command::new(std::env::current_exe().expect("this binary"))
                .env(ROLE_ENV, "measure")
                .env(CLIENT_ENV, name)
                .env(RUNS_ENV, runs.to_string())
                .env(BATCHES_ENV, "3")
                .output()
                .expect("the measuring process runs");
            let stdout = String::from_utf8_lossy(&output.stdout);
            let Some(line) = stdout.lines().find(|line| line.starts_with("RESULT ")) else {
                println!(
                    "  {name}: no result: {}",
                    String::from_utf8_lossy(&output.stderr)
                );
                continue;
            };
            let field = |key: &str| -> f64 {
                line.split_whitespace()
                    .find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='))
                    .and_then(|value| value.parse().ok())
                    .unwrap_or(f64::NAN)
            };
            let n = field("runs");
            // Memory is shared out over the runs in flight at once, which is at most `n`.
            let in_flight = field("in_flight");
            let rate = |seconds: f64| {
                if name == "parked" {
                    "-".to_owned()
                } else {
                    format!("{:.0}", n / seconds)
                }
            };
            println!(
                "  {:<6} {:>8} {:>9} {:>13} {:>12.2} {:>12.2}",
                name,
                field("failures") + field("warm_failures"),
                in_flight,
                rate(field("warm_seconds")),
                (field("rss_peak") - field("rss_base")) / in_flight / 1024.0,
                field("heap_peak") / in_flight / 1024.0,
            );
        }
        println!(
            "  in flight: the most runs in flight at once in the first batch, which the server holds\n  at the last turn until all wait. runs/s warm: 3 later batches over the pool's connections.\n  RSS/run: (VmHWM during the first batch - VmRSS before) / in flight; heap/run: peak live heap / in flight.\n  parked: golem with a model that holds every run at its last turn, no HTTP: golem's own memory per in-flight run."
        );
        println!("  (target for golem: ≤ 20 KB per in-flight run, 0 failures)");
    }
}

/// One measured batch in a fresh process, then warm ones: prints a `RESULT` line for
/// [`bench`].
fn measure() {
    sys::raise_fd_limit();
    let runs = runs();
    let kind = std::env::var(CLIENT_ENV).expect("the client to measure");
    if kind == "parked" {
        return measure_parked(runs);
    }
    // A server of its own that holds back the last turn's answers until every run waits
    // for one: all runs are in flight at once, each with its connection and its longest
    // history. Later batches are not held.
    let server = ChildServer::holding(runs);
    let runtime = runtime();
    let client = Client::new(&kind, &server.base_url());

    let base = sys::resident();
    let resets = sys::reset_peak_resident().is_ok();
    alloc::start();
    let start = Instant::now();
    let cold = runtime.block_on(client.batch(runs));
    let seconds = start.elapsed().as_secs_f64();
    let counts = alloc::stop();
    let (heap_after, heap_peak) = (counts.live, counts.peak);
    let after = sys::resident();
    // Without a reset the peak is the process's; before the batch it was far below.
    let peak = if resets {
        after.peak
    } else {
        after.peak.max(base.now)
    };
    // Then batches over the pool's warm connections, as criterion measures them.
    let batches: u32 = std::env::var(BATCHES_ENV)
        .ok()
        .and_then(|batches| batches.parse().ok())
        .unwrap_or(1);
    let start = Instant::now();
    let mut warm_failures = 0;
    for _ in 0..batches {
        warm_failures += runtime.block_on(client.batch(runs)).failures;
    }
    let warm_seconds = start.elapsed().as_secs_f64() / f64::from(batches.max(1));
    println!(
        "RESULT client={kind} runs={runs} failures={} in_flight={} seconds={seconds} rss_base={} rss_peak={peak} heap_peak={heap_peak} heap_after={heap_after} warm_failures={warm_failures} warm_seconds={warm_seconds}",
        cold.failures, cold.most_in_flight, base.now
    );
}

/// golem's own memory per in-flight run, without HTTP: `runs` runs held at their last turn
/// by a [`ParkedModel`], measured while all of them wait.
fn measure_parked(runs: usize) {
    let runtime = runtime();
    let model = ParkedModel::new();
    let agent = scenario::agent(model.clone());
    model.release(1);
    let warm_up = runtime.block_on(agent.run(PROMPT, Table { face: 3 }));
    assert!(warm_up.is_ok_and(|result| scenario::is_expected(&result)));

    let base = sys::resident();
    let resets = sys::reset_peak_resident().is_ok();
    alloc::start();
    let start = Instant::now();
    let (failures, parked, held, held_resident) = runtime.block_on(async {
        let tasks: Vec<_> = (0..runs)
            .map(|_| {
                let agent = agent.clone();
                tokio::spawn(async move {
                    agent
                        .run(PROMPT, Table { face: 3 })
                        .await
                        .is_ok_and(|result| scenario::is_expected(&result))
                })
            })
            .collect();
        // Every run waits at its last turn, unless one failed before it.
        while model.parked() < runs && !tasks.iter().any(|task| task.is_finished()) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let parked = model.parked();
        let held = alloc::counts().live;
        let held_resident = sys::resident().now;
        model.release(runs);
        let mut failures = 0;
        for task in tasks {
            if !matches!(task.await, Ok(true)) {
                failures += 1;
            }
        }
        (failures, parked, held, held_resident)
    });
    let seconds = start.elapsed().as_secs_f64();
    alloc::stop();
    let after = sys::resident();
    let peak = if resets {
        after.peak
    } else {
        held_resident.max(base.now)
    };
    println!(
        "RESULT client=parked runs={runs} failures={failures} in_flight={parked} seconds={seconds} rss_base={} rss_peak={peak} heap_peak={held} heap_after=0 warm_failures=0 warm_seconds=NaN",
        base.now
    );
}
