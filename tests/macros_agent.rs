//! Macro-generated tools and outputs inside the agent loop, with a scripted model: the
//! exact messages the model sees, the errors, and the usage.

use std::collections::VecDeque;
use std::error::Error as _;
use std::sync::{Arc, Mutex};

use golem::model::function::FunctionModel;
use golem::model::{Message, ModelError, ModelRequest, ModelResponse, RequestParams, RequestPart};
use golem::{Agent, Exhausted, ModelRetry, RunContext};
use serde_json::json;

/// A model that gives `responses` in order and records the requests' tool definitions.
fn script(responses: Vec<ModelResponse>) -> (FunctionModel, Arc<Mutex<Vec<RequestParams>>>) {
    let queue = Mutex::new(VecDeque::from(responses));
    let params = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&params);
    let model = FunctionModel::new(move |_: &[Message], request: &RequestParams| {
        seen.lock().expect("not poisoned").push(request.clone());
        queue
            .lock()
            .expect("not poisoned")
            .pop_front()
            .ok_or_else(|| ModelError::other("the script ran out of responses"))
    });
    (model, params)
}

fn call(tool: &str, args: serde_json::Value, id: &str) -> ModelResponse {
    ModelResponse::tool_call(tool, args, id).with_usage(10, 5)
}

fn text(content: &str) -> ModelResponse {
    ModelResponse::text(content).with_usage(10, 5)
}

fn request(parts: Vec<RequestPart>) -> Message {
    Message::Request(ModelRequest::new(parts))
}

/// What the tools depend on.
struct Game {
    /// Every die shows this.
    face: i64,
}

/// Roll `n` dice and return their total.
///
/// # Arguments
/// * `n` - how many dice to roll, 1 to 10
#[golem::tool(max_retries = 1)]
async fn roll_dice(ctx: &RunContext<Game>, n: i64) -> Result<i64, ModelRetry> {
    if !(1..=10).contains(&n) {
        return Err(ModelRetry::new(format!("n must be 1 to 10, got {n}")));
    }
    Ok(n * ctx.deps().face)
}

#[test]
fn the_model_corrects_its_arguments_and_the_tool_sees_the_deps() {
    let (model, params) = script(vec![
        call("roll_dice", json!({"n": -1}), "c1"),
        call("roll_dice", json!({"n": 2}), "c2"),
        text("You rolled 8."),
    ]);
    // Tool retries are off for the agent; the tool's own `max_retries = 1` applies.
    let agent = Agent::<Game, String>::builder(model)
        .tool(RollDice)
        .build()
        .expect("valid agent");
    let result = block_on(agent.run("Roll two dice", Game { face: 4 })).expect("run succeeds");

    assert_eq!(result.output, "You rolled 8.");
    assert_eq!(
        result.messages,
        vec![
            request(vec![RequestPart::user_prompt("Roll two dice")]),
            Message::from(call("roll_dice", json!({"n": -1}), "c1")),
            request(vec![RequestPart::tool_retry(
                "roll_dice",
                "c1",
                "n must be 1 to 10, got -1"
            )]),
            Message::from(call("roll_dice", json!({"n": 2}), "c2")),
            request(vec![RequestPart::tool_return("roll_dice", "c2", 8)]),
            Message::from(text("You rolled 8.")),
        ]
    );
    assert_eq!(result.usage.requests, 3);
    assert_eq!(result.usage.input_tokens, 30);
    assert_eq!(result.usage.output_tokens, 15);
    assert_eq!(result.usage.tool_calls, 2);
    assert_eq!(result.usage.rejected.tools["roll_dice"].requests, 1);
    assert_eq!(result.usage.rejected.total.requests, 1);

    // The model saw the generated definition, with the doc comment's descriptions.
    let params = params.lock().expect("not poisoned");
    assert_eq!(params.len(), 3);
    let definition = &params[0].function_tools[0];
    assert_eq!(definition.name, "roll_dice");
    assert_eq!(
        definition.description.as_deref(),
        Some("Roll `n` dice and return their total.")
    );
    assert_eq!(
        definition.parameters,
        json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer", "description": "how many dice to roll, 1 to 10"}
            },
            "required": ["n"],
            "additionalProperties": false
        })
    );
}

#[test]
fn arguments_that_do_not_match_the_schema_are_a_rejection_with_the_field_path() {
    let (model, _) = script(vec![
        call("roll_dice", json!({"n": "three"}), "c1"),
        call("roll_dice", json!({"n": 3}), "c2"),
        text("12"),
    ]);
    let agent = Agent::<Game, String>::builder(model)
        .tool(RollDice)
        .build()
        .expect("valid agent");
    let result = block_on(agent.run("Roll three", Game { face: 4 })).expect("run succeeds");
    assert_eq!(
        result.messages[2],
        request(vec![RequestPart::tool_retry(
            "roll_dice",
            "c1",
            "invalid arguments for tool `roll_dice`: at `n`: invalid type: string \"three\", expected i64 at line 1 column 12"
        )])
    );
    assert_eq!(
        result.messages[4],
        request(vec![RequestPart::tool_return("roll_dice", "c2", 12)])
    );
}

