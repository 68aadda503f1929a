//! What golem's journaling costs on Temporal: one golem run through a `TemporalJournal`
//! (`TURNS` tool turns: `2 * TURNS + 1` journaled steps) against the same number of bare
//! regular activities (a step as Temporal users write one), of bare local activities, and of
//! bare local activities each followed by the no-op regular activity the journal closes a
//! step with; each workflow through a real Temporal dev server, its worker in a process of
//! its own.
//!
//! After criterion's estimates, a summary interleaves the three in rounds (the machine is
//! shared, so drift hits all alike) and prints the per-step times and their ratios.

use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion};
use golem_temporal_engine_tests::temporal::{TemporalServer, WorkerProcess};
use golem_temporal_engine_tests::workflows::{Bare, BareKind, BareSteps, Journaled};
use temporalio_client::{Client, WorkflowGetResultOptions, WorkflowStartOptions};

/// Tool turns per golem run.
const TURNS: u32 = 10;
/// Journaled steps per workflow, every way.
const STEPS: u32 = 2 * TURNS + 1;
/// Interleaved rounds of the summary, and workflows of each kind per round.
const ROUNDS: usize = 5;
const PER_ROUND: usize = 5;
const QUEUE: &str = "bench";

/// Starts one workflow and waits for its result.
async fn journaled(client: &Client, id: &mut u64) {
    *id += 1;
    let options = WorkflowStartOptions::new(QUEUE, format!("journaled-{id}")).build();
    let handle = client
        .start_workflow(Journaled::run, STEPS, options)
        .await
        .expect("the workflow starts");
    let messages = handle
        .get_result(WorkflowGetResultOptions::default())
        .await
        .expect("the workflow succeeds");
    assert_eq!(messages, 2 * (TURNS + 1));
}

async fn bare(client: &Client, id: &mut u64, kind: BareKind) {
    *id += 1;
    let options = WorkflowStartOptions::new(QUEUE, format!("bare-{id}")).build();
    let handle = client
        .start_workflow(Bare::run, BareSteps { steps: STEPS, kind }, options)
        .await
        .expect("the workflow starts");
    let steps = handle
        .get_result(WorkflowGetResultOptions::default())
        .await
        .expect("the workflow succeeds");
    assert_eq!(steps, STEPS);
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is inside the target directory")
        .to_path_buf();
    let effects = target_dir.join("tmp/golem-temporal-bench.effects");
    let (server, client, _worker) = runtime.block_on(async {
        let server = TemporalServer::start(&target_dir).await;
        let client = server.client().await;
        let worker = WorkerProcess::start(
            Path::new(env!("CARGO_BIN_EXE_golem-temporal-test-worker")),
            &server,
            QUEUE,
            "http://127.0.0.1:9/v1",
            &effects,
        );
        (server, client, worker)
    });
    let mut id = 0;
    let kinds = [BareKind::Regular, BareKind::Local, BareKind::Closed];
    // Each kind once, so the worker and its connections are warm.
    runtime.block_on(async {
        journaled(&client, &mut id).await;
        for kind in kinds {
            bare(&client, &mut id, kind).await;
        }
    });

    let mut criterion = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(10))
        .configure_from_args();
    let mut group = criterion.benchmark_group("temporal");
    group.bench_function(BenchmarkId::new("golem_run", STEPS), |b| {
        b.iter(|| runtime.block_on(journaled(&client, &mut id)));
    });
    for kind in kinds {
        group.bench_function(BenchmarkId::new(format!("bare_{kind:?}"), STEPS), |b| {
            b.iter(|| runtime.block_on(bare(&client, &mut id, kind)));
        });
    }
    group.finish();
    if std::env::args().any(|arg| arg == "--profile-time") {
        return;
    }

    // Interleaved rounds: each round times PER_ROUND workflows of each kind.
    let mut golem = Vec::new();
    let mut floors: Vec<Vec<Duration>> = vec![Vec::new(); kinds.len()];
    runtime.block_on(async {
        let per = PER_ROUND as u32 * STEPS;
        for _ in 0..ROUNDS {
            let started = Instant::now();
            for _ in 0..PER_ROUND {
                journaled(&client, &mut id).await;
            }
            golem.push(started.elapsed() / per);
            for (kind, floor) in kinds.iter().zip(&mut floors) {
                let started = Instant::now();
                for _ in 0..PER_ROUND {
                    bare(&client, &mut id, *kind).await;
                }
                floor.push(started.elapsed() / per);
            }
        }
    });
    println!("summary: {ROUNDS} interleaved rounds of {PER_ROUND} workflows of {STEPS} steps each");
    println!("  golem run, per step: median {:?}", median(&golem));
    for (kind, floor) in kinds.iter().zip(&floors) {
        println!(
            "  bare {kind:?}, per step: median {:?}; golem ÷ it per round: median {:.3}",
            median(floor),
            median_ratio(&golem, floor)
        );
    }
    drop(server);
}

fn median(times: &[Duration]) -> Duration {
    let mut times = times.to_vec();
    times.sort();
    times[times.len() / 2]
}

fn median_ratio(a: &[Duration], b: &[Duration]) -> f64 {
    let mut ratios: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(a, b)| a.as_secs_f64() / b.as_secs_f64())
        .collect();
    ratios.sort_by(f64::total_cmp);
    ratios[ratios.len() / 2]
}
