//! Output functions: outputs the model calls with arguments, rejected under the output
//! budget, several to choose from, and hand-offs that run another agent on the
//! conversation so far (ADR 0034).

use crate::common;

use std::error::Error as _;
use std::sync::Arc;

use common::*;
use futures_util::StreamExt;
use golem::model::{Message, Model, ModelError, ModelResponse, RequestParams, ResponsePart};
use golem::output::OutputMode;
use golem::run::{CancellationToken, MemoryJournal, NestedEvent, Stopped};
use golem::tool::OnAgentError;
use golem::{Agent, BuildError, ModelRetry, RunContext, RunError, RunEvent, Stage};
use serde_json::json;

/// A verdict on the game.
#[golem::output]
#[derive(Debug, PartialEq)]
struct Verdict {
    winner: String,
}

/// Names the winner, who must be one of the players.
///
/// # Arguments
/// * `winner` - Who won.
#[golem::output]
async fn name_winner(ctx: &RunContext<Vec<String>>, winner: String) -> Result<Verdict, ModelRetry> {
    if !ctx.deps().contains(&winner) {
        return Err(ModelRetry::new(format!(
            "{winner} did not play; the players are {}",
            ctx.deps().join(" and ")
        )));
    }
    Ok(Verdict { winner })
}

/// Calls the game a draw.
#[golem::output(name = "draw")]
async fn no_winner() -> Verdict {
    Verdict {
        winner: "nobody".to_owned(),
    }
}

const PROCESSED: &str = "Final result processed.";

fn winner_call(winner: &str, id: &str) -> ResponsePart {
    call("name_winner", &json!({ "winner": winner }).to_string(), id)
}

fn players() -> Vec<String> {
    vec!["Ann".to_owned(), "Cy".to_owned()]
}

fn judge(model: &Script, output_retries: u32) -> Agent<Vec<String>, Verdict> {
    Agent::<Vec<String>, Verdict>::builder(model.model.clone())
        .output_fn(NameWinner)
        .output_fn(NoWinner)
        .output_retries(output_retries)
        .build()
        .expect("a valid agent")
}

#[tokio::test]
async fn a_rejected_output_function_call_is_charged_to_the_output_budget() {
    let model = script(vec![
        reply(vec![winner_call("Bob", "c1")], 100, 10),
        reply(vec![winner_call("Ann", "c2")], 120, 8),
    ]);

    let result = judge(&model, 1).run("Who won?", players()).await.unwrap();

    assert_eq!(
        result.output,
        Verdict {
            winner: "Ann".to_owned()
        }
    );
    let feedback = "Bob did not play; the players are Ann and Cy";
    assert_eq!(
        result.messages,
        [
            request(vec![user("Who won?")]),
            response(vec![winner_call("Bob", "c1")], 100, 10),
            request(vec![tool_retry("name_winner", "c1", feedback)]),
            response(vec![winner_call("Ann", "c2")], 120, 8),
            request(vec![tool_return("name_winner", "c2", json!(PROCESSED))]),
        ]
    );
    let usage = &result.usage;
    assert_eq!(
        (usage.requests, usage.input_tokens, usage.output_tokens),
        (2, 220, 18)
    );
    assert_eq!(usage.tool_calls, 0);
    assert_eq!(usage.rejected.output, cost(1, 100, 10));
    assert_eq!(usage.rejected.total, cost(1, 100, 10));
    assert!(usage.rejected.tools.is_empty());
}

#[tokio::test]
async fn past_the_output_budget_a_rejected_output_function_fails_the_run_at_decode() {
    let model = script(vec![reply(vec![winner_call("Bob", "c1")], 100, 10)]);

    let error = judge(&model, 0)
        .run("Who won?", players())
        .await
        .unwrap_err();

    assert_eq!(error.stage(), Stage::Decode);
    assert_eq!(
        error.to_string(),
        "the output was rejected and output retries are off"
    );
    assert_eq!(
        error.model_retry().map(ModelRetry::message),
        Some("Bob did not play; the players are Ann and Cy")
    );
    assert_eq!(error.usage().rejected.output, cost(1, 100, 10));
    assert_eq!(
        error.pending().map(|pending| pending.parts.clone()),
        Some(vec![tool_retry(
            "name_winner",
            "c1",
            "Bob did not play; the players are Ann and Cy"
        )])
    );
}

