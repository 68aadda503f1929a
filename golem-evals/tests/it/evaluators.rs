//! Every built-in evaluator, on outputs and on real runs of a scripted agent.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::time::Duration;

use common::{calculator_task, question};
use golem::model::function::FunctionModel;
use golem::model::{Message, ModelResponse};
use golem::usage::RoundCost;
use golem_evals::evaluator::{
    Contains, CostBound, EqualsExpected, Judge, MatchesSchema, MaxDuration, WithinTolerance, check,
    check_with_reason, evaluator_fn, label, score,
};
use golem_evals::{Case, EvalContext, Evaluation, Evaluator, Outcome, Task, Trace};
use serde_json::json;

fn evaluate<I, O, E>(
    evaluator: &impl Evaluator<I, O, E>,
    case: &Case<I, E>,
    output: &O,
) -> Vec<Outcome> {
    let trace = Trace::default();
    let ctx = EvalContext::new(case, output, &trace, Duration::from_millis(1500), 0);
    evaluator.evaluate(&ctx).outcomes
}

fn texts(outcomes: &[Outcome]) -> Vec<String> {
    outcomes.iter().map(ToString::to_string).collect()
}

#[test]
fn equals_expected_compares_with_the_expected_output_and_skips_cases_without_one() {
    let case = Case::new("sum", "2 + 2".to_owned()).expect(4);
    assert_eq!(
        texts(&evaluate(&EqualsExpected, &case, &4)),
        ["equals expected: passed"]
    );
    assert_eq!(
        texts(&evaluate(&EqualsExpected, &case, &5)),
        ["equals expected: failed (expected 4, got 5)"]
    );
    let open: Case<String, i32> = Case::new("open", "anything".to_owned());
    assert!(evaluate(&EqualsExpected, &open, &5).is_empty());
}

