//! One response's output: find the answer, decode and validate it (raced against the run's
//! stop signals, panics caught), then accept it or reject it with feedback the model can act
//! on.

use std::any::Any;
use std::borrow::Cow;
use std::collections::HashMap;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::FutureExt;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::SharedCall;
use super::budget::Culprits;
use super::error::InterruptedCall;
use super::event::{Rejection, RunEvent, emit};
use super::failure::Failure;
use super::journal::{self, Journal, NestedJournal, RecordedFailure, ReplayDiverged};
use super::scope::Turn;
use super::state::Retries;
use super::stop::Stopped;
use super::tools::{ToolsVerdict, panic_message};
use crate::agent::{OutputFn, OutputSetup};
use crate::context::RunContext;
use crate::error::{BoxError, Exhausted, OutputPanicked, Stage};
use crate::model::{ModelResponse, ModelRetry, RequestPart, ToolCallPart};
use crate::output::{Output, OutputMode, decode_json, prompted};

pub(crate) const FINAL_RESULT_PROCESSED: &str = "Final result processed.";
pub(crate) const OUTPUT_NOT_USED: &str =
    "Output tool not used: only the first output call is considered.";
const OUTPUT_FAILED: &str = "The output could not be processed; the run stopped.";

/// What a response's answer turned out to be, before anything is booked.
pub(crate) enum Answer<'r, O> {
    /// The response has no answer, and needs none: the run goes on.
    None,
    /// The answer was not looked at, because a call in the same response was rejected or
    /// denied (`verdict` says which).
    Declined(ToolsVerdict),
    /// An answer is required and there is none; the reason is the model's feedback.
    Missing(String),
    /// The answer (in `call`, or in the text), decoded and validated.
    Decoded {
        call: Option<&'r ToolCallPart>,
        result: Result<O, BoxError>,
    },
}

/// Whether `call` is a call of an output tool: the output's own, or an output function's.
pub(crate) fn is_output_call<Deps, O>(output: &OutputSetup<Deps, O>, call: &ToolCallPart) -> bool {
    (output.has_output_tool() && call.tool_name == *output.tool_name)
        || output.function(&call.tool_name).is_some()
}

/// Finds the response's answer and decodes and validates it, after its function-tool calls
/// (`had_tool_calls`) went as `verdict` says.
///
/// # Errors
/// [`Stopped`] when the run is stopped while the answer is decoded or validated, with the
/// output function's error if it ended with the stop.
pub(crate) async fn evaluate<'r, Deps, O, J>(
    turn: &Turn<'_, Deps, O, J>,
    response: &'r ModelResponse,
    output_calls: &[&'r ToolCallPart],
    had_tool_calls: bool,
    verdict: ToolsVerdict,
    retries: &Retries,
) -> Result<Answer<'r, O>, (Stopped, Option<InterruptedCall>)>
where
    Deps: Send + Sync + 'static,
    O: Output,
    J: Journal,
{
    let output = &turn.step.agent.output;
    if output.has_output_tool() || !output.functions.is_empty() {
        if let Some(&first) = output_calls.first() {
            if verdict.rejected || verdict.denied {
                return Ok(Answer::Declined(verdict));
            }
            let result = decode(turn, Some(first), &first.args, retries).await?;
            return Ok(Answer::Decoded {
                call: Some(first),
                result,
            });
        }
        // A text output keeps its channel beside output functions.
        if output.structured.is_some() {
            if had_tool_calls {
                return Ok(Answer::None);
            }
            let what = if response.text_content().trim().is_empty() {
                "The response was empty"
            } else {
                "Plain text responses are not permitted"
            };
            return Ok(Answer::Missing(if output.functions.is_empty() {
                format!(
                    "{what}. Call the `{}` tool with your answer.",
                    output.tool_name
                )
            } else {
                format!(
                    "{what}. Call one of the output tools ({}) with your answer.",
                    output.tool_names()
                )
            }));
        }
    }
    if had_tool_calls {
        return Ok(Answer::None);
    }
    let text = response.text_content();
    if text.trim().is_empty() {
        let reason = if output.structured.is_some() {
            "The response was empty. Answer with JSON that matches the schema."
        } else {
            "The response was empty. Answer with text."
        };
        return Ok(Answer::Missing(reason.to_owned()));
    }
    let raw = match output.mode {
        OutputMode::Prompted if output.structured.is_some() => prompted::json_in(&text),
        _ => Cow::Borrowed(text.as_str()),
    };
    let result = decode(turn, None, &raw, retries).await?;
    Ok(Answer::Decoded { call: None, result })
}

