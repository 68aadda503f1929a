//! The request step: one model request, streamed when someone listens, through the journal
//! when there is one.

use std::sync::Arc;

use futures_util::StreamExt;
use tracing::{Instrument, field};

use super::event::{EventSink, RunEvent, emit};
use super::failure::{Failure, NOT_RUN};
use super::journal::{self, Journal};
use super::received::{PartialAnswer, Received};
use super::state::RunState;
use super::{AgentRun, Step};
use crate::error::Stage;
use crate::model::{
    FinishReason, Message, Model, ModelError, ModelRequest, ModelResponse, RequestParams,
    RequestPart, ResponsePart, StreamEvent,
};
use crate::output::Output;
use crate::usage::LimitExceeded;

impl<Deps, O> AgentRun<Deps, O>
where
    Deps: Send + Sync + 'static,
    O: Output,
{
    /// One model request.
    pub(super) async fn request<J: Journal>(
        &mut self,
        events: Option<&EventSink<O>>,
        journal: &J,
    ) -> Result<Step<O>, Failure> {
        let inner = &*self.agent.inner;
        let state = &mut self.state;
        if state.turns >= inner.max_turns {
            return Err(Failure::limit(LimitExceeded::Turns {
                limit: inner.max_turns,
            }));
        }
        inner
            .usage_limits
            .check_before_request(&state.usage)
            .map_err(Failure::limit)?;
        state.flush_pending();
        state.turns += 1;
        let turn = state.turns;
        emit(events, || RunEvent::RequestSent { turn });

        let tools = self.tools.as_deref().expect("listed before the first step");
        let mut response = if journal.records() {
            // An owned step, so the journal's engine can run it wherever it runs steps.
            let model = Arc::clone(&inner.model);
            let messages = state.messages.clone();
            let params = tools.params.clone();
            let step = async move {
                let response = request_model::<O>(&*model, &messages, &params, None).await?;
                Ok(serde_json::to_value(response)?)
            };
            let recorded = self
                .stop
                .race(journal.step(journal::model_step(turn), Box::pin(step)))
                .await
                .map_err(Failure::stopped)?
                .map_err(|error| Failure::new(Stage::Model, error))?;
            serde_json::from_value(recorded)
                .map_err(|error| Failure::new(Stage::Model, ModelError::other(error)))?
        } else {
            let mut received = Received::default();
            let answer = events.and_then(|_| inner.output.partial_answer());
            // What streams in is collected only for the answer's partial form, or to be kept
            // if a stop comes mid-stream.
            let collect = answer.is_some() || self.stop.can_stop();
            let streaming = events.map(|events| Streaming {
                events,
                turn,
                received: collect.then_some(&mut received),
                answer: answer.as_ref(),
            });
            let requested = self
                .stop
                .race(request_model(
                    &*inner.model,
                    &state.messages,
                    &tools.params,
                    streaming,
                ))
                .await;
            match requested {
                Ok(response) => response.map_err(|error| Failure::new(Stage::Model, error))?,
                Err(stopped) => {
                    // What streamed in before the stop is kept, marked incomplete.
                    if !received.is_empty() {
                        let mut response = received.into_incomplete();
                        name_unnamed_calls(&mut response, state.messages.len());
                        state.usage += &response.usage;
                        keep_unacted(state, response);
                    }
                    return Err(Failure::stopped(stopped));
                }
            }
        };
        name_unnamed_calls(&mut response, state.messages.len());
        state.usage += &response.usage;
        let limit = inner.usage_limits.check_tokens(&state.usage);
        // A response the run will not act on is kept, its calls answered as not run.
        let unusable = match (limit, response.finish_reason) {
            (Err(limit), _) => Some(Failure::limit(limit)),
            (Ok(()), Some(FinishReason::Length)) => {
                Some(Failure::new(Stage::Model, ModelError::Truncated))
            }
            (Ok(()), Some(FinishReason::ContentFilter)) => {
                Some(Failure::new(Stage::Model, ModelError::ContentFilter))
            }
            _ => None,
        };
        if let Some(events) = events {
            events.push(RunEvent::ResponseReceived {
                turn,
                response: response.clone(),
            });
        }
        if let Some(failure) = unusable {
            keep_unacted(state, response);
            return Err(failure);
        }
        state.messages.push(Message::Response(response));
        Ok(Step::Responded)
    }
}

/// Keeps a response the run will not act on, its calls answered as not run.
fn keep_unacted(state: &mut RunState, response: ModelResponse) {
    let answers: Vec<RequestPart> = response
        .tool_calls()
        .map(|call| call.answer(NOT_RUN))
        .collect();
    state.messages.push(Message::Response(response));
    if !answers.is_empty() {
        state.pending = Some(ModelRequest::new(answers));
    }
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

/// One model request, in its `chat` span (transport retries included). With `streaming`,
/// the response is streamed: each delta is pushed as a [`RunEvent::Delta`] of that turn,
/// followed by the answer's [`RunEvent::PartialOutput`] when it changed.
async fn request_model<O: Output>(
    model: &dyn Model,
    messages: &[Message],
    params: &RequestParams,
    streaming: Option<Streaming<'_, O>>,
) -> Result<ModelResponse, ModelError> {
    let deltas = streaming.as_ref().map(|streaming| streaming.turn);
    let span = tracing::info_span!(
        "chat",
        otel.name = format!("chat {}", model.name()),
        otel.kind = "client",
        "gen_ai.operation.name" = "chat",
        "gen_ai.provider.name" = model.system(),
        "gen_ai.request.model" = model.name(),
        "gen_ai.request.stream" = deltas.is_some(),
        "gen_ai.response.model" = field::Empty,
        "gen_ai.response.id" = field::Empty,
        "gen_ai.usage.input_tokens" = field::Empty,
        "gen_ai.usage.output_tokens" = field::Empty,
        "error.type" = field::Empty,
    );
    let result = match streaming {
        None => {
            model
                .request(messages, params)
                .instrument(span.clone())
                .await
        }
        Some(streaming) => {
            stream_response(model, messages, params, streaming)
                .instrument(span.clone())
                .await
        }
    };
    match &result {
        Ok(response) => {
            if let Some(model) = &response.model_name {
                span.record("gen_ai.response.model", model.as_str());
            }
            if let Some(id) = &response.provider_response_id {
                span.record("gen_ai.response.id", id.as_str());
            }
            span.record("gen_ai.usage.input_tokens", response.usage.input_tokens);
            span.record("gen_ai.usage.output_tokens", response.usage.output_tokens);
        }
        Err(error) => {
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
        _ => "_OTHER",
    }
}

/// Gives every call without an id one that is unique in the history.
fn name_unnamed_calls(response: &mut ModelResponse, history_len: usize) {
    for (index, part) in response.parts.iter_mut().enumerate() {
        if let ResponsePart::ToolCall(call) = part
            && call.tool_call_id.is_empty()
        {
            call.tool_call_id = format!("call_{history_len}_{index}");
        }
    }
}