#[test]
fn contains_looks_in_text_and_in_the_json_of_other_outputs() {
    let case: Case<(), ()> = Case::new("c", ());
    assert_eq!(
        texts(&evaluate(
            &Contains::new("Paris"),
            &case,
            &"It is Paris.".to_owned()
        )),
        [r#"contains "Paris": passed"#]
    );
    assert_eq!(
        texts(&evaluate(
            &Contains::new("Rome"),
            &case,
            &"It is Paris.".to_owned()
        )),
        [r#"contains "Rome": failed (not in "It is Paris.")"#]
    );
    assert_eq!(
        texts(&evaluate(
            &Contains::new(r#""city":"Paris""#),
            &case,
            &json!({"city": "Paris"})
        )),
        [r#"contains "\"city\":\"Paris\"": passed"#]
    );
}

#[test]
fn matches_schema_lists_each_violation_with_its_path() {
    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct City {
        name: String,
        population: u32,
    }
    let schema = MatchesSchema::of::<City>().unwrap();
    let case: Case<(), ()> = Case::new("c", ());
    assert_eq!(
        texts(&evaluate(
            &schema,
            &case,
            &json!({"name": "Paris", "population": 2_100_000})
        )),
        ["matches schema: passed"]
    );
    assert_eq!(
        texts(&evaluate(
            &schema,
            &case,
            &json!({"name": 7, "population": -1})
        )),
        [
            "matches schema: failed (at `/name`: 7 is not of type \"string\"; at `/population`: -1 is less than the minimum of 0)"
        ]
    );
    let error = MatchesSchema::new(&json!({"type": "no such type"})).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("the JSON schema does not compile: "),
        "{error}"
    );
}

#[test]
fn closures_make_assertions_scores_and_labels() {
    let case = Case::new("c", "question".to_owned()).expect("answer".to_owned());
    let output = "an answer".to_owned();
    type Ctx<'a> = EvalContext<'a, String, String, String>;
    assert_eq!(
        texts(&evaluate(
            &check("short", |ctx: &Ctx<'_>| ctx.output.len() < 5),
            &case,
            &output
        )),
        ["short: failed"]
    );
    assert_eq!(
        texts(&evaluate(
            &check_with_reason("mentions it", |ctx: &Ctx<'_>| {
                let expected = ctx.case.expected.as_deref().unwrap_or_default();
                if ctx.output.contains(expected) {
                    Ok(())
                } else {
                    Err(format!("no {expected:?}"))
                }
            }),
            &case,
            &"nothing".to_owned()
        )),
        [r#"mentions it: failed (no "answer")"#]
    );
    assert_eq!(
        texts(&evaluate(
            &score("words", |ctx: &Ctx<'_>| ctx.output.split(' ').count()
                as f64),
            &case,
            &output
        )),
        ["words: 2.00"]
    );
    assert_eq!(
        texts(&evaluate(
            &label("first word", |ctx: &Ctx<'_>| ctx.output[..2].to_owned()),
            &case,
            &output
        )),
        ["first word: an"]
    );
    let both = evaluator_fn(|ctx: &Ctx<'_>| {
        Evaluation::new([
            Outcome::assertion("not empty", !ctx.output.is_empty()),
            Outcome::label("repeat", ctx.repeat.to_string()),
        ])
    });
    assert_eq!(
        texts(&evaluate(&both, &case, &output)),
        ["not empty: passed", "repeat: 0"]
    );
}

#[test]
fn within_tolerance_is_absolute_or_relative() {
    let case = Case::new("half", ()).expect(2.5);
    assert_eq!(
        texts(&evaluate(&WithinTolerance::absolute(0.01), &case, &2.501)),
        ["within tolerance: passed"]
    );
    assert_eq!(
        texts(&evaluate(&WithinTolerance::absolute(0.05), &case, &2.56)),
        ["within tolerance: failed (|2.56 - 2.5| = 0.06 > 0.05)"]
    );
    let case = Case::new("big", ()).expect(1000);
    assert_eq!(
        texts(&evaluate(&WithinTolerance::relative(0.1), &case, &1090)),
        ["within tolerance: passed"]
    );
    assert_eq!(
        texts(&evaluate(&WithinTolerance::relative(0.1), &case, &1200)),
        ["within tolerance: failed (|1200 - 1000| = 200 > 100)"]
    );
    assert_eq!(
        texts(&evaluate(
            &WithinTolerance::absolute(1.0),
            &case,
            &"many".to_owned()
        )),
        ["within tolerance: failed (the output or the expected output is not a number)"]
    );
}

#[test]
fn max_duration_bounds_how_long_the_task_took() {
    let case: Case<(), ()> = Case::new("c", ());
    assert_eq!(
        texts(&evaluate(&MaxDuration(Duration::from_secs(2)), &case, &())),
        ["duration: passed"]
    );
    assert_eq!(
        texts(&evaluate(&MaxDuration(Duration::from_secs(1)), &case, &())),
        ["duration: failed (took 1.5s, more than 1s)"]
    );
}

/// Runs the calculator (with one tool retry) on `question` and evaluates its run.
async fn on_run<Ev: Evaluator<String, String, String>>(
    evaluator: &Ev,
    question: &str,
) -> Evaluation {
    let case = Case::new("c", question.to_owned()).expect("42".to_owned());
    let run = calculator_task(1).run(&case.input).await.unwrap();
    let ctx = EvalContext::new(&case, &run.output, &run.trace, Duration::ZERO, 0);
    evaluator.evaluate_async(&ctx).await
}

#[tokio::test]
async fn cost_bounds_read_the_runs_usage_and_its_rejected_share() {
    let bound = CostBound::new()
        .requests(3)
        .total_tokens(200)
        .rejected_rounds(0)
        .rejected_tokens(100);
    // 12 + 30: a rejected call (50 + 10 tokens), the corrected one, the answer.
    let evaluation = on_run(&bound, "What is 12 + 30?").await;
    assert_eq!(
        texts(&evaluation.outcomes),
        [
            "requests: passed",
            "total tokens: failed (225 > 200)",
            "rejected rounds: failed (1 > 0)",
            "rejected tokens: passed",
        ]
    );
    assert_eq!(evaluation.usage, golem::Usage::default());
}

#[tokio::test]
async fn one_line_checks_read_the_trace_rejections_and_their_cost() {
    type Ctx<'a> = EvalContext<'a, String, String, String>;
    let no_rejection = check("no rejected round", |ctx: &Ctx<'_>| {
        ctx.trace.usage.rejected.is_empty()
    });
    let at_most_one = check("add rejected at most once", |ctx: &Ctx<'_>| {
        ctx.trace.rejections_of("add").count() <= 1
    });
    let cheap = check("rejected rounds under 50 tokens", |ctx: &Ctx<'_>| {
        let cost = ctx.trace.rejected_cost();
        cost.input_tokens + cost.output_tokens < 50
    });
    let evaluation = |question: &'static str| {
        let (no_rejection, at_most_one, cheap) = (&no_rejection, &at_most_one, &cheap);
        async move {
            let mut outcomes = on_run(no_rejection, question).await.outcomes;
            outcomes.extend(on_run(at_most_one, question).await.outcomes);
            outcomes.extend(on_run(cheap, question).await.outcomes);
            texts(&outcomes)
        }
    };
    assert_eq!(
        evaluation("What is 2 + 40?").await,
        [
            "no rejected round: passed",
            "add rejected at most once: passed",
            "rejected rounds under 50 tokens: passed"
        ]
    );
    assert_eq!(
        evaluation("What is 12 + 30?").await,
        [
            "no rejected round: failed",
            "add rejected at most once: passed",
            "rejected rounds under 50 tokens: failed"
        ]
    );

    let case: Case<String, String> = Case::new("c", "What is 12 + 30?".to_owned());
    let run = calculator_task(1).run(&case.input).await.unwrap();
    let rejections: Vec<_> = run.trace.rejections().collect();
    assert_eq!(rejections.len(), 1);
    assert_eq!(rejections[0].tool_name(), Some("add"));
    assert_eq!(
        rejections[0].feedback,
        "the numbers must not be negative, got -12 and 30"
    );
    assert_eq!(
        rejections[0].cost,
        RoundCost {
            requests: 1,
            input_tokens: 50,
            output_tokens: 10
        }
    );
    assert_eq!(run.trace.tool_calls().count(), 2);
    assert_eq!(question(&run.trace.messages), (12, 30));
}

