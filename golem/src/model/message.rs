//! The conversation: requests golem sends, responses the model gives, and their parts.
//!
//! A history is a `Vec<Message>`. It is plain data (`Serialize + Deserialize`), so a run's
//! messages can be saved and handed to a later run with
//! [`Agent::run_with_history`](crate::Agent::run_with_history).

use std::borrow::Cow;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::media::{ToolContent, UserContent};
use crate::usage::RequestUsage;

/// One message of a conversation: a request golem sent, or a response the model gave.
///
/// A response is shared ([`Arc`]): the history, the [`RunEvent::ResponseReceived`]
/// event and a copy of the history all point to the one response the model gave, so none
/// of them copies its parts. Read it as a `&ModelResponse` (field access and methods go
/// through the `Arc`); build a message from a response with `Message::from` or `.into()`;
/// change a response of a history in place with [`Arc::make_mut`], which copies it only
/// when it is shared.
///
/// ```
/// use golem::model::{Message, ModelResponse};
///
/// let mut history: Vec<Message> = vec![ModelResponse::text("Hello").into()];
/// if let Message::Response(response) = &mut history[0] {
///     std::sync::Arc::make_mut(response).model_name = Some("scripted".into());
/// }
/// assert_eq!(history[0].as_response().unwrap().text_content(), "Hello");
/// ```
///
/// [`RunEvent::ResponseReceived`]: crate::RunEvent::ResponseReceived
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Message {
    /// Sent to the model: prompts, tool results, validation feedback.
    Request(ModelRequest),
    /// Produced by the model: text and tool calls.
    Response(Arc<ModelResponse>),
}

impl Message {
    /// The request inside, if this is a request.
    pub fn as_request(&self) -> Option<&ModelRequest> {
        match self {
            Message::Request(request) => Some(request),
            Message::Response(_) => None,
        }
    }

    /// The response inside, if this is a response.
    pub fn as_response(&self) -> Option<&ModelResponse> {
        match self {
            Message::Response(response) => Some(response),
            Message::Request(_) => None,
        }
    }
}

impl From<ModelRequest> for Message {
    fn from(request: ModelRequest) -> Self {
        Message::Request(request)
    }
}

impl From<ModelResponse> for Message {
    fn from(response: ModelResponse) -> Self {
        Message::Response(Arc::new(response))
    }
}

impl From<Arc<ModelResponse>> for Message {
    fn from(response: Arc<ModelResponse>) -> Self {
        Message::Response(response)
    }
}

/// What golem sends to the model in one turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelRequest {
    /// The parts, in the order the model sees them.
    pub parts: Vec<RequestPart>,
}

impl ModelRequest {
    /// A request made of `parts`.
    pub fn new(parts: impl Into<Vec<RequestPart>>) -> Self {
        ModelRequest {
            parts: parts.into(),
        }
    }

    /// A request holding one user prompt.
    pub fn user_prompt(content: impl Into<UserPromptPart>) -> Self {
        ModelRequest::new(vec![RequestPart::user_prompt(content)])
    }

    /// Whether the request has a user prompt: it starts a turn of the conversation.
    ///
    /// ```
    /// use golem::model::{ModelRequest, RequestPart};
    ///
    /// assert!(ModelRequest::user_prompt("Hi").has_user_prompt());
    /// assert!(!ModelRequest::new(vec![RequestPart::retry_prompt("Again.")]).has_user_prompt());
    /// ```
    pub fn has_user_prompt(&self) -> bool {
        self.parts
            .iter()
            .any(|part| matches!(part, RequestPart::UserPrompt(_)))
    }
}

/// One part of a [`ModelRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "part_kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum RequestPart {
    /// The agent's instructions (the system prompt).
    SystemPrompt(SystemPromptPart),
    /// What the user asked.
    UserPrompt(UserPromptPart),
    /// The value a tool returned for one call.
    ToolReturn(ToolReturnPart),
    /// Validation feedback: why a tool call or an output was rejected.
    RetryPrompt(RetryPromptPart),
}

impl RequestPart {
    /// A system prompt.
    pub fn system_prompt(content: impl Into<String>) -> Self {
        RequestPart::SystemPrompt(SystemPromptPart::new(content))
    }

