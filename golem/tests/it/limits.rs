//! The model-turn limit, usage limits and model failures: typed errors that keep the history.

use crate::common;

use std::error::Error as _;

use common::*;
use golem::model::function::FunctionModel;
use golem::model::{Message, ModelError, ModelResponse};
use golem::tool::FunctionTool;
use golem::usage::{LimitExceeded, TokenKind, UsageLimits};
use golem::{Agent, ModelRetry, RunContext, Stage};
use serde_json::json;

fn echo() -> impl golem::tool::Tool<()> {
    FunctionTool::new("echo", |_ctx: RunContext<()>, (): ()| async move {
        Ok::<_, ModelRetry>("echo")
    })
}

fn looping(turns: usize) -> Script {
    script(
        (0..turns)
            .map(|i| reply(vec![call("echo", "{}", &format!("c{i}"))], 10, 2))
            .collect(),
    )
}

#[tokio::test]
async fn the_turn_limit_stops_a_model_that_never_answers() {
    let script = looping(10);
    let agent = Agent::<(), String>::builder(script.model.clone())
        .tool(echo())
        .max_turns(3)
        .build()
        .unwrap();

    let error = agent.run("Loop", ()).await.unwrap_err();

    assert_eq!(error.stage(), Stage::Limit);
    assert!(error.is_limit());
    assert_eq!(error.limit(), Some(&LimitExceeded::Turns { limit: 3 }));
    assert_eq!(error.to_string(), "the run reached a limit");
    assert_eq!(
        error.source().unwrap().to_string(),
        "the model-turn limit of 3 was reached without a final output"
    );
    assert_eq!(script.requests(), 3);
    assert_eq!(error.messages().len(), 7);
    assert_eq!(
        error.messages()[6],
        request(vec![tool_return("echo", "c2", json!("echo"))])
    );
    assert_eq!(error.usage().requests, 3);
    assert_eq!(error.usage().tool_calls, 3);
}

#[tokio::test]
async fn the_turn_limit_bounds_even_large_retry_budgets() {
    let script = script((0..10).map(|_| reply(vec![text("maybe")], 1, 1)).collect());
    let agent = Agent::<(), String>::builder(script.model.clone())
        .output_retries(100)
        .output_validator(|_ctx, _text: String| async move {
            Err::<String, _>(ModelRetry::new("not good enough"))
        })
        .max_turns(4)
        .build()
        .unwrap();

    let error = agent.run("Try", ()).await.unwrap_err();

    assert_eq!(error.limit(), Some(&LimitExceeded::Turns { limit: 4 }));
    assert_eq!(script.requests(), 4);
    assert_eq!(error.usage().rejected.output.requests, 4);
}

#[tokio::test]
async fn the_request_limit_is_checked_before_each_request() {
    let script = looping(10);
    let agent = Agent::<(), String>::builder(script.model.clone())
        .tool(echo())
        .usage_limits(UsageLimits::new().request_limit(2))
        .build()
        .unwrap();

    let error = agent.run("Loop", ()).await.unwrap_err();

    assert_eq!(error.limit(), Some(&LimitExceeded::Requests { limit: 2 }));
    assert_eq!(
        error.source().unwrap().to_string(),
        "the next request would exceed the request limit of 2"
    );
    assert_eq!(script.requests(), 2);
    assert_eq!(error.messages().len(), 5);
}

#[tokio::test]
async fn token_limits_are_checked_after_each_response_which_stays_in_the_history() {
    let script = looping(10);
    let agent = Agent::<(), String>::builder(script.model.clone())
        .tool(echo())
        .usage_limits(UsageLimits::new().input_tokens_limit(25))
        .build()
        .unwrap();

    let error = agent.run("Loop", ()).await.unwrap_err();

    assert_eq!(
        error.limit(),
        Some(&LimitExceeded::Tokens {
            kind: TokenKind::Input,
            limit: 25,
            used: 30
        })
    );
    assert_eq!(
        error.source().unwrap().to_string(),
        "30 input tokens exceed the limit of 25"
    );
    // The third response is kept, its call answered as not run, and the next request
    // says it was not used, so a resumed run asks again instead of acting on it.
    assert_eq!(
        error.messages()[5..],
        [
            response(vec![call("echo", "{}", "c2")], 10, 2),
            request(vec![
                tool_return(
                    "echo",
                    "c2",
                    json!("Not run: the run stopped before this call.")
                ),
                retry("The previous response went over the run's usage limit; it was not used."),
            ]),
        ]
    );
    assert_eq!(error.usage().tool_calls, 2);
}