#[test]
fn the_tool_budget_overrides_a_lower_agent_default() {
    // Agent default 0, tool budget 1: one rejection is corrected, the second fails the run.
    let (model, _) = script(vec![
        call("roll_dice", json!({"n": 0}), "c1"),
        call("roll_dice", json!({"n": 11}), "c2"),
        text("unreachable"),
    ]);
    let agent = Agent::<Game, String>::builder(model)
        .tool(RollDice)
        .tool_retries(0)
        .build()
        .expect("valid agent");
    let error = block_on(agent.run("Roll", Game { face: 1 })).expect_err("budget of 1 exhausted");
    assert!(error.is_tool());
    assert_eq!(error.tool_name(), Some("roll_dice"));
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
    assert_eq!(
        error.model_retry().map(ModelRetry::message),
        Some("n must be 1 to 10, got 11")
    );
    assert_eq!(error.usage().requests, 2);
    assert_eq!(error.usage().tool_calls, 2);
}

#[test]
fn the_tool_budget_overrides_a_higher_agent_default() {
    // Agent default 5, tool budget 1: the second rejection already fails the run.
    let (model, _) = script(vec![
        call("roll_dice", json!({"n": 0}), "c1"),
        call("roll_dice", json!({"n": 0}), "c2"),
        call("roll_dice", json!({"n": 1}), "c3"),
        text("4"),
    ]);
    let agent = Agent::<Game, String>::builder(model)
        .tool(RollDice)
        .tool_retries(5)
        .build()
        .expect("valid agent");
    let error = block_on(agent.run("Roll", Game { face: 4 })).expect_err("budget of 1 exhausted");
    assert_eq!(
        error.exhausted(),
        Some(Exhausted {
            rejections: 2,
            limit: 1
        })
    );
    assert_eq!(error.usage().requests, 2);
}

/// Looks a word up; every failure is final.
#[golem::tool(max_retries = 0, name = "lookup")]
async fn strict_lookup(word: String) -> Result<String, ModelRetry> {
    match word.as_str() {
        "golem" => Ok("an animated being of clay".to_owned()),
        _ => Err(ModelRetry::new(format!("no entry for `{word}`"))),
    }
}

/// Doubles a number; corrections follow the agent's default budget.
#[golem::tool]
async fn double(n: i64) -> Result<i64, ModelRetry> {
    if n < 0 {
        return Err(ModelRetry::new("n must not be negative"));
    }
    Ok(n * 2)
}

#[test]
fn max_retries_zero_makes_the_first_rejection_terminal_whatever_the_default() {
    let (model, _) = script(vec![
        call("lookup", json!({"word": "gollum"}), "c1"),
        text("unreachable"),
    ]);
    let agent = Agent::<(), String>::builder(model)
        .tool(StrictLookup)
        .tool_retries(3)
        .build()
        .expect("valid agent");
    let error = block_on(agent.run("Define gollum", ())).expect_err("terminal");
    assert!(error.is_tool());
    assert_eq!(error.tool_name(), Some("lookup"));
    assert_eq!(
        error.to_string(),
        "tool `lookup` was rejected and its retries are off"
    );
    assert_eq!(
        error.exhausted(),
        Some(Exhausted {
            rejections: 1,
            limit: 0
        })
    );
    assert_eq!(
        error.source().map(ToString::to_string).as_deref(),
        Some("no entry for `gollum`")
    );
    // The history ends with the model's call; the feedback it would have got waits apart.
    assert_eq!(error.messages().len(), 2);
    assert_eq!(
        error.pending().map(|pending| pending.parts.clone()),
        Some(vec![RequestPart::tool_retry(
            "lookup",
            "c1",
            "no entry for `gollum`"
        )])
    );
}

#[test]
fn a_tool_without_max_retries_uses_the_agent_default() {
    let (model, _) = script(vec![
        call("double", json!({"n": -1}), "c1"),
        call("double", json!({"n": -2}), "c2"),
        call("double", json!({"n": 2}), "c3"),
        text("4"),
    ]);
    let agent = Agent::<(), String>::builder(model)
        .tool(Double)
        .tool_retries(2)
        .build()
        .expect("valid agent");
    let result = block_on(agent.run("Double -1", ())).expect("two rejections fit a budget of 2");
    assert_eq!(result.output, "4");
    assert_eq!(result.usage.rejected.tools["double"].requests, 2);

    let (model, _) = script(vec![call("double", json!({"n": -1}), "c1")]);
    let agent = Agent::<(), String>::builder(model)
        .tool(Double)
        .build()
        .expect("valid agent");
    let error = block_on(agent.run("Double -1", ())).expect_err("tool retries are off");
    assert_eq!(
        error.to_string(),
        "tool `double` was rejected and its retries are off"
    );
}