    /// A user prompt: text, or content parts (see [`UserPromptPart`]).
    pub fn user_prompt(content: impl Into<UserPromptPart>) -> Self {
        RequestPart::UserPrompt(content.into())
    }

    /// The result of the call `tool_call_id` to `tool_name`.
    pub fn tool_return(
        tool_name: impl Into<String>,
        tool_call_id: impl Into<String>,
        content: impl Into<Value>,
    ) -> Self {
        RequestPart::ToolReturn(ToolReturnPart::new(tool_name, tool_call_id, content))
    }

    /// Feedback on a rejected text output; providers send it as a user message.
    pub fn retry_prompt(content: impl Into<String>) -> Self {
        RequestPart::RetryPrompt(RetryPromptPart::new(content))
    }

    /// Feedback on the rejected call `tool_call_id` to `tool_name`; providers send it as that
    /// call's tool result.
    pub fn tool_retry(
        tool_name: impl Into<String>,
        tool_call_id: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        RequestPart::RetryPrompt(RetryPromptPart::new(content).for_call(tool_name, tool_call_id))
    }
}

/// The agent's instructions, as a part of a request: the system prompt.
///
/// Non-exhaustive, so that later versions can add fields (multimodal content, say) without
/// breaking code: build one with its constructor, and match it with `..`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SystemPromptPart {
    /// The instruction text.
    pub content: String,
}

impl SystemPromptPart {
    /// A system prompt with the instruction text `content`.
    pub fn new(content: impl Into<String>) -> Self {
        SystemPromptPart {
            content: content.into(),
        }
    }
}

/// A prompt from the user, as a part of a request: text, or [content parts](UserContent)
/// mixing text with images, documents and audio.
///
/// Serialized as a string when it is one text (as golem always wrote prompts, so saved
/// histories stay readable), else as the list of its parts.
///
/// Non-exhaustive, so that later versions can add fields without breaking code: build one
/// with its constructors, and match it with `..`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct UserPromptPart {
    /// The parts, in the order the model reads them.
    #[serde(with = "prompt_content")]
    pub content: Vec<UserContent>,
}

impl UserPromptPart {
    /// A user prompt with the text `content`.
    ///
    /// ```
    /// use golem::model::{RequestPart, UserPromptPart};
    ///
    /// let part = UserPromptPart::new("Roll two dice.");
    /// assert_eq!(RequestPart::UserPrompt(part), RequestPart::user_prompt("Roll two dice."));
    /// ```
    pub fn new(content: impl Into<String>) -> Self {
        UserPromptPart {
            content: vec![UserContent::Text(content.into())],
        }
    }

    /// A user prompt made of `parts`: text, images, documents, audio.
    ///
    /// ```
    /// use golem::model::{UserContent, UserPromptPart};
    ///
    /// let part = UserPromptPart::from_parts([
    ///     UserContent::text("Summarize this report."),
    ///     UserContent::document_url("https://example.com/report.pdf"),
    /// ]);
    /// assert_eq!(part.text(), "Summarize this report.");
    /// ```
    pub fn from_parts<I>(parts: I) -> Self
    where
        I: IntoIterator,
        I::Item: Into<UserContent>,
    {
        UserPromptPart {
            content: parts.into_iter().map(Into::into).collect(),
        }
    }

    /// The text parts, joined by newlines (borrowed when there is one).
    pub fn text(&self) -> Cow<'_, str> {
        let mut texts = self.content.iter().filter_map(UserContent::as_text);
        let Some(first) = texts.next() else {
            return Cow::Borrowed("");
        };
        match texts.next() {
            None => Cow::Borrowed(first),
            Some(second) => {
                let mut joined = format!("{first}\n{second}");
                for text in texts {
                    joined.push('\n');
                    joined.push_str(text);
                }
                Cow::Owned(joined)
            }
        }
    }

    /// The parts that are not text: images, documents, audio.
    pub fn media(&self) -> impl Iterator<Item = &UserContent> {
        self.content
            .iter()
            .filter(|part| !matches!(part, UserContent::Text(_)))
    }

    /// Whether the prompt holds nothing: no media, and no text but empty strings.
    pub fn is_empty(&self) -> bool {
        self.content
            .iter()
            .all(|part| matches!(part, UserContent::Text(text) if text.is_empty()))
    }
}

