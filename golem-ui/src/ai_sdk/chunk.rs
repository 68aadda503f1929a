//! [`UiChunk`]: one chunk of the AI SDK's UI message stream.

use serde::Serialize;
use serde_json::Value;

/// One chunk of the AI SDK UI message stream (the `ai` package's `UIMessageChunk`), as the
/// JSON its reader (`readUIMessageStream`, `useChat`) expects in each SSE `data:` line.
///
/// ```
/// use golem_ui::ai_sdk::UiChunk;
///
/// let chunk = UiChunk::TextDelta { id: "1-0".into(), delta: "Hel".into() };
/// assert_eq!(
///     serde_json::to_string(&chunk)?,
///     r#"{"type":"text-delta","id":"1-0","delta":"Hel"}"#
/// );
/// # Ok::<_, serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum UiChunk {
    /// The assistant message starts.
    Start {
        /// The message's id.
        message_id: String,
    },
    /// A step (one model request and the handling of its response) starts.
    StartStep,
    /// The step ends.
    FinishStep,
    /// A text part opens.
    TextStart {
        /// The part's id within the message.
        id: String,
    },
    /// More text of an open part.
    TextDelta {
        /// The part's id.
        id: String,
        /// The text that arrived.
        delta: String,
    },
    /// The text part is complete.
    TextEnd {
        /// The part's id.
        id: String,
    },
    /// A reasoning part opens.
    ReasoningStart {
        /// The part's id within the message.
        id: String,
    },
    /// More of the model's reasoning.
    ReasoningDelta {
        /// The part's id.
        id: String,
        /// The reasoning text that arrived.
        delta: String,
    },
    /// The reasoning part is complete.
    ReasoningEnd {
        /// The part's id.
        id: String,
    },
    /// A tool call appears; its input streams next.
    ToolInputStart {
        /// The call's id.
        tool_call_id: String,
        /// The tool.
        tool_name: String,
    },
    /// More of the call's input, as JSON text.
    ToolInputDelta {
        /// The call's id.
        tool_call_id: String,
        /// The fragment that arrived.
        input_text_delta: String,
    },
    /// The call's input is complete.
    ToolInputAvailable {
        /// The call's id.
        tool_call_id: String,
        /// The tool.
        tool_name: String,
        /// The arguments: parsed JSON, or the text the model wrote when it is not JSON.
        input: Value,
    },
    /// The call waits for the user's approval; the answer names `approval_id`.
    ToolApprovalRequest {
        /// The approval's id (golem uses the call's id).
        approval_id: String,
        /// The call's id.
        tool_call_id: String,
    },
    /// The call returned; or, `preliminary`, what it shows while it runs (for an agent
    /// called as a tool: its UI message so far), replaced by later outputs of the call.
    ToolOutputAvailable {
        /// The call's id.
        tool_call_id: String,
        /// What it returned, or shows so far.
        output: Value,
        /// Whether a later output replaces this one.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        preliminary: bool,
    },
    /// The call was rejected (the feedback the model got) or failed.
    ToolOutputError {
        /// The call's id.
        tool_call_id: String,
        /// What the UI shows.
        error_text: String,
    },
    /// The user denied the call; it did not run.
    ToolOutputDenied {
        /// The call's id.
        tool_call_id: String,
    },
    /// The run failed.
    Error {
        /// What the UI shows.
        error_text: String,
    },
    /// The message is complete.
    Finish,
    /// A custom part, sent as `"type": "data-<name>"`: golem's `data-rejection`,
    /// `data-partial-output` and `data-output`. A part with an id replaces the earlier part
    /// of the same name and id in the UI message.
    #[serde(untagged)]
    Data(DataChunk),
}

/// A `data-*` part of the AI SDK UI message stream; see [`UiChunk::Data`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DataChunk {
    /// The part's name: the chunk's type is `data-<name>`.
    pub name: String,
    /// The part's id, when later parts replace it.
    pub id: Option<String>,
    /// The part's data.
    pub data: Value,
}

impl DataChunk {
    /// A part `data-<name>` with `data`, and an id when later parts of the same id replace it.
    pub fn new(name: impl Into<String>, id: Option<String>, data: Value) -> Self {
        DataChunk {
            name: name.into(),
            id,
            data,
        }
    }
}

impl Serialize for DataChunk {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("type", &format_args!("data-{}", self.name))?;
        if let Some(id) = &self.id {
            map.serialize_entry("id", id)?;
        }
        map.serialize_entry("data", &self.data)?;
        map.end()
    }
}
