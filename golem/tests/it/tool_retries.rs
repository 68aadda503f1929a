//! Tool self-correction, as DESIGN §3 "Tools" specifies it.

use crate::common;

use std::error::Error as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use golem::model::{Message, ModelResponse};
use golem::tool::{FunctionTool, RetryLimit, Tool};
use golem::usage::RoundCost;
use golem::{Agent, Exhausted, ModelRetry, RunContext, Stage};
use serde_json::json;

/// The game the dice tool plays: every die shows `face`.
#[derive(Debug, Default)]
struct Game {
    face: i64,
    attempts: Arc<Mutex<Vec<Attempt>>>,
}

#[derive(Debug, Clone, PartialEq)]
struct Attempt {
    retry: u32,
    max_retries: u32,
    last_attempt: bool,
    tool_name: String,
    tool_call_id: String,
    turn: u32,
}

fn game() -> Game {
    Game {
        face: 3,
        ..Game::default()
    }
}

#[golem::args]
struct Dice {
    /// How many dice to roll.
    n: i64,
}

fn roll_dice() -> impl Tool<Game> {
    FunctionTool::new(
        "roll_dice",
        |ctx: RunContext<Game>, dice: Dice| async move {
            ctx.deps()
                .attempts
                .lock()
                .expect("not poisoned")
                .push(Attempt {
                    retry: ctx.retry(),
                    max_retries: ctx.max_retries(),
                    last_attempt: ctx.last_attempt(),
                    tool_name: ctx.tool_name().unwrap_or_default().to_owned(),
                    tool_call_id: ctx.tool_call_id().unwrap_or_default().to_owned(),
                    turn: ctx.turn(),
                });
            if dice.n <= 0 {
                return Err(ModelRetry::new(format!(
                    "n must be positive, got {}",
                    dice.n
                )));
            }
            Ok(dice.n * ctx.deps().face)
        },
    )
    .description("Roll `n` dice and return their total.")
}

#[golem::args]
struct Coin {
    side: String,
}

fn flip_coin() -> impl Tool<Game> {
    FunctionTool::new(
        "flip_coin",
        |_ctx: RunContext<Game>, coin: Coin| async move {
            match coin.side.as_str() {
                "heads" | "tails" => Ok(format!("landed {}", coin.side)),
                other => Err(ModelRetry::new(format!(
                    "side must be heads or tails, got {other}"
                ))),
            }
        },
    )
}

fn cost(requests: u64, input_tokens: u64, output_tokens: u64) -> RoundCost {
    RoundCost {
        requests,
        input_tokens,
        output_tokens,
    }
}

fn dice_call(n: i64, id: &str) -> golem::model::ResponsePart {
    call("roll_dice", &json!({ "n": n }).to_string(), id)
}

#[tokio::test]
async fn tool_retries_are_off_by_default() {
    let script = script(vec![reply(vec![dice_call(-1, "c1")], 10, 5)]);
    let agent = Agent::<Game, String>::builder(script.model.clone())
        .system_prompt("You referee dice games.")
        .tool(roll_dice())
        .build()
        .unwrap();

    let error = agent.run("Roll for me", game()).await.unwrap_err();

    assert_eq!(error.stage(), Stage::Tool);
    assert!(error.is_tool() && error.is_retries_exhausted());
    assert_eq!(error.tool_name(), Some("roll_dice"));
    assert_eq!(
        error.exhausted(),
        Some(Exhausted {
            rejections: 1,
            limit: 0
        })
    );
    assert_eq!(
        error.to_string(),
        "tool `roll_dice` was rejected and its retries are off"
    );
    let cause = error.source().unwrap();
    assert_eq!(cause.to_string(), "n must be positive, got -1");
    assert!(cause.downcast_ref::<ModelRetry>().is_some());
    assert_eq!(
        error.messages(),
        [
            request(vec![system("You referee dice games."), user("Roll for me")]),
            response(vec![dice_call(-1, "c1")], 10, 5),
        ]
    );
    assert_eq!(
        Message::Request(error.pending().unwrap().clone()),
        request(vec![tool_retry(
            "roll_dice",
            "c1",
            "n must be positive, got -1"
        )])
    );
    let usage = error.usage();
    assert_eq!(
        (
            usage.requests,
            usage.input_tokens,
            usage.output_tokens,
            usage.tool_calls
        ),
        (1, 10, 5, 1)
    );
    assert_eq!(usage.rejected.total, cost(1, 10, 5));
    assert_eq!(usage.rejected.tools["roll_dice"], cost(1, 10, 5));
    assert_eq!(script.requests(), 1);
}