#[tokio::test]
async fn several_outputs_are_several_output_tools_and_the_model_picks_one() {
    let model = script(vec![
        reply(vec![text("Nobody won, I think.")], 50, 5),
        reply(vec![call("draw", "{}", "c1")], 60, 3),
    ]);

    let result = judge(&model, 1).run("Who won?", players()).await.unwrap();

    assert_eq!(result.output.winner, "nobody");
    let params = model.params.lock().unwrap()[0].clone();
    let names: Vec<&str> = params
        .output_tools
        .iter()
        .map(|tool| tool.name.as_str())
        .collect();
    assert_eq!(names, ["final_result", "name_winner", "draw"]);
    assert_eq!(
        params.output_tools[1].description.as_deref(),
        Some("Names the winner, who must be one of the players.")
    );
    assert_eq!(
        params.output_tools[1].parameters["properties"]["winner"]["description"],
        "Who won."
    );
    assert!(!params.allow_text_output);
    // Text is no answer when the output is structured: the model is told its choices.
    let feedback = "Plain text responses are not permitted. Call one of the output tools \
                    (`final_result`, `name_winner`, `draw`) with your answer.";
    assert_eq!(result.messages[2], request(vec![retry(feedback)]));
    assert_eq!(
        result.messages[4],
        request(vec![tool_return("draw", "c1", json!(PROCESSED))])
    );
    assert_eq!(result.usage.rejected.output, cost(1, 50, 5));
}

#[tokio::test]
async fn the_first_output_call_is_the_answer_and_the_others_are_not_used() {
    let model = script(vec![reply(
        vec![call("draw", "{}", "c1"), winner_call("Ann", "c2")],
        50,
        5,
    )]);

    let result = judge(&model, 0).run("Who won?", players()).await.unwrap();

    assert_eq!(result.output.winner, "nobody");
    assert_eq!(
        result.messages[2],
        request(vec![
            tool_return("draw", "c1", json!(PROCESSED)),
            tool_return(
                "name_winner",
                "c2",
                json!("Output tool not used: only the first output call is considered.")
            ),
        ])
    );
}

#[tokio::test]
async fn a_text_output_keeps_its_text_answers_beside_output_functions() {
    /// Ends the conversation with a canned goodbye.
    #[golem::output]
    async fn goodbye() -> String {
        "Goodbye!".to_owned()
    }

    let model = script(vec![reply(vec![text("Hello there.")], 5, 2)]);
    let agent = Agent::<(), String>::builder(model.model.clone())
        .output_fn(Goodbye)
        .build()
        .unwrap();

    let result = agent.run("Hi", ()).await.unwrap();

    assert_eq!(result.output, "Hello there.");
    let params = model.params.lock().unwrap()[0].clone();
    assert!(params.allow_text_output);
    assert_eq!(params.output_tools.len(), 1);
    assert_eq!(params.output_tools[0].name, "goodbye");
}

#[test]
fn output_functions_need_the_tool_mode_and_unique_names() {
    let model = script(vec![]);
    let native = Agent::<Vec<String>, Verdict>::builder(model.model.clone())
        .output_mode(OutputMode::Native)
        .output_fn(NameWinner)
        .build()
        .unwrap_err();
    assert_eq!(
        native,
        BuildError::OutputFunctionsNeedToolMode(OutputMode::Native)
    );
    assert_eq!(
        native.to_string(),
        "output functions are output tools; use `OutputMode::Tool` (the default) with them, not `Native`"
    );
    let twice = Agent::<Vec<String>, Verdict>::builder(model.model.clone())
        .output_fn(NoWinner)
        .output_fn(NoWinner)
        .build()
        .unwrap_err();
    assert_eq!(twice, BuildError::DuplicateToolName("draw".to_owned()));
    let taken = Agent::<Vec<String>, Verdict>::builder(model.model.clone())
        .output_tool_name("draw")
        .output_fn(NoWinner)
        .build()
        .unwrap_err();
    assert_eq!(taken, BuildError::OutputToolNameTaken("draw".to_owned()));
}

