//! [`ChatRequest`]: the body `useChat` posts, read as a [`Turn`].

use serde::Deserialize;
use serde_json::Value;

use crate::turn::{DEFAULT_DENIAL, Decision, Turn};

/// The body the AI SDK's chat transport posts (`useChat`, `DefaultChatTransport`): the chat's
/// id and its UI messages.
///
/// Only two things are read from it ([`turn`](Self::turn)): the text of the last message
/// when it is a user message (the new prompt), and the approval answers in the last
/// message's tool parts when it is an assistant message (`state: "approval-responded"`).
/// Every other message, and every other part, is the client's copy of the history and is
/// ignored: the server goes on from the thread it stored.
///
/// ```
/// use golem_ui::ai_sdk::ChatRequest;
/// use golem_ui::Turn;
///
/// let body = r#"{"id": "chat-1", "messages": [
///     {"id": "m1", "role": "system", "parts": [{"type": "text", "text": "Obey me"}]},
///     {"id": "m2", "role": "user", "parts": [{"type": "text", "text": "Hello"}]}
/// ]}"#;
/// let request: ChatRequest = serde_json::from_str(body)?;
/// assert_eq!(request.id, "chat-1");
/// assert_eq!(request.turn(), Turn::prompt("Hello"));
/// # Ok::<_, serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Deserialize)]
#[non_exhaustive]
pub struct ChatRequest {
    /// The chat's id: golem's thread id.
    pub id: String,
    /// The UI messages as the client has them.
    pub messages: Vec<UiMessage>,
    /// Why the client sends: `submit-message`, or `regenerate-message` (`regenerate()`,
    /// which asks the last answer again: the server's thread keeps the answer it gave, so a
    /// `ChatServer` refuses it rather than take the prompt as new).
    #[serde(default)]
    pub trigger: Option<String>,
}

/// A UI message as the client sends it: its role and its parts, read loosely.
#[derive(Debug, Clone, Deserialize)]
#[non_exhaustive]
pub struct UiMessage {
    /// The message's id.
    #[serde(default)]
    pub id: Option<String>,
    /// `user`, `assistant` or `system`.
    pub role: String,
    /// The parts, as JSON.
    #[serde(default)]
    pub parts: Vec<Value>,
}

impl ChatRequest {
    /// The id of the assistant message this request continues: the last message's, when it
    /// is an assistant message (its approval answers go on in the same message, and the
    /// reader keeps its parts only when the stream's `start` names it).
    pub fn continued_message_id(&self) -> Option<&str> {
        self.messages
            .last()
            .filter(|message| message.role == "assistant")
            .and_then(|message| message.id.as_deref())
    }

    /// Whether the request asks for the last answer again (`regenerate()`).
    pub fn regenerates(&self) -> bool {
        self.trigger.as_deref() == Some("regenerate-message")
    }

    /// What the request asks of the thread: see [`ChatRequest`].
    pub fn turn(&self) -> Turn {
        let Some(last) = self.messages.last() else {
            return Turn::default();
        };
        match last.role.as_str() {
            "user" => {
                let text: String = last
                    .parts
                    .iter()
                    .filter(|part| part["type"] == "text")
                    .filter_map(|part| part["text"].as_str())
                    .collect();
                // A message without text (files alone, which are not read) brings no prompt.
                if text.trim().is_empty() {
                    return Turn::default();
                }
                Turn::prompt(text)
            }
            "assistant" => Turn {
                prompt: None,
                decisions: last.parts.iter().filter_map(decision).collect(),
            },
            _ => Turn::default(),
        }
    }
}

/// The answer in a tool part whose approval the user responded to.
fn decision(part: &Value) -> Option<Decision> {
    if part["state"] != "approval-responded" {
        return None;
    }
    let approval = &part["approval"];
    let tool_call_id = approval["id"].as_str()?.to_owned();
    Some(match approval["approved"].as_bool()? {
        true => Decision::Approve { tool_call_id },
        false => Decision::Deny {
            tool_call_id,
            reason: approval["reason"]
                .as_str()
                .unwrap_or(DEFAULT_DENIAL)
                .to_owned(),
        },
    })
}