#[tokio::test]
async fn a_rejection_is_the_calls_result_and_the_model_corrects_itself() {
    let script = script(vec![
        reply(vec![dice_call(-1, "c1")], 10, 5),
        reply(vec![dice_call(2, "c2")], 20, 5),
        reply(vec![text("You rolled 6.")], 30, 4),
    ]);
    let agent = Agent::<Game, String>::builder(script.model.clone())
        .tool(roll_dice())
        .tool_retries(1)
        .build()
        .unwrap();

    let result = agent.run("Roll for me", game()).await.unwrap();

    assert_eq!(result.output, "You rolled 6.");
    let expected = [
        request(vec![user("Roll for me")]),
        response(vec![dice_call(-1, "c1")], 10, 5),
        request(vec![tool_retry(
            "roll_dice",
            "c1",
            "n must be positive, got -1",
        )]),
        response(vec![dice_call(2, "c2")], 20, 5),
        request(vec![tool_return("roll_dice", "c2", json!(6))]),
        response(vec![text("You rolled 6.")], 30, 4),
    ];
    assert_eq!(result.messages, expected);
    // The model saw the rejection before correcting itself.
    assert_eq!(script.seen.lock().expect("not poisoned")[1], expected[..3]);
    assert_eq!(
        (
            result.usage.requests,
            result.usage.input_tokens,
            result.usage.output_tokens,
            result.usage.tool_calls
        ),
        (3, 60, 14, 2)
    );
    assert_eq!(result.usage.rejected.total, cost(1, 10, 5));
    assert_eq!(result.usage.rejected.tools["roll_dice"], cost(1, 10, 5));
    assert!(result.usage.rejected.output.is_zero());
}