impl From<&str> for UserPromptPart {
    fn from(text: &str) -> Self {
        UserPromptPart::new(text)
    }
}

impl From<String> for UserPromptPart {
    fn from(text: String) -> Self {
        UserPromptPart::new(text)
    }
}

impl From<&String> for UserPromptPart {
    fn from(text: &String) -> Self {
        UserPromptPart::new(text.as_str())
    }
}

impl From<Cow<'_, str>> for UserPromptPart {
    fn from(text: Cow<'_, str>) -> Self {
        UserPromptPart::new(text.into_owned())
    }
}

impl From<UserContent> for UserPromptPart {
    fn from(part: UserContent) -> Self {
        UserPromptPart {
            content: vec![part],
        }
    }
}

impl From<Vec<UserContent>> for UserPromptPart {
    fn from(content: Vec<UserContent>) -> Self {
        UserPromptPart { content }
    }
}

impl<const N: usize> From<[UserContent; N]> for UserPromptPart {
    fn from(parts: [UserContent; N]) -> Self {
        UserPromptPart::from_parts(parts)
    }
}

/// A prompt's parts as a string when they are one text, else as a list; read back from
/// either.
mod prompt_content {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::UserContent;

    pub(super) fn serialize<S: Serializer>(
        content: &[UserContent],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match content {
            [UserContent::Text(text)] => serializer.serialize_str(text),
            parts => parts.serialize(serializer),
        }
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Stored {
        Text(String),
        Parts(Vec<UserContent>),
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<UserContent>, D::Error> {
        Ok(match Stored::deserialize(deserializer)? {
            Stored::Text(text) => vec![UserContent::Text(text)],
            Stored::Parts(parts) => parts,
        })
    }
}

/// The value a tool returned for one call, as a part of the request that answers the call.
///
/// Non-exhaustive, so that later versions can add fields (multimodal content, say) without
/// breaking code: build one with its constructor, and match it with `..`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolReturnPart {
    /// The tool that was called.
    pub tool_name: String,
    /// The id of the call this answers.
    pub tool_call_id: String,
    /// The returned value, as JSON.
    pub content: Value,
    /// The images and documents the tool returned beside its value (see [`ToolContent`]);
    /// each provider's wire sends them the way its API takes them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub media: Vec<UserContent>,
}

impl ToolReturnPart {
    /// The result `content` of the call `tool_call_id` to `tool_name`; a [`ToolContent`]
    /// (as a value) is split into the value and its media.
    pub fn new(
        tool_name: impl Into<String>,
        tool_call_id: impl Into<String>,
        content: impl Into<Value>,
    ) -> Self {
        let content = content.into();
        let (content, media) = match ToolContent::from_value(&content) {
            Some(tool_content) => (tool_content.value, tool_content.media),
            None => (content, Vec::new()),
        };
        ToolReturnPart {
            tool_name: tool_name.into(),
            tool_call_id: tool_call_id.into(),
            content,
            media,
        }
    }

    /// The content as the model reads it: a string as it is (borrowed), any other value as
    /// JSON text.
    pub fn model_text(&self) -> Cow<'_, str> {
        match &self.content {
            Value::String(text) => Cow::Borrowed(text),
            other => Cow::Owned(other.to_string()),
        }
    }
}