/// Decodes and validates `raw` (or runs the output function `call` names), unless the run
/// is stopped first; a panic in the decoder, the function or a validator fails the answer,
/// not the process.
async fn decode<Deps, O, J>(
    turn: &Turn<'_, Deps, O, J>,
    call: Option<&ToolCallPart>,
    raw: &str,
    retries: &Retries,
) -> Result<Result<O, BoxError>, (Stopped, Option<InterruptedCall>)>
where
    Deps: Send + Sync + 'static,
    O: Output,
    J: Journal,
{
    let output = &turn.step.agent.output;
    let function = call.and_then(|call| output.function(&call.tool_name));
    if !sees_context(output, function.is_some()) {
        // Nothing to await, so nothing to race: the answer is decoded at once, as a race
        // against the stop signals (which polls the work first) would have it.
        let decoded = catch_unwind(AssertUnwindSafe(|| decode_raw(output, raw)));
        return Ok(decoded.unwrap_or_else(|panic| Err(output_panicked(&*panic))));
    }
    // Boxed: the output's function and validators are rare, and a step's future stays small
    // without them.
    Box::pin(run_validators(turn, call, function, raw, retries)).await
}

/// Whether an answer runs code that sees a context: its output function (`function`, when
/// its call names one) or a validator. The handling makes a context only when this, or a
/// function-tool call, needs one.
pub(crate) fn sees_context<Deps, O>(output: &OutputSetup<Deps, O>, function: bool) -> bool {
    function || !output.validators.is_empty()
}

/// Runs the output function `function` (for `call`) or decodes `raw`, then the validators,
/// in a context of their own, unless the run is stopped first.
async fn run_validators<Deps, O, J>(
    turn: &Turn<'_, Deps, O, J>,
    call: Option<&ToolCallPart>,
    function: Option<&OutputFn<Deps, O>>,
    raw: &str,
    retries: &Retries,
) -> Result<Result<O, BoxError>, (Stopped, Option<InterruptedCall>)>
where
    Deps: Send + Sync + 'static,
    O: Output,
    J: Journal,
{
    let output = &turn.step.agent.output;
    let ctx = turn.ctx().for_attempt(
        call.map(|call| SharedCall::of(turn.response, call)),
        retries.output(),
        turn.step.agent.output_retries,
    );
    let decoding = async {
        if turn.step.journal.records() {
            validate_in(turn, function, raw, ctx).await
        } else {
            caught(decode_and_validate(output, function, raw, None, ctx)).await
        }
    };
    let mut decoding = std::pin::pin!(decoding);
    let raced = turn
        .step
        .stop
        .race_graceful(&mut decoding, turn.ctx().cancellation())
        .await;
    // A journaled validation that the deadline or the engine stopped, now or as recorded,
    // or a hand-off's agent that stopped with the run.
    let raced = match raced {
        Ok(Err(error)) => match error.downcast::<AgentStopped>() {
            Ok(stop) => {
                let stopped = stop.stopped.clone();
                return Err((stopped, call.map(|call| interrupted(call, stop))));
            }
            Err(error) => match super::stop::step_stop(&*error) {
                Some(stop) => return Err((stop.stopped, None)),
                None => Ok(Err(error)),
            },
        },
        raced => raced,
    };
    let (stopped, ended) = match raced {
        // An error when the run is stopped is that of an agent the function ran, which
        // stopped with the run.
        Ok(Err(error)) if function.is_some() => match turn.step.stop.check() {
            Ok(()) => return Ok(Err(error)),
            Err(stopped) => (stopped, Some(Err(error))),
        },
        Ok(result) => return Ok(result),
        Err(stop) => stop,
    };
    let interrupted = match (call, ended) {
        (Some(call), Some(Err(error))) => Some(interrupted(call, error)),
        _ => None,
    };
    Err((stopped, interrupted))
}

