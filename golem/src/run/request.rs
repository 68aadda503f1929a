//! The request step: one model request, streamed when someone listens, through the journal
//! when there is one.

use std::borrow::Cow;
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::StreamExt;
use tracing::field;

use super::Step;
use super::event::{EventSink, RunEvent};
use super::failure::Failure;
use super::journal::{self, Journal};
use super::received::{PartialAnswer, Received};
use super::scope::{Params, StepScope};
use super::shape::{Staging, shape};
use super::state::RunState;
use super::telemetry::{self, in_span};
use super::transcript::{FILTERED, INTERRUPTED, OVER_LIMIT, TRUNCATED};
use crate::agent::InstructionsFn;
use crate::context::RunContext;
use crate::error::Stage;
use crate::model::{
    FinishReason, Message, Model, ModelError, ModelResponse, RequestParams, StreamEvent,
};
use crate::output::Output;
use crate::usage::{LimitExceeded, Usage};

/// Sends the transcript's pending request (or the history as it ends in one) and records
/// the response: in the transcript when the run acts on it, as unused when it does not (cut
/// off by a stop, truncated, filtered, over a limit).
pub(crate) async fn request<Deps, O, J>(
    step: &StepScope<'_, Deps, O, J>,
    state: &mut RunState,
) -> Result<Step<O>, Failure>
where
    Deps: Send + Sync + 'static,
    O: Output,
    J: Journal,
{
    let max_turns = step.agent.max_turns;
    if state.turns >= max_turns {
        return Err(Failure::limit(LimitExceeded::Turns { limit: max_turns }));
    }
    let limits = step.usage_limits();
    limits
        .check_before_request(&state.usage)
        .map_err(Failure::limit)?;
    let mut params = step.params();
    if !step.agent.instructions_fns.is_empty() {
        let ctx =
            RunContext::from_parts(Arc::clone(step.deps), state.usage.clone(), state.turns + 1);
        let fixed = params.instructions.clone();
        // Boxed, as the other rare branches: the common step's future stays small.
        let made = Box::pin(instructions(fixed, &step.agent.instructions_fns, ctx));
        params.to_mut().instructions = step.stop.race(made).await.map_err(Failure::stopped)?;
    }
    let shaped = if step.agent.history_processors.is_empty()
        && step.agent.summarize.is_none()
        && limits.request_tokens().is_none()
    {
        None
    } else {
        // The pending request goes into the history first, so the summary and the
        // processors read it in place; taken back if the request is not sent after all,
        // whether shaping fails or the step is dropped while it shapes.
        let mut staging = Staging::new(state);
        let shaped = Box::pin(shape(step, staging.state(), &params)).await?;
        staging.keep();
        shaped
    };
    state.turns += 1;
    let turn = state.turns;
    let RunState {
        transcript, usage, ..
    } = state;
    let sent = transcript.send();
    let messages = match shaped {
        Some(shaped) => Cow::Owned(shaped),
        None => sent,
    };
    let model = step.model();
    // A model that answers only whole is asked so: its stream would carry nothing more.
    let streamed = step.events.filter(|_| model.streams());
    // When the model answers only whole and no journal records the request, `RequestSent`
    // is held: pushed when the request first waits (the first moment `RunEvents` could
    // yield it), else with the request's outcome.
    let mut announcement = None;
    if let Some(events) = step.events {
        if streamed.is_none() && !step.journal.records() {
            announcement = Some(RunEvent::RequestSent { turn });
        } else {
            events.push(RunEvent::RequestSent { turn });
        }
    }

    let telemetry = Telemetry {
        capture_content: step.agent.capture_content,
        conversation_id: step.overrides.conversation_id.clone(),
    };
    let response = if step.journal.records() {
        let journaled = request_journaled(step, messages, params, turn, telemetry, usage);
        Box::pin(journaled).await?
    } else {
        let mut received = Received::default();
        let events = streamed;
        let answer = events.and_then(|_| step.agent.output.partial_answer());
        // What streams in is collected only for the answer's partial form, or to be kept
        // if a stop comes mid-stream.
        let collect = answer.is_some() || step.stop.can_stop();
        let streaming = events.map(|events| Streaming {
            events,
            turn,
            received: collect.then_some(&mut received),
            answer: answer.as_ref(),
        });
        let requested = {
            // Pinned here, so the race holds a pointer to it rather than a copy of its own.
            let request = pin!(request_model(
                &**model, &messages, &params, streaming, &telemetry,
            ));
            let requesting = Announcing {
                request,
                events: step.events,
                announcement: &mut announcement,
            };
            step.stop.race(requesting).await
        };
        // A failed request is announced before its error. (A stop can only win the race
        // after the request was polled and waited, which announced it already.)
        if !matches!(requested, Ok(Ok(_))) {
            announce(step.events, announcement.take());
        }
        match requested {
            Ok(response) => response.map_err(|error| Failure::new(Stage::Model, error))?,
            Err(stopped) => {
                if received.is_empty() {
                    // The request was sent, though nothing came back.
                    usage.requests += 1;
                } else {
                    // What streamed in before the stop is kept, marked incomplete, and not
                    // used: going on asks again.
                    let response = received.into_incomplete();
                    *usage += &response.usage;
                    transcript.record_unused(response, INTERRUPTED);
                }
                return Err(Failure::stopped(stopped));
            }
        }
    };
    *usage += &response.usage;
    let limit = limits.check_tokens(usage);
    // A response the run will not act on is kept, its calls answered as not run.
    let unusable = match (limit, response.finish_reason) {
        (Err(limit), _) => Some((Failure::limit(limit), OVER_LIMIT)),
        (Ok(()), Some(FinishReason::Length)) => {
            Some((Failure::new(Stage::Model, ModelError::Truncated), TRUNCATED))
        }
        (Ok(()), Some(FinishReason::ContentFilter)) => Some((
            Failure::new(Stage::Model, ModelError::ContentFilter),
            FILTERED,
        )),
        _ => None,
    };
    let (recorded, failure) = match unusable {
        Some((failure, note)) => (transcript.record_unused(response, note), Some(failure)),
        None => (transcript.record_response(response), None),
    };
    if let Some(events) = step.events {
        let received = RunEvent::ResponseReceived {
            turn,
            response: Arc::clone(recorded),
        };
        match announcement {
            Some(sent) => events.push_two(sent, received),
            None => events.push(received),
        }
    }
    match failure {
        Some(failure) => Err(failure),
        None => Ok(Step::Responded),
    }
}