#[golem::args]
struct Transfer {
    /// Why billing should take over.
    reason: String,
}

fn billing(model: &Script) -> Agent<(), String> {
    Agent::<(), String>::builder(model.model.clone())
        .instructions("You handle billing.")
        .build()
        .expect("a valid agent")
}

fn transfer_call(id: &str) -> ResponsePart {
    call("to_billing", r#"{"reason": "a refund"}"#, id)
}

fn router(
    model: &Script,
    billing: &Agent<(), String>,
    on_error: OnAgentError,
) -> Agent<(), String> {
    Agent::<(), String>::builder(model.model.clone())
        .system_prompt("You route customers.")
        .output_fn(
            billing
                .hand_off(
                    "to_billing",
                    "Hands the conversation to billing.",
                    |_ctx: &RunContext<()>, transfer: Transfer| {
                        (format!("Handed over for {}.", transfer.reason), ())
                    },
                )
                .on_error(on_error),
        )
        .output_retries(1)
        .build()
        .expect("a valid agent")
}

#[tokio::test]
async fn a_hand_off_runs_another_agent_on_the_conversation_so_far() {
    let specialist = script(vec![reply(
        vec![text("Your refund is on its way.")],
        300,
        7,
    )]);
    let front = script(vec![reply(
        vec![text("Let me hand you over."), transfer_call("h1")],
        40,
        6,
    )]);

    let result = router(&front, &billing(&specialist), OnAgentError::Fail)
        .run("Where is my refund?", ())
        .await
        .unwrap();

    assert_eq!(result.output, "Your refund is on its way.");
    // The specialist saw the router's conversation, the call answered, and the note.
    let conversation = [
        request(vec![
            system("You route customers."),
            user("Where is my refund?"),
        ]),
        response(
            vec![text("Let me hand you over."), transfer_call("h1")],
            40,
            6,
        ),
    ];
    let seen = specialist.seen.lock().unwrap()[0].clone();
    assert_eq!(
        seen,
        [
            conversation[0].clone(),
            conversation[1].clone(),
            request(vec![
                tool_return("to_billing", "h1", json!(PROCESSED)),
                user("Handed over for a refund."),
            ]),
        ]
    );
    // With its own instructions, not the router's.
    let params = specialist.params.lock().unwrap()[0].clone();
    assert_eq!(params.instructions.as_deref(), Some("You handle billing."));
    // The router's history ends with the hand-off, answered as the accepted output.
    assert_eq!(
        result.messages,
        [
            conversation[0].clone(),
            conversation[1].clone(),
            request(vec![tool_return("to_billing", "h1", json!(PROCESSED))]),
        ]
    );
    let usage = &result.usage;
    assert_eq!(
        (usage.requests, usage.input_tokens, usage.output_tokens),
        (2, 340, 13)
    );
    let billing = &usage.agents["to_billing"];
    assert_eq!(
        (
            billing.requests,
            billing.input_tokens,
            billing.output_tokens
        ),
        (1, 300, 7)
    );
}

#[tokio::test]
async fn a_failing_hand_off_is_a_rejection_under_retry_and_its_cost_is_booked() {
    // The specialist's model has nothing to say: its run fails at the model stage.
    let specialist = script(vec![]);
    let front = script(vec![
        reply(vec![transfer_call("h1")], 40, 6),
        reply(vec![text("Sorry, billing is closed.")], 50, 6),
    ]);

    let result = router(&front, &billing(&specialist), OnAgentError::Retry)
        .run("Where is my refund?", ())
        .await
        .unwrap();

    assert_eq!(result.output, "Sorry, billing is closed.");
    let feedback = "The `to_billing` agent failed: the model request failed. Change the \
                    request, or do without it.";
    assert_eq!(
        result.messages[2],
        request(vec![tool_retry("to_billing", "h1", feedback)])
    );
    assert_eq!(result.usage.rejected.output, cost(1, 40, 6));
    assert_eq!(result.usage.requests, 2);
    assert_eq!(result.usage.agents["to_billing"].requests, 0);
}

#[tokio::test]
async fn a_failing_hand_off_fails_the_run_at_decode_under_fail_with_the_agents_error() {
    let specialist = script(vec![]);
    let front = script(vec![reply(vec![transfer_call("h1")], 40, 6)]);

    let error = router(&front, &billing(&specialist), OnAgentError::Fail)
        .run("Where is my refund?", ())
        .await
        .unwrap_err();

    assert_eq!(error.stage(), Stage::Decode);
    assert_eq!(error.exhausted(), None);
    let cause = error
        .source()
        .and_then(|cause| cause.downcast_ref::<RunError>())
        .expect("the specialist's error");
    assert_eq!(cause.stage(), Stage::Model);
    assert_eq!(cause.messages().len(), 3);
    assert_eq!(
        error.messages().last(),
        Some(&request(vec![tool_return(
            "to_billing",
            "h1",
            json!("The output could not be processed; the run stopped.")
        )]))
    );
}

#[tokio::test]
async fn an_output_function_call_beside_a_rejected_tool_call_is_declined() {
    let model = script(vec![ModelResponse::new(vec![
        call("unknown", "{}", "t1"),
        call("draw", "{}", "c1"),
    ])]);
    let error = judge(&model, 0)
        .run("Who won?", players())
        .await
        .unwrap_err();

    assert_eq!(error.stage(), Stage::Tool);
    assert_eq!(
        error.pending().map(|pending| pending.parts[1].clone()),
        Some(tool_return(
            "draw",
            "c1",
            json!(
                "Output not accepted: a tool call in this response was rejected. Correct that \
                 call first, then call `draw` again."
            )
        ))
    );
}

#[tokio::test]
async fn a_hand_offs_events_reach_the_callers_stream_with_their_path() {
    let specialist = script(vec![reply(vec![text("Refunded.")], 30, 2)]);
    let front = script(vec![reply(vec![transfer_call("h1")], 40, 6)]);
    let router = router(&front, &billing(&specialist), OnAgentError::Fail);

    let mut events = router.run_stream("Where is my refund?", ());
    let mut seen = Vec::new();
    while let Some(event) = events.next().await {
        seen.extend(match event.unwrap() {
            RunEvent::RequestSent { turn } => Some(format!("request {turn}")),
            RunEvent::OutputAccepted { turn } => Some(format!("accepted {turn}")),
            RunEvent::Finished(result) => Some(format!("finished: {}", result.output)),
            RunEvent::Agent(nested) => {
                let path: Vec<String> = nested
                    .path
                    .iter()
                    .map(|step| format!("{}@{}", step.agent, step.tool_call_id))
                    .collect();
                match nested.event {
                    NestedEvent::RequestSent { turn } => {
                        Some(format!("{} │ request {turn}", path.join("/")))
                    }
                    NestedEvent::Finished { output } => {
                        Some(format!("{} │ finished: {output}", path.join("/")))
                    }
                    _ => None,
                }
            }
            _ => None,
        });
    }

    assert_eq!(
        seen,
        [
            "request 1",
            "to_billing@h1 │ request 1",
            "to_billing@h1 │ finished: \"Refunded.\"",
            "accepted 1",
            "finished: Refunded.",
        ]
    );
}

/// A model that never answers, telling `asked` when it is asked.
struct Stalls {
    asked: Arc<tokio::sync::Notify>,
}

impl Model for Stalls {
    fn name(&self) -> &str {
        "stalls"
    }

    fn system(&self) -> &str {
        "test"
    }

    fn request<'a>(
        &'a self,
        _messages: &'a [Message],
        _params: &'a RequestParams,
    ) -> golem::BoxFuture<'a, Result<ModelResponse, ModelError>> {
        self.asked.notify_one();
        Box::pin(std::future::pending())
    }
}

