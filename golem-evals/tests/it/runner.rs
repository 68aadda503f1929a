//! The runner: bounded concurrency, deterministic order, timeouts, repeats, and failures
//! kept as results.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::time::Duration;

use common::{calculator_task, sums};
use golem_evals::evaluator::{EqualsExpected, check};
use golem_evals::{Case, CaseResult, Dataset, EvalContext, Experiment, Progress, task_fn};
use serde_json::json;

fn numbers(count: u32) -> Dataset<u32, u32> {
    Dataset::new((0..count).map(|n| Case::new(format!("case {n}"), n).expect(n * 2)))
}

#[tokio::test(start_paused = true)]
async fn at_most_concurrency_runs_are_in_flight_and_the_report_keeps_the_datasets_order() {
    let in_flight = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let task = {
        let (in_flight, most) = (Arc::clone(&in_flight), Arc::clone(&most));
        task_fn(move |n: u32| {
            let (in_flight, most) = (Arc::clone(&in_flight), Arc::clone(&most));
            async move {
                let now = in_flight.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                // Later cases finish first.
                tokio::time::sleep(Duration::from_millis(u64::from(100 - n))).await;
                in_flight.fetch_sub(1, Ordering::SeqCst);
                Ok::<_, io::Error>(n * 2)
            }
        })
    };
    let report = Experiment::new("doubling", task)
        .evaluator(EqualsExpected)
        .concurrency(3)
        .progress(Progress::Hidden)
        .run(&numbers(7))
        .await;

    assert_eq!(most.load(Ordering::SeqCst), 3);
    let names: Vec<&str> = report.cases.iter().map(|case| case.case.as_str()).collect();
    assert_eq!(
        names,
        [
            "case 0", "case 1", "case 2", "case 3", "case 4", "case 5", "case 6"
        ]
    );
    assert_eq!(report.cases[0].duration_ms, 100.0);
    assert_eq!(report.cases[6].duration_ms, 94.0);
    assert_eq!(report.cases[6].output, Some(json!(12)));
    assert_eq!(report.totals.passed, 7);
    assert_eq!(report.totals.pass_rate, 1.0);
}

#[tokio::test(start_paused = true)]
async fn a_run_over_the_timeout_is_a_timed_out_result_and_the_others_go_on() {
    let task = task_fn(|n: u32| async move {
        tokio::time::sleep(Duration::from_millis(u64::from(n) * 100)).await;
        Ok::<_, io::Error>(n * 2)
    });
    let report = Experiment::new("slow", task)
        .evaluator(EqualsExpected)
        .timeout(Duration::from_millis(150))
        .concurrency(4)
        .run(&numbers(4))
        .await;

    let results: Vec<CaseResult> = report.cases.iter().map(|case| case.result).collect();
    assert_eq!(
        results,
        [
            CaseResult::Passed,
            CaseResult::Passed,
            CaseResult::TimedOut,
            CaseResult::TimedOut
        ]
    );
    assert_eq!(
        report.cases[2].error.as_deref(),
        Some("timed out after 150ms")
    );
    assert_eq!(report.cases[2].duration_ms, 150.0);
    assert!(report.cases[2].outcomes.is_empty());
    assert_eq!((report.totals.passed, report.totals.timed_out), (2, 2));
}