/// The output call `call`, which ended with `error` when the run stopped (a hand-off's
/// agent's own error, when its stop is what `error` says).
fn interrupted(call: &ToolCallPart, error: BoxError) -> InterruptedCall {
    let error = match error.downcast::<AgentStopped>() {
        Ok(stopped) => stopped.error,
        Err(error) => error,
    };
    InterruptedCall {
        tool_name: call.tool_name.clone(),
        tool_call_id: call.tool_call_id.clone(),
        error,
    }
}

/// A hand-off whose agent stopped with the run, by its deadline or by the engine: the
/// answer's step does not begin, now or on replay, where the agent's steps stop it alike.
#[derive(Debug, thiserror::Error)]
#[error("{stopped}")]
struct AgentStopped {
    stopped: Stopped,
    /// The agent's error.
    error: BoxError,
}

/// Decodes and validates `raw` as the journal step `output:{turn}`, which records the
/// verdict: executed, the validators run now; replayed, a recorded rejection or failure
/// stands in for them, and a recorded acceptance runs the decoder and validators again to
/// rebuild the value (the run ends there, so this happens only when an engine replays a
/// run that had finished).
///
/// An output function whose output is a run of its own (a hand-off) runs first, outside the
/// step, its steps recorded under the step's name (`output:{turn}/model:1`), as an agent
/// called as a tool does: stopped by the run's deadline step by step, replayed from its
/// steps, its usage booked however it ended. The validators then run in the step on what it
/// made.
async fn validate_in<Deps, O, J>(
    turn: &Turn<'_, Deps, O, J>,
    function: Option<&OutputFn<Deps, O>>,
    raw: &str,
    ctx: RunContext<Deps>,
) -> Result<O, BoxError>
where
    Deps: Send + Sync + 'static,
    O: Output,
    J: Journal,
{
    let name = journal::output_step(turn.turn);
    // What a hand-off made, when the answer is one: its steps are the journal's own.
    let made = Arc::new(Mutex::new(made_in(turn, function, raw, &ctx, &name).await?));
    let live: Arc<Mutex<Option<Result<O, BoxError>>>> = Arc::default();
    let step = {
        let (agent, raw, live, made) = (
            Arc::clone(turn.step.agent),
            raw.to_owned(),
            Arc::clone(&live),
            Arc::clone(&made),
        );
        let function = function.cloned();
        let ctx = ctx.clone();
        async move {
            let made = lock(&made).take();
            let making = decode_and_validate(&agent.output, function.as_ref(), &raw, made, ctx);
            let result = caught(making).await;
            let verdict = Verdict::of(&result);
            *lock(&live) = Some(result);
            Ok(serde_json::to_value(verdict)?)
        }
    };
    let step = turn.step.stop.guard(Box::pin(step));
    let recorded = turn.step.journal.step(name.clone(), step).await?;
    if let Some(result) = lock(&live).take() {
        return result;
    }
    let recorded = serde_json::from_value::<Verdict>(recorded)?;
    let taken = lock(&made).take();
    let output = &turn.step.agent.output;
    match (recorded, taken) {
        // A hand-off that failed again as it failed when recorded: its own error, with the
        // agent's in its chain.
        (recorded, Some(Err(error))) if Verdict::of_error(&*error) == recorded => Err(error),
        (Verdict::Accepted, made) => {
            let rebuilt = caught(decode_and_validate(output, function, raw, made, ctx)).await;
            // Not a rejection: the recorded run ended here, and a replay goes where it went.
            rebuilt.map_err(|error| {
                let found = RecordedFailure::of(&*error).message;
                Box::new(ReplayDiverged::new(name, found)) as BoxError
            })
        }
        (Verdict::Rejected(reason), _) => Err(Box::new(ModelRetry::new(reason))),
        (Verdict::Failed(message), _) => Err(Box::new(RecordedFailure { message })),
    }
}