#[derive(Debug, thiserror::Error)]
enum StockError {
    // Not `#[error(transparent)]`: that forwards `source()` past the `ModelRetry`, which
    // then is not in the chain and the error would be terminal.
    #[error("{0}")]
    Retry(#[from] ModelRetry),
    #[error("the warehouse database is down")]
    Down,
}

/// How many of an item are in stock.
#[golem::tool(max_retries = 3)]
async fn stock(item: String) -> Result<u32, StockError> {
    match item.as_str() {
        "" => Err(ModelRetry::new("name an item").into()),
        "bolts" => Err(StockError::Down),
        _ => Ok(7),
    }
}

#[test]
fn an_error_wrapping_model_retry_is_a_correction_and_any_other_is_terminal() {
    let (model, _) = script(vec![
        call("stock", json!({"item": ""}), "c1"),
        call("stock", json!({"item": "bolts"}), "c2"),
        text("unreachable"),
    ]);
    let agent = Agent::<(), String>::builder(model)
        .tool(Stock)
        .build()
        .expect("valid agent");
    let error = block_on(agent.run("Bolts?", ())).expect_err("terminal error");
    assert!(error.is_tool());
    assert!(!error.is_retries_exhausted());
    assert_eq!(error.to_string(), "tool `stock` failed");
    assert!(matches!(
        error.cause().downcast_ref::<StockError>(),
        Some(StockError::Down)
    ));
    assert_eq!(
        error.messages()[2],
        request(vec![RequestPart::tool_retry("stock", "c1", "name an item")])
    );
    assert_eq!(error.usage().requests, 2);
}

/// A verdict on the game.
#[golem::output(validate = check_verdict)]
#[derive(Debug, PartialEq)]
struct Verdict {
    /// Who won.
    winner: String,
    /// Their score.
    score: u32,
}

fn check_verdict(verdict: &Verdict) -> Result<(), ModelRetry> {
    if verdict.winner.is_empty() {
        return Err(ModelRetry::new("name the winner"));
    }
    Ok(())
}

#[test]
fn the_output_validator_and_decoder_reject_with_feedback_within_output_retries() {
    let (model, params) = script(vec![
        call("final_result", json!({"winner": "Ann"}), "o1"),
        call("final_result", json!({"winner": "", "score": 3}), "o2"),
        call("final_result", json!({"winner": "Ann", "score": 3}), "o3"),
    ]);
    let agent = Agent::<(), Verdict>::builder(model)
        .output_retries(2)
        .build()
        .expect("valid agent");
    let result = block_on(agent.run("Who won?", ())).expect("third answer is accepted");
    assert_eq!(
        result.output,
        Verdict {
            winner: "Ann".to_owned(),
            score: 3
        }
    );
    assert_eq!(
        result.messages[2],
        request(vec![RequestPart::tool_retry(
            "final_result",
            "o1",
            "invalid output: missing field `score` at line 1 column 16"
        )])
    );
    assert_eq!(
        result.messages[4],
        request(vec![RequestPart::tool_retry(
            "final_result",
            "o2",
            "name the winner"
        )])
    );
    assert_eq!(result.usage.requests, 3);
    assert_eq!(result.usage.rejected.output.requests, 2);

    let output_tool = &params.lock().expect("not poisoned")[0].output_tools[0];
    assert_eq!(
        output_tool.description.as_deref(),
        Some("A verdict on the game.")
    );
    assert_eq!(
        output_tool.parameters["properties"]["winner"],
        json!({"type": "string", "description": "Who won."})
    );
}

#[test]
fn a_rejected_output_without_output_retries_fails_at_the_decode_stage() {
    let (model, _) = script(vec![call(
        "final_result",
        json!({"winner": "", "score": 1}),
        "o1",
    )]);
    let agent = Agent::<(), Verdict>::builder(model)
        .build()
        .expect("valid agent");
    let error = block_on(agent.run("Who won?", ())).expect_err("output retries are off");
    assert!(error.is_decode());
    assert_eq!(
        error.to_string(),
        "the output was rejected and output retries are off"
    );
    assert_eq!(
        error.model_retry().map(ModelRetry::message),
        Some("name the winner")
    );
}

/// A tool without `&RunContext<D>` works with any dependencies.
#[golem::tool]
async fn echo(text: String) -> String {
    text
}

#[test]
fn a_tool_without_context_works_for_any_deps() {
    let (model, _) = script(vec![
        call("echo", json!({"text": "hi"}), "c1"),
        text("done"),
    ]);
    let agent = Agent::<Game, String>::builder(model)
        .tool(Echo)
        .tool(RollDice)
        .build()
        .expect("valid agent");
    let result = block_on(agent.run("Echo", Game { face: 1 })).expect("run succeeds");
    assert_eq!(
        result.messages[2],
        request(vec![RequestPart::tool_return("echo", "c1", "hi")])
    );
    let (model, _) = script(vec![text("done")]);
    Agent::<Vec<u8>, String>::builder(model)
        .tool(Echo)
        .build()
        .expect("the same tool in an agent with other deps");
}

#[test]
fn the_function_stays_callable_as_written() {
    let ctx = RunContext::new(Game { face: 6 });
    assert_eq!(block_on(roll_dice(&ctx, 2)).expect("valid"), 12);
    assert_eq!(block_on(echo("hi".to_owned())), "hi");
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime")
        .block_on(future)
}
