//! Streamed responses: what [`Model::request_stream`](super::Model::request_stream) yields.

use futures_util::stream::BoxStream;

use super::{ModelError, ModelResponse};

/// A streamed response: deltas as they arrive, then [`StreamEvent::Done`] with the whole
/// response. A stream that ends without `Done` is an incomplete response, not a short one.
pub type ModelStream<'a> = BoxStream<'a, Result<StreamEvent, ModelError>>;

/// One item of a streamed response.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[allow(
    clippy::large_enum_variant,
    reason = "a stream ends in one whole response; boxing it would cost an allocation per response and change the public type"
)]
pub enum StreamEvent {
    /// More of the response.
    Delta(ResponseDelta),
    /// The response is complete: what the deltas added up to, with its usage and finish
    /// reason. It is the last item.
    Done(ModelResponse),
}

/// A piece of a response as it streams. `part` numbers the part it belongs to, in the order
/// parts began (from 0, each number for one part of one kind): the part's index in the final
/// response's [`parts`](ModelResponse::parts), except where a provider orders the final
/// response otherwise (an OpenAI-compatible server that sends text after a tool call began:
/// the response puts its text first).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResponseDelta {
    /// More text of a text part.
    Text {
        /// The part.
        part: usize,
        /// The text that arrived.
        text: String,
    },
    /// A tool call begins.
    ToolCallStart {
        /// The part.
        part: usize,
        /// The tool the model calls.
        tool_name: String,
        /// The call's id.
        tool_call_id: String,
    },
    /// More of a tool call's arguments, as JSON text (usually not valid JSON on its own).
    ToolCallArgs {
        /// The part.
        part: usize,
        /// The fragment that arrived.
        args: String,
    },
    /// More of the model's reasoning (Anthropic's thinking, `reasoning_content` of
    /// compatible servers): a [`ThinkingPart`](super::ThinkingPart).
    Thinking {
        /// The part.
        part: usize,
        /// The reasoning text that arrived.
        text: String,
    },
    /// The provider's signature over a thinking part (Anthropic's `signature_delta`), which
    /// the provider checks when the part is sent back; it closes the part.
    ThinkingSignature {
        /// The part.
        part: usize,
        /// The signature.
        signature: String,
    },
}

impl ResponseDelta {
    /// The index of the part this delta belongs to.
    ///
    /// ```
    /// use golem::model::ResponseDelta;
    ///
    /// let delta = ResponseDelta::Thinking { part: 0, text: "Let me see".into() };
    /// assert_eq!(delta.part(), 0);
    /// ```
    pub fn part(&self) -> usize {
        match self {
            ResponseDelta::Text { part, .. }
            | ResponseDelta::ToolCallStart { part, .. }
            | ResponseDelta::ToolCallArgs { part, .. }
            | ResponseDelta::Thinking { part, .. }
            | ResponseDelta::ThinkingSignature { part, .. } => *part,
        }
    }
}

/// What went wrong with a response stream that had started: the kind of a
/// [`ModelError::Stream`](super::ModelError::Stream).
///
/// A stream that fails is never retried (its deltas have reached the caller), and never
/// turned into a short response: what arrived before the fault is in the deltas only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StreamFault {
    /// The connection broke before the response was complete (reset, closed mid-event).
    Disconnected,
    /// The stream ended cleanly before the response was complete: OpenAI's without a
    /// `finish_reason` or `[DONE]`, Anthropic's without `message_stop`.
    EndedEarly,
    /// Nothing arrived for longer than the idle timeout (`HttpSettings::idle_timeout`).
    Idle,
    /// The request's timeout or overall deadline passed while the response streamed.
    TimedOut,
    /// A chunk could not be read: not UTF-8, not an event, not JSON, or not the shape the
    /// provider documents; or the stream grew past the response size limit.
    Corrupt,
    /// The provider sent an error in the stream (OpenAI's `{"error": ...}` data,
    /// Anthropic's `error` event).
    Provider,
    /// The answer to a stream request was not an event stream (a JSON or HTML body).
    NotEventStream,
}

impl std::fmt::Display for StreamFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            StreamFault::Disconnected => "disconnected",
            StreamFault::EndedEarly => "ended early",
            StreamFault::Idle => "idle too long",
            StreamFault::TimedOut => "timed out",
            StreamFault::Corrupt => "corrupt chunk",
            StreamFault::Provider => "provider error",
            StreamFault::NotEventStream => "not an event stream",
        })
    }
}