/// A request whose announcement ([`RunEvent::RequestSent`]) is held: pushed as soon as the
/// request waits, so the stream yields it while the model works; a request answered at once
/// leaves it for the caller to push with its outcome, under one lock.
struct Announcing<'a, F, O: Output> {
    request: Pin<&'a mut F>,
    events: Option<&'a EventSink<O>>,
    announcement: &'a mut Option<RunEvent<O>>,
}

impl<F: Future, O: Output> Future for Announcing<'_, F, O> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = &mut *self;
        let polled = this.request.as_mut().poll(cx);
        if polled.is_pending() {
            announce(this.events, this.announcement.take());
        }
        polled
    }
}

/// Pushes a held announcement, if any.
fn announce<O: Output>(events: Option<&EventSink<O>>, announcement: Option<RunEvent<O>>) {
    if let (Some(events), Some(announcement)) = (events, announcement) {
        events.push(announcement);
    }
}

/// The request of `turn` as the journal step `model:{turn}`: made now and recorded, or the
/// recorded response on replay. A stop counts the request as made.
async fn request_journaled<Deps, O, J>(
    step: &StepScope<'_, Deps, O, J>,
    messages: Cow<'_, [Message]>,
    params: Params<'_>,
    turn: u32,
    telemetry: Telemetry,
    usage: &mut Usage,
) -> Result<ModelResponse, Failure>
where
    Deps: Send + Sync + 'static,
    O: Output,
    J: Journal,
{
    // An owned step, so the journal's engine can run it wherever it runs steps.
    let model = Arc::clone(step.model());
    let messages = messages.into_owned();
    let params = params.into_owned();
    let request = async move {
        let response = request_model::<O>(&*model, &messages, &params, None, &telemetry).await?;
        Ok(serde_json::to_value(response)?)
    };
    let recorded = journal::step_until(
        step.journal,
        step.stop,
        journal::model_step(turn),
        Box::pin(request),
    )
    .await;
    let recorded = match recorded {
        Ok(recorded) => recorded.map_err(|error| Failure::new(Stage::Model, error))?,
        Err(stop) => {
            // A request that was sent counts, though nothing came back.
            if stop.began {
                usage.requests += 1;
            }
            return Err(Failure::stopped(stop.stopped));
        }
    };
    serde_json::from_value(recorded)
        .map_err(|error| Failure::new(Stage::Model, ModelError::other(error)))
}