/// Validation feedback sent back to the model after a rejection, as a part of a request.
///
/// `content` holds the reason only; [`model_text`](Self::model_text) renders what the model
/// reads, marked as automated feedback and ending with an instruction to fix the errors.
/// Feedback on a rejected call names the call ([`for_call`](Self::for_call)), and providers
/// send it as that call's tool result; feedback on rejected text output names none, and
/// providers send it as a user message.
///
/// Non-exhaustive, so that later versions can add fields (multimodal content, say) without
/// breaking code: build one with its constructor, and match it with `..`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct RetryPromptPart {
    /// Why the call or output was rejected.
    pub content: String,
    /// The rejected call's tool, or `None` for rejected text output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// The rejected call's id, or `None` for rejected text output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl RetryPromptPart {
    /// Feedback with the reason `content`, on rejected text output until
    /// [`for_call`](Self::for_call) names a call.
    pub fn new(content: impl Into<String>) -> Self {
        RetryPromptPart {
            content: content.into(),
            tool_name: None,
            tool_call_id: None,
        }
    }

    /// Makes this feedback on the rejected call `tool_call_id` to `tool_name`.
    #[must_use]
    pub fn for_call(
        mut self,
        tool_name: impl Into<String>,
        tool_call_id: impl Into<String>,
    ) -> Self {
        self.tool_name = Some(tool_name.into());
        self.tool_call_id = Some(tool_call_id.into());
        self
    }

    /// The text the model reads.
    ///
    /// ```
    /// use golem::model::RetryPromptPart;
    ///
    /// let part = RetryPromptPart::new("n must be positive, got -1").for_call("roll_dice", "call_1");
    /// assert_eq!(
    ///     part.model_text(),
    ///     "Automated validation feedback (not from the user):\n\
    ///      n must be positive, got -1\n\n\
    ///      Fix the errors and try again."
    /// );
    /// ```
    pub fn model_text(&self) -> String {
        self.model_text_pieces().concat()
    }

    /// [`model_text`](Self::model_text) in its three pieces, for a writer that writes them
    /// one after the other.
    pub(crate) fn model_text_pieces(&self) -> [&str; 3] {
        [
            "Automated validation feedback (not from the user):\n",
            &self.content,
            "\n\nFix the errors and try again.",
        ]
    }
}

/// What the model answered in one turn.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelResponse {
    /// Text and tool calls, in the order the model produced them.
    pub parts: Vec<ResponsePart>,
    /// What this response's request cost.
    #[serde(default)]
    pub usage: RequestUsage,
    /// The model that answered, as the provider names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    /// The provider's id for this response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_response_id: Option<String>,
    /// Why the model stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<FinishReason>,
}

impl ModelResponse {
    /// A response made of `parts`.
    pub fn new(parts: impl Into<Vec<ResponsePart>>) -> Self {
        ModelResponse {
            parts: parts.into(),
            ..ModelResponse::default()
        }
    }

    /// A response holding one text part.
    pub fn text(content: impl Into<String>) -> Self {
        ModelResponse::new(vec![ResponsePart::text(content)])
    }

    /// A response holding one tool call.
    pub fn tool_call(
        tool_name: impl Into<String>,
        args: impl Into<ToolArgs>,
        tool_call_id: impl Into<String>,
    ) -> Self {
        ModelResponse::new(vec![ResponsePart::tool_call(tool_name, args, tool_call_id)])
    }

    /// Sets what this response cost in tokens (one request).
    #[must_use]
    pub fn with_usage(mut self, input_tokens: u64, output_tokens: u64) -> Self {
        self.usage = RequestUsage::new(input_tokens, output_tokens);
        self
    }

    /// The concatenated text parts.
    pub fn text_content(&self) -> String {
        let mut text = String::new();
        for part in &self.parts {
            if let ResponsePart::Text(part) = part {
                text.push_str(&part.content);
            }
        }
        text
    }

    /// The tool calls, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCallPart> {
        self.indexed_calls().map(|(_, call)| call)
    }

    /// The tool calls, in order, each with its index among the parts.
    pub(crate) fn indexed_calls(&self) -> impl Iterator<Item = (usize, &ToolCallPart)> {
        self.parts
            .iter()
            .enumerate()
            .filter_map(|(index, part)| match part {
                ResponsePart::ToolCall(call) => Some((index, call)),
                _ => None,
            })
    }

    /// The tool call that is part `part`, if that part is one.
    pub(crate) fn call_at(&self, part: usize) -> Option<&ToolCallPart> {
        match self.parts.get(part)? {
            ResponsePart::ToolCall(call) => Some(call),
            _ => None,
        }
    }
}

/// Why the model stopped producing output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FinishReason {
    /// A natural end.
    Stop,
    /// The output token limit cut the response off.
    Length,
    /// The provider's content filter withheld the response.
    ContentFilter,
    /// The model called tools.
    ToolCall,
    /// Something else.
    Error,
    /// The response is not all there: the run stopped while it streamed, and this is what
    /// had arrived. Its tool calls were not run, and its arguments may be cut off.
    Incomplete,
}

