//! [`Encoder`]: a run's events as AI SDK UI message stream chunks.

use golem::RunEvent;
use golem::output::Output;
use serde::Serialize;

use super::chunk::{DataChunk, UiChunk};
use super::trace::Traces;
use crate::view::{RunView, Show, TOOL_UNFINISHED, TextKind, call_input};
use crate::{Rejections, rejection_json};

/// Turns one stream of a run's [`RunEvent`]s into the chunks of one assistant message of the
/// AI SDK UI message stream.
///
/// Call [`start`](Self::start) first, then [`event`](Self::event) for each event, then
/// [`finish`](Self::finish) when the stream ends (also after a pause for approval) or
/// [`error`](Self::error) when it ends in a `RunError`. Each model request is a step
/// (`start-step` … `finish-step`); text and reasoning stream as parts with ids
/// `"<turn>-<part>"`; tool calls as `tool-input-*` and `tool-output-*` chunks; a call waiting
/// for approval as `tool-approval-request` (its approval id is the call's id); a rejection
/// as a `data-rejection` part, besides the rejected call's `tool-output-error` with the
/// feedback (see [`Rejections`]). With [`with_partial_output`](Self::with_partial_output), a
/// structured answer fills in as a `data-partial-output` part (one per turn, replaced as it
/// grows); with [`with_output`](Self::with_output), the output ends the message as a
/// `data-output` part. An agent the run delegates to (an agent called as a tool) is shown
/// while its call runs as preliminary outputs of the call, each the agent's UI message so
/// far (see [`without_nested_agents`](Self::without_nested_agents)).
///
/// ```
/// use golem::model::ModelResponse;
/// use golem::RunEvent;
/// use golem_ui::ai_sdk::{Encoder, UiChunk};
///
/// let mut encoder = Encoder::<String>::new("msg-1");
/// let mut chunks = Vec::new();
/// encoder.start(&mut chunks);
/// encoder.event(&RunEvent::RequestSent { turn: 1 }, &mut chunks);
/// let response = ModelResponse::text("Hi!");
/// encoder.event(&RunEvent::ResponseReceived { turn: 1, response: response.into() }, &mut chunks);
/// encoder.finish(&mut chunks);
/// assert_eq!(chunks[0], UiChunk::Start { message_id: "msg-1".into() });
/// assert_eq!(chunks[3], UiChunk::TextDelta { id: "1-0".into(), delta: "Hi!".into() });
/// assert_eq!(chunks.last(), Some(&UiChunk::Finish));
/// ```
#[derive(Debug)]
pub struct Encoder<O: Output> {
    message_id: String,
    view: RunView<O>,
    traces: Traces,
}

impl<O: Output> Encoder<O> {
    /// An encoder for the assistant message `message_id`.
    pub fn new(message_id: impl Into<String>) -> Self {
        Encoder {
            message_id: message_id.into(),
            view: RunView::new(),
            traces: Traces::default(),
        }
    }

    /// Shows or hides rejected rounds; shown by default.
    #[must_use]
    pub fn rejections(mut self, rejections: Rejections) -> Self {
        self.view.set_rejections(rejections);
        self
    }

    /// The name of the agent's output tool, whose calls are the answer rather than tool
    /// calls to show; `golem::DEFAULT_OUTPUT_TOOL_NAME` unless the agent set another.
    #[must_use]
    pub fn output_tool_name(mut self, name: impl Into<String>) -> Self {
        self.view.set_output_tool(name.into());
        self
    }

    /// Leaves out what the agents this run delegates to (agents called as tools) do while
    /// their calls run; it is shown by default, as preliminary outputs of its call
    /// (`tool-output-available` with `preliminary: true`), each the agent's UI message so
    /// far. Their calls and results are shown either way.
    ///
    /// ```
    /// use golem_ui::ai_sdk::Encoder;
    ///
    /// // A server whose research agents write long reports shows the calls, not the reports.
    /// let encoder = Encoder::<String>::new("msg-1").without_nested_agents();
    /// # drop(encoder);
    /// ```
    #[must_use]
    pub fn without_nested_agents(mut self) -> Self {
        self.view.hide_nested();
        self
    }

    /// Leaves the model's reasoning out; it is sent by default, as `reasoning-*` chunks.
    ///
    /// ```
    /// use golem::model::{ModelResponse, ResponsePart, ThinkingPart};
    /// use golem::RunEvent;
    /// use golem_ui::ai_sdk::Encoder;
    ///
    /// let response = ModelResponse::new(vec![
    ///     ResponsePart::Thinking(ThinkingPart::new("Easy.")),
    ///     ResponsePart::text("Hi!"),
    /// ]);
    /// let mut encoder = Encoder::<String>::new("msg-1").without_reasoning();
    /// let mut out = Vec::new();
    /// encoder.event(&RunEvent::RequestSent { turn: 1 }, &mut out);
    /// encoder.event(&RunEvent::ResponseReceived { turn: 1, response: response.into() }, &mut out);
    /// let json = serde_json::to_string(&out)?;
    /// assert!(json.contains("Hi!") && !json.contains("Easy."));
    /// # Ok::<_, serde_json::Error>(())
    /// ```
    #[must_use]
    pub fn without_reasoning(mut self) -> Self {
        self.view.hide_reasoning();
        self
    }

    /// Reports the structured answer as it fills in, as `data-partial-output` parts.
    #[must_use]
    pub fn with_partial_output(mut self) -> Self
    where
        O::Partial: Serialize,
    {
        self.view
            .set_partial(|partial| serde_json::to_value(partial).ok());
        self
    }