/// A router that hands off at once (`h1`) to a specialist that never answers, the router's
/// script, and what the specialist's model tells when it is asked.
fn stalled_router(on_error: OnAgentError) -> (Agent<(), String>, Script, Arc<tokio::sync::Notify>) {
    let asked = Arc::new(tokio::sync::Notify::new());
    let specialist = Agent::<(), String>::builder(Stalls {
        asked: Arc::clone(&asked),
    })
    .build()
    .expect("a valid agent");
    let front = script(vec![reply(vec![transfer_call("h1")], 40, 6)]);
    (router(&front, &specialist, on_error), front, asked)
}

/// The specialist's error in `error`, stopped as `stopped`: the one interrupted call is the
/// hand-off, and the specialist had the router's conversation, the hand-off answered, and
/// the note. Both runs booked the request the specialist was stopped in.
fn stopped_specialist<'e>(error: &'e RunError, stopped: &Stopped) -> &'e RunError {
    assert_eq!(error.stopped(), Some(stopped));
    let [interrupted] = error.interrupted() else {
        panic!("one interrupted call, got {:?}", error.interrupted());
    };
    assert_eq!(
        (
            interrupted.tool_name.as_str(),
            interrupted.tool_call_id.as_str()
        ),
        ("to_billing", "h1")
    );
    let child = interrupted.agent_error().expect("the specialist's error");
    assert_eq!(child.stopped(), Some(stopped));
    assert_eq!(child.messages().len(), 3);
    assert_eq!(child.usage().requests, 1);
    assert_eq!(error.usage().requests, 2);
    assert_eq!(error.usage().agents["to_billing"].requests, 1);
    child
}

