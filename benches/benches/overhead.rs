//! (1) Pure framework overhead: the three-turn self-correction scenario with `FunctionModel`,
//! so no I/O at all. Target: ≤ 10 µs per model turn; ≤ 2 µs per turn for the run driven
//! step by step, and as a stream of events; with one history processor, ≤ 1.2× the run
//! without. Also measured, with no target: a tool call that runs a child agent against one
//! that runs a plain function.

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use futures_util::StreamExt;
use golem::Step;
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
    let processed_agent = scenario::agent_with_processor(scenario::function_model());
    let processed = || {
        runtime
            .block_on(processed_agent.run(PROMPT, Table { face: 3 }))
            .expect("the scenario succeeds")
    };
    let plain_agent = scenario::delegating_agent(false);
    let child_agent = scenario::delegating_agent(true);
    let plain = || {
        runtime
            .block_on(plain_agent.run(PROMPT, ()))
            .expect("the scenario succeeds")
    };
    let child = || {
        runtime
            .block_on(child_agent.run(PROMPT, ()))
            .expect("the scenario succeeds")
    };
    let stepped = || {
        runtime.block_on(async {
            let mut run = agent.start(PROMPT, Table { face: 3 });
            loop {
                if let Step::Finished(result) = run.step().await.expect("the scenario succeeds") {
                    return result;
                }
            }
        })
    };
    let streamed = || {
        runtime.block_on(async {
            let mut events = agent.run_stream(PROMPT, Table { face: 3 });
            let mut count = 0_u32;
            while let Some(event) = events.next().await {
                event.expect("the scenario succeeds");
                count += 1;
            }
            count
        })
    };
    assert!(
        scenario::is_expected(&run()),
        "the scenario ends as scripted"
    );
    assert!(scenario::is_expected(&stepped()));
    assert!(scenario::is_expected(&processed()));
    assert_eq!(child().usage.agents["helper"].requests, 1);
    assert_eq!(plain().output, "finished");
    assert!(streamed() > 0);

    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let mut group = criterion.benchmark_group("overhead");
    // Elements are model turns: criterion's throughput line reads as turns per second.
    group.throughput(Throughput::Elements(TURNS));
    group.bench_function("function_model/run", |b| b.iter(run));
    group.bench_function("function_model/step", |b| b.iter(stepped));
    group.bench_function("function_model/events", |b| b.iter(streamed));
    group.bench_function("function_model/run_with_processor", |b| b.iter(processed));
    group.bench_function("delegation/plain_tool", |b| b.iter(plain));
    group.bench_function("delegation/child_agent", |b| b.iter(child));
    group.finish();
    criterion.final_summary();

    if golem_benches::is_bench_run() {
        // `OVERHEAD_DRIVER=run|step|events|processor|delegation` times one driver only, e.g.
        // under callgrind; `OVERHEAD_DRIVER=ratios` times the ratios to `run()` alone.
        let only = std::env::var("OVERHEAD_DRIVER").ok();
        let wanted = |driver: &str| only.as_deref().is_none_or(|only| only == driver);
        if wanted("run") {
            summary("run()", &run);
        }
        if wanted("step") {
            summary("step()", &stepped);
            // The event stream boxes the future that drives the steps: past glibc's
            // small-chunk limit, that box takes the allocator's slow path (ADR 0047).
            let mut run = agent.start(PROMPT, Table { face: 3 });
            println!(
                "  step() future: {} bytes (the stream's box of it stays ≤ 1,032)",
                std::mem::size_of_val(&run.step())
            );
        }
        if wanted("events") {
            summary("events()", &streamed);
        }
        if wanted("processor") {
            summary("run() with one history processor", &processed);
        }
        if wanted("delegation") {
            summary("two turns and a plain tool call", &plain);
            summary("two turns and a child agent's call", &child);
        }
        if wanted("ratios") {
            ratio("events()", &streamed, &run);
            ratio("run() with one history processor", &processed, &run);
        }
    }
}

/// `drive` against `run()` in interleaved rounds (which goes first alternates), so drift
/// on a shared machine hits both alike: the medians of the rounds' wall times per run, and
/// their ratio (target ≤ 1.2×).
fn ratio<A, B>(how: &str, drive: &dyn Fn() -> A, run: &dyn Fn() -> B) {
    const ROUNDS: usize = 31;
    const RUNS: u32 = 5_000;
    let mut walls = [Vec::new(), Vec::new()];
    for round in 0..ROUNDS {
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for index in order {
            let start = Instant::now();
            for _ in 0..RUNS {
                if index == 0 {
                    drive();
                } else {
                    run();
                }
            }
            walls[index].push(start.elapsed() / RUNS);
        }
    }
    let [driven, plain] = walls.map(|mut rounds| {
        rounds.sort();
        rounds[rounds.len() / 2]
    });
    println!(
        "\noverhead ratio, {how} ÷ run(): medians of {ROUNDS} interleaved rounds of {RUNS} runs"
    );
    println!(
        "  {:.2} µs ÷ {:.2} µs per run: {:.3}× (target ≤ 1.2×)",
        micros(driven),
        micros(plain),
        driven.as_secs_f64() / plain.as_secs_f64()
    );
}

/// Times 50,000 runs of `drive` and counts the allocations of 1,000.
fn summary<R>(how: &str, drive: &dyn Fn() -> R) {
    const RUNS: u32 = 50_000;
    for _ in 0..1_000 {
        drive();
    }
    let cpu = CpuTime::thread();
    let start = Instant::now();
    for _ in 0..RUNS {
        drive();
    }
    let wall = start.elapsed() / RUNS;
    let cpu = (CpuTime::thread() - cpu).total() / RUNS;
    println!("\noverhead summary, {how} ({RUNS} runs, FunctionModel, current-thread runtime)");
    println!(
        "  per run:  {:>8.2} µs wall  {:>8.2} µs cpu",
        micros(wall),
        micros(cpu)
    );
    println!(
        "  per turn: {:>8.2} µs wall  {:>8.2} µs cpu   (target ≤ 2 µs)",
        micros(wall) / TURNS as f64,
        micros(cpu) / TURNS as f64
    );
    alloc::start();
    for _ in 0..1_000 {
        drive();
    }
    let counts = alloc::stop();
    println!(
        "  allocations per run: {:.0} ({:.1} KB)",
        counts.allocations as f64 / 1_000.0,
        counts.allocated as f64 / 1_000.0 / 1024.0
    );
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}