/// One part of a [`ModelResponse`].
///
/// Non-exhaustive: providers may bring parts of new kinds; a `match` outside golem needs a
/// wildcard arm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "part_kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ResponsePart {
    /// Text for the user.
    Text(TextPart),
    /// A call to a tool (a function tool or the output tool).
    ToolCall(ToolCallPart),
    /// The model's reasoning, as its provider showed it (Anthropic's `thinking` blocks,
    /// the `reasoning_content` of some compatible servers). Kept in the history; sent back
    /// only to the provider that signed it, as Anthropic requires for tool use with
    /// extended thinking. Never part of the answer.
    Thinking(ThinkingPart),
    /// Something a provider sent that golem does not model but that provider needs echoed
    /// back as it was (Anthropic's `redacted_thinking`, server-tool blocks). Sent back only
    /// to that provider, verbatim; ignored by every other.
    Provider(ProviderPart),
}

impl ResponsePart {
    /// A text part.
    pub fn text(content: impl Into<String>) -> Self {
        ResponsePart::Text(TextPart::new(content))
    }

    /// A call to `tool_name` with `args` (JSON text or a JSON value).
    ///
    /// An empty `tool_call_id` is filled in by the run with an id unique in the history.
    pub fn tool_call(
        tool_name: impl Into<String>,
        args: impl Into<ToolArgs>,
        tool_call_id: impl Into<String>,
    ) -> Self {
        ResponsePart::ToolCall(ToolCallPart::new(tool_name, args, tool_call_id))
    }
}

/// The model's reasoning, as a part of a response.
///
/// Non-exhaustive, so that later versions can add fields (multimodal content, say) without
/// breaking code: build one with its constructor, and match it with `..`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ThinkingPart {
    /// The reasoning text (a summary, for some models).
    pub content: String,
    /// The provider's signature over it, which the provider checks when it is sent back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// The provider that produced it (`anthropic`, `openai`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The provider's id for it, where the provider needs the id when the part is sent
    /// back (the `id` of an OpenAI Responses reasoning item).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

impl ThinkingPart {
    /// Reasoning with the text `content`, unsigned and from no provider in particular.
    ///
    /// ```
    /// use golem::model::ThinkingPart;
    ///
    /// let part = ThinkingPart::new("Two dice, then the verdict.")
    ///     .with_signature("EqQBCgIYAh...")
    ///     .with_provider("anthropic");
    /// assert_eq!(part.provider.as_deref(), Some("anthropic"));
    /// ```
    pub fn new(content: impl Into<String>) -> Self {
        ThinkingPart {
            content: content.into(),
            signature: None,
            provider: None,
            id: None,
        }
    }

    /// Sets the provider's signature over the reasoning.
    #[must_use]
    pub fn with_signature(mut self, signature: impl Into<String>) -> Self {
        self.signature = Some(signature.into());
        self
    }

    /// Sets the provider that produced the reasoning.
    #[must_use]
    pub fn with_provider(mut self, provider: impl Into<String>) -> Self {
        self.provider = Some(provider.into());
        self
    }

    /// Sets the provider's id for the reasoning.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }
}

/// A provider's own part of a response, kept verbatim to be sent back to that provider.
///
/// Non-exhaustive, so that later versions can add fields (multimodal content, say) without
/// breaking code: build one with its constructor, and match it with `..`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProviderPart {
    /// The provider it belongs to (`anthropic`).
    pub provider: String,
    /// The part exactly as the provider sent it.
    pub data: Value,
}

impl ProviderPart {
    /// The part `data` of `provider`, as that provider sent it.
    pub fn new(provider: impl Into<String>, data: Value) -> Self {
        ProviderPart {
            provider: provider.into(),
            data,
        }
    }
}

/// Text the model produced, as a part of a response.
///
/// Non-exhaustive, so that later versions can add fields (multimodal content, say) without
/// breaking code: build one with its constructor, and match it with `..`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TextPart {
    /// The text.
    pub content: String,
    /// The provider's id for the item that carried the text, where the provider needs it
    /// when the text is sent back (an OpenAI Responses `message` item that followed a
    /// reasoning item).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

impl TextPart {
    /// A text part with the text `content`.
    pub fn new(content: impl Into<String>) -> Self {
        TextPart {
            content: content.into(),
            id: None,
        }
    }