#[tokio::test]
async fn counters_are_independent_per_tool() {
    let script = script(vec![
        reply(vec![dice_call(-1, "c1")], 10, 1),
        reply(vec![call("flip_coin", r#"{"side":"edge"}"#, "c2")], 20, 1),
        reply(
            vec![
                dice_call(1, "c3"),
                call("flip_coin", r#"{"side":"heads"}"#, "c4"),
            ],
            30,
            1,
        ),
        reply(vec![text("3, heads")], 40, 1),
    ]);
    let agent = Agent::<Game, String>::builder(script.model)
        .tool(roll_dice())
        .tool(flip_coin())
        .tool_retries(1)
        .build()
        .unwrap();

    let result = agent.run("Play", game()).await.unwrap();

    assert_eq!(result.output, "3, heads");
    assert_eq!(
        result.messages[4],
        request(vec![tool_retry(
            "flip_coin",
            "c2",
            "side must be heads or tails, got edge"
        )])
    );
    assert_eq!(
        result.messages[6],
        request(vec![
            tool_return("roll_dice", "c3", json!(3)),
            tool_return("flip_coin", "c4", json!("landed heads")),
        ])
    );
    assert_eq!(result.usage.rejected.total, cost(2, 30, 2));
    assert_eq!(result.usage.rejected.tools["roll_dice"], cost(1, 10, 1));
    assert_eq!(result.usage.rejected.tools["flip_coin"], cost(1, 20, 1));
}

#[tokio::test]
async fn a_tools_own_budget_raises_the_agent_default() {
    let script = script(vec![
        reply(vec![dice_call(-1, "c1")], 1, 1),
        reply(vec![dice_call(0, "c2")], 1, 1),
        reply(vec![dice_call(4, "c3")], 1, 1),
        reply(vec![text("12")], 1, 1),
    ]);
    let generous = FunctionTool::new(
        "roll_dice",
        |ctx: RunContext<Game>, dice: Dice| async move {
            if dice.n <= 0 {
                return Err(ModelRetry::new("n must be positive"));
            }
            Ok(dice.n * ctx.deps().face)
        },
    )
    .max_retries(RetryLimit(2));
    let agent = Agent::<Game, String>::builder(script.model)
        .tool(generous)
        .build()
        .unwrap();

    let result = agent.run("Roll", game()).await.unwrap();

    assert_eq!(result.output, "12");
    assert_eq!(result.usage.rejected.tools["roll_dice"].requests, 2);
}

#[tokio::test]
async fn a_tools_own_budget_lowers_the_agent_default() {
    let script = script(vec![
        reply(vec![dice_call(-1, "c1")], 1, 1),
        reply(vec![dice_call(0, "c2")], 1, 1),
        reply(vec![dice_call(4, "c3")], 1, 1),
    ]);
    let strict = FunctionTool::new(
        "roll_dice",
        |_ctx: RunContext<Game>, dice: Dice| async move {
            if dice.n <= 0 {
                return Err(ModelRetry::new("n must be positive"));
            }
            Ok(dice.n)
        },
    )
    .max_retries(RetryLimit(1));
    let agent = Agent::<Game, String>::builder(script.model.clone())
        .tool(strict)
        .tool_retries(5)
        .build()
        .unwrap();

    let error = agent.run("Roll", game()).await.unwrap_err();

    assert_eq!(
        error.exhausted(),
        Some(Exhausted {
            rejections: 2,
            limit: 1
        })
    );
    assert_eq!(
        error.to_string(),
        "tool `roll_dice` was rejected 2 times, over its retry budget of 1"
    );
    assert_eq!(error.source().unwrap().to_string(), "n must be positive");
    assert_eq!(script.requests(), 2);
    assert_eq!(error.messages().len(), 4);
    assert!(error.pending().is_some());
}

#[tokio::test]
async fn retry_limit_zero_is_terminal_even_with_a_high_default() {
    let script = script(vec![reply(vec![dice_call(-1, "c1")], 1, 1)]);
    let terminal = FunctionTool::new(
        "roll_dice",
        |_ctx: RunContext<Game>, dice: Dice| async move {
            if dice.n <= 0 {
                return Err(ModelRetry::new("n must be positive"));
            }
            Ok(dice.n)
        },
    )
    .max_retries(RetryLimit(0));
    let agent = Agent::<Game, String>::builder(script.model.clone())
        .tool(terminal)
        .tool_retries(10)
        .build()
        .unwrap();

    let error = agent.run("Roll", game()).await.unwrap_err();

    assert_eq!(error.stage(), Stage::Tool);
    assert_eq!(
        error.exhausted(),
        Some(Exhausted {
            rejections: 1,
            limit: 0
        })
    );
    assert_eq!(script.requests(), 1);
}

#[tokio::test]
async fn counters_count_per_run_and_do_not_reset_after_a_success() {
    let script = script(vec![
        reply(vec![dice_call(-1, "c1")], 1, 1),
        reply(vec![dice_call(1, "c2")], 1, 1),
        reply(vec![dice_call(-2, "c3")], 1, 1),
        reply(vec![text("unreachable")], 1, 1),
    ]);
    let agent = Agent::<Game, String>::builder(script.model.clone())
        .tool(roll_dice())
        .tool_retries(1)
        .build()
        .unwrap();

    let error = agent.run("Roll", game()).await.unwrap_err();

    assert_eq!(
        error.exhausted(),
        Some(Exhausted {
            rejections: 2,
            limit: 1
        })
    );
    assert_eq!(
        error.source().unwrap().to_string(),
        "n must be positive, got -2"
    );
    assert_eq!(
        error.messages()[4..],
        [
            request(vec![tool_return("roll_dice", "c2", json!(3))]),
            response(vec![dice_call(-2, "c3")], 1, 1),
        ]
    );
    assert_eq!(script.requests(), 3);
}

#[tokio::test]
async fn several_rejected_calls_of_one_tool_in_one_turn_cost_one_retry() {
    let script = script(vec![
        reply(
            vec![dice_call(-1, "c1"), dice_call(0, "c2"), dice_call(3, "c3")],
            10,
            9,
        ),
        reply(vec![dice_call(1, "c4")], 20, 3),
        reply(vec![text("12 in all")], 30, 3),
    ]);
    let agent = Agent::<Game, String>::builder(script.model)
        .tool(roll_dice())
        .tool_retries(1)
        .build()
        .unwrap();

    let result = agent.run("Roll three times", game()).await.unwrap();

    assert_eq!(result.output, "12 in all");
    assert_eq!(
        result.messages[2],
        request(vec![
            tool_retry("roll_dice", "c1", "n must be positive, got -1"),
            tool_retry("roll_dice", "c2", "n must be positive, got 0"),
            tool_return("roll_dice", "c3", json!(9)),
        ])
    );
    assert_eq!(result.usage.tool_calls, 4);
    assert_eq!(result.usage.rejected.tools["roll_dice"], cost(1, 10, 9));
}

#[tokio::test]
async fn several_rejected_calls_in_one_turn_count_once_against_the_budget() {
    let script = script(vec![reply(
        vec![dice_call(-1, "c1"), dice_call(0, "c2")],
        1,
        1,
    )]);
    let agent = Agent::<Game, String>::builder(script.model)
        .tool(roll_dice())
        .build()
        .unwrap();

    let error = agent.run("Roll", game()).await.unwrap_err();

    assert_eq!(
        error.exhausted(),
        Some(Exhausted {
            rejections: 1,
            limit: 0
        })
    );
    // The cause is the first rejected call of the turn.
    assert_eq!(
        error.source().unwrap().to_string(),
        "n must be positive, got -1"
    );
}

#[tokio::test]
async fn unknown_tool_names_share_one_counter() {
    let script = script(vec![
        reply(vec![call("roll_die", r#"{"n":1}"#, "c1")], 1, 1),
        reply(vec![dice_call(-1, "c2")], 1, 1),
        reply(vec![call("dice", r#"{"n":1}"#, "c3")], 1, 1),
        reply(vec![text("unreachable")], 1, 1),
    ]);
    let agent = Agent::<Game, String>::builder(script.model.clone())
        .tool(roll_dice())
        .tool(flip_coin())
        .tool_retries(1)
        .build()
        .unwrap();

    let error = agent.run("Roll", game()).await.unwrap_err();

    assert_eq!(
        error.messages()[2],
        request(vec![tool_retry(
            "roll_die",
            "c1",
            "Unknown tool name: `roll_die`. Available tools: `roll_dice`, `flip_coin`."
        )])
    );
    // roll_dice's own rejection did not touch the unknown-name counter...
    assert_eq!(
        error.messages()[4],
        request(vec![tool_retry(
            "roll_dice",
            "c2",
            "n must be positive, got -1"
        )])
    );
    // ...but a second invented name did.
    assert_eq!(error.stage(), Stage::Tool);
    assert_eq!(error.tool_name(), Some("dice"));
    assert_eq!(
        error.exhausted(),
        Some(Exhausted {
            rejections: 2,
            limit: 1
        })
    );
    assert_eq!(
        error.source().unwrap().to_string(),
        "Unknown tool name: `dice`. Available tools: `roll_dice`, `flip_coin`."
    );
    assert_eq!(error.usage().tool_calls, 1);
    assert_eq!(error.usage().rejected.unknown_tools, cost(2, 2, 2));
    assert_eq!(error.usage().rejected.tools["roll_dice"], cost(1, 1, 1));
}

#[tokio::test]
async fn arguments_that_do_not_deserialize_are_rejected_with_the_fields_path() {
    let script = script(vec![
        reply(vec![call("roll_dice", r#"{"n": "three"}"#, "c1")], 1, 1),
        reply(vec![call("roll_dice", r#"{"n": 1"#, "c2")], 1, 1),
        reply(vec![call("roll_dice", r#"{"count": 1}"#, "c3")], 1, 1),
        reply(vec![dice_call(1, "c4")], 1, 1),
        reply(vec![text("3")], 1, 1),
    ]);
    let agent = Agent::<Game, String>::builder(script.model)
        .tool(roll_dice())
        .tool_retries(3)
        .build()
        .unwrap();

    let result = agent.run("Roll", game()).await.unwrap();

    assert_eq!(result.output, "3");
    assert_eq!(
        [
            &result.messages[2],
            &result.messages[4],
            &result.messages[6]
        ],
        [
            &request(vec![tool_retry(
                "roll_dice",
                "c1",
                "invalid arguments for tool `roll_dice`: at `n`: invalid type: string \"three\", expected i64 at line 1 column 13"
            )]),
            &request(vec![tool_retry(
                "roll_dice",
                "c2",
                "invalid arguments for tool `roll_dice`: EOF while parsing an object at line 1 column 7"
            )]),
            &request(vec![tool_retry(
                "roll_dice",
                "c3",
                "invalid arguments for tool `roll_dice`: missing field `n` at line 1 column 12"
            )]),
        ]
    );
    // The bad calls never reached the function.
    assert_eq!(result.usage.tool_calls, 4);
}

#[derive(Debug, thiserror::Error)]
enum LookupError {
    #[error("lookup rejected")]
    Rejected(#[from] ModelRetry),
    #[error("database down")]
    Database(#[source] std::io::Error),
}

#[golem::args]
struct City {
    city: String,
}

fn lookup() -> impl Tool<Game> {
    FunctionTool::new("lookup", |_ctx: RunContext<Game>, city: City| async move {
        match city.city.as_str() {
            "Paris" => Ok("sunny"),
            "Atlantis" => Err(LookupError::from(ModelRetry::new("no such city: Atlantis"))),
            _ => Err(LookupError::Database(std::io::Error::other(
                "connection refused",
            ))),
        }
    })
}

fn forecast() -> impl Tool<Game> {
    FunctionTool::new(
        "forecast",
        |_ctx: RunContext<Game>, city: City| async move {
            if city.city == "Paris" {
                return Ok("rain");
            }
            Err(
                anyhow::Error::from(ModelRetry::new(format!("no forecast for {}", city.city)))
                    .context("forecast service said no"),
            )
        },
    )
}

#[tokio::test]
async fn an_error_that_wraps_model_retry_is_a_correction_showing_only_its_message() {
    let script = script(vec![
        reply(
            vec![
                call("lookup", r#"{"city":"Atlantis"}"#, "c1"),
                call("forecast", r#"{"city":"Atlantis"}"#, "c2"),
            ],
            1,
            1,
        ),
        reply(
            vec![
                call("lookup", r#"{"city":"Paris"}"#, "c3"),
                call("forecast", r#"{"city":"Paris"}"#, "c4"),
            ],
            1,
            1,
        ),
        reply(vec![text("sunny, then rain")], 1, 1),
    ]);
    let agent = Agent::<Game, String>::builder(script.model)
        .tool(lookup())
        .tool(forecast())
        .tool_retries(1)
        .build()
        .unwrap();

    let result = agent.run("Weather in Atlantis?", game()).await.unwrap();

    assert_eq!(result.output, "sunny, then rain");
    assert_eq!(
        result.messages[2],
        request(vec![
            tool_retry("lookup", "c1", "no such city: Atlantis"),
            tool_retry("forecast", "c2", "no forecast for Atlantis"),
        ])
    );
}

#[tokio::test]
async fn an_anyhow_wrapped_rejection_past_its_budget_keeps_the_whole_chain() {
    let script = script(vec![reply(
        vec![call("forecast", r#"{"city":"Atlantis"}"#, "c1")],
        1,
        1,
    )]);
    let agent = Agent::<Game, String>::builder(script.model)
        .tool(forecast())
        .build()
        .unwrap();

    let error = agent.run("Weather?", game()).await.unwrap_err();

    let cause = error.source().unwrap();
    assert_eq!(cause.to_string(), "forecast service said no");
    assert_eq!(
        cause.source().unwrap().to_string(),
        "no forecast for Atlantis"
    );
    assert_eq!(
        error.model_retry().map(ModelRetry::message),
        Some("no forecast for Atlantis")
    );
}

#[tokio::test]
async fn any_other_error_is_terminal_keeps_its_cause_and_is_never_shown_to_the_model() {
    let script = script(vec![reply(
        vec![
            dice_call(2, "c1"),
            call("lookup", r#"{"city":"Oslo"}"#, "c2"),
        ],
        10,
        2,
    )]);
    let agent = Agent::<Game, String>::builder(script.model.clone())
        .tool(roll_dice())
        .tool(lookup())
        .tool_retries(5)
        .build()
        .unwrap();

    let error = agent
        .run("Roll, then weather in Oslo", game())
        .await
        .unwrap_err();

    assert_eq!(error.stage(), Stage::Tool);
    assert_eq!(error.tool_name(), Some("lookup"));
    assert!(!error.is_retries_exhausted());
    assert!(error.model_retry().is_none());
    assert_eq!(error.to_string(), "tool `lookup` failed");
    let cause = error.source().unwrap();
    assert_eq!(cause.to_string(), "database down");
    let io = cause
        .source()
        .unwrap()
        .downcast_ref::<std::io::Error>()
        .unwrap();
    assert_eq!(io.to_string(), "connection refused");
    // The other call's result is kept; the failed call is answered without its error's
    // text, so every call in the history has an answer.
    assert_eq!(
        error.messages(),
        [
            request(vec![user("Roll, then weather in Oslo")]),
            response(
                vec![
                    dice_call(2, "c1"),
                    call("lookup", r#"{"city":"Oslo"}"#, "c2")
                ],
                10,
                2
            ),
            request(vec![
                tool_return("roll_dice", "c1", json!(6)),
                tool_return("lookup", "c2", json!("The tool failed; the run stopped.")),
            ]),
        ]
    );
    let history = serde_json::to_string(error.messages()).unwrap();
    assert!(!history.contains("database down") && !history.contains("connection refused"));
    assert_eq!(error.usage().tool_calls, 2);
    assert!(error.usage().rejected.is_empty());
    assert_eq!(script.requests(), 1);
}

#[tokio::test]
async fn tools_see_their_retry_count_budget_and_last_attempt() {
    let script = script(vec![
        reply(vec![dice_call(-1, "c1")], 1, 1),
        reply(vec![dice_call(-1, "c2")], 1, 1),
        reply(vec![dice_call(1, "c3")], 1, 1),
        reply(vec![text("3")], 1, 1),
    ]);
    let agent = Agent::<Game, String>::builder(script.model)
        .tool(roll_dice())
        .tool_retries(2)
        .build()
        .unwrap();
    let game = game();
    let attempts = Arc::clone(&game.attempts);

    let result = agent.run("Roll", game).await.unwrap();

    let attempt = |retry, last_attempt, id: &str, turn| Attempt {
        retry,
        max_retries: 2,
        last_attempt,
        tool_name: "roll_dice".into(),
        tool_call_id: id.into(),
        turn,
    };
    assert_eq!(result.output, "3");
    assert_eq!(
        *attempts.lock().expect("not poisoned"),
        [
            attempt(0, false, "c1", 1),
            attempt(1, false, "c2", 2),
            attempt(2, true, "c3", 3),
        ]
    );
}

#[tokio::test]
async fn several_calls_in_one_response_run_concurrently_and_answer_in_call_order() {
    #[derive(Default)]
    struct Signals {
        second_done: tokio::sync::Notify,
    }
    let first = FunctionTool::new("first", |ctx: RunContext<Signals>, (): ()| async move {
        // Waits for `second`, which only runs if the calls run concurrently.
        ctx.deps().second_done.notified().await;
        Ok::<_, ModelRetry>("first done")
    });
    let second = FunctionTool::new("second", |ctx: RunContext<Signals>, (): ()| async move {
        ctx.deps().second_done.notify_one();
        Ok::<_, ModelRetry>("second done")
    });
    let script = script(vec![
        reply(
            vec![call("first", "{}", "c1"), call("second", "", "c2")],
            1,
            1,
        ),
        reply(vec![text("both done")], 1, 1),
    ]);
    let agent = Agent::<Signals, String>::builder(script.model)
        .tool(first)
        .tool(second)
        .build()
        .unwrap();

    let result = tokio::time::timeout(Duration::from_secs(10), agent.run("Go", Signals::default()))
        .await
        .expect("the calls ran one after the other")
        .unwrap();

    assert_eq!(
        result.messages[2],
        request(vec![
            tool_return("first", "c1", json!("first done")),
            tool_return("second", "c2", json!("second done")),
        ])
    );
}

#[tokio::test]
async fn calls_without_ids_get_ids_unique_in_the_history() {
    let script = script(vec![
        ModelResponse::new(vec![dice_call(1, ""), dice_call(2, "")]),
        ModelResponse::text("9"),
    ]);
    let agent = Agent::<Game, String>::builder(script.model)
        .tool(roll_dice())
        .build()
        .unwrap();

    let result = agent.run("Roll", game()).await.unwrap();

    assert_eq!(
        result.messages[2],
        request(vec![
            tool_return("roll_dice", "call_1_0", json!(3)),
            tool_return("roll_dice", "call_1_1", json!(6)),
        ])
    );
}

#[tokio::test]
async fn a_rejection_beside_a_terminal_failure_is_still_booked() {
    let script = script(vec![reply(
        vec![
            dice_call(-1, "c1"),
            call("lookup", r#"{"city":"Oslo"}"#, "c2"),
        ],
        4,
        2,
    )]);
    let agent = Agent::<Game, String>::builder(script.model)
        .tool(roll_dice())
        .tool(lookup())
        .tool_retries(1)
        .build()
        .unwrap();

    let error = agent.run("Go", game()).await.unwrap_err();

    assert_eq!(error.tool_name(), Some("lookup"));
    assert!(!error.is_retries_exhausted());
    assert_eq!(
        error.messages()[2],
        request(vec![
            tool_retry("roll_dice", "c1", "n must be positive, got -1"),
            tool_return("lookup", "c2", json!("The tool failed; the run stopped.")),
        ])
    );
    assert_eq!(error.usage().rejected.tools["roll_dice"], cost(1, 4, 2));
}

#[tokio::test]
async fn an_exhausted_tool_budget_keeps_its_feedback_apart_for_a_resume_with_the_same_counters() {
    #[golem::args]
    #[derive(Debug)]
    struct Score {
        total: i64,
    }
    let script = script(vec![
        reply(
            vec![
                dice_call(-1, "c1"),
                call("final_result", r#"{"total": 1}"#, "c2"),
            ],
            1,
            1,
        ),
        reply(vec![dice_call(1, "c3")], 1, 1),
        reply(vec![call("final_result", r#"{"total": 3}"#, "c4")], 1, 1),
    ]);
    let strict = Agent::<Game, golem::output::Json<Score>>::builder(script.model.clone())
        .tool(roll_dice())
        .build()
        .unwrap();

    let error = strict.run("Score", game()).await.unwrap_err();

    // The history ends with the model's response; what the run would have sent waits apart.
    assert_eq!(error.messages().len(), 2);
    assert!(matches!(error.messages()[1], Message::Response(_)));
    assert_eq!(
        Message::Request(error.pending().unwrap().clone()),
        request(vec![
            tool_retry("roll_dice", "c1", "n must be positive, got -1"),
            tool_return(
                "final_result",
                "c2",
                json!(
                    "Output not accepted: a tool call in this response was rejected. \
                     Correct that call first, then call `final_result` again."
                )
            ),
        ])
    );

    let lenient = Agent::<Game, golem::output::Json<Score>>::builder(script.model.clone())
        .tool(roll_dice())
        .tool_retries(1)
        .build()
        .unwrap();
    let state = error.into_state();
    assert_eq!(state.retries().tool("roll_dice"), 1);
    let result = lenient.resume(state, game()).await.unwrap();

    assert_eq!(result.output.total, 3);
    assert_eq!(result.messages.len(), 7);
    assert_eq!(
        result.messages[2],
        request(vec![
            tool_retry("roll_dice", "c1", "n must be positive, got -1"),
            tool_return(
                "final_result",
                "c2",
                json!(
                    "Output not accepted: a tool call in this response was rejected. \
                     Correct that call first, then call `final_result` again."
                )
            ),
        ])
    );
    // The resumed run goes on with the same usage and the same counters.
    assert_eq!(result.usage.requests, 3);
    assert_eq!(result.usage.rejected.tools["roll_dice"], cost(1, 1, 1));
}
