//! Building agents, continuing conversations, and the test model.

use crate::common;

use common::*;
use golem::model::function::FunctionModel;
use golem::model::test::TestModel;
use golem::model::{Message, ModelResponse};
use golem::output::Json;
use golem::tool::{FunctionTool, RetryLimit, Tool};
use golem::{Agent, BuildError, ModelRetry, RunContext, RunState, Stage};
use serde_json::json;
use std::error::Error as _;
use std::sync::{Arc, Mutex};

#[golem::args]
struct Dice {
    /// How many dice, 1 to 10.
    #[schemars(range(min = 1, max = 10))]
    n: i64,
}

fn named(name: &str) -> impl Tool<()> + use<> {
    FunctionTool::new(
        name.to_owned(),
        |_ctx: RunContext<()>, dice: Dice| async move { Ok::<_, ModelRetry>(dice.n) },
    )
}

#[golem::args]
#[derive(Debug)]
struct Verdict {
    winner: String,
    score: u32,
}

#[test]
fn build_rejects_bad_configurations() {
    let model = || script(vec![]).model;
    let duplicate = Agent::<(), String>::builder(model())
        .tool(named("roll"))
        .tool(named("roll"))
        .build()
        .unwrap_err();
    assert_eq!(duplicate, BuildError::DuplicateToolName("roll".into()));
    assert_eq!(
        duplicate.to_string(),
        "two tools are named `roll`; tool names must be unique"
    );

    let invalid = Agent::<(), String>::builder(model())
        .tool(named("roll dice"))
        .build()
        .unwrap_err();
    assert_eq!(
        invalid.to_string(),
        "tool name `roll dice` is invalid; use 1 to 64 ASCII letters, digits, `_` or `-`"
    );
    let too_long = "a".repeat(65);
    assert_eq!(
        Agent::<(), String>::builder(model())
            .tool(named(&too_long))
            .build()
            .unwrap_err(),
        BuildError::InvalidToolName(too_long)
    );

    let taken = Agent::<(), Json<Verdict>>::builder(model())
        .tool(named("final_result"))
        .build()
        .unwrap_err();
    assert_eq!(
        taken,
        BuildError::OutputToolNameTaken("final_result".into())
    );
    // With text output there is no output tool, so the name is free.
    Agent::<(), String>::builder(model())
        .tool(named("final_result"))
        .build()
        .unwrap();
    // A renamed output tool frees it too.
    Agent::<(), Json<Verdict>>::builder(model())
        .tool(named("final_result"))
        .output_tool_name("verdict")
        .build()
        .unwrap();

    assert_eq!(
        Agent::<(), String>::builder(model())
            .max_turns(0)
            .build()
            .unwrap_err(),
        BuildError::ZeroMaxTurns
    );
}

#[test]
fn tool_definitions_are_built_once_with_provider_friendly_schemas() {
    let agent = Agent::<(), String>::builder(script(vec![]).model)
        .tool(
            FunctionTool::new("roll", |_ctx: RunContext<()>, dice: Dice| async move {
                Ok::<_, ModelRetry>(dice.n)
            })
            .description("Roll dice."),
        )
        .build()
        .unwrap();
    let params = agent.request_params();
    assert!(params.allow_text_output);
    assert!(params.output_tools.is_empty());
    assert_eq!(
        serde_json::to_value(&params.function_tools).unwrap(),
        json!([{
            "name": "roll",
            "description": "Roll dice.",
            "parameters": {
                "type": "object",
                "properties": {
                    "n": {"type": "integer", "description": "How many dice, 1 to 10.", "minimum": 1, "maximum": 10}
                },
                "required": ["n"],
                "additionalProperties": false
            }
        }])
    );
}

#[tokio::test]
async fn instructions_go_with_every_request_and_never_into_the_history() {
    let sent = Arc::new(Mutex::new(Vec::new()));
    let model = {
        let sent = Arc::clone(&sent);
        FunctionModel::new(move |messages: &[Message], params| {
            sent.lock().unwrap().push(params.instructions.clone());
            ModelResponse::text(format!("reply {}", messages.len()))
        })
    };
    let router = Agent::<(), String>::builder(model.clone())
        .instructions("Route the question.")
        .build()
        .unwrap();
    let specialist = Agent::<u32, String>::builder(model)
        .instructions("Answer maths questions.")
        .instructions_fn(|ctx: &RunContext<u32>| {
            format!("Turn {}, level {}.", ctx.turn(), ctx.deps())
        })
        .instructions_fn_async(|_ctx: RunContext<u32>| async { String::new() })
        .build()
        .unwrap();

    let first = router.run("What is 2 + 2?", ()).await.unwrap();
    let second = specialist
        .run_with_history(first.messages.clone(), "Please answer.", 3)
        .await
        .unwrap();

    assert_eq!(
        *sent.lock().unwrap(),
        [
            Some("Route the question.".to_owned()),
            Some("Answer maths questions.\n\nTurn 1, level 3.".to_owned()),
        ]
    );
    assert_eq!(
        second.messages,
        [
            request(vec![user("What is 2 + 2?")]),
            response(vec![text("reply 1")], 0, 0),
            request(vec![user("Please answer.")]),
            response(vec![text("reply 3")], 0, 0),
        ]
    );
}

