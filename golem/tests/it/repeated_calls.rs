//! Feedback on repeated calls: a call the model already has the result of is refused with
//! that result, charged to the tool's budget (ADR 0023).

use crate::common;

use std::error::Error as _;

use common::dice::Verdict;
use common::*;
use futures_util::StreamExt;
use golem::model::{Message, ResponsePart};
use golem::output::Json;
use golem::run::ToolOutcome;
use golem::tool::{FunctionTool, Tool};
use golem::{Agent, Exhausted, ModelRetry, RunContext, RunEvent, Stage};
use serde_json::json;

#[golem::args]
struct Dice {
    n: i64,
}

#[golem::args]
struct Nothing {}

/// Every die shows 3; `repeatable` opts the tool out of the check.
fn dice_tool(repeatable: bool) -> impl Tool<()> {
    FunctionTool::new("roll_dice", |_ctx: RunContext<()>, dice: Dice| {
        futures_util::future::ready(Ok::<_, ModelRetry>(dice.n * 3))
    })
    .repeatable(repeatable)
}

fn roll_dice() -> impl Tool<()> {
    dice_tool(false)
}

fn flip_coin() -> impl Tool<()> {
    FunctionTool::new("flip_coin", |_ctx: RunContext<()>, _: Nothing| {
        futures_util::future::ready(Ok::<_, ModelRetry>("heads"))
    })
}

fn dice_call(n: i64, id: &str) -> ResponsePart {
    call("roll_dice", &json!({ "n": n }).to_string(), id)
}

/// The feedback for a repeated `roll_dice` call whose earlier result was `result`, in an
/// agent whose answer is given as `next` says.
fn refused(result: &str, next: &str) -> String {
    format!(
        "`roll_dice` already returned this for these arguments: {result}. Calling it again \
         with the same arguments gives nothing new, so it was not run. Use that result; when \
         you have what you need, {next}."
    )
}

const TEXT: &str = "answer with text";

fn agent(model: golem::model::function::FunctionModel, after: u32) -> Agent<(), String> {
    Agent::<(), String>::builder(model)
        .tool(roll_dice())
        .tool(flip_coin())
        .tool_retries(1)
        .refuse_repeated_calls(after)
        .build()
        .expect("a valid agent")
}

#[tokio::test]
async fn repeated_calls_run_as_usual_by_default() {
    let script = script(vec![
        reply(vec![dice_call(2, "c1")], 10, 5),
        reply(vec![dice_call(2, "c2")], 20, 5),
        reply(vec![text("6")], 30, 1),
    ]);
    let agent = Agent::<(), String>::builder(script.model.clone())
        .tool(roll_dice())
        .build()
        .unwrap();

    let result = agent.run("Roll two dice", ()).await.unwrap();

    assert_eq!(result.usage.tool_calls, 2);
    assert!(result.usage.rejected.total.is_zero());
}

#[tokio::test]
async fn a_loop_of_identical_calls_is_refused_and_ends_typed_when_the_budget_is_spent() {
    let script = script(vec![
        reply(vec![dice_call(2, "c1")], 10, 5),
        reply(vec![dice_call(2, "c2")], 20, 5),
        reply(vec![dice_call(2, "c3")], 30, 5),
    ]);
    let agent = agent(script.model.clone(), 1);

    let error = agent.run("Roll two dice", ()).await.unwrap_err();

    let feedback = refused("6", TEXT);
    assert_eq!(error.stage(), Stage::Tool);
    assert_eq!(error.tool_name(), Some("roll_dice"));
    assert_eq!(
        error.exhausted(),
        Some(Exhausted {
            rejections: 2,
            limit: 1
        })
    );
    let cause = error.source().unwrap();
    assert_eq!(cause.to_string(), feedback);
    assert!(cause.downcast_ref::<ModelRetry>().is_some());
    assert_eq!(
        error.messages(),
        [
            request(vec![user("Roll two dice")]),
            response(vec![dice_call(2, "c1")], 10, 5),
            request(vec![tool_return("roll_dice", "c1", json!(6))]),
            response(vec![dice_call(2, "c2")], 20, 5),
            request(vec![tool_retry("roll_dice", "c2", &feedback)]),
            response(vec![dice_call(2, "c3")], 30, 5),
        ]
    );
    assert_eq!(
        Message::Request(error.pending().unwrap().clone()),
        request(vec![tool_retry("roll_dice", "c3", &feedback)])
    );
    let usage = error.usage();
    assert_eq!((usage.requests, usage.tool_calls), (3, 1));
    assert_eq!(usage.rejected.total, cost(2, 50, 10));
    assert_eq!(usage.rejected.tools["roll_dice"], cost(2, 50, 10));
    assert_eq!(script.requests(), 3);
}

