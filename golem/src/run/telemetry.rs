//! What the spans carry when an agent captures content: messages in the JSON forms of the
//! OpenTelemetry GenAI conventions (`gen_ai.input.messages`, `gen_ai.output.messages`), and
//! the names of finish reasons. Provider-specific parts are named by kind only: their data
//! (which may hold anything the provider sent, binary data included) is never exported.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use serde_json::{Value, json};
use tracing::Span;

use crate::model::media::data_url_summary;
use crate::model::{
    FinishReason, MediaKind, Message, ModelResponse, RequestPart, ResponsePart, UserContent,
};

/// Awaits `future` in `span`, entered while it is polled; a span no subscriber wants is not
/// entered at all. A macro, not a function: a function's future would be one more layer
/// around `future`, moved as it is built. In a span, the future is pinned where it is
/// awaited and borrows the span, so the future awaiting it holds no copy of the span.
macro_rules! in_span {
    ($span:expr, $future:expr) => {
        if $span.is_disabled() {
            $future.await
        } else {
            $crate::run::telemetry::InSpan {
                span: &$span,
                future: ::std::pin::pin!($future),
            }
            .await
        }
    };
}
pub(crate) use in_span;

/// A future polled inside a span it borrows: see [`in_span!`].
pub(crate) struct InSpan<'s, F> {
    pub(crate) span: &'s Span,
    pub(crate) future: F,
}

impl<F: Future + Unpin> Future for InSpan<'_, F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        let _entered = this.span.enter();
        Pin::new(&mut this.future).poll(cx)
    }
}

/// `count` as the attributes' integer type: OpenTelemetry's is `i64`, and `tracing` layers
/// pass a `u64` on as text.
pub(crate) fn int(count: u64) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

/// The `gen_ai.response.finish_reasons` name of `reason`.
pub(crate) fn finish_reason(reason: FinishReason) -> &'static str {
    match reason {
        FinishReason::Stop => "stop",
        FinishReason::Length => "length",
        FinishReason::ContentFilter => "content_filter",
        FinishReason::ToolCall => "tool_call",
        FinishReason::Error => "error",
        FinishReason::Incomplete => "incomplete",
    }
}

/// `messages` as `gen_ai.input.messages`: one entry per run of parts of the same role.
pub(crate) fn input_messages(messages: &[Message]) -> String {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    let mut push = |role: &'static str, part: Value| match out.last_mut() {
        Some((last, parts)) if *last == role => parts.push(part),
        _ => out.push((role, vec![part])),
    };
    for message in messages {
        match message {
            Message::Request(request) => {
                for part in &request.parts {
                    if let RequestPart::UserPrompt(prompt) = part {
                        for content in &prompt.content {
                            push("user", user_content(content));
                        }
                        continue;
                    }
                    let (role, part) = request_part(part);
                    push(role, part);
                }
            }
            Message::Response(response) => {
                for part in &response.parts {
                    push("assistant", response_part(part));
                }
            }
        }
    }
    let out: Vec<Value> = out
        .into_iter()
        .map(|(role, parts)| json!({"role": role, "parts": parts}))
        .collect();
    Value::Array(out).to_string()
}

/// `response` as `gen_ai.output.messages`.
pub(crate) fn output_messages(response: &ModelResponse) -> String {
    let parts: Vec<Value> = response.parts.iter().map(response_part).collect();
    let mut message = json!({"role": "assistant", "parts": parts});
    if let Some(reason) = response.finish_reason {
        message["finish_reason"] = json!(finish_reason(reason));
    }
    Value::Array(vec![message]).to_string()
}

/// `instructions` as `gen_ai.system_instructions`.
pub(crate) fn system_instructions(instructions: &str) -> String {
    json!([{"type": "text", "content": instructions}]).to_string()
}

