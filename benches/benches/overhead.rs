//! (1) Pure framework overhead: the three-turn self-correction scenario with `FunctionModel`,
//! so no I/O at all. Target: ≤ 10 µs per model turn.

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use golem_benches::alloc::{self, Counting};
use golem_benches::scenario::{self, PROMPT, TURNS, Table};
use golem_benches::sys::CpuTime;

// Counts only while the summary asks it to; otherwise one relaxed load per allocation.
#[global_allocator]
static ALLOC: Counting = Counting;

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let agent = scenario::agent(scenario::function_model());
    let run = || {
        runtime
            .block_on(agent.run(PROMPT, Table { face: 3 }))
            .expect("the scenario succeeds")
    };
    assert!(
        scenario::is_expected(&run()),
        "the scenario ends as scripted"
    );

    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let mut group = criterion.benchmark_group("overhead");
    // Elements are model turns: criterion's throughput line reads as turns per second.
    group.throughput(Throughput::Elements(TURNS));
    group.bench_function("function_model/run", |b| b.iter(run));
    group.finish();
    criterion.final_summary();

    if golem_benches::is_bench_run() {
        const RUNS: u32 = 50_000;
        for _ in 0..1_000 {
            run();
        }
        let cpu = CpuTime::thread();
        let start = Instant::now();
        for _ in 0..RUNS {
            run();
        }
        let wall = start.elapsed() / RUNS;
        let cpu = (CpuTime::thread() - cpu).total() / RUNS;
        println!("\noverhead summary ({RUNS} runs, FunctionModel, current-thread runtime)");
        println!(
            "  per run:  {:>8.2} µs wall  {:>8.2} µs cpu",
            micros(wall),
            micros(cpu)
        );
        println!(
            "  per turn: {:>8.2} µs wall  {:>8.2} µs cpu   (target ≤ 10 µs)",
            micros(wall) / TURNS as f64,
            micros(cpu) / TURNS as f64
        );
        alloc::start();
        for _ in 0..1_000 {
            run();
        }
        let counts = alloc::stop();
        println!(
            "  allocations per run: {:.0} ({:.1} KB)",
            counts.allocations as f64 / 1_000.0,
            counts.allocated as f64 / 1_000.0 / 1024.0
        );
    }
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}