#[tokio::test]
async fn cancelling_the_caller_stops_the_agent_it_handed_off_to_with_its_state_in_the_error() {
    let (router, _front, asked) = stalled_router(OnAgentError::Fail);
    let token = CancellationToken::new();
    let running = tokio::spawn(
        router
            .start("Where is my refund?", ())
            .with_cancellation(token.clone())
            .finish(),
    );
    asked.notified().await;
    token.cancel();

    let error = running.await.unwrap().unwrap_err();

    stopped_specialist(&error, &Stopped::Cancelled);
    assert_eq!(
        error.messages().last(),
        Some(&request(vec![tool_return(
            "to_billing",
            "h1",
            json!("Not run: the run stopped before this call.")
        )]))
    );
}

/// Under a journal, a hand-off's steps are recorded under the answer's step, and the answer's
/// verdict after them: a replay asks neither model again and books the same usage.
#[tokio::test]
async fn under_a_journal_a_hand_offs_steps_are_the_answers_and_a_replay_asks_no_model() {
    let specialist = script(vec![reply(vec![text("Refunded.")], 300, 7)]);
    let front = script(vec![reply(vec![transfer_call("h1")], 40, 6)]);
    let router = router(&front, &billing(&specialist), OnAgentError::Fail);
    let journal = MemoryJournal::new();

    let result = router
        .start("Where is my refund?", ())
        .finish_in(&journal)
        .await
        .unwrap();

    assert_eq!(result.output, "Refunded.");
    assert_eq!(journal.names(), ["model:1", "output:1/model:1", "output:1"]);
    assert_eq!(journal.result("output:1"), Some(json!("accepted")));
    assert_eq!(result.usage.requests, 2);
    assert_eq!(result.usage.agents["to_billing"].requests, 1);

    let replayed = router
        .start("Where is my refund?", ())
        .finish_in(&journal)
        .await
        .unwrap();

    assert_eq!((front.requests(), specialist.requests()), (1, 1));
    assert_eq!(journal.replayed(), 3);
    assert_eq!(replayed.output, result.output);
    assert_eq!(replayed.messages, result.messages);
    assert_eq!(replayed.usage, result.usage);
}