fn request_part(part: &RequestPart) -> (&'static str, Value) {
    match part {
        RequestPart::SystemPrompt(part) => ("system", text(&part.content)),
        RequestPart::UserPrompt(part) => ("user", text(&part.text())),
        RequestPart::ToolReturn(part) => (
            "tool",
            json!({"type": "tool_call_response", "id": part.tool_call_id, "response": part.content}),
        ),
        RequestPart::RetryPrompt(part) => match &part.tool_call_id {
            Some(id) => (
                "tool",
                json!({"type": "tool_call_response", "id": id, "response": part.content}),
            ),
            None => ("user", text(&part.content)),
        },
    }
}

fn response_part(part: &ResponsePart) -> Value {
    match part {
        ResponsePart::Text(part) => text(&part.content),
        ResponsePart::ToolCall(part) => {
            let arguments = serde_json::from_str::<Value>(&part.args)
                .unwrap_or_else(|_| Value::String(part.args.clone()));
            json!({"type": "tool_call", "id": part.tool_call_id, "name": part.tool_name, "arguments": arguments})
        }
        ResponsePart::Thinking(part) => json!({"type": "reasoning", "content": part.content}),
        ResponsePart::Provider(part) => json!({"type": "provider", "provider": part.provider}),
    }
}

/// A prompt's part as a GenAI message part: media as a `uri` or a `blob` without its bytes
/// (bytes are never logged).
fn user_content(content: &UserContent) -> Value {
    let modality = content.kind().map_or("text", MediaKind::name);
    let uri = |url: &str| match data_url_summary(url) {
        // A `data:` URL holds its bytes: a blob, as bytes are.
        Some((media_type, size)) => json!({
            "type": "blob",
            "modality": modality,
            "mime_type": media_type,
            "size": size,
        }),
        None => json!({"type": "uri", "modality": modality, "uri": url}),
    };
    match content {
        UserContent::ImageUrl(image) => uri(&image.url),
        UserContent::DocumentUrl(document) => uri(&document.url),
        UserContent::Binary(binary) => json!({
            "type": "blob",
            "modality": modality,
            "mime_type": binary.media_type,
            "size": binary.data.len(),
        }),
        other => text(other.as_text().unwrap_or_default()),
    }
}

fn text(content: &str) -> Value {
    json!({"type": "text", "content": content})
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ToolCallPart;

    #[test]
    fn messages_take_the_conventions_json_forms() {
        let messages = vec![
            Message::Request(crate::model::ModelRequest::new(vec![
                RequestPart::system_prompt("Be brief"),
                RequestPart::user_prompt("Roll"),
            ])),
            Message::from(ModelResponse::new(vec![ResponsePart::ToolCall(
                ToolCallPart::new("roll", r#"{"n":2}"#, "c1"),
            )])),
        ];
        let sent: Value = serde_json::from_str(&input_messages(&messages)).unwrap();
        assert_eq!(
            sent,
            json!([
                {"role": "system", "parts": [{"type": "text", "content": "Be brief"}]},
                {"role": "user", "parts": [{"type": "text", "content": "Roll"}]},
                {"role": "assistant", "parts": [
                    {"type": "tool_call", "id": "c1", "name": "roll", "arguments": {"n": 2}},
                ]},
            ])
        );
    }

    #[test]
    fn media_parts_are_uris_and_blobs_without_their_bytes() {
        let messages = vec![Message::Request(crate::model::ModelRequest::user_prompt([
            UserContent::text("What is this?"),
            UserContent::image_url("https://x.test/a.png"),
            UserContent::binary(vec![7u8; 12], "application/pdf"),
            UserContent::image_url("data:image/png;base64,iVBORw0KGgo="),
        ]))];
        let sent: Value = serde_json::from_str(&input_messages(&messages)).unwrap();
        assert_eq!(
            sent,
            json!([{"role": "user", "parts": [
                {"type": "text", "content": "What is this?"},
                {"type": "uri", "modality": "image", "uri": "https://x.test/a.png"},
                {"type": "blob", "modality": "document", "mime_type": "application/pdf", "size": 12},
                // A data: URL holds its bytes: a blob too.
                {"type": "blob", "modality": "image", "mime_type": "image/png", "size": 8},
            ]}])
        );
    }
}
