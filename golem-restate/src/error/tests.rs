use std::error::Error as _;
use std::io;

use golem::model::function::FunctionModel;
use golem::model::{ModelError, ModelResponse};
use golem::run::{Journal, JournalStep, RecordedFailure};
use golem::tool::{FunctionTool, RetryLimit};
use golem::toolset::ToolsetError;
use golem::usage::UsageLimits;
use golem::{Agent, BoxError, ModelRetry, RunContext, RunError, Stage};
use restate_sdk::errors::HandlerError;
use serde_json::Value;

use super::{
    RetriesExhausted, handler_error, is_terminal, is_transient, recorded_error, step_error,
    terminal_error,
};

fn http(status: u16) -> ModelError {
    ModelError::Http {
        provider: "openai".into(),
        status,
        message: "scripted".into(),
        attempts: 3,
    }
}

fn transport() -> ModelError {
    ModelError::Transport {
        provider: "openai".into(),
        attempts: 3,
        source: Box::new(io::Error::new(io::ErrorKind::ConnectionRefused, "refused")),
    }
}

/// The error of a run whose only model request fails with `error()`.
async fn model_failure(error: fn() -> ModelError) -> RunError {
    let model = FunctionModel::new(move |_, _| Err::<ModelResponse, _>(error()));
    let agent = Agent::<(), String>::builder(model).build().expect("valid");
    agent.run("Hi", ()).await.expect_err("the model fails")
}

/// What Restate is told: `Terminal error [code]: …` or `Retryable error: …`.
fn text(error: &HandlerError) -> String {
    let error: &(dyn std::error::Error + Send + Sync) = error.as_ref();
    error.to_string()
}

#[test]
fn transient_model_errors_are_the_transports_and_408_429_5xx() {
    assert!(is_transient(&transport()));
    for status in [408, 429, 500, 502, 503, 529, 599] {
        assert!(is_transient(&http(status)), "HTTP {status}");
    }
    for status in [400, 404, 409, 413, 422] {
        assert!(!is_transient(&http(status)), "HTTP {status}");
    }
    let auth = ModelError::Auth {
        provider: "openai".into(),
        status: 401,
        message: "bad key".into(),
        env_var: "OPENAI_API_KEY".into(),
    };
    assert!(!is_transient(&auth));
    let invalid = ModelError::InvalidResponse {
        provider: "openai".into(),
        message: "not JSON".into(),
    };
    assert!(!is_transient(&invalid));
    assert!(!is_transient(&ModelError::Truncated));
    assert!(!is_transient(&ModelError::ContentFilter));
    assert!(!is_transient(&ModelError::other(
        "a custom model's failure"
    )));
}

#[tokio::test]
async fn a_fallback_models_failure_is_as_transient_as_its_last_models() {
    use golem::model::fallback::FallbackModel;
    use golem::model::{Model, RequestParams};

    for (status, transient) in [(503, true), (400, false)] {
        let failing = move || FunctionModel::new(move |_, _| Err::<ModelResponse, _>(http(status)));
        let error = FallbackModel::new(failing())
            .or(failing())
            .request(&[], &RequestParams::text(Vec::new()))
            .await
            .expect_err("every model fails");
        assert!(matches!(error, ModelError::Fallback(_)));
        assert_eq!(is_transient(&error), transient, "HTTP {status}");
    }
}

#[tokio::test]
async fn a_transient_model_failure_is_retryable_with_the_run_error_inside() {
    let error = model_failure(|| http(503)).await;
    assert!(!is_terminal(&error));
    let handler = handler_error(error);
    assert_eq!(text(&handler), "Retryable error: the model request failed");
    let inner: &(dyn std::error::Error + Send + Sync) = handler.as_ref();
    let run_error = std::error::Error::source(inner)
        .and_then(|error| error.downcast_ref::<RunError>())
        .expect("the run error travels with the handler error");
    assert_eq!(
        run_error.model_error().and_then(ModelError::status),
        Some(503)
    );
    assert_eq!(run_error.usage().requests, 0);

    let error = model_failure(transport).await;
    assert!(!is_terminal(&error));
}

#[tokio::test]
async fn a_refused_model_request_is_terminal_with_its_causes() {
    let error = model_failure(|| http(400)).await;
    assert!(is_terminal(&error));
    assert_eq!(
        text(&handler_error(error)),
        "Terminal error [500]: the model request failed: \
         openai answered HTTP 400 after 3 attempt(s): scripted"
    );
}

#[tokio::test]
async fn an_exhausted_tool_budget_is_terminal() {
    let lookup = FunctionTool::new("lookup", |_ctx: RunContext<()>, (): ()| async move {
        Err::<String, _>(ModelRetry::new("no such key"))
    })
    .max_retries(RetryLimit(1));
    let model = FunctionModel::new(|_, _| ModelResponse::tool_call("lookup", "{}", "c1"));
    let agent = Agent::<(), String>::builder(model)
        .tool(lookup)
        .build()
        .expect("valid");
    let error = agent.run("Look it up", ()).await.expect_err("exhausted");
    assert!(error.is_retries_exhausted());
    assert!(is_terminal(&error));
    assert_eq!(
        terminal_error(&error).message(),
        "tool `lookup` was rejected 2 times, over its retry budget of 1: no such key"
    );
    assert_eq!(terminal_error(&error).code(), 500);
}