/// A judge's model that first gives a score out of range, then a valid verdict.
fn judge_model() -> FunctionModel {
    FunctionModel::new(|messages: &[Message], _| match messages.len() {
        1 => ModelResponse::tool_call(
            "final_result",
            r#"{"pass": true, "score": 9, "reason": "right sum"}"#,
            "verdict_1",
        )
        .with_usage(120, 20),
        _ => ModelResponse::tool_call(
            "final_result",
            r#"{"pass": true, "score": 0.9, "reason": "right sum"}"#,
            "verdict_2",
        )
        .with_usage(160, 20),
    })
}

#[tokio::test]
async fn the_judge_corrects_its_verdict_once_and_reports_what_it_cost() {
    let judge = Judge::new(judge_model(), "The answer is the right sum.").unwrap();
    let evaluation = on_run(&judge, "What is 12 + 30?").await;

    assert_eq!(
        texts(&evaluation.outcomes),
        ["judge: passed (right sum)", "judge score: 0.90 (right sum)"]
    );
    assert_eq!(evaluation.usage.requests, 2);
    assert_eq!(evaluation.usage.total_tokens(), 320);
    assert_eq!(
        evaluation.usage.rejected.output,
        RoundCost {
            requests: 1,
            input_tokens: 120,
            output_tokens: 20
        }
    );
}

#[tokio::test]
async fn the_judge_sees_the_rubric_input_expected_and_output() {
    let judge = Judge::new(judge_model(), "The answer is the right sum.").unwrap();
    let case = Case::new("c", "What is 12 + 30?".to_owned()).expect("42".to_owned());
    let trace = Trace::default();
    let output = "42".to_owned();
    let ctx = EvalContext::new(&case, &output, &trace, Duration::ZERO, 0);
    assert_eq!(
        judge.prompt(&ctx),
        "Rubric: The answer is the right sum.\n\nInput:\nWhat is 12 + 30?\n\nExpected output:\n42\n\nOutput:\n42\n"
    );
}

#[tokio::test]
async fn a_judge_that_fails_gives_a_failed_assertion_with_the_error_and_its_usage() {
    let stubborn = FunctionModel::new(|_: &[Message], _| {
        ModelResponse::tool_call(
            "final_result",
            r#"{"pass": true, "score": 9, "reason": "ok"}"#,
            "v",
        )
        .with_usage(100, 10)
    });
    let judge = Judge::new(stubborn, "Anything.")
        .unwrap()
        .named("strict judge");
    let evaluation = on_run(&judge, "What is 2 + 3?").await;

    assert_eq!(
        texts(&evaluation.outcomes),
        [
            "strict judge: failed (the judge failed: the output was rejected 3 times, over its retry budget of 2: `score` must be between 0 and 1, not 9)"
        ]
    );
    assert_eq!(evaluation.usage.requests, 3);
    assert_eq!(evaluation.usage.rejected.output.requests, 3);
}