/// What the output function `function` made of `raw` as a run of journaled steps of its
/// own (a hand-off), named under `name`; `None` when it is not one, and its output is made
/// in the answer's step.
///
/// # Errors
/// [`AgentStopped`] when the function's agent stopped with the run.
async fn made_in<Deps, O, J>(
    turn: &Turn<'_, Deps, O, J>,
    function: Option<&OutputFn<Deps, O>>,
    raw: &str,
    ctx: &RunContext<Deps>,
    name: &str,
) -> Result<Option<Result<O, BoxError>>, BoxError>
where
    Deps: Send + Sync + 'static,
    O: Output,
    J: Journal,
{
    let Some(function) = function else {
        return Ok(None);
    };
    let nested = NestedJournal::new(turn.step.journal, name.to_owned(), turn.step.stop.clone());
    // The function may panic as it starts (a hand-off prepares its agent's prompt then).
    let making = match catch_unwind(AssertUnwindSafe(|| function.call_in(ctx, raw, &nested))) {
        Ok(None) => return Ok(None),
        Ok(Some(making)) => caught(making).await,
        Err(panic) => Err(output_panicked(&*panic)),
    };
    Ok(Some(match making {
        Err(error) => match turn.step.stop.agent_stop(&*error) {
            Some(stopped) => return Err(Box::new(AgentStopped { stopped, error })),
            None => Err(error),
        },
        made => made,
    }))
}

/// The slot behind `slot`'s lock, whatever a panic left in it.
fn lock<T>(slot: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    slot.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The output's verdict, as a journal records it.
#[derive(PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Verdict {
    Accepted,
    Rejected(String),
    Failed(String),
}

impl Verdict {
    fn of<O>(result: &Result<O, BoxError>) -> Self {
        match result {
            Ok(_) => Verdict::Accepted,
            Err(error) => Verdict::of_error(&**error),
        }
    }

    fn of_error(error: &(dyn std::error::Error + 'static)) -> Self {
        match ModelRetry::find(error) {
            Some(retry) => Verdict::Rejected(retry.message().to_owned()),
            None => Verdict::Failed(error.to_string()),
        }
    }
}

/// Runs `decoding`, catching a panic in the decoder or a validator as an
/// [`OutputPanicked`] error.
async fn caught<O>(decoding: impl Future<Output = Result<O, BoxError>>) -> Result<O, BoxError> {
    AssertUnwindSafe(decoding)
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| Err(output_panicked(&*panic)))
}

/// The error of a decoder, output function or validator that panicked with `panic`.
fn output_panicked(panic: &(dyn Any + Send)) -> BoxError {
    Box::new(OutputPanicked {
        message: panic_message(panic),
    })
}

/// The output: what a hand-off's agent `made`, else what `function` makes of `raw`, else
/// `raw` decoded; then through the validators.
async fn decode_and_validate<Deps: 'static, O: 'static>(
    output: &OutputSetup<Deps, O>,
    function: Option<&OutputFn<Deps, O>>,
    raw: &str,
    made: Option<Result<O, BoxError>>,
    ctx: RunContext<Deps>,
) -> Result<O, BoxError> {
    let mut value = match (made, function) {
        // What a hand-off's agent made, outside the answer's step.
        (Some(made), _) => made?,
        (None, Some(function)) => function.call(&ctx, raw).await?,
        (None, None) => decode_raw(output, raw)?,
    };
    for validator in &output.validators {
        value = validator(ctx.clone(), value).await?;
    }
    Ok(value)
}

/// `raw` decoded as the output.
fn decode_raw<Deps, O>(output: &OutputSetup<Deps, O>, raw: &str) -> Result<O, BoxError> {
    match output.structured {
        Some(true) => {
            // The schema was wrapped as `{"response": ...}` for the model.
            let mut fields: HashMap<String, Box<RawValue>> = decode_json(raw)?;
            let response = fields
                .remove("response")
                .ok_or_else(|| ModelRetry::new("invalid output: missing field `response`"))?;
            (output.decoder)(response.get())
        }
        _ => (output.decoder)(raw),
    }
}