    /// Sets the provider's id for the item that carried the text.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }
}

/// A tool call the model made, as a part of a response.
///
/// Non-exhaustive, so that later versions can add fields (multimodal content, say) without
/// breaking code: build one with its constructor, and match it with `..`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolCallPart {
    /// The tool the model called.
    pub tool_name: String,
    /// The arguments as the model wrote them: JSON text, kept verbatim even when invalid,
    /// so a rejection can show the model what it sent.
    pub args: String,
    /// The id that the call's result must carry.
    pub tool_call_id: String,
    /// The provider's id for the item that carried the call, where the provider needs it
    /// when the call is sent back (an OpenAI Responses `function_call` item that followed a
    /// reasoning item). Not the call's id: results are paired by `tool_call_id`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

impl ToolCallPart {
    /// A call `tool_call_id` to `tool_name` with `args` (JSON text or a JSON value).
    ///
    /// ```
    /// use golem::model::ToolCallPart;
    ///
    /// let call = ToolCallPart::new("roll_dice", serde_json::json!({"n": 2}), "call_1");
    /// assert_eq!(call.args, r#"{"n":2}"#);
    /// ```
    pub fn new(
        tool_name: impl Into<String>,
        args: impl Into<ToolArgs>,
        tool_call_id: impl Into<String>,
    ) -> Self {
        ToolCallPart {
            tool_name: tool_name.into(),
            args: args.into().0,
            tool_call_id: tool_call_id.into(),
            id: None,
        }
    }

    /// Sets the provider's id for the item that carried the call.
    ///
    /// ```
    /// use golem::model::ToolCallPart;
    ///
    /// let call = ToolCallPart::new("roll_dice", "{}", "call_1").with_id("fc_1");
    /// assert_eq!(call.id.as_deref(), Some("fc_1"));
    /// ```
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// This call's result: `content` as a tool return carrying the call's name and id.
    pub fn answer(&self, content: impl Into<Value>) -> RequestPart {
        RequestPart::tool_return(self.tool_name.clone(), self.tool_call_id.clone(), content)
    }

    /// Feedback rejecting this call, carrying the call's name and id.
    pub fn reject(&self, reason: impl Into<String>) -> RequestPart {
        RequestPart::tool_retry(self.tool_name.clone(), self.tool_call_id.clone(), reason)
    }
}

/// Tool-call arguments as JSON text; built from a `&str`, a `String` or a
/// [`serde_json::Value`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolArgs(pub String);

impl From<&str> for ToolArgs {
    fn from(text: &str) -> Self {
        ToolArgs(text.to_owned())
    }
}

impl From<String> for ToolArgs {
    fn from(text: String) -> Self {
        ToolArgs(text)
    }
}