#[tokio::test]
async fn a_saved_history_continues_in_a_later_run() {
    let script = script(vec![
        reply(vec![text("Nice to meet you, Ann.")], 5, 3),
        reply(vec![text("Your name is Ann.")], 12, 4),
    ]);
    let agent = Agent::<(), String>::builder(script.model.clone())
        .system_prompt("Remember names.")
        .build()
        .unwrap();

    let first = agent.run("I am Ann.", ()).await.unwrap();
    let saved = serde_json::to_string(&first.messages).unwrap();
    let history: Vec<Message> = serde_json::from_str(&saved).unwrap();
    let second = agent
        .run_with_history(history, "What is my name?", ())
        .await
        .unwrap();

    assert_eq!(second.output, "Your name is Ann.");
    assert_eq!(
        second.messages,
        [
            request(vec![system("Remember names."), user("I am Ann.")]),
            response(vec![text("Nice to meet you, Ann.")], 5, 3),
            request(vec![user("What is my name?")]),
            response(vec![text("Your name is Ann.")], 12, 4),
        ]
    );
    // Usage is the new run's own.
    assert_eq!(second.usage.requests, 1);
    assert_eq!(second.usage.input_tokens, 12);
}

#[tokio::test]
async fn a_prompt_added_to_a_failed_runs_state_joins_its_pending_feedback() {
    let script = script(vec![
        reply(vec![text("maybe")], 1, 1),
        reply(vec![text("yes")], 1, 1),
    ]);
    let agent = Agent::<(), String>::builder(script.model.clone())
        .output_validator(|_ctx, text: String| async move {
            if text == "maybe" {
                return Err(ModelRetry::new("answer yes or no"));
            }
            Ok(text)
        })
        .build()
        .unwrap();

    let error = agent.run("Is it?", ()).await.unwrap_err();
    let mut state = error.into_state();
    state.push_prompt("Please decide.");
    let result = agent.resume(state, ()).await.unwrap();

    assert_eq!(result.output, "yes");
    assert_eq!(
        result.messages[2],
        request(vec![retry("answer yes or no"), user("Please decide.")])
    );
}

#[tokio::test]
async fn a_state_that_ends_in_a_response_handles_it_without_a_request() {
    let agent = Agent::<(), String>::builder(script(vec![]).model)
        .build()
        .unwrap();
    let history = vec![
        request(vec![user("Hi")]),
        response(vec![text("Hello")], 1, 1),
    ];

    let result = agent
        .resume(RunState::from_history(history.clone()), ())
        .await
        .unwrap();

    assert_eq!(result.output, "Hello");
    assert_eq!(result.messages, history);
    assert_eq!(result.usage.requests, 0);
}

#[tokio::test]
async fn an_empty_state_is_an_input_error() {
    let agent = Agent::<(), String>::builder(script(vec![]).model)
        .build()
        .unwrap();

    let error = agent
        .resume(RunState::from_history(Vec::new()), ())
        .await
        .unwrap_err();

    assert_eq!(error.stage(), Stage::Input);
    assert_eq!(error.to_string(), "the run's input is invalid");
    assert_eq!(
        error.source().unwrap().to_string(),
        "the run has nothing to send: its history is empty"
    );
    assert!(error.messages().is_empty());
}

#[tokio::test]
async fn the_test_model_calls_every_tool_with_valid_arguments_then_answers() {
    let agent = Agent::<(), String>::builder(TestModel::new())
        .tool(named("roll"))
        .tool(named("reroll"))
        .build()
        .unwrap();

    let result = agent.run("Play", ()).await.unwrap();

    assert_eq!(result.output, r#"{"roll":1,"reroll":1}"#);
    assert_eq!(result.messages.len(), 4);
    assert_eq!(
        result.messages[1].as_response().unwrap().parts,
        vec![
            call("roll", r#"{"n":1}"#, "call_1_0"),
            call("reroll", r#"{"n":1}"#, "call_1_1")
        ]
    );
    assert_eq!(result.usage.requests, 2);
    assert_eq!(result.usage.tool_calls, 2);
}

#[tokio::test]
async fn the_test_model_produces_structured_output_and_repeats_rejected_calls() {
    let strict = FunctionTool::new("strict", |_ctx: RunContext<()>, dice: Dice| async move {
        Err::<i64, _>(ModelRetry::new(format!("{} is never enough", dice.n)))
    })
    .max_retries(RetryLimit(2));
    let agent = Agent::<(), Json<Verdict>>::builder(TestModel::new())
        .tool(strict)
        .build()
        .unwrap();

    let error = agent.run("Play", ()).await.unwrap_err();
    assert_eq!(error.tool_name(), Some("strict"));
    assert_eq!(error.usage().requests, 3);

    let agent = Agent::<(), Json<Verdict>>::builder(TestModel::new())
        .tool(named("roll"))
        .build()
        .unwrap();
    let result = agent.run("Play", ()).await.unwrap();
    assert_eq!(result.output.winner, "a");
    assert_eq!(result.output.score, 0);
}

#[test]
fn runs_can_be_spawned() {
    fn assert_send<T: Send + 'static>(_: &T) {}
    let agent = Agent::<(), String>::builder(script(vec![]).model)
        .build()
        .unwrap();
    let run = {
        let agent = agent.clone();
        async move { agent.run("Hi", ()).await }
    };
    assert_send(&run);
}

#[test]
fn run_errors_are_send_sync_and_report_their_cause() {
    fn assert_error<E: std::error::Error + Send + Sync + 'static>() {}
    assert_error::<golem::RunError>();
    assert_error::<BuildError>();
    assert_error::<ModelRetry>();
    let retry = ModelRetry::new("outer").with_source(std::io::Error::other("inner"));
    assert_eq!(retry.source().unwrap().to_string(), "inner");
}
