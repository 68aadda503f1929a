//! [`ChatRequest`]: the body `useChat` posts, read as a [`Turn`].

use serde::Deserialize;
use serde_json::Value;

use crate::rewind::{Rewind, TurnAt};
use crate::turn::{DEFAULT_DENIAL, Decision, Turn};

/// The body the AI SDK's chat transport posts (`useChat`, `DefaultChatTransport`): the chat's
/// id and its UI messages.
///
/// Only two things are read from it ([`turn`](Self::turn)): the text of the last message
/// when it is a user message (the new prompt), and the approval answers in the last
/// message's tool parts when it is an assistant message (`state: "approval-responded"`).
/// Every other message, and every other part, is the client's copy of the history and is
/// ignored: the server goes on from the thread it stored. A `regenerate()` and the edit of
/// a message (`sendMessage({ text, messageId })`) go back to an earlier turn
/// ([`rewind`](Self::rewind)), which the messages' ids name.
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
    /// Why the client sends: `submit-message`, or `regenerate-message` (`regenerate()`).
    #[serde(default)]
    pub trigger: Option<String>,
    /// The message the request is about: the assistant message to answer again
    /// (`regenerate({ messageId })`), the user message edited (`sendMessage({ text,
    /// messageId })`), or the assistant message whose approvals are answered.
    #[serde(default, rename = "messageId")]
    pub message_id: Option<String>,
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

    /// Whether the request asks for an answer again (`regenerate()`).
    pub fn regenerates(&self) -> bool {
        self.trigger.as_deref() == Some("regenerate-message")
    }

    /// The earlier turn the request goes back to, if it does: for `regenerate()`, the turn
    /// of the assistant message it names (a `ChatServer` streams its answers as
    /// `<chat id>-<n>`, the turn's place in the history), else of the user message the
    /// client's messages end with; for an edit (a user message named by `messageId` last in
    /// the messages), that message's turn, with its new text. A user message's turn is
    /// counted from the assistant message before it.
    ///
    /// ```
    /// use golem_ui::ai_sdk::ChatRequest;
    /// use golem_ui::{Rewind, TurnAt};
    ///
    /// let body = r#"{"id": "chat-1", "trigger": "submit-message", "messageId": "u2", "messages": [
    ///     {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hello"}]},
    ///     {"id": "chat-1-0", "role": "assistant", "parts": [{"type": "text", "text": "Hi!"}]},
    ///     {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "A pun?"}]}
    /// ]}"#;
    /// let request: ChatRequest = serde_json::from_str(body)?;
    /// let edit = TurnAt::Prompt { after: Some(0), nth: 0 };
    /// assert_eq!(request.rewind(), Some(Rewind::edit(edit, "A pun?")));
    /// # Ok::<_, serde_json::Error>(())
    /// ```
    pub fn rewind(&self) -> Option<Rewind> {
        let last = self.messages.last()?;
        let regenerate = self.regenerates();
        let edit = !regenerate
            && last.role == "user"
            && self.message_id.is_some()
            && last.id == self.message_id;
        if !regenerate && !edit {
            return None;
        }
        let answer = self
            .message_id
            .as_deref()
            .filter(|_| regenerate)
            .or_else(|| last.id.as_deref().filter(|_| last.role == "assistant"))
            .and_then(|id| self.answer_turn(id));
        let turn = match answer {
            Some(turn) => TurnAt::Answer(turn),
            None => self.prompt_turn(),
        };
        Some(match edit {
            true => Rewind::edit(turn, text(last)),
            false => Rewind::regenerate(turn),
        })
    }

    /// The turn of the answer `id`, when it is one this chat's server streamed
    /// (`<chat id>-<n>`).
    fn answer_turn(&self, id: &str) -> Option<usize> {
        id.strip_prefix(self.id.as_str())?
            .strip_prefix('-')?
            .parse()
            .ok()
    }

    /// The turn of the last message, a user message: counted from the nearest answer
    /// before it this chat's server streamed.
    fn prompt_turn(&self) -> TurnAt {
        let earlier = &self.messages[..self.messages.len().saturating_sub(1)];
        let mut nth = 0;
        for message in earlier.iter().rev() {
            match message.role.as_str() {
                "user" => nth += 1,
                "assistant" => {
                    if let Some(turn) = message.id.as_deref().and_then(|id| self.answer_turn(id)) {
                        return TurnAt::Prompt {
                            after: Some(turn),
                            nth,
                        };
                    }
                }
                _ => {}
            }
        }
        TurnAt::Prompt { after: None, nth }
    }

    /// What the request asks of the thread: see [`ChatRequest`].
    pub fn turn(&self) -> Turn {
        let Some(last) = self.messages.last() else {
            return Turn::default();
        };
        match last.role.as_str() {
            "user" => {
                let text = text(last);
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

/// The text of `message`'s text parts.
fn text(message: &UiMessage) -> String {
    message
        .parts
        .iter()
        .filter(|part| part["type"] == "text")
        .filter_map(|part| part["text"].as_str())
        .collect()
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