/// The static instructions, then those each of `fns` makes for this request, one paragraph
/// each; `None` when all are empty.
async fn instructions<Deps>(
    fixed: Option<String>,
    fns: &[InstructionsFn<Deps>],
    ctx: RunContext<Deps>,
) -> Option<String> {
    let mut joined = fixed.unwrap_or_default();
    for instructions in fns {
        let text = instructions(ctx.clone()).await;
        if !text.is_empty() && !joined.is_empty() {
            joined.push_str("\n\n");
        }
        joined.push_str(&text);
    }
    (!joined.is_empty()).then_some(joined)
}

/// Where a streamed response goes as it arrives.
struct Streaming<'a, O: Output> {
    events: &'a EventSink<O>,
    turn: u32,
    /// Where the deltas are collected, when they are needed.
    received: Option<&'a mut Received>,
    /// Where the structured answer arrives, when there is one.
    answer: Option<&'a PartialAnswer>,
}

/// What a run's spans carry besides golem's fixed attributes.
#[derive(Debug, Clone)]
struct Telemetry {
    /// Whether the messages, instructions and response are recorded.
    capture_content: bool,
    /// The conversation the caller named.
    conversation_id: Option<Arc<str>>,
}

/// One model request, in its `chat` span (transport retries included). With `streaming`,
/// the response is streamed: each delta is pushed as a [`RunEvent::Delta`] of that turn,
/// followed by the answer's [`RunEvent::PartialOutput`] when it changed.
async fn request_model<O: Output>(
    model: &dyn Model,
    messages: &[Message],
    params: &RequestParams,
    streaming: Option<Streaming<'_, O>>,
    trace: &Telemetry,
) -> Result<ModelResponse, ModelError> {
    let deltas = streaming.as_ref().map(|streaming| streaming.turn);
    let span = tracing::info_span!(
        "chat",
        otel.name = format!("chat {}", model.name()),
        otel.kind = "client",
        otel.status_code = field::Empty,
        "gen_ai.operation.name" = "chat",
        "gen_ai.provider.name" = model.system(),
        "gen_ai.request.model" = model.name(),
        "gen_ai.request.stream" = deltas.is_some(),
        "gen_ai.conversation.id" = trace.conversation_id.as_deref(),
        "gen_ai.response.model" = field::Empty,
        "gen_ai.response.id" = field::Empty,
        "gen_ai.response.finish_reasons" = field::Empty,
        "gen_ai.usage.input_tokens" = field::Empty,
        "gen_ai.usage.output_tokens" = field::Empty,
        "gen_ai.usage.cache_read.input_tokens" = field::Empty,
        "gen_ai.usage.cache_creation.input_tokens" = field::Empty,
        "gen_ai.usage.reasoning.output_tokens" = field::Empty,
        "gen_ai.system_instructions" = field::Empty,
        "gen_ai.input.messages" = field::Empty,
        "gen_ai.output.messages" = field::Empty,
        "error.type" = field::Empty,
    );
    // Nothing is rendered for a span no subscriber wants.
    let capture = trace.capture_content && !span.is_disabled();
    if capture {
        if let Some(instructions) = &params.instructions {
            span.record(
                "gen_ai.system_instructions",
                telemetry::system_instructions(instructions),
            );
        }
        span.record("gen_ai.input.messages", telemetry::input_messages(messages));
    }
    let result = match streaming {
        None => in_span!(span, model.request(messages, params)),
        Some(streaming) => in_span!(span, stream_response(model, messages, params, streaming)),
    };
    match &result {
        Ok(response) => {
            if let Some(model) = &response.model_name {
                span.record("gen_ai.response.model", model.as_str());
            }
            if let Some(id) = &response.provider_response_id {
                span.record("gen_ai.response.id", id.as_str());
            }
            if let Some(reason) = response.finish_reason {
                span.record(
                    "gen_ai.response.finish_reasons",
                    telemetry::finish_reason(reason),
                );
            }
            let usage = &response.usage;
            span.record(
                "gen_ai.usage.input_tokens",
                telemetry::int(usage.input_tokens),
            );
            span.record(
                "gen_ai.usage.output_tokens",
                telemetry::int(usage.output_tokens),
            );
            for (name, tokens) in [
                (
                    "gen_ai.usage.cache_read.input_tokens",
                    usage.cache_read_tokens,
                ),
                (
                    "gen_ai.usage.cache_creation.input_tokens",
                    usage.cache_write_tokens,
                ),
                (
                    "gen_ai.usage.reasoning.output_tokens",
                    usage.reasoning_tokens,
                ),
            ] {
                if tokens > 0 {
                    span.record(name, telemetry::int(tokens));
                }
            }
            if capture {
                span.record(
                    "gen_ai.output.messages",
                    telemetry::output_messages(response),
                );
            }
        }
        Err(error) => {
            span.record("otel.status_code", "error");
            match error.status() {
                Some(status) => span.record("error.type", status),
                None => span.record("error.type", error_type(error)),
            };
            span.in_scope(|| tracing::warn!(error = %error, "model request failed"));
        }
    }
    result
}

