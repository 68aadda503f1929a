//! Which golem failures Restate retries and which end the invocation ([`TerminalError`]).

use golem::model::ModelError;
use golem::run::{RecordedFailure, is_transient_failure};
use golem::{BoxError, RunError, Stage};
use restate_sdk::errors::{HandlerError, TerminalError};

/// The error a Restate handler returns for a failed run: retryable when retrying the
/// invocation may succeed, a [`TerminalError`] otherwise.
///
/// Only a model request that failed for a transient reason is retryable
/// ([`is_transient`]: the transport's failure or timeout, HTTP 408, 429 or 5xx, after
/// golem's own retries). Everything else is terminal, because a retried invocation replays
/// the journal and would fail the same way: a retry budget that ran out, a tool's failure,
/// a limit reached (turns, requests, tokens, tool calls), a refused request (HTTP 4xx,
/// credentials), an unreadable or cut-off response, a stopped run, a run paused for
/// approval. Under a [`RestateJournal`](crate::RestateJournal) a transient model failure is
/// already retried inside its step and then recorded ([`RetriesExhausted`]), so a run that
/// fails there fails terminally.
///
/// Do not turn a `RunError` into a `HandlerError` with `?`: that makes every failure
/// retryable, and an exhausted retry budget would be retried until Restate gives up.
///
/// ```
/// use golem::model::function::FunctionModel;
/// use golem::model::ModelResponse;
/// use golem::{Agent, ModelRetry};
/// use golem_restate::{handler_error, is_terminal};
///
/// // A model that never gets the output right, and an agent with output retries off.
/// let model = FunctionModel::new(|_, _| ModelResponse::text("maybe"));
/// let agent = Agent::<(), String>::builder(model)
///     .output_validator(|_ctx, _text: String| async move {
///         Err::<String, _>(ModelRetry::new("answer yes or no"))
///     })
///     .build()?;
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let error = agent.run("Is it raining?", ()).await.unwrap_err();
/// assert!(is_terminal(&error));
/// let error = handler_error(error);
/// let error: &(dyn std::error::Error + Send + Sync) = error.as_ref();
/// assert_eq!(
///     error.to_string(),
///     "Terminal error [500]: the output was rejected and output retries are off: answer yes or no"
/// );
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// ```
pub fn handler_error(error: RunError) -> HandlerError {
    if is_terminal(&error) {
        terminal_error(&error).into()
    } else {
        error.into()
    }
}

/// Whether retrying the invocation cannot help: everything but a transient model failure
/// ([`handler_error`] gives the reasons).
pub fn is_terminal(error: &RunError) -> bool {
    !(error.stage() == Stage::Model && error.model_error().is_some_and(ModelError::is_transient))
}

/// The [`TerminalError`] for a failed run: code 500, and the run's error with its causes
/// as the message (`the model request failed: openai answered HTTP 400 after 1 attempt(s):
/// …`).
pub fn terminal_error(error: &RunError) -> TerminalError {
    TerminalError::new_with_code(500, RecordedFailure::of(error).message)
}

/// Whether a failed model request may succeed when sent again later: the transport failed
/// or timed out, or the provider answered HTTP 408, 429 or 5xx (golem's transport has
/// retried these already, within its own policy). A refused request (another 4xx, the
/// credentials), an unreadable or cut-off response, a content filter and any other error
/// are not.
///
/// ```
/// use golem::model::ModelError;
/// use golem_restate::is_transient;
///
/// let overloaded = ModelError::Http {
///     provider: "openai".into(),
///     status: 529,
///     message: "overloaded".into(),
///     attempts: 3,
/// };
/// let refused = ModelError::Http {
///     provider: "openai".into(),
///     status: 400,
///     message: "bad request".into(),
///     attempts: 1,
/// };
/// assert!(is_transient(&overloaded));
/// assert!(!is_transient(&refused));
/// assert!(!is_transient(&ModelError::Truncated));
/// ```
pub fn is_transient(error: &ModelError) -> bool {
    error.is_transient()
}

/// A step's transient failure that outlasted the journal's retry policy, as the live run
/// reports it: Restate recorded it as the step's failure, so a retried invocation would only
/// replay it, and [`handler_error`] makes the run's failure terminal.
///
/// Its message is the step's error's, as a replay's [`RecordedFailure`] has it; the error
/// itself, a [`ModelError`] a caller can ask questions of, is [`error`](Self::error).
///
/// ```
/// use golem::model::ModelError;
/// use golem_restate::RetriesExhausted;
///
/// let error = RetriesExhausted::new(Box::new(ModelError::Truncated));
/// assert!(error.error().downcast_ref::<ModelError>().is_some());
/// assert_eq!(error.to_string(), ModelError::Truncated.to_string());
/// ```
#[derive(Debug)]
pub struct RetriesExhausted {
    error: BoxError,
}

impl RetriesExhausted {
    /// The step's failure `error`, after Restate's last attempt.
    pub fn new(error: BoxError) -> Self {
        RetriesExhausted { error }
    }

    /// The step's error on Restate's last attempt.
    pub fn error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.error
    }

    /// The step's error on Restate's last attempt, owned.
    pub fn into_error(self) -> BoxError {
        self.error
    }
}

impl std::fmt::Display for RetriesExhausted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for RetriesExhausted {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

/// What the live run gets for a step Restate recorded as failed: its own error (`live`),
/// marked as [`RetriesExhausted`] when it was transient (Restate retried it and gave up), or,
/// when the step failed in an earlier attempt of the invocation, the recorded `message`.
pub(crate) fn recorded_error(live: Option<BoxError>, message: &str) -> BoxError {
    match live {
        Some(error) if is_transient_failure(&*error) => Box::new(RetriesExhausted::new(error)),
        Some(error) => error,
        None => Box::new(RecordedFailure {
            message: message.to_owned(),
        }),
    }
}

/// How a step's failure is reported to Restate, and the failure itself (kept for the live
/// run): retryable for a transient model failure and for a toolset that could not list its
/// tools (a server that is down for a moment), terminal otherwise.
pub(crate) fn step_error(error: BoxError) -> (HandlerError, BoxError) {
    let message = RecordedFailure::of(&*error).message;
    let reported = if is_transient_failure(&*error) {
        HandlerError::from(message)
    } else {
        TerminalError::new_with_code(500, message).into()
    };
    (reported, error)
}

#[cfg(test)]
mod tests;