#[tokio::test]
async fn each_case_runs_once_per_repeat_and_the_repeats_are_listed_in_order() {
    let calls = Arc::new(AtomicU32::new(0));
    let task = {
        let calls = Arc::clone(&calls);
        task_fn(move |n: u32| {
            let attempt = calls.fetch_add(1, Ordering::SeqCst);
            // A flaky task: every third call is off by one.
            async move { Ok::<_, io::Error>(if attempt % 3 == 2 { n * 2 + 1 } else { n * 2 }) }
        })
    };
    let report = Experiment::new("flaky", task)
        .evaluator(EqualsExpected)
        .evaluator(check(
            "repeat seen",
            |ctx: &EvalContext<'_, u32, u32, u32>| ctx.repeat < 3,
        ))
        .repeats(3)
        .run(&numbers(2))
        .await;

    assert_eq!(calls.load(Ordering::SeqCst), 6);
    let runs: Vec<(&str, u32, CaseResult)> = report
        .cases
        .iter()
        .map(|case| (case.case.as_str(), case.repeat, case.result))
        .collect();
    assert_eq!(
        runs,
        [
            ("case 0", 0, CaseResult::Passed),
            ("case 0", 1, CaseResult::Passed),
            ("case 0", 2, CaseResult::Failed),
            ("case 1", 0, CaseResult::Passed),
            ("case 1", 1, CaseResult::Passed),
            ("case 1", 2, CaseResult::Failed),
        ]
    );
    assert_eq!(report.totals.runs, 6);
    let summaries = report.summaries();
    assert_eq!(summaries.len(), 2);
    assert_eq!(summaries[0].runs, 3);
    assert!((summaries[0].pass_rate - 2.0 / 3.0).abs() < 1e-12);
}

#[tokio::test]
async fn a_failing_task_is_an_error_result_with_its_message() {
    let task = task_fn(|n: u32| async move {
        if n == 1 {
            Err(io::Error::other("the service is down"))
        } else {
            Ok(n * 2)
        }
    });
    let report = Experiment::new("failing", task)
        .evaluator(EqualsExpected)
        .run(&numbers(3))
        .await;

    let results: Vec<CaseResult> = report.cases.iter().map(|case| case.result).collect();
    assert_eq!(
        results,
        [CaseResult::Passed, CaseResult::Error, CaseResult::Passed]
    );
    assert_eq!(
        report.cases[1].error.as_deref(),
        Some("the service is down")
    );
    assert_eq!(report.totals.errors, 1);
}

#[tokio::test]
async fn an_agent_that_fails_keeps_its_error_and_what_it_spent() {
    // Without a tool budget, the slip on the sign fails the run.
    let report = Experiment::new("no budget", calculator_task(0))
        .evaluator(EqualsExpected)
        .run(&sums())
        .await;

    let results: Vec<CaseResult> = report.cases.iter().map(|case| case.result).collect();
    assert_eq!(
        results,
        [CaseResult::Passed, CaseResult::Error, CaseResult::Error]
    );
    let failed = &report.cases[1];
    assert_eq!(
        failed.error.as_deref(),
        Some(
            "tool `add` was rejected and its retries are off: the numbers must not be negative, got -12 and 30"
        )
    );
    assert_eq!(failed.usage.requests, 1);
    assert_eq!(failed.usage.rejected.total.requests, 1);
    assert_eq!(report.dataset.as_deref(), Some("sums"));
}

/// An agent's run that outlasts the timeout is stopped, not dropped: the case is timed
/// out with the history and the usage of the run up to the stop.
#[tokio::test]
async fn an_agent_run_over_the_timeout_keeps_what_it_spent() {
    use golem::model::ModelResponse;
    use golem::model::function::FunctionModel;

    let model =
        FunctionModel::new(|_, _| ModelResponse::tool_call("wait", "{}", "c1").with_usage(12, 3));
    let wait = golem::tool::FunctionTool::new(
        "wait",
        |_ctx: golem::RunContext<()>, _args: serde_json::Value| async move {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok::<_, golem::ModelRetry>("done")
        },
    );
    let agent = golem::Agent::<(), String>::builder(model)
        .tool(wait)
        .build()
        .unwrap();
    let task = golem_evals::AgentTask::new(agent, |prompt: &String| (prompt.clone(), ()));
    let report = Experiment::new("slow agent", task)
        .timeout(Duration::from_millis(200))
        .progress(Progress::Hidden)
        .run(&Dataset::new([Case::<String, String>::new(
            "one",
            "Wait".to_owned(),
        )]))
        .await;

    let case = &report.cases[0];
    assert_eq!(case.result, CaseResult::TimedOut);
    assert_eq!(
        case.error.as_deref(),
        Some("the run was stopped: the run did not finish within its timeout of 200ms")
    );
    assert_eq!(case.usage.requests, 1);
    assert_eq!((case.usage.input_tokens, case.usage.output_tokens), (12, 3));
    assert_eq!(report.totals.timed_out, 1);
}