#[tokio::test]
async fn the_events_show_the_refused_call_finished_rejected_without_starting() {
    let script = script(vec![
        reply(vec![dice_call(2, "c1")], 10, 5),
        reply(vec![dice_call(2, "c2")], 20, 5),
        reply(vec![text("6")], 30, 1),
    ]);
    let agent = agent(script.model.clone(), 1);

    let mut events = agent.run_stream("Roll two dice", ());
    let mut seen = Vec::new();
    while let Some(event) = events.next().await {
        seen.push(match event.unwrap() {
            RunEvent::ToolCallStarted { turn, call } => {
                format!("start {turn}: {}", call.tool_call_id)
            }
            RunEvent::ToolCallFinished {
                turn,
                call,
                outcome,
            } => match outcome {
                ToolOutcome::Returned(value) => {
                    format!("finish {turn}: {} {value}", call.tool_call_id)
                }
                ToolOutcome::Rejected { feedback } => {
                    format!("finish {turn}: {} rejected: {feedback}", call.tool_call_id)
                }
                other => format!("finish {turn}: {other:?}"),
            },
            RunEvent::Rejected(rejection) => format!(
                "rejected {}: {} {:?} retry {} of {}: {} (cost {:?})",
                rejection.turn,
                rejection.stage,
                rejection.tool_call_id(),
                rejection.retry,
                rejection.max_retries,
                rejection.feedback,
                rejection.cost,
            ),
            RunEvent::Finished(result) => format!("finished: {}", result.output),
            _ => continue,
        });
    }

    let feedback = refused("6", TEXT);
    assert_eq!(
        seen,
        [
            "start 1: c1".to_owned(),
            "finish 1: c1 6".to_owned(),
            format!("finish 2: c2 rejected: {feedback}"),
            format!(
                "rejected 2: tool Some(\"c2\") retry 1 of 1: {feedback} (cost {:?})",
                cost(1, 20, 5)
            ),
            "finished: 6".to_owned(),
        ]
    );
}