    /// Ends the message with the run's output, as a `data-output` part.
    #[must_use]
    pub fn with_output(mut self) -> Self
    where
        O: Serialize,
    {
        self.view
            .set_output(|output| serde_json::to_value(output).ok());
        self
    }

    /// The view, for the server to configure.
    #[cfg(feature = "server")]
    pub(crate) fn view_mut(&mut self) -> &mut RunView<O> {
        &mut self.view
    }

    /// The message starts.
    pub fn start(&mut self, out: &mut Vec<UiChunk>) {
        out.push(UiChunk::Start {
            message_id: self.message_id.clone(),
        });
    }

    /// The chunks `event` adds to the message.
    pub fn event(&mut self, event: &RunEvent<O>, out: &mut Vec<UiChunk>) {
        let traces = &mut self.traces;
        self.view
            .event(event, &mut |show| out.push_show(traces, show));
    }

    /// The stream ended in a failure: the open step closes and the UI shows `error_text`.
    pub fn error(&mut self, error_text: impl Into<String>, out: &mut Vec<UiChunk>) {
        let traces = &mut self.traces;
        self.view.fail(&mut |show| out.push_show(traces, show));
        out.push(UiChunk::Error {
            error_text: error_text.into(),
        });
    }

    /// The message is complete: the run finished, paused for approval or failed.
    pub fn finish(&mut self, out: &mut Vec<UiChunk>) {
        let traces = &mut self.traces;
        self.view.end_step(&mut |show| out.push_show(traces, show));
        out.push(UiChunk::Finish);
    }
}

trait PushShow {
    fn push_show(&mut self, traces: &mut Traces, show: Show<'_>);
}

impl PushShow for Vec<UiChunk> {
    fn push_show(&mut self, traces: &mut Traces, show: Show<'_>) {
        if let Show::AgentStart { .. }
        | Show::Nested { .. }
        | Show::AgentEnd { .. }
        | Show::AgentFailed { .. } = show
        {
            if let Some((tool_call_id, output)) = traces.show(&show) {
                self.push(UiChunk::ToolOutputAvailable {
                    tool_call_id,
                    output,
                    preliminary: true,
                });
            }
            return;
        }
        let part_id = |turn: u32, part: usize| format!("{turn}-{part}");
        self.push(match show {
            Show::StepStart { .. } => UiChunk::StartStep,
            Show::StepEnd { .. } => UiChunk::FinishStep,
            Show::TextStart { kind, turn, part } => match kind {
                TextKind::Text => UiChunk::TextStart {
                    id: part_id(turn, part),
                },
                TextKind::Reasoning => UiChunk::ReasoningStart {
                    id: part_id(turn, part),
                },
            },
            Show::TextDelta {
                kind,
                turn,
                part,
                delta,
            } => match kind {
                TextKind::Text => UiChunk::TextDelta {
                    id: part_id(turn, part),
                    delta: delta.to_owned(),
                },
                TextKind::Reasoning => UiChunk::ReasoningDelta {
                    id: part_id(turn, part),
                    delta: delta.to_owned(),
                },
            },
            Show::TextEnd { kind, turn, part } => match kind {
                TextKind::Text => UiChunk::TextEnd {
                    id: part_id(turn, part),
                },
                TextKind::Reasoning => UiChunk::ReasoningEnd {
                    id: part_id(turn, part),
                },
            },
            Show::ToolStart {
                call_id, tool_name, ..
            } => UiChunk::ToolInputStart {
                tool_call_id: call_id.to_owned(),
                tool_name: tool_name.to_owned(),
            },
            Show::ToolArgs { call_id, delta } => UiChunk::ToolInputDelta {
                tool_call_id: call_id.to_owned(),
                input_text_delta: delta.to_owned(),
            },
            Show::ToolInput { call, .. } => UiChunk::ToolInputAvailable {
                tool_call_id: call.tool_call_id.clone(),
                tool_name: call.tool_name.clone(),
                input: call_input(call),
            },
            Show::ToolOutput { call_id, output } => UiChunk::ToolOutputAvailable {
                tool_call_id: call_id.to_owned(),
                output: output.clone(),
                preliminary: false,
            },
            Show::ToolError { call_id, error } => UiChunk::ToolOutputError {
                tool_call_id: call_id.to_owned(),
                error_text: error.to_owned(),
            },
            Show::ToolUnfinished { call_id } => UiChunk::ToolOutputError {
                tool_call_id: call_id.to_owned(),
                error_text: TOOL_UNFINISHED.to_owned(),
            },
            Show::ToolDenied { call_id, .. } => UiChunk::ToolOutputDenied {
                tool_call_id: call_id.to_owned(),
            },
            Show::ApprovalRequest { call } => UiChunk::ToolApprovalRequest {
                approval_id: call.tool_call_id.clone(),
                tool_call_id: call.tool_call_id.clone(),
            },
            Show::Rejected(rejection) => {
                UiChunk::Data(DataChunk::new("rejection", None, rejection_json(rejection)))
            }
            Show::Partial { turn, value } => UiChunk::Data(DataChunk::new(
                "partial-output",
                Some(format!("output-{turn}")),
                value,
            )),
            Show::Output(value) => {
                UiChunk::Data(DataChunk::new("output", Some("output".into()), value))
            }
            Show::AgentStart { .. }
            | Show::Nested { .. }
            | Show::AgentEnd { .. }
            | Show::AgentFailed { .. } => return,
        });
    }
}
