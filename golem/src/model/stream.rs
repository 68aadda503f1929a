//! Streamed responses: what [`Model::request_stream`](super::Model::request_stream) yields.

use futures_util::stream::BoxStream;

use super::{ModelError, ModelResponse};

/// A streamed response: deltas as they arrive, then [`StreamEvent::Done`] with the whole
/// response. A stream that ends without `Done` is an incomplete response, not a short one.
pub type ModelStream<'a> = BoxStream<'a, Result<StreamEvent, ModelError>>;

/// One item of a streamed response.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StreamEvent {
    /// More of the response.
    Delta(ResponseDelta),
    /// The response is complete: what the deltas added up to, with its usage and finish
    /// reason. It is the last item.
    Done(ModelResponse),
}

/// A piece of a response as it streams. `part` is the index, in the final response's
/// [`parts`](ModelResponse::parts), of the part it belongs to.
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
}
