//! AG-UI 1.0: the protocol of `@ag-ui/client`'s `HttpAgent`, CopilotKit and Mastra.
//!
//! A response is a `text/event-stream` with one [`AgUiEvent`] per SSE `data:` line
//! ([`sse`]). [`Encoder`] makes the events from a run's events; [`RunAgentInput`] reads what
//! the client posts.

mod encoder;
mod event;
mod request;

pub use encoder::Encoder;
pub use event::{AgUiEvent, Attributed, Interrupt, Outcome, Role};
pub use request::{AgUiMessage, ResumeEntry, RunAgentInput};

/// `event` as one SSE event: `data: <json>` and a blank line.
///
/// ```
/// use golem_ui::ag_ui::{sse, AgUiEvent};
///
/// let event = AgUiEvent::RunError { message: "boom".into() };
/// assert_eq!(sse(&event), "data: {\"type\":\"RUN_ERROR\",\"message\":\"boom\"}\n\n");
/// ```
pub fn sse(event: &AgUiEvent) -> String {
    crate::sse_line(event)
}