#[tokio::test]
async fn a_failed_tool_is_terminal() {
    let lookup = FunctionTool::new("lookup", |_ctx: RunContext<()>, (): ()| async move {
        Err::<String, _>(io::Error::other("the database is gone"))
    });
    let model = FunctionModel::new(|_, _| ModelResponse::tool_call("lookup", "{}", "c1"));
    let agent = Agent::<(), String>::builder(model)
        .tool(lookup)
        .build()
        .expect("valid");
    let error = agent.run("Look it up", ()).await.expect_err("failed");
    assert!(is_terminal(&error));
    assert_eq!(
        terminal_error(&error).message(),
        "tool `lookup` failed: the database is gone"
    );
}

#[tokio::test]
async fn a_usage_limit_is_terminal() {
    let model = FunctionModel::new(|_, _| ModelResponse::tool_call("missing", "{}", "c1"));
    let agent = Agent::<(), String>::builder(model)
        .usage_limits(UsageLimits::new().request_limit(1))
        .tool_retries(5)
        .build()
        .expect("valid");
    let error = agent.run("Go", ()).await.expect_err("limited");
    assert!(error.is_limit());
    assert!(is_terminal(&error));
    assert_eq!(
        terminal_error(&error).message(),
        format!("the run reached a limit: {}", error.cause())
    );
}

#[test]
fn a_step_reports_transient_model_failures_as_retryable_and_keeps_the_error() {
    let (reported, kept) = step_error(Box::new(http(502)));
    assert_eq!(
        text(&reported),
        "Retryable error: openai answered HTTP 502 after 3 attempt(s): scripted"
    );
    assert_eq!(
        kept.downcast_ref::<ModelError>()
            .and_then(ModelError::status),
        Some(502)
    );

    let (reported, _) = step_error(Box::new(transport()));
    assert_eq!(
        text(&reported),
        "Retryable error: the request to openai failed after 3 attempt(s): refused"
    );
}

#[test]
fn a_step_reports_a_toolset_that_cannot_list_its_tools_as_retryable() {
    let down = ToolsetError::List {
        toolset: "crm".into(),
        source: "connection refused".into(),
    };
    let (reported, kept) = step_error(Box::new(down));
    assert_eq!(
        text(&reported),
        "Retryable error: toolset `crm` could not list its tools: connection refused"
    );
    assert!(kept.is::<ToolsetError>());
    let clash = ToolsetError::DuplicateName {
        name: "search".into(),
        first: "toolset `a`".into(),
        second: "toolset `b`".into(),
    };
    let (reported, _) = step_error(Box::new(clash));
    assert!(text(&reported).starts_with("Terminal error [500]: "));
}

#[test]
fn a_step_reports_everything_else_as_terminal() {
    let (reported, _) = step_error(Box::new(http(422)));
    assert_eq!(
        text(&reported),
        "Terminal error [500]: openai answered HTTP 422 after 3 attempt(s): scripted"
    );
    let unreadable = serde_json::from_str::<u32>("{").expect_err("not a number");
    let (reported, kept) = step_error(Box::new(unreadable));
    assert!(text(&reported).starts_with("Terminal error [500]: "));
    assert!(kept.is::<serde_json::Error>());
    let recorded = RecordedFailure {
        message: "gone".into(),
    };
    let (reported, _) = step_error(Box::new(recorded));
    assert_eq!(text(&reported), "Terminal error [500]: gone");
}

/// A journal that records a step's failure as Restate does once the step's retries are used
/// up: the live run gets [`recorded_error`] of its error.
struct GivingUp;

impl Journal for GivingUp {
    async fn step(&self, _name: String, step: JournalStep) -> Result<Value, BoxError> {
        step.await.map_err(|error| {
            let message = RecordedFailure::of(&*error).message;
            recorded_error(Some(error), &message)
        })
    }
}

#[tokio::test]
async fn a_transient_failure_restate_gave_up_retrying_ends_the_invocation() {
    let model = FunctionModel::new(|_, _| Err::<ModelResponse, _>(http(503)));
    let agent = Agent::<(), String>::builder(model).build().expect("valid");
    let error = agent
        .start("Hi", ())
        .finish_in(&GivingUp)
        .await
        .expect_err("the model fails");
    assert_eq!(error.stage(), Stage::Model);
    assert!(is_terminal(&error), "{error}");
    let exhausted = error
        .source()
        .and_then(|source| source.downcast_ref::<RetriesExhausted>())
        .expect("the step's error, marked");
    assert!(matches!(
        exhausted.error().downcast_ref::<ModelError>(),
        Some(ModelError::Http { status: 503, .. })
    ));
    assert_eq!(
        text(&handler_error(error)),
        "Terminal error [500]: the model request failed: openai answered HTTP 503 after 3 \
         attempt(s): scripted"
    );
}

#[test]
fn a_failure_recorded_in_an_earlier_attempt_comes_back_with_its_message() {
    let error = recorded_error(None, "gone");
    assert_eq!(
        error.downcast_ref::<RecordedFailure>(),
        Some(&RecordedFailure {
            message: "gone".into()
        })
    );
    let refused = recorded_error(Some(Box::new(http(400))), "ignored");
    assert!(
        refused.is::<ModelError>(),
        "a terminal failure is kept as it is"
    );
}
