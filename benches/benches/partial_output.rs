//! (7) Typed partial output: one streamed structured answer of `N` deltas (about 9 bytes
//! each, as a model's tokens are) through `Agent::run_stream` with `FunctionModel`, its
//! partial twin read while it streams, at N = 100, 1,000 and 10,000. Target: the cost per
//! delta at 1,000 and at 10,000 deltas within 2× of the cost at 100.

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use futures_util::StreamExt;
use golem::model::function::FunctionModel;
use golem::model::{ModelResponse, ResponseDelta, StreamEvent};
use golem::{Agent, RunEvent};
use golem_benches::sys::CpuTime;

/// The answer's sizes, in deltas.
const SIZES: [usize; 3] = [100, 1_000, 10_000];
/// Bytes per delta.
const DELTA_BYTES: usize = 9;

/// A plan the model writes: a title, then steps.
#[golem::output]
#[derive(Debug)]
struct Plan {
    title: String,
    steps: Vec<PlanStep>,
}

#[golem::output]
#[derive(Debug)]
struct PlanStep {
    name: String,
    minutes: u32,
}

/// The output call's arguments for an answer of about `deltas` deltas, cut into them.
fn fragments(deltas: usize) -> Vec<String> {
    let target = deltas * DELTA_BYTES;
    let mut json = String::from(r#"{"title": "A plan in many steps", "steps": ["#);
    for step in 0.. {
        let next = format!(r#"{{"name": "step {step}", "minutes": {}}}"#, step % 60);
        if json.len() + next.len() + 4 > target {
            break;
        }
        if step > 0 {
            json.push_str(", ");
        }
        json.push_str(&next);
    }
    // Spaces up to the size, so the answer is exactly `deltas` deltas.
    while json.len() < target - 2 {
        json.push(' ');
    }
    json.push_str("]}");
    json.as_bytes()
        .chunks(DELTA_BYTES)
        .map(|chunk| String::from_utf8(chunk.to_vec()).expect("ASCII"))
        .collect()
}

/// An agent whose model streams the answer as `fragments`.
fn agent(fragments: &[String]) -> Agent<(), Plan> {
    let mut items = vec![StreamEvent::Delta(ResponseDelta::ToolCallStart {
        part: 0,
        tool_name: "final_result".into(),
        tool_call_id: "c1".into(),
    })];
    for args in fragments {
        items.push(StreamEvent::Delta(ResponseDelta::ToolCallArgs {
            part: 0,
            args: args.clone(),
        }));
    }
    items.push(StreamEvent::Done(ModelResponse::tool_call(
        "final_result",
        fragments.concat(),
        "c1",
    )));
    Agent::<(), Plan>::builder(FunctionModel::new_stream(move |_, _| items.clone()))
        .build()
        .expect("a valid agent")
}

/// One streamed run, drained; the partials it reported.
async fn run_once(agent: &Agent<(), Plan>) -> usize {
    let mut events = agent.run_stream("Plan it", ());
    let mut partials = 0;
    while let Some(event) = events.next().await {
        match event.expect("the run succeeds") {
            RunEvent::PartialOutput { .. } => partials += 1,
            RunEvent::Finished(result) => assert!(!result.output.title.is_empty()),
            _ => {}
        }
    }
    partials
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let agents: Vec<(usize, Agent<(), Plan>)> = SIZES
        .iter()
        .map(|&deltas| {
            let fragments = fragments(deltas);
            assert_eq!(fragments.len(), deltas);
            (deltas, agent(&fragments))
        })
        .collect();

    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let mut group = criterion.benchmark_group("partial_output");
    group.sample_size(20);
    for (deltas, agent) in &agents {
        // Throughput in deltas: criterion's "thrpt" is deltas per second.
        group.throughput(Throughput::Elements(*deltas as u64));
        group.bench_with_input(BenchmarkId::new("run", deltas), agent, |b, agent| {
            b.iter(|| runtime.block_on(run_once(agent)));
        });
    }
    group.finish();
    criterion.final_summary();

    if golem_benches::is_bench_run() {
        summary(&runtime, &agents);
    }
}

/// Interleaved rounds of every size, so drift on a shared machine hits all alike; the
/// medians per delta, and each size's against the smallest.
fn summary(runtime: &tokio::runtime::Runtime, agents: &[(usize, Agent<(), Plan>)]) {
    /// Deltas per sample: runs of each size add up to this many.
    const DELTAS: usize = 100_000;
    // `GOLEM_BENCH_ROUNDS` shortens the summary (a quadratic reader takes seconds a run).
    let rounds: usize = std::env::var("GOLEM_BENCH_ROUNDS")
        .ok()
        .and_then(|rounds| rounds.parse().ok())
        .unwrap_or(11);
    let mut samples: Vec<Vec<(f64, f64)>> = vec![Vec::new(); agents.len()];
    let mut partials = vec![0; agents.len()];
    for round in 0..rounds {
        for offset in 0..agents.len() {
            let index = (round + offset) % agents.len();
            let (deltas, agent) = &agents[index];
            let runs = DELTAS / deltas;
            let cpu = CpuTime::thread();
            let start = Instant::now();
            for _ in 0..runs {
                partials[index] = runtime.block_on(run_once(agent));
            }
            let per_delta = (runs * deltas) as f64;
            let wall = start.elapsed().as_secs_f64() * 1e9 / per_delta;
            let cpu = (CpuTime::thread() - cpu).total().as_secs_f64() * 1e9 / per_delta;
            samples[index].push((wall, cpu));
        }
    }
    let median = |mut values: Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    println!(
        "\npartial output summary: medians of {rounds} interleaved rounds of {DELTAS} deltas per size, per delta"
    );
    println!(
        "  {:>7} {:>9} {:>10} {:>10} {:>12}",
        "deltas", "partials", "wall ns", "cpu ns", "cpu ÷ 100"
    );
    let mut first = None;
    for (index, (deltas, _)) in agents.iter().enumerate() {
        let wall = median(samples[index].iter().map(|s| s.0).collect());
        let cpu = median(samples[index].iter().map(|s| s.1).collect());
        let base = *first.get_or_insert(cpu);
        println!(
            "  {deltas:>7} {:>9} {wall:>10.0} {cpu:>10.0} {:>11.2}×",
            partials[index],
            cpu / base
        );
    }
    println!("  target: ≤ 2× at 1,000 and 10,000 deltas");
}