/// Books `answer`: the answers and feedback go into `parts`, a rejection is charged to the
/// output budget; returns the output when it was accepted, and the run's failure when the
/// answer failed or the budget ran out.
pub(crate) fn book<Deps, O: Output, J>(
    turn: &Turn<'_, Deps, O, J>,
    answer: Answer<'_, O>,
    output_calls: &[&ToolCallPart],
    retries: &mut Retries,
    culprits: &mut Culprits<'_>,
    parts: &mut Vec<RequestPart>,
) -> Result<Option<O>, Failure> {
    let rest = output_calls.get(1..).unwrap_or_default();
    let result = match answer {
        Answer::None => Ok(None),
        Answer::Declined(verdict) => {
            decline(output_calls, verdict, parts);
            return Ok(None);
        }
        Answer::Missing(reason) => reject(turn, None, reason, None, retries, culprits, parts),
        Answer::Decoded { call, result } => match result {
            Ok(output) => {
                if let Some(call) = call {
                    parts.push(call.answer(FINAL_RESULT_PROCESSED));
                }
                Ok(Some(output))
            }
            Err(error) => match ModelRetry::find(&*error) {
                Some(retry) => {
                    let reason = retry.message().to_owned();
                    reject(turn, call, reason, Some(error), retries, culprits, parts)
                }
                None => {
                    if let Some(call) = call {
                        parts.push(call.answer(OUTPUT_FAILED));
                    }
                    Err(Failure::new(Stage::Decode, error))
                }
            },
        },
    };
    parts.extend(rest.iter().map(|call| call.answer(OUTPUT_NOT_USED)));
    result
}

/// Answers output calls that cannot be accepted because a tool call in the same response was
/// rejected, failed or denied. Not charged to the output budget.
pub(crate) fn decline(
    calls: &[&ToolCallPart],
    verdict: ToolsVerdict,
    parts: &mut Vec<RequestPart>,
) {
    if calls.is_empty() {
        return;
    }
    let why = if verdict.denied && !verdict.rejected {
        "a tool call in this response was denied. Take the denial into account"
    } else {
        "a tool call in this response was rejected. Correct that call first"
    };
    let reason = format!(
        "Output not accepted: {why}, then call `{}` again.",
        calls[0].tool_name
    );
    parts.extend(calls.iter().map(|call| call.answer(reason.as_str())));
}

/// Books an output rejection and adds its feedback; fails the run past the budget.
fn reject<Deps, O: Output, J>(
    turn: &Turn<'_, Deps, O, J>,
    call: Option<&ToolCallPart>,
    reason: String,
    error: Option<BoxError>,
    retries: &mut Retries,
    culprits: &mut Culprits<'_>,
    parts: &mut Vec<RequestPart>,
) -> Result<Option<O>, Failure> {
    let rejections = retries.charge_output();
    let limit = turn.step.agent.output_retries;
    culprits.output = true;
    tracing::warn!(
        "golem.retry.stage" = "decode",
        "gen_ai.tool.name" = call.map(|call| call.tool_name.as_str()),
        "golem.retry.attempt" = i64::from(rejections),
        "golem.retry.max" = i64::from(limit),
        // The feedback may quote what the model or the user said: content.
        "golem.retry.reason" = turn.step.agent.capture_content.then_some(reason.as_str()),
        "output rejected"
    );
    emit(turn.step.events, || {
        RunEvent::Rejected(Rejection {
            turn: turn.turn,
            stage: Stage::Decode,
            call: call.map(|call| SharedCall::of(turn.response, call)),
            retry: rejections,
            max_retries: limit,
            feedback: reason.clone(),
            cost: turn.cost(),
        })
    });
    parts.push(match call {
        Some(call) => call.reject(reason.clone()),
        None => RequestPart::retry_prompt(reason.clone()),
    });
    if rejections > limit {
        return Err(Failure {
            stage: Stage::Decode,
            tool_name: None,
            exhausted: Some(Exhausted { rejections, limit }),
            source: error.unwrap_or_else(|| Box::new(ModelRetry::new(reason))),
            interrupted: Vec::new(),
        });
    }
    Ok(None)
}
