//! [`AgUiEvent`]: one AG-UI event.

use serde::Serialize;
use serde_json::Value;

/// One AG-UI 1.0 event, as the JSON an AG-UI client (`@ag-ui/client`'s `HttpAgent`) reads
/// from each SSE `data:` line.
///
/// ```
/// use golem_ui::ag_ui::AgUiEvent;
///
/// let event = AgUiEvent::TextMessageContent { message_id: "r1-1-0".into(), delta: "Hel".into() };
/// assert_eq!(
///     serde_json::to_string(&event)?,
///     r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"r1-1-0","delta":"Hel"}"#
/// );
/// # Ok::<_, serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "SCREAMING_SNAKE_CASE",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum AgUiEvent {
    /// The run starts.
    RunStarted {
        /// The thread.
        thread_id: String,
        /// The run.
        run_id: String,
    },
    /// The run ended: finished, or paused on calls that wait for approval.
    RunFinished {
        /// The thread.
        thread_id: String,
        /// The run.
        run_id: String,
        /// Why it ended: `{"type": "success"}`, or `{"type": "interrupt", "interrupts": [..]}`
        /// when calls wait for approval.
        outcome: Outcome,
        /// The run's output, when the encoder reports it.
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
    },
    /// The run failed.
    RunError {
        /// What the UI shows.
        message: String,
    },
    /// A step (a model request and the handling of its response) starts.
    StepStarted {
        /// `turn-<n>`.
        step_name: String,
    },
    /// The step ends.
    StepFinished {
        /// `turn-<n>`.
        step_name: String,
    },
    /// An assistant text message starts.
    TextMessageStart {
        /// The message.
        message_id: String,
        /// Always `assistant`.
        role: Role,
    },
    /// More text (never empty).
    TextMessageContent {
        /// The message.
        message_id: String,
        /// The text that arrived.
        delta: String,
    },
    /// The text message is complete.
    TextMessageEnd {
        /// The message.
        message_id: String,
    },
    /// A span of the model's reasoning opens (one per reasoning part).
    ReasoningStart {
        /// The span: the id of the reasoning message it holds.
        message_id: String,
    },
    /// A reasoning message starts.
    ReasoningMessageStart {
        /// The message.
        message_id: String,
        /// Always `reasoning`.
        role: Role,
    },
    /// More reasoning (never empty).
    ReasoningMessageContent {
        /// The message.
        message_id: String,
        /// The reasoning text that arrived.
        delta: String,
    },
    /// The reasoning message is complete.
    ReasoningMessageEnd {
        /// The message.
        message_id: String,
    },
    /// The span of reasoning closes.
    ReasoningEnd {
        /// The span.
        message_id: String,
    },
    /// A tool call starts.
    ToolCallStart {
        /// The call.
        tool_call_id: String,
        /// The tool.
        tool_call_name: String,
        /// The assistant message the call belongs to.
        parent_message_id: String,
    },
    /// More of the call's arguments, as JSON text.
    ToolCallArgs {
        /// The call.
        tool_call_id: String,
        /// The fragment.
        delta: String,
    },
    /// The call's arguments are complete.
    ToolCallEnd {
        /// The call.
        tool_call_id: String,
    },
    /// The call's result: what it returned, the feedback of its rejection, or the reason
    /// it was denied.
    ToolCallResult {
        /// The tool message that carries the result.
        message_id: String,
        /// The call.
        tool_call_id: String,
        /// The result as text (JSON for values that are not strings).
        content: String,
    },
    /// The whole shared state: `{"output": <the structured answer so far>}`.
    StateSnapshot {
        /// The state.
        snapshot: Value,
    },
    /// A change to the shared state, as an RFC 6902 JSON Patch.
    StateDelta {
        /// The patch operations.
        delta: Value,
    },
    /// An event of golem's own: `golem.rejection`.
    Custom {
        /// The event's name.
        name: String,
        /// Its value.
        value: Value,
    },
    /// An agent the run delegated to (an agent called as a tool) starts; its events
    /// follow as [`Subagent`](Self::Subagent) events.
    SubagentStarted {
        /// The delegated run: `<run>-agent-<call>`, with one `-<call>` per level down.
        subagent_run_id: String,
        /// The name the agent was called under (the tool's name).
        name: String,
        /// The call that runs it.
        parent_tool_call_id: String,
        /// The delegated run that called it, when it is an agent's agent.
        #[serde(skip_serializing_if = "Option::is_none")]
        parent_subagent_run_id: Option<String>,
    },
    /// The delegated agent finished; its call's result follows.
    SubagentFinished {
        /// The delegated run.
        subagent_run_id: String,
        /// Its output, as the call returns it.
        result: Value,
    },
    /// The delegated agent did not finish: its call failed, was rejected or denied, or the
    /// run ended while it ran.
    SubagentError {
        /// The delegated run.
        subagent_run_id: String,
        /// What its call's result shows.
        message: String,
    },
    /// One event of a delegated agent, attributed to its run: the event's JSON with
    /// `subagentRunId` added.
    #[serde(untagged)]
    Subagent(Attributed),
}

/// An event of a delegated agent, in [`AgUiEvent::Subagent`].
///
/// ```
/// use golem_ui::ag_ui::{AgUiEvent, Attributed};
///
/// let event = AgUiEvent::Subagent(Attributed::new(
///     "r1-agent-c1",
///     AgUiEvent::TextMessageContent { message_id: "r1-agent-c1-1-0".into(), delta: "Hel".into() },
/// ));
/// assert_eq!(
///     serde_json::to_string(&event)?,
///     r#"{"type":"TEXT_MESSAGE_CONTENT","messageId":"r1-agent-c1-1-0","delta":"Hel","subagentRunId":"r1-agent-c1"}"#
/// );
/// # Ok::<_, serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Attributed {
    /// The event.
    pub event: Box<AgUiEvent>,
    /// The delegated run it belongs to.
    pub subagent_run_id: String,
}

impl Serialize for Attributed {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        // Through a `Value`: `#[serde(flatten)]` of the enum that holds this type does not
        // compile (its serializer type recurses without end).
        let mut value = serde_json::to_value(&self.event).map_err(serde::ser::Error::custom)?;
        if let Value::Object(map) = &mut value {
            map.insert(
                "subagentRunId".into(),
                Value::String(self.subagent_run_id.clone()),
            );
        }
        value.serialize(serializer)
    }
}

impl Attributed {
    /// `event`, attributed to the delegated run `subagent_run_id`.
    pub fn new(subagent_run_id: impl Into<String>, event: AgUiEvent) -> Self {
        Attributed {
            event: Box::new(event),
            subagent_run_id: subagent_run_id.into(),
        }
    }
}

/// Why a run ended, in [`AgUiEvent::RunFinished`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Outcome {
    /// It finished.
    Success,
    /// It paused on calls that wait for approval, one interrupt each.
    Interrupt {
        /// The calls that wait.
        interrupts: Vec<Interrupt>,
    },
}

/// The role of a streamed message: golem streams assistant messages, and reasoning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Role {
    /// The assistant.
    Assistant,
    /// The model's reasoning.
    Reasoning,
}

/// A call that waits for the user's approval, as an AG-UI interrupt. The answer comes back
/// in the next request's `resume` entry for `id` (see
/// [`RunAgentInput`](super::RunAgentInput)).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Interrupt {
    /// The interrupt: golem uses the call's id.
    pub id: String,
    /// Always `tool_call`.
    pub reason: String,
    /// The call.
    pub tool_call_id: String,
    /// The tool and its arguments: `{"toolName": .., "input": ..}`.
    pub metadata: Value,
}