#[tokio::test]
async fn total_and_output_token_limits() {
    for (limits, kind, limit, used) in [
        (
            UsageLimits::new().output_tokens_limit(3),
            TokenKind::Output,
            3,
            4,
        ),
        (
            UsageLimits::new().total_tokens_limit(20),
            TokenKind::Total,
            20,
            24,
        ),
    ] {
        let script = looping(10);
        let agent = Agent::<(), String>::builder(script.model)
            .tool(echo())
            .usage_limits(limits)
            .build()
            .unwrap();

        let error = agent.run("Loop", ()).await.unwrap_err();

        assert_eq!(
            error.limit(),
            Some(&LimitExceeded::Tokens { kind, limit, used })
        );
    }
}

#[tokio::test]
async fn the_tool_call_limit_is_checked_before_a_turns_calls_run() {
    let script = script(vec![
        reply(vec![call("echo", "{}", "c1")], 1, 1),
        reply(
            vec![call("echo", "{}", "c2"), call("echo", "{}", "c3")],
            1,
            1,
        ),
    ]);
    let agent = Agent::<(), String>::builder(script.model)
        .tool(echo())
        .usage_limits(UsageLimits::new().tool_calls_limit(2))
        .build()
        .unwrap();

    let error = agent.run("Loop", ()).await.unwrap_err();

    assert_eq!(
        error.limit(),
        Some(&LimitExceeded::ToolCalls {
            limit: 2,
            requested: 3
        })
    );
    assert_eq!(error.usage().tool_calls, 1);
    assert_eq!(
        error.messages()[4],
        request(vec![
            tool_return(
                "echo",
                "c2",
                json!("Not run: the run stopped before this call.")
            ),
            tool_return(
                "echo",
                "c3",
                json!("Not run: the run stopped before this call.")
            ),
        ])
    );
}

#[tokio::test]
async fn a_model_failure_fails_the_run_at_the_model_stage() {
    let script = script(vec![reply(vec![call("echo", "{}", "c1")], 5, 1)]);
    let agent = Agent::<(), String>::builder(script.model)
        .tool(echo())
        .build()
        .unwrap();

    let error = agent.run("Go", ()).await.unwrap_err();

    assert_eq!(error.stage(), Stage::Model);
    assert!(error.is_model());
    assert_eq!(error.to_string(), "the model request failed");
    assert!(matches!(error.model_error(), Some(ModelError::Other(_))));
    assert_eq!(
        error.source().unwrap().to_string(),
        "the script ran out of responses"
    );
    assert_eq!(error.messages().len(), 3);
    assert_eq!(error.usage().requests, 1);
    assert_eq!(error.usage().input_tokens, 5);
}

#[tokio::test]
async fn a_typed_model_error_keeps_its_details() {
    let model = golem::model::function::FunctionModel::new(|_, _| {
        Err::<ModelResponse, _>(ModelError::Http {
            provider: "openai".into(),
            status: 503,
            message: "overloaded".into(),
            attempts: 3,
        })
    });
    let agent = Agent::<(), String>::builder(model).build().unwrap();

    let error = agent.run("Go", ()).await.unwrap_err();

    assert!(matches!(
        error.model_error(),
        Some(ModelError::Http { status: 503, .. })
    ));
    assert_eq!(
        error.source().unwrap().to_string(),
        "openai answered HTTP 503 after 3 attempt(s): overloaded"
    );
    assert_eq!(error.messages(), [request(vec![user("Go")])]);
    assert_eq!(error.usage().requests, 0);
}

/// A model whose responses report no usage at all, as a hand-written one's may: it calls
/// `echo` once, then answers.
fn no_usage() -> FunctionModel {
    FunctionModel::new(|messages: &[Message], _| {
        if messages.len() < 2 {
            ModelResponse::tool_call("echo", "{}", "c1")
        } else {
            ModelResponse::text("done")
        }
    })
}

#[tokio::test]
async fn every_response_counts_one_request_whatever_usage_its_model_reports() {
    let agent = Agent::<(), String>::builder(no_usage())
        .tool(echo())
        .build()
        .unwrap();

    let result = agent.run("Echo", ()).await.unwrap();

    assert_eq!(result.output, "done");
    assert_eq!(result.usage.requests, 2);
    assert_eq!(result.usage.tool_calls, 1);
    assert_eq!(result.usage.total_tokens(), 0);

    // So the request limit holds for such a model too.
    let limited = Agent::<(), String>::builder(no_usage())
        .tool(echo())
        .usage_limits(UsageLimits::new().request_limit(1))
        .build()
        .unwrap();
    let error = limited.run("Echo", ()).await.unwrap_err();
    assert_eq!(error.limit(), Some(&LimitExceeded::Requests { limit: 1 }));
    assert_eq!(error.usage().requests, 1);
    assert_eq!(error.messages().len(), 3);
}