/// Under a journal with a run timeout, the deadline stops a hand-off's agent in its step:
/// the run stops with the agent's state in its error and what the agent spent in its usage,
/// and the answer's step never begins. A replay stops there alike.
#[tokio::test]
async fn under_a_journal_the_deadline_stops_a_hand_off_at_its_step_with_its_usage() {
    let (router, front, _asked) = stalled_router(OnAgentError::Retry);
    let journal = MemoryJournal::new();
    let timeout = std::time::Duration::from_millis(50);
    let stopping = || {
        router
            .start("Where is my refund?", ())
            .with_timeout(timeout)
            .finish_in(&journal)
    };

    let error = stopping().await.unwrap_err();

    let timed_out = Stopped::TimedOut { timeout };
    stopped_specialist(&error, &timed_out);
    assert!(error.usage().rejected.output.is_zero());
    assert_eq!(journal.names(), ["deadline", "model:1", "output:1/model:1"]);
    assert_eq!(
        journal.failure("output:1/model:1").as_deref(),
        Some("the run did not finish within its timeout of 50 ms: stopped during this step")
    );

    let replayed = stopping().await.unwrap_err();

    assert_eq!(replayed.stopped(), Some(&timed_out));
    assert_eq!(replayed.messages(), error.messages());
    assert_eq!(replayed.usage(), error.usage());
    assert_eq!(journal.replayed(), 3);
    assert_eq!(front.requests(), 1);
}

/// Under a journal, a hand-off whose agent fails fails the run with the agent's error, live
/// and on replay alike (its steps replay to the same failure).
#[tokio::test]
async fn under_a_journal_a_failing_hand_off_fails_with_the_agents_error_on_replay_too() {
    let specialist = script(vec![]);
    let front = script(vec![reply(vec![transfer_call("h1")], 40, 6)]);
    let router = router(&front, &billing(&specialist), OnAgentError::Fail);
    let journal = MemoryJournal::new();

    for _ in 0..2 {
        let error = router
            .start("Where is my refund?", ())
            .finish_in(&journal)
            .await
            .unwrap_err();

        assert_eq!(error.stage(), Stage::Decode);
        let cause = error
            .source()
            .and_then(|cause| cause.downcast_ref::<RunError>())
            .expect("the specialist's error");
        assert_eq!(cause.stage(), Stage::Model);
        assert_eq!(cause.messages().len(), 3);
    }
    assert_eq!(journal.names(), ["model:1", "output:1/model:1", "output:1"]);
    assert_eq!(journal.replayed(), 3);
}

/// A hand-off that panics as it prepares its agent's prompt fails the answer, under a
/// journal as without one.
#[tokio::test]
async fn under_a_journal_a_hand_off_that_panics_as_it_starts_fails_the_answer() {
    let specialist = script(vec![]);
    let front = script(vec![reply(vec![transfer_call("h1")], 40, 6)]);
    let router = Agent::<(), String>::builder(front.model.clone())
        .output_fn(billing(&specialist).hand_off(
            "to_billing",
            "Hands the conversation to billing.",
            |_ctx: &RunContext<()>, _transfer: Transfer| -> (String, ()) {
                panic!("no billing account")
            },
        ))
        .build()
        .unwrap();
    let journal = MemoryJournal::new();

    let error = router
        .start("Where is my refund?", ())
        .finish_in(&journal)
        .await
        .unwrap_err();

    assert_eq!(error.stage(), Stage::Decode);
    assert_eq!(
        error.source().map(ToString::to_string).as_deref(),
        Some("the output's decoder, function or validator panicked: no billing account")
    );
    assert_eq!(specialist.requests(), 0);
}