/// An agent's run that pauses for approval has no one to answer: the case fails with what
/// the run did.
#[tokio::test]
async fn an_agent_run_that_pauses_for_approval_is_an_error_with_its_usage() {
    use golem::model::ModelResponse;
    use golem::model::function::FunctionModel;

    let model =
        FunctionModel::new(|_, _| ModelResponse::tool_call("delete", "{}", "c1").with_usage(7, 2));
    let delete = golem::tool::FunctionTool::new(
        "delete",
        |_ctx: golem::RunContext<()>, _args: serde_json::Value| async move {
            Ok::<_, golem::ModelRetry>("deleted")
        },
    )
    .requires_approval(true);
    let agent = golem::Agent::<(), String>::builder(model)
        .tool(delete)
        .build()
        .unwrap();
    let task = golem_evals::AgentTask::new(agent, |prompt: &String| (prompt.clone(), ()));
    let report = Experiment::new("approvals", task)
        .progress(Progress::Hidden)
        .run(&Dataset::new([Case::<String, String>::new(
            "one",
            "Clean up".to_owned(),
        )]))
        .await;

    let case = &report.cases[0];
    assert_eq!(case.result, CaseResult::Error);
    assert_eq!(
        case.error.as_deref(),
        Some("the run paused for approval of delete")
    );
    assert_eq!(case.usage.requests, 1);
    assert_eq!(case.usage.input_tokens, 7);
}

/// A task or an evaluator that panics fails its case, and the others go on; a score that
/// is not a number fails as an assertion that says so, and the report still reads back.
#[tokio::test]
async fn a_panic_fails_its_case_and_a_score_that_is_not_a_number_fails_its_outcome() {
    let task = task_fn(|n: u32| async move {
        if n == 1 {
            panic!("no ones");
        }
        Ok::<_, io::Error>(n * 2)
    });
    let report = Experiment::new("panics", task)
        .evaluator(EqualsExpected)
        .evaluator(golem_evals::evaluator::score(
            "ratio",
            |ctx: &EvalContext<'_, u32, u32, u32>| {
                f64::from(*ctx.output) / f64::from(ctx.case.input)
            },
        ))
        .evaluator(check("sane", |ctx: &EvalContext<'_, u32, u32, u32>| {
            assert!(*ctx.output < 6, "evaluator bug");
            true
        }))
        .progress(Progress::Hidden)
        .run(&numbers(4))
        .await;

    let results: Vec<CaseResult> = report.cases.iter().map(|case| case.result).collect();
    assert_eq!(
        results,
        [
            CaseResult::Failed,
            CaseResult::Error,
            CaseResult::Passed,
            CaseResult::Failed
        ]
    );
    assert_eq!(
        report.cases[1].error.as_deref(),
        Some("the task panicked: no ones")
    );
    // 0 / 0 for the first case.
    let ratio = &report.cases[0].outcomes[1];
    assert!(ratio.is_failure());
    assert_eq!(ratio.name, "ratio");
    assert_eq!(
        ratio.reason.as_deref(),
        Some("the score is not a finite number: NaN")
    );
    let sane = &report.cases[3].outcomes[2];
    assert_eq!(sane.name, "evaluator 3");
    assert_eq!(sane.reason.as_deref(), Some("panicked: evaluator bug"));
    let json = report.to_json().unwrap();
    assert_eq!(golem_evals::Report::from_json(&json).unwrap(), report);
}