#[tokio::test]
async fn only_a_streak_of_returned_equal_calls_counts_and_calls_in_one_response_never_do() {
    let script = script(vec![
        reply(vec![dice_call(2, "c1")], 1, 1),
        // Other tools do not end the streak; spacing and key order do not make arguments
        // differ.
        reply(
            vec![
                call("flip_coin", "{}", "c2"),
                call("roll_dice", r#"{ "n" : 2 }"#, "c3"),
            ],
            1,
            1,
        ),
        reply(vec![dice_call(2, "c4")], 1, 1), // refused: returned twice in a row
        reply(vec![dice_call(3, "c5"), dice_call(3, "c6")], 1, 1), // one response: both run
        reply(vec![dice_call(2, "c7")], 1, 1), // other arguments came between: it runs
        reply(vec![text("done")], 1, 1),
    ]);
    let agent = Agent::<(), String>::builder(script.model.clone())
        .tool(roll_dice())
        .tool(flip_coin())
        .tool_retries(3)
        .refuse_repeated_calls(2)
        .build()
        .unwrap();

    let result = agent.run("Play", ()).await.unwrap();

    assert_eq!(result.output, "done");
    assert_eq!(
        result.messages[6],
        request(vec![tool_retry("roll_dice", "c4", &refused("6", TEXT))])
    );
    assert_eq!(
        result.messages[8],
        request(vec![
            tool_return("roll_dice", "c5", json!(9)),
            tool_return("roll_dice", "c6", json!(9)),
        ])
    );
    assert_eq!(
        result.messages[10],
        request(vec![tool_return("roll_dice", "c7", json!(6))])
    );
    assert_eq!(result.usage.tool_calls, 6);
    assert_eq!(result.usage.rejected.tools["roll_dice"], cost(1, 1, 1));
}

#[tokio::test]
async fn a_repeatable_tool_runs_every_call() {
    let script = script(vec![
        reply(vec![dice_call(2, "c1")], 1, 1),
        reply(vec![dice_call(2, "c2")], 1, 1),
        reply(vec![text("6 and 6")], 1, 1),
    ]);
    let agent = Agent::<(), String>::builder(script.model.clone())
        .tool(dice_tool(true))
        .refuse_repeated_calls(1)
        .build()
        .unwrap();

    let result = agent.run("Roll twice", ()).await.unwrap();

    assert_eq!(
        result.messages[4],
        request(vec![tool_return("roll_dice", "c2", json!(6))])
    );
    assert_eq!(result.usage.tool_calls, 2);
    assert!(result.usage.rejected.total.is_zero());
}

#[tokio::test]
async fn a_new_prompt_starts_a_new_streak() {
    let first = script(vec![
        reply(vec![dice_call(2, "c1")], 1, 1),
        reply(vec![text("6")], 1, 1),
        reply(vec![dice_call(2, "c2")], 1, 1),
        reply(vec![text("6 again")], 1, 1),
    ]);
    let agent = agent(first.model.clone(), 1);

    let result = agent.run("Roll two dice", ()).await.unwrap();
    let again = agent
        .run_with_history(result.messages, "Roll them again", ())
        .await
        .unwrap();

    assert_eq!(
        again.messages[6],
        request(vec![tool_return("roll_dice", "c2", json!(6))])
    );
    assert!(again.usage.rejected.total.is_zero());
}

/// A roll, then a response that rolls again with the same arguments and answers with
/// `answer`'s arguments; and an agent refusing the repeat, with `tool_retries` of budget.
fn repeat_and_answer(answer: &str, tool_retries: u32) -> (Script, Agent<(), Json<Verdict>>) {
    let script = script(vec![
        reply(vec![dice_call(2, "c1")], 10, 5),
        reply(
            vec![dice_call(2, "c2"), call("final_result", answer, "c3")],
            20,
            5,
        ),
    ]);
    let agent = Agent::<(), Json<Verdict>>::builder(script.model.clone())
        .tool(roll_dice())
        .tool_retries(tool_retries)
        .refuse_repeated_calls(1)
        .build()
        .expect("a valid agent");
    (script, agent)
}

#[tokio::test]
async fn a_refused_call_does_not_hold_back_the_answer_in_the_same_response() {
    // Within the tool's budget, and over it (retries off: the refusal alone would end the
    // run), the answer stands.
    for tool_retries in [1, 0] {
        let (_script, agent) = repeat_and_answer(r#"{"winner":"Ann","score":6}"#, tool_retries);

        let result = agent.run("Who won?", ()).await.unwrap();

        assert_eq!(
            (result.output.winner.as_str(), result.output.score),
            ("Ann", 6)
        );
        assert_eq!(
            result.messages.last(),
            Some(&request(vec![
                tool_retry(
                    "roll_dice",
                    "c2",
                    &refused("6", "call `final_result` with your answer")
                ),
                tool_return("final_result", "c3", json!("Final result processed.")),
            ]))
        );
        assert_eq!((result.usage.requests, result.usage.tool_calls), (2, 1));
        assert_eq!(result.usage.rejected.tools["roll_dice"], cost(1, 20, 5));
    }
}

#[tokio::test]
async fn a_refused_call_over_its_budget_fails_the_run_when_the_answer_beside_it_does_not_decode() {
    let (script, agent) = repeat_and_answer(r#"{"winner":"Ann"}"#, 0);

    let error = agent.run("Who won?", ()).await.unwrap_err();

    assert_eq!(error.stage(), Stage::Tool);
    assert_eq!(
        error.exhausted(),
        Some(Exhausted {
            rejections: 1,
            limit: 0
        })
    );
    assert_eq!(script.requests(), 2);
}

#[tokio::test]
async fn a_long_result_is_shown_cut() {
    let long = "x".repeat(500);
    let echo = FunctionTool::new("echo", move |_ctx: RunContext<()>, _: Nothing| {
        futures_util::future::ready(Ok::<_, ModelRetry>(long.clone()))
    });
    let script = script(vec![
        reply(vec![call("echo", "{}", "c1")], 1, 1),
        reply(vec![call("echo", "{}", "c2")], 1, 1),
        reply(vec![text("ok")], 1, 1),
    ]);
    let agent = Agent::<(), String>::builder(script.model.clone())
        .tool(echo)
        .tool_retries(1)
        .refuse_repeated_calls(1)
        .build()
        .unwrap();

    let result = agent.run("Echo", ()).await.unwrap();

    let shown = format!("{}…", "x".repeat(400));
    assert_eq!(
        result.messages[4],
        request(vec![tool_retry(
            "echo",
            "c2",
            &format!(
                "`echo` already returned this for these arguments: {shown}. Calling it again \
                 with the same arguments gives nothing new, so it was not run. Use that \
                 result; when you have what you need, answer with text."
            )
        )])
    );
}

#[tokio::test]
async fn a_repeated_call_of_a_tool_that_needs_approval_is_refused_without_asking() {
    let script = script(vec![
        reply(vec![dice_call(2, "c1")], 1, 1),
        reply(vec![dice_call(2, "c2")], 1, 1),
        reply(vec![text("6")], 1, 1),
    ]);
    let guarded = FunctionTool::new("roll_dice", |_ctx: RunContext<()>, dice: Dice| {
        futures_util::future::ready(Ok::<_, ModelRetry>(dice.n * 3))
    })
    .requires_approval(true);
    let agent = Agent::<(), String>::builder(script.model.clone())
        .tool(guarded)
        .tool_retries(1)
        .refuse_repeated_calls(1)
        .build()
        .unwrap();

    let mut run = agent.start("Roll two dice", ());
    let mut paused = Vec::new();
    let result = loop {
        match run.step().await.unwrap() {
            golem::Step::Paused => {
                let ids: Vec<String> = run
                    .state()
                    .awaiting_approval()
                    .iter()
                    .map(|call| call.tool_call_id.clone())
                    .collect();
                for id in &ids {
                    run.approve(id).unwrap();
                }
                paused.extend(ids);
            }
            golem::Step::Finished(result) => break result,
            _ => {}
        }
    };

    assert_eq!(paused, ["c1"]);
    assert_eq!(
        result.messages[4],
        request(vec![tool_retry("roll_dice", "c2", &refused("6", TEXT))])
    );
    assert_eq!(result.usage.tool_calls, 1);
}
