//! The AI SDK's UI message stream: the protocol of the `ai` package's `useChat` and
//! `readUIMessageStream`.
//!
//! A response is a `text/event-stream` with the header [`HEADER`], one [`UiChunk`] per SSE
//! `data:` line ([`sse`]), and a last line [`DONE`]. [`Encoder`] makes the chunks from a
//! run's events; [`ChatRequest`] reads what the client posts.

mod chunk;
mod encoder;
mod request;
mod trace;

pub use chunk::{DataChunk, UiChunk};
pub use encoder::Encoder;
pub use request::{ChatRequest, UiMessage};

/// The header that marks a response as a UI message stream (version 1 of the protocol).
pub const HEADER: (&str, &str) = ("x-vercel-ai-ui-message-stream", "v1");

/// The SSE line that ends the stream.
pub const DONE: &str = "data: [DONE]\n\n";

/// `chunk` as one SSE event: `data: <json>` and a blank line.
///
/// ```
/// use golem_ui::ai_sdk::{sse, UiChunk};
///
/// assert_eq!(sse(&UiChunk::StartStep), "data: {\"type\":\"start-step\"}\n\n");
/// ```
pub fn sse(chunk: &UiChunk) -> String {
    crate::sse_line(chunk)
}