impl From<Value> for ToolArgs {
    fn from(value: Value) -> Self {
        // Written straight into the text's buffer: `Value`'s `Display` writes the same text
        // through a formatter, a piece at a time.
        ToolArgs(serde_json::to_string(&value).expect("a JSON value is written as JSON"))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn history_round_trips_through_json() {
        let history = vec![
            Message::Request(ModelRequest::new(vec![
                RequestPart::system_prompt("Be brief."),
                RequestPart::user_prompt("Roll"),
            ])),
            Message::from(
                ModelResponse::tool_call("roll_dice", json!({"n": -1}), "c1").with_usage(10, 2),
            ),
            Message::Request(ModelRequest::new(vec![RequestPart::tool_retry(
                "roll_dice",
                "c1",
                "n must be positive",
            )])),
            Message::from(ModelResponse::text("done")),
        ];
        let text = serde_json::to_string(&history).expect("serializes");
        let back: Vec<Message> = serde_json::from_str(&text).expect("deserializes");
        assert_eq!(back, history);
        let value: Value = serde_json::from_str(&text).expect("json");
        assert_eq!(value[0]["kind"], "request");
        assert_eq!(value[0]["parts"][1]["part_kind"], "user_prompt");
        assert_eq!(value[1]["parts"][0]["args"], r#"{"n":-1}"#);
        assert_eq!(value[2]["parts"][0]["tool_name"], "roll_dice");
    }

    #[test]
    fn thinking_and_provider_parts_round_trip() {
        let response = ModelResponse::new(vec![
            ResponsePart::Thinking(ThinkingPart {
                content: "Two dice.".into(),
                signature: Some("sig".into()),
                provider: Some("anthropic".into()),
                id: None,
            }),
            ResponsePart::Provider(ProviderPart {
                provider: "anthropic".into(),
                data: json!({"type": "redacted_thinking", "data": "opaque"}),
            }),
            ResponsePart::tool_call("roll_dice", "{}", "c1"),
        ]);
        let text = serde_json::to_string(&response).expect("serializes");
        let back: ModelResponse = serde_json::from_str(&text).expect("deserializes");
        assert_eq!(back, response);
        assert_eq!(back.tool_calls().count(), 1);
        assert_eq!(back.text_content(), "");
        let value: Value = serde_json::from_str(&text).expect("json");
        assert_eq!(value["parts"][0]["part_kind"], "thinking");
        assert_eq!(value["parts"][1]["part_kind"], "provider");
    }

    #[test]
    fn a_text_prompt_is_stored_as_a_string_and_read_back_from_one() {
        let request = ModelRequest::user_prompt("Roll");
        let value = serde_json::to_value(&request).expect("serializes");
        assert_eq!(
            value,
            json!({"parts": [{"part_kind": "user_prompt", "content": "Roll"}]})
        );
        let saved = r#"{"parts": [{"part_kind": "user_prompt", "content": "Roll"}]}"#;
        assert_eq!(
            serde_json::from_str::<ModelRequest>(saved).expect("reads"),
            request
        );
    }

    #[test]
    fn media_prompts_and_tool_results_round_trip_with_base64_bytes() {
        use crate::model::{BinaryContent, ImageUrl, ToolContent, UserContent};

        let history = vec![
            Message::Request(ModelRequest::user_prompt([
                UserContent::text("What is this?"),
                ImageUrl::new("https://x.test/dice")
                    .with_media_type("image/png")
                    .into(),
                UserContent::document_url("https://x.test/rules.pdf"),
                BinaryContent::new(vec![1u8, 2, 3], "audio/wav").into(),
            ])),
            Message::from(ModelResponse::tool_call("chart", "{}", "c1")),
            Message::Request(ModelRequest::new(vec![RequestPart::tool_return(
                "chart",
                "c1",
                ToolContent::new("March").with(BinaryContent::new(vec![0x89, b'P'], "image/png")),
            )])),
        ];
        let value = serde_json::to_value(&history).expect("serializes");
        assert_eq!(
            value[0]["parts"][0]["content"],
            json!([
                {"text": "What is this?"},
                {"image_url": {"url": "https://x.test/dice", "media_type": "image/png"}},
                {"document_url": {"url": "https://x.test/rules.pdf"}},
                {"binary": {"data": "AQID", "media_type": "audio/wav"}},
            ])
        );
        assert_eq!(
            value[2]["parts"][0],
            json!({
                "part_kind": "tool_return",
                "tool_name": "chart",
                "tool_call_id": "c1",
                "content": "March",
                "media": [{"binary": {"data": "iVA=", "media_type": "image/png"}}],
            })
        );
        let back: Vec<Message> = serde_json::from_value(value).expect("deserializes");
        assert_eq!(back, history);
    }

    #[test]
    fn debug_output_never_shows_the_bytes() {
        use crate::model::BinaryContent;

        let part = UserPromptPart::from_parts([BinaryContent::new(vec![0xAB; 3000], "image/png")]);
        assert_eq!(
            format!("{part:?}"),
            r#"UserPromptPart { content: [Binary(BinaryContent { media_type: "image/png", len: 3000 })] }"#
        );
    }

    #[test]
    fn tool_return_text_keeps_strings_and_serializes_the_rest() {
        let RequestPart::ToolReturn(text) = RequestPart::tool_return("t", "c", "plain") else {
            unreachable!()
        };
        assert_eq!(text.model_text(), "plain");
        let RequestPart::ToolReturn(number) = RequestPart::tool_return("t", "c", json!({"a": 1}))
        else {
            unreachable!()
        };
        assert_eq!(number.model_text(), r#"{"a":1}"#);
    }
}
