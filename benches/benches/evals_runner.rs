//! The evals runner's own cost per case (docs/benchmarks.md): an `Experiment` over 1,000
//! cases of a task that answers at once, with one evaluator, against a plain loop that runs
//! the same task and evaluator on each case. The difference, per case, is the runner's:
//! scheduling, timing, the report's record, the output as JSON, the totals.

use std::convert::Infallible;
use std::time::Duration;

use criterion::{Criterion, Throughput};
use golem_evals::evaluator::EqualsExpected;
use golem_evals::{Case, Dataset, EvalContext, Evaluator, Experiment, Progress, Task, task_fn};

const CASES: u32 = 1_000;

fn main() {
    let dataset: Dataset<u32, u32> =
        Dataset::new((0..CASES).map(|n| Case::new(format!("case {n}"), n).expect(n * 2)));
    let task = task_fn(|n: u32| async move { Ok::<_, Infallible>(n * 2) });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");

    let experiment = |concurrency| {
        Experiment::new(
            "bench",
            task_fn(|n: u32| async move { Ok::<_, Infallible>(n * 2) }),
        )
        .evaluator(EqualsExpected)
        .concurrency(concurrency)
        .progress(Progress::Hidden)
    };
    let (one, eight) = (experiment(1), experiment(8));
    let report = runtime.block_on(one.run(&dataset));
    assert_eq!(report.totals.passed, u64::from(CASES));

    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let mut group = criterion.benchmark_group("evals_runner");
    group.throughput(Throughput::Elements(u64::from(CASES)));
    group.bench_function("plain_loop", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let mut passed = 0;
                for case in &dataset.cases {
                    let run = task.run(&case.input).await.expect("the task succeeds");
                    let ctx = EvalContext::new(case, &run.output, &run.trace, Duration::ZERO, 0);
                    let evaluation = EqualsExpected.evaluate_async(&ctx).await;
                    passed += usize::from(!evaluation.outcomes[0].is_failure());
                }
                passed
            })
        });
    });
    group.bench_function("experiment", |b| {
        b.iter(|| runtime.block_on(one.run(&dataset)));
    });
    group.bench_function("experiment_concurrency_8", |b| {
        b.iter(|| runtime.block_on(eight.run(&dataset)));
    });
    group.finish();
    criterion.final_summary();
}
