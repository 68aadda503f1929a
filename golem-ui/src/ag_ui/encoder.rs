//! [`Encoder`]: a run's events as AG-UI events.

use golem::RunEvent;
use golem::output::Output;
use serde::Serialize;
use serde_json::{Value, json};

use super::event::{AgUiEvent, Attributed, Interrupt, Outcome, Role};
use crate::view::{RunView, Show, TextKind, call_input};
use crate::{Rejections, rejection_json};

/// Turns one stream of a run's [`RunEvent`]s into one AG-UI run: `RUN_STARTED`, the run's
/// events, and `RUN_FINISHED` (or `RUN_ERROR`).
///
/// Call [`start`](Self::start) first, then [`event`](Self::event) for each event, then
/// [`finish`](Self::finish) when the stream ends or [`error`](Self::error) when it ends in a
/// `RunError`. Each model request is a step (`STEP_STARTED` / `STEP_FINISHED`, named
/// `turn-<n>`); its text parts are assistant messages (ids `"<run>-<turn>-<part>"`), its
/// tool calls `TOOL_CALL_START` / `_ARGS` / `_END` under the turn's message and
/// `TOOL_CALL_RESULT` once they ran. Calls that wait for approval end the run with
/// `RUN_FINISHED` with an interrupt outcome, one interrupt per call (id: the call's id). A
/// rejection is a `CUSTOM` event `golem.rejection`, besides the rejected call's result (its
/// feedback); see [`Rejections`]. With [`with_partial_output`](Self::with_partial_output),
/// a structured answer fills in the shared state under `output`: a `STATE_SNAPSHOT`, then
/// `STATE_DELTA` patches. With [`with_output`](Self::with_output), the output is the
/// `result` of `RUN_FINISHED`. The model's reasoning is sent as reasoning messages, one
/// span each (`REASONING_START`, `REASONING_MESSAGE_START` / `_CONTENT` / `_END`,
/// `REASONING_END`, ids `"<run>-<turn>-<part>"`), unless
/// [`without_reasoning`](Self::without_reasoning). An agent the run delegates to (an agent
/// called as a tool) is shown while its call runs as AG-UI's subagent: `SUBAGENT_STARTED`,
/// its events with `subagentRunId`, then `SUBAGENT_FINISHED` or `SUBAGENT_ERROR` (see
/// [`without_nested_agents`](Self::without_nested_agents)).
///
/// ```
/// use golem::model::ModelResponse;
/// use golem::RunEvent;
/// use golem_ui::ag_ui::{AgUiEvent, Encoder};
///
/// let mut encoder = Encoder::<String>::new("thread-1", "run-1");
/// let mut events = Vec::new();
/// encoder.start(&mut events);
/// encoder.event(&RunEvent::RequestSent { turn: 1 }, &mut events);
/// let response = ModelResponse::text("Hi!");
/// encoder.event(&RunEvent::ResponseReceived { turn: 1, response: response.into() }, &mut events);
/// encoder.finish(&mut events);
/// assert_eq!(
///     events[3],
///     AgUiEvent::TextMessageContent { message_id: "run-1-1-0".into(), delta: "Hi!".into() }
/// );
/// assert_eq!(serde_json::to_value(&events[6])?["outcome"]["type"], "success");
/// # Ok::<_, serde_json::Error>(())
/// ```
#[derive(Debug)]
pub struct Encoder<O: Output> {
    thread_id: String,
    run_id: String,
    view: RunView<O>,
    state: Ids,
}

/// What the encoder remembers besides the view: the turn's message, the shared state, the
/// interrupts and the output.
#[derive(Debug, Default)]
struct Ids {
    /// The turn whose message id is `message`.
    turn: u32,
    /// The id of the assistant message of `turn` (its first text part's), if one started.
    message: Option<String>,
    /// The shared state last sent, if any.
    shared: Option<Value>,
    interrupts: Vec<Interrupt>,
    output: Option<Value>,
    /// The delegated agents' runs: their ids and what each remembers.
    agents: Vec<(String, Ids)>,
}

