//! How many tokens a request will take, estimated before it is sent.
//!
//! Tokenizers differ by model, and none is bundled: the estimate counts the characters of
//! what a request carries (text, arguments, results, instructions, tool schemas) at four
//! characters a token, rounded up, plus a few tokens per message for the roles and framing
//! every provider adds. English prose comes out close to OpenAI's and Anthropic's counts;
//! code, JSON and other languages take more tokens per character, so leave headroom.
//!
//! An image, a document or an audio clip counts as [`MEDIA_PART_TOKENS`] whatever its size:
//! providers count media by pixels, pages or seconds, which golem does not decode.

use serde_json::Value;

use crate::model::{Message, RequestParams, RequestPart, ResponsePart, ToolReturnPart};

/// Characters per token, as the estimate counts them.
const CHARS_PER_TOKEN: u64 = 4;
/// Tokens each message costs besides its content: its role and the framing around it.
const PER_MESSAGE: u64 = 4;
/// Tokens each media part (an image, a document, audio) of a prompt or a tool result counts
/// as: about what OpenAI and Anthropic charge for a 1,000-pixel-wide image, or Anthropic for
/// a page of a PDF.
pub const MEDIA_PART_TOKENS: u64 = 1_500;
/// [`MEDIA_PART_TOKENS`] as the characters the estimate counts.
const MEDIA_PART_CHARS: usize = (MEDIA_PART_TOKENS * CHARS_PER_TOKEN) as usize;

/// The estimated input tokens of `messages`.
///
/// ```
/// use golem::history::estimate_tokens;
/// use golem::model::{Message, ModelRequest};
///
/// let messages = [Message::Request(ModelRequest::user_prompt("x".repeat(400)))];
/// assert_eq!(estimate_tokens(&messages), 104); // 100 for the text, 4 for the message
/// ```
pub fn estimate_tokens(messages: &[Message]) -> u64 {
    messages
        .iter()
        .map(|message| PER_MESSAGE + tokens(chars_of(message)))
        .sum()
}

/// The estimated input tokens of a request that sends `messages` with `params`: the
/// messages, the instructions and the tool and output schemas.
pub fn estimate_request_tokens(messages: &[Message], params: &RequestParams) -> u64 {
    let mut chars = params
        .instructions
        .as_ref()
        .map_or(0, |text| text.chars().count());
    for tool in params.all_tools() {
        chars += tool.name.len()
            + tool
                .description
                .as_ref()
                .map_or(0, |text| text.chars().count())
            + json_chars(&tool.parameters);
    }
    if let Some(schema) = &params.output_schema {
        chars += json_chars(&schema.schema);
    }
    estimate_tokens(messages) + tokens(chars)
}

fn tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(CHARS_PER_TOKEN)
}

fn chars_of(message: &Message) -> usize {
    match message {
        Message::Request(request) => request
            .parts
            .iter()
            .map(|part| match part {
                RequestPart::SystemPrompt(part) => part.content.chars().count(),
                RequestPart::UserPrompt(part) => part
                    .content
                    .iter()
                    .map(|content| match content.as_text() {
                        Some(text) => text.chars().count(),
                        None => MEDIA_PART_CHARS,
                    })
                    .sum(),
                RequestPart::ToolReturn(part) => {
                    part.tool_call_id.len() + part.tool_name.len() + output_chars(part)
                }
                RequestPart::RetryPrompt(part) => part.content.chars().count(),
            })
            .sum(),
        Message::Response(response) => response
            .parts
            .iter()
            .map(|part| match part {
                ResponsePart::Text(part) => part.content.chars().count(),
                ResponsePart::ToolCall(part) => {
                    part.tool_name.len() + part.tool_call_id.len() + part.args.chars().count()
                }
                ResponsePart::Thinking(part) => part.content.chars().count(),
                ResponsePart::Provider(part) => json_chars(&part.data),
            })
            .sum(),
    }
}

/// The characters a tool's output counts as: its value's text, and each of its media (a
/// text part as its text, any other as [`MEDIA_PART_TOKENS`]).
pub(super) fn output_chars(part: &ToolReturnPart) -> usize {
    json_chars(&part.content)
        + part
            .media
            .iter()
            .map(|media| {
                media
                    .as_text()
                    .map_or(MEDIA_PART_CHARS, |text| text.chars().count())
            })
            .sum::<usize>()
}

/// The characters of `value` as text: a string's own, other JSON's compact form.
fn json_chars(value: &Value) -> usize {
    match value {
        Value::String(text) => text.chars().count(),
        other => other.to_string().chars().count(),
    }
}