/// Streams a response, passing its deltas on, until the whole response arrives.
async fn stream_response<O: Output>(
    model: &dyn Model,
    messages: &[Message],
    params: &RequestParams,
    streaming: Streaming<'_, O>,
) -> Result<ModelResponse, ModelError> {
    let Streaming {
        events,
        turn,
        mut received,
        answer,
    } = streaming;
    let mut stream = model.request_stream(messages, params);
    while let Some(item) = stream.next().await {
        match item? {
            StreamEvent::Done(response) => return Ok(response),
            StreamEvent::Delta(delta) => {
                let partial = received.as_deref_mut().and_then(|received| {
                    received.apply(&delta);
                    answer.and_then(|answer| received.partial::<O>(answer, &delta))
                });
                events.push(RunEvent::Delta { turn, delta });
                if let Some(partial) = partial {
                    events.push(RunEvent::PartialOutput { turn, partial });
                }
            }
        }
    }
    Err(ModelError::InvalidResponse {
        provider: model.system().to_owned(),
        message: "the stream ended before the response was complete".to_owned(),
    })
}

/// The `error.type` of a failed request without an HTTP status: low-cardinality names.
fn error_type(error: &ModelError) -> &'static str {
    match error {
        ModelError::Transport { .. } if error.is_timeout() => "timeout",
        ModelError::Transport { .. } => "transport",
        ModelError::InvalidResponse { .. } => "invalid_response",
        ModelError::Stream { .. } => "stream",
        ModelError::Truncated => "truncated",
        ModelError::ContentFilter => "content_filter",
        ModelError::UnsupportedContent { .. } => "unsupported_content",
        // A fallback model's failure is its last model's.
        ModelError::Fallback(error) => error_type(error.last()),
        _ => "_OTHER",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::fallback::{ModelFailure, fallback_error};

    #[test]
    fn a_fallback_models_failure_has_its_last_models_error_type() {
        let failure = |error| ModelFailure {
            model: "m".to_owned(),
            system: "p".to_owned(),
            error,
        };
        let error = fallback_error(vec![
            failure(ModelError::ContentFilter),
            failure(ModelError::Truncated),
        ]);
        assert_eq!(error_type(&error), "truncated");
    }
}