impl<O: Output> Encoder<O> {
    /// An encoder for the run `run_id` of the thread `thread_id`.
    pub fn new(thread_id: impl Into<String>, run_id: impl Into<String>) -> Self {
        Encoder {
            thread_id: thread_id.into(),
            run_id: run_id.into(),
            view: RunView::new(),
            state: Ids::default(),
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
    /// their calls run; it is shown by default, as `SUBAGENT_STARTED`, its events
    /// attributed to it (`subagentRunId`), and `SUBAGENT_FINISHED` or `SUBAGENT_ERROR`.
    /// Their calls and results are shown either way.
    ///
    /// ```
    /// use golem_ui::ag_ui::Encoder;
    ///
    /// // A server whose research agents write long reports shows the calls, not the reports.
    /// let encoder = Encoder::<String>::new("thread-1", "run-1").without_nested_agents();
    /// # drop(encoder);
    /// ```
    #[must_use]
    pub fn without_nested_agents(mut self) -> Self {
        self.view.hide_nested();
        self
    }

    /// Leaves the model's reasoning out; it is sent by default.
    ///
    /// ```
    /// use golem::model::{ModelResponse, ResponsePart, ThinkingPart};
    /// use golem::RunEvent;
    /// use golem_ui::ag_ui::Encoder;
    ///
    /// let response = ModelResponse::new(vec![
    ///     ResponsePart::Thinking(ThinkingPart::new("Easy.")),
    ///     ResponsePart::text("Hi!"),
    /// ]);
    /// let mut encoder = Encoder::<String>::new("thread-1", "run-1").without_reasoning();
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

    /// Reports the structured answer as it fills in, in the shared state under `output`.
    #[must_use]
    pub fn with_partial_output(mut self) -> Self
    where
        O::Partial: Serialize,
    {
        self.view
            .set_partial(|partial| serde_json::to_value(partial).ok());
        self
    }

    /// Reports the run's output as the `result` of `RUN_FINISHED`.
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

    /// The run starts.
    pub fn start(&mut self, out: &mut Vec<AgUiEvent>) {
        out.push(AgUiEvent::RunStarted {
            thread_id: self.thread_id.clone(),
            run_id: self.run_id.clone(),
        });
    }

    /// The events `event` adds to the run.
    pub fn event(&mut self, event: &RunEvent<O>, out: &mut Vec<AgUiEvent>) {
        let (run_id, state) = (&self.run_id, &mut self.state);
        self.view
            .event(event, &mut |show| push(run_id, state, show, out));
    }

    /// The stream ended in a failure: the open step closes, and `RUN_ERROR` ends the run.
    pub fn error(&mut self, message: impl Into<String>, out: &mut Vec<AgUiEvent>) {
        let (run_id, state) = (&self.run_id, &mut self.state);
        self.view.fail(&mut |show| push(run_id, state, show, out));
        out.push(AgUiEvent::RunError {
            message: message.into(),
        });
    }

    /// The run ended: `RUN_FINISHED`, with the interrupts of the calls that wait.
    pub fn finish(&mut self, out: &mut Vec<AgUiEvent>) {
        let (run_id, state) = (&self.run_id, &mut self.state);
        self.view
            .end_step(&mut |show| push(run_id, state, show, out));
        let interrupts = std::mem::take(&mut self.state.interrupts);
        out.push(AgUiEvent::RunFinished {
            thread_id: self.thread_id.clone(),
            run_id: self.run_id.clone(),
            outcome: match interrupts.is_empty() {
                true => Outcome::Success,
                false => Outcome::Interrupt { interrupts },
            },
            result: self.state.output.take(),
        });
    }
}

fn push(run_id: &str, state: &mut Ids, show: Show<'_>, out: &mut Vec<AgUiEvent>) {
    match show {
        Show::StepStart { turn } => out.push(AgUiEvent::StepStarted {
            step_name: format!("turn-{turn}"),
        }),
        Show::StepEnd { turn } => out.push(AgUiEvent::StepFinished {
            step_name: format!("turn-{turn}"),
        }),
        Show::TextStart {
            kind: TextKind::Text,
            turn,
            part,
        } => {
            let message_id = part_id(run_id, turn, part);
            if state.turn != turn || state.message.is_none() {
                state.turn = turn;
                state.message = Some(message_id.clone());
            }
            out.push(AgUiEvent::TextMessageStart {
                message_id,
                role: Role::Assistant,
            });
        }
        Show::TextDelta {
            kind: TextKind::Text,
            turn,
            part,
            delta,
        } => out.push(AgUiEvent::TextMessageContent {
            message_id: part_id(run_id, turn, part),
            delta: delta.to_owned(),
        }),
        Show::TextEnd {
            kind: TextKind::Text,
            turn,
            part,
        } => out.push(AgUiEvent::TextMessageEnd {
            message_id: part_id(run_id, turn, part),
        }),
        Show::TextStart {
            kind: TextKind::Reasoning,
            turn,
            part,
        } => {
            let message_id = part_id(run_id, turn, part);
            out.push(AgUiEvent::ReasoningStart {
                message_id: message_id.clone(),
            });
            out.push(AgUiEvent::ReasoningMessageStart {
                message_id,
                role: Role::Reasoning,
            });
        }
        Show::TextDelta {
            kind: TextKind::Reasoning,
            turn,
            part,
            delta,
        } => out.push(AgUiEvent::ReasoningMessageContent {
            message_id: part_id(run_id, turn, part),
            delta: delta.to_owned(),
        }),
        Show::TextEnd {
            kind: TextKind::Reasoning,
            turn,
            part,
        } => {
            let message_id = part_id(run_id, turn, part);
            out.push(AgUiEvent::ReasoningMessageEnd {
                message_id: message_id.clone(),
            });
            out.push(AgUiEvent::ReasoningEnd { message_id });
        }
        Show::ToolStart {
            turn,
            call_id,
            tool_name,
        } => out.push(AgUiEvent::ToolCallStart {
            tool_call_id: call_id.to_owned(),
            tool_call_name: tool_name.to_owned(),
            parent_message_id: parent(run_id, state, turn),
        }),
        Show::ToolArgs { call_id, delta } => out.push(AgUiEvent::ToolCallArgs {
            tool_call_id: call_id.to_owned(),
            delta: delta.to_owned(),
        }),
        Show::ToolInput {
            turn,
            call,
            streamed,
        } => {
            if !streamed {
                out.push(AgUiEvent::ToolCallStart {
                    tool_call_id: call.tool_call_id.clone(),
                    tool_call_name: call.tool_name.clone(),
                    parent_message_id: parent(run_id, state, turn),
                });
                if !call.args.is_empty() {
                    out.push(AgUiEvent::ToolCallArgs {
                        tool_call_id: call.tool_call_id.clone(),
                        delta: call.args.clone(),
                    });
                }
            }
            out.push(AgUiEvent::ToolCallEnd {
                tool_call_id: call.tool_call_id.clone(),
            });
        }
        Show::ToolOutput { call_id, output } => {
            let content = match output {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            out.push(result(run_id, call_id, content));
        }
        Show::ToolUnfinished { call_id } => out.push(AgUiEvent::ToolCallEnd {
            tool_call_id: call_id.to_owned(),
        }),
        Show::ToolError {
            call_id,
            error: text,
        }
        | Show::ToolDenied {
            call_id,
            reason: text,
        } => out.push(result(run_id, call_id, text.to_owned())),
        Show::ApprovalRequest { call } => state.interrupts.push(Interrupt {
            id: call.tool_call_id.clone(),
            reason: "tool_call".into(),
            tool_call_id: call.tool_call_id.clone(),
            metadata: json!({"toolName": call.tool_name, "input": call_input(call)}),
        }),
        Show::Rejected(rejection) => out.push(AgUiEvent::Custom {
            name: "golem.rejection".into(),
            value: rejection_json(rejection),
        }),
        Show::Partial { value, .. } => {
            let next = json!({ "output": value });
            out.push(match &state.shared {
                None => AgUiEvent::StateSnapshot {
                    snapshot: next.clone(),
                },
                Some(previous) => AgUiEvent::StateDelta {
                    delta: serde_json::to_value(json_patch::diff(previous, &next))
                        .unwrap_or_default(),
                },
            });
            state.shared = Some(next);
        }
        Show::Output(value) => state.output = Some(value),
        Show::AgentStart { path } => {
            let Some((last, parent)) = path.split_last() else {
                return;
            };
            let id = subagent_run_id(run_id, path);
            out.push(AgUiEvent::SubagentStarted {
                subagent_run_id: id.clone(),
                name: last.agent.clone(),
                parent_tool_call_id: last.tool_call_id.clone(),
                parent_subagent_run_id: match parent.is_empty() {
                    true => None,
                    false => Some(subagent_run_id(run_id, parent)),
                },
            });
            state.agents.push((id, Ids::default()));
        }
        Show::Nested { path, item } => {
            let id = subagent_run_id(run_id, path);
            let Some((id, lane)) = state.agents.iter_mut().find(|(lane, _)| *lane == id) else {
                return;
            };
            let mut events = Vec::new();
            push(id, lane, *item, &mut events);
            out.extend(
                events
                    .into_iter()
                    .map(|event| AgUiEvent::Subagent(Attributed::new(id.clone(), event))),
            );
        }
        Show::AgentEnd { path, output } => out.push(AgUiEvent::SubagentFinished {
            subagent_run_id: subagent_run_id(run_id, path),
            result: output.clone(),
        }),
        Show::AgentFailed { path, error } => out.push(AgUiEvent::SubagentError {
            subagent_run_id: subagent_run_id(run_id, path),
            message: error.to_owned(),
        }),
    }
}

/// The id of the message of a text or reasoning part: `<run>-<turn>-<part>`.
fn part_id(run_id: &str, turn: u32, part: usize) -> String {
    format!("{run_id}-{turn}-{part}")
}

/// The id of the delegated run at `path`: `<run>-agent-<call>[-<call>...]`.
fn subagent_run_id(run_id: &str, path: &[golem::run::AgentCall]) -> String {
    let mut id = format!("{run_id}-agent");
    for call in path {
        id.push('-');
        id.push_str(&call.tool_call_id);
    }
    id
}

/// The id of the assistant message of `turn`: its first text part's, or `<run>-<turn>`.
fn parent(run_id: &str, state: &mut Ids, turn: u32) -> String {
    if state.turn != turn {
        state.turn = turn;
        state.message = None;
    }
    state
        .message
        .get_or_insert_with(|| format!("{run_id}-{turn}"))
        .clone()
}

fn result(run_id: &str, call_id: &str, content: String) -> AgUiEvent {
    AgUiEvent::ToolCallResult {
        message_id: format!("{run_id}-result-{call_id}"),
        tool_call_id: call_id.to_owned(),
        content,
    }
}
