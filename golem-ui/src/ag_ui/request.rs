//! [`RunAgentInput`]: the body an AG-UI client posts, read as a [`Turn`].

use serde::Deserialize;
use serde_json::Value;

use crate::turn::{DEFAULT_DENIAL, Decision, Turn};

/// The body an AG-UI client posts (`RunAgentInput`): the thread, the run, the messages as the
/// client has them, and the answers to the interrupts of the last run.
///
/// Only two things are read from it ([`turn`](Self::turn)): the text of the last message
/// when it is a user message (the new prompt), and the `resume` entries, each answering
/// the interrupt of one call: `status: "resolved"` with `payload: {"approved": true}`
/// approves it, with `{"approved": false, "reason": ..}` denies it, and
/// `status: "cancelled"` denies it. The client's system and developer messages, tool
/// messages, assistant messages, `state`, `tools` and `context` are not read: the server
/// goes on from the thread it stored.
///
/// ```
/// use golem_ui::ag_ui::RunAgentInput;
/// use golem_ui::{Decision, Turn};
///
/// let body = r#"{"threadId": "t1", "runId": "r2", "messages": [], "state": {},
///     "tools": [], "context": [], "forwardedProps": {},
///     "resume": [{"interruptId": "c1", "status": "resolved", "payload": {"approved": true}}]}"#;
/// let input: RunAgentInput = serde_json::from_str(body)?;
/// assert_eq!(input.thread_id, "t1");
/// assert_eq!(
///     input.turn().decisions,
///     [Decision::Approve { tool_call_id: "c1".into() }]
/// );
/// # Ok::<_, serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RunAgentInput {
    /// The thread: golem's thread id.
    pub thread_id: String,
    /// The run the client asks for.
    pub run_id: String,
    /// The messages as the client has them.
    #[serde(default)]
    pub messages: Vec<AgUiMessage>,
    /// Answers to the interrupts of the thread's last run.
    #[serde(default)]
    pub resume: Vec<ResumeEntry>,
}

/// A message as an AG-UI client sends it: its role and content, read loosely.
#[derive(Debug, Clone, Deserialize)]
#[non_exhaustive]
pub struct AgUiMessage {
    /// `user`, `assistant`, `system`, `developer`, `tool`, ...
    pub role: String,
    /// A string, or a list of content parts.
    #[serde(default)]
    pub content: Value,
}

/// The answer to one interrupt.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResumeEntry {
    /// The interrupt (golem's: the call's id).
    pub interrupt_id: String,
    /// `resolved` or `cancelled`.
    pub status: String,
    /// `{"approved": bool, "reason": ..}` for a resolved approval.
    #[serde(default)]
    pub payload: Value,
}

impl RunAgentInput {
    /// What the request asks of the thread: see [`RunAgentInput`].
    pub fn turn(&self) -> Turn {
        let prompt = self
            .messages
            .last()
            .filter(|message| message.role == "user")
            .map(|message| match &message.content {
                Value::String(text) => text.clone(),
                Value::Array(parts) => parts
                    .iter()
                    .filter(|part| part["type"] == "text")
                    .filter_map(|part| part["text"].as_str())
                    .collect(),
                _ => String::new(),
            })
            // A message without text (images alone, which are not read) brings no prompt.
            .filter(|text| !text.trim().is_empty());
        Turn {
            prompt,
            decisions: self.resume.iter().map(decision).collect(),
        }
    }
}

fn decision(entry: &ResumeEntry) -> Decision {
    let tool_call_id = entry.interrupt_id.clone();
    let reason = entry.payload["reason"].as_str().unwrap_or(DEFAULT_DENIAL);
    match (entry.status.as_str(), entry.payload["approved"].as_bool()) {
        ("resolved", Some(true)) => Decision::Approve { tool_call_id },
        _ => Decision::Deny {
            tool_call_id,
            reason: reason.to_owned(),
        },
    }
}
