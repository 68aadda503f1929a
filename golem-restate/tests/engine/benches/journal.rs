//! What golem's journaling costs on Restate: one golem run through a `RestateJournal`
//! (`TURNS` tool turns: `2 * TURNS + 1` journaled steps) against the same number of bare
//! `ctx.run` steps, each invocation through a real `restate-server`'s ingress, the service
//! in this process.
//!
//! After criterion's estimates, a summary interleaves the two in rounds (the machine is
//! shared, so drift hits both alike) and prints the per-step times and their ratio.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion};
use golem_restate_engine_tests::restate::{RestateServer, free_port};
use golem_restate_engine_tests::service::{Bench, serve};
use restate_sdk::prelude::Endpoint;
use serde_json::json;

/// Tool turns per golem run.
const TURNS: u32 = 10;
/// Journaled steps per invocation, both ways.
const STEPS: u32 = 2 * TURNS + 1;
/// Interleaved rounds of the summary, and invocations of each kind per round.
const ROUNDS: usize = 10;
const PER_ROUND: usize = 10;

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
    let restate = runtime.block_on(async {
        let restate = RestateServer::start(&target_dir).await;
        let port = free_port();
        let endpoint = Endpoint::builder().bind(Bench::default()).build();
        tokio::spawn(serve(
            endpoint,
            SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
        ));
        tokio::time::sleep(Duration::from_millis(200)).await;
        restate.register(&format!("http://127.0.0.1:{port}")).await;
        // Both handlers once, so connections and the deployment are warm.
        assert_eq!(
            restate.invoke("Bench", "golem", &json!(TURNS)).await.1,
            json!(STEPS / 2 + 1)
        );
        assert_eq!(
            restate.invoke("Bench", "bare", &json!(STEPS)).await.1,
            json!(STEPS)
        );
        restate
    });

    let mut criterion = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(10))
        .configure_from_args();
    let mut group = criterion.benchmark_group("restate");
    let (turns, steps) = (json!(TURNS), json!(STEPS));
    group.bench_function(BenchmarkId::new("golem_run", STEPS), |b| {
        b.to_async(&runtime)
            .iter(|| restate.invoke("Bench", "golem", &turns));
    });
    group.bench_function(BenchmarkId::new("bare_ctx_run", STEPS), |b| {
        b.to_async(&runtime)
            .iter(|| restate.invoke("Bench", "bare", &steps));
    });
    group.finish();
    if std::env::args().any(|arg| arg == "--profile-time") {
        return;
    }

    // Interleaved rounds: each round times PER_ROUND invocations of each kind.
    let (mut golem, mut bare) = (Vec::new(), Vec::new());
    runtime.block_on(async {
        for _ in 0..ROUNDS {
            let started = Instant::now();
            for _ in 0..PER_ROUND {
                restate.invoke("Bench", "golem", &turns).await;
            }
            golem.push(started.elapsed() / (PER_ROUND as u32 * STEPS));
            let started = Instant::now();
            for _ in 0..PER_ROUND {
                restate.invoke("Bench", "bare", &steps).await;
            }
            bare.push(started.elapsed() / (PER_ROUND as u32 * STEPS));
        }
    });
    let ratios: Vec<f64> = golem
        .iter()
        .zip(&bare)
        .map(|(golem, bare)| golem.as_secs_f64() / bare.as_secs_f64())
        .collect();
    println!(
        "summary: {ROUNDS} interleaved rounds of {PER_ROUND} invocations of {STEPS} steps each"
    );
    println!("  golem run, per step:    median {:?}", median(&mut golem));
    println!("  bare ctx.run, per step: median {:?}", median(&mut bare));
    let mut sorted = ratios.clone();
    sorted.sort_by(f64::total_cmp);
    println!(
        "  golem ÷ bare per round: median {:.3}, range {:.3}–{:.3}",
        sorted[sorted.len() / 2],
        sorted[0],
        sorted[sorted.len() - 1]
    );
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}
