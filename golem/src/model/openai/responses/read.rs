//! Reading a Responses API response into golem's parts: its output items, each read as its
//! kind's own struct (a kind golem does not read is kept whole), the status and the usage.

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::super::super::fallback::FAILED;
use super::super::super::provider::{Text, decode, without_position};
use super::super::super::{
    FinishReason, ModelResponse, ProviderPart, RequestParams, ResponsePart, TextPart, ThinkingPart,
    ToolCallPart,
};
use super::super::PROVIDER;
use super::super::wire::{null_default, text_only, without_added_nulls};
use crate::usage::RequestUsage;

/// Reads a response: in one pass when every output item is of a kind golem reads and
/// reads as it should; else again, item by item, each as its kind's own struct (see
/// [`read_item`]). With strict tools, the `null`s the strict form made the model write for
/// optional properties are removed from function-call arguments.
pub(in crate::model) fn parse(
    body: &[u8],
    params: &RequestParams,
    strict_tools: bool,
) -> Result<ModelResponse, String> {
    const WHAT: &str = "a response";
    if let Ok(response) = decode::<ResponseBody<'_, AnyItem<'_>>>(body, WHAT)
        && let Ok(response) = respond(
            response,
            |item| item.known().ok_or_else(String::new),
            params,
            strict_tools,
        )
    {
        return Ok(response);
    }
    respond(
        decode::<ResponseBody<'_, &RawValue>>(body, WHAT)?,
        |item| read_item(item.get()),
        params,
        strict_tools,
    )
}

/// The response, its output items read by `read`.
fn respond<I>(
    response: ResponseBody<'_, I>,
    read: impl Fn(I) -> Result<Item, String>,
    params: &RequestParams,
    strict_tools: bool,
) -> Result<ModelResponse, String> {
    if response.status.as_deref() == Some("failed") {
        let error = response.error.unwrap_or_default();
        return Err(format!(
            "{}{}: {}",
            FAILED,
            error.code.as_deref().unwrap_or("error"),
            error.message.as_deref().unwrap_or("no message")
        ));
    }
    let mut parts = Vec::with_capacity(response.output.len());
    // Whether the model answered in text, and whether it refused: a refusal and no
    // answer is the content filter's.
    let mut answered = false;
    let mut refused = false;
    let mut called = false;
    // The items after a reasoning item keep their ids: sent back with it, they must be
    // (OpenAI answers "reasoning … provided without its required following item").
    let mut reasoned = false;
    for item in response.output {
        match read(item)? {
            Item::Message(MessageItem { id, content }) => {
                let mut text = String::new();
                let mut refusal = String::new();
                for content in content {
                    match content {
                        MessageContent::OutputText { text: more } => text.push_str(&more),
                        MessageContent::Refusal { refusal: words } => {
                            refused = true;
                            refusal.push_str(words.as_deref().unwrap_or_default());
                        }
                        MessageContent::Other => {}
                    }
                }
                answered |= !text.is_empty();
                // A refusal's words stand for the text of a message that has none, in its
                // place (an item that followed reasoning must go back after it).
                let text = if text.is_empty() { refusal } else { text };
                if !text.is_empty() {
                    let mut text = TextPart::new(text);
                    text.id = id.filter(|_| reasoned);
                    parts.push(ResponsePart::Text(text));
                }
            }
            Item::FunctionCall(FunctionCallItem {
                id,
                call_id,
                name,
                mut arguments,
            }) => {
                called = true;
                if strict_tools && arguments.contains("null") {
                    arguments = without_added_nulls(arguments, &name, params);
                }
                let mut call = ToolCallPart::new(name, arguments, call_id);
                call.id = id.filter(|_| reasoned);
                parts.push(ResponsePart::ToolCall(call));
            }
            Item::Reasoning(ReasoningItem {
                id,
                summary,
                content,
                encrypted_content,
            }) => {
                reasoned = true;
                let shown = if summary.is_empty() { content } else { summary };
                let content = shown
                    .iter()
                    .map(|summary| summary.text.as_str())
                    .collect::<Vec<_>>()
                    .join("\n\n");
                parts.push(ResponsePart::Thinking(ThinkingPart {
                    content,
                    signature: encrypted_content,
                    provider: Some(PROVIDER.to_owned()),
                    id: Some(id),
                }));
            }
            // Built-in tools' items and whatever comes next: kept to be sent back.
            Item::Other(item) => {
                parts.push(ResponsePart::Provider(ProviderPart::new(PROVIDER, item)));
            }
        }
    }
    let reason = response
        .incomplete_details
        .as_ref()
        .and_then(|details| details.reason.as_deref());
    let finish_reason = match (response.status.as_deref(), reason) {
        (Some("incomplete"), Some("max_output_tokens")) => FinishReason::Length,
        (Some("incomplete"), Some("content_filter")) => FinishReason::ContentFilter,
        (Some("incomplete"), _) => FinishReason::Error,
        _ if refused && !answered => FinishReason::ContentFilter,
        _ if called => FinishReason::ToolCall,
        _ => FinishReason::Stop,
    };
    let usage = response
        .usage
        .map_or_else(RequestUsage::default, |usage| RequestUsage {
            cache_read_tokens: usage.input_tokens_details.cached_tokens,
            cache_write_tokens: usage.input_tokens_details.cache_write_tokens,
            reasoning_tokens: usage.output_tokens_details.reasoning_tokens,
            ..RequestUsage::new(usage.input_tokens, usage.output_tokens)
        });
    Ok(ModelResponse {
        parts,
        usage,
        model_name: response.model,
        provider_response_id: response.id,
        finish_reason: Some(finish_reason),
    })
}

/// An output item, read.
enum Item {
    Message(MessageItem),
    FunctionCall(FunctionCallItem),
    Reasoning(ReasoningItem),
    Other(Value),
}

/// Reads an output item as its kind's own struct, found from a first look at the item: an
/// internally tagged enum would buffer the item first to find its tag. Every item
/// [`AnyItem`] does not read, whether it is of an unknown kind or not as its kind should
/// be, is read here.
fn read_item(text: &str) -> Result<Item, String> {
    let Ok(Typed { kind: Some(kind) }) = serde_json::from_str::<Typed<'_>>(text) else {
        return Err("an output item has no type".to_owned());
    };
    let read = |error: serde_json::Error| {
        format!(
            "a `{}` output item cannot be read: {}",
            &*kind,
            without_position(&error)
        )
    };
    Ok(match &*kind {
        "message" => Item::Message(serde_json::from_str(text).map_err(read)?),
        "function_call" => Item::FunctionCall(serde_json::from_str(text).map_err(read)?),
        "reasoning" => Item::Reasoning(serde_json::from_str(text).map_err(read)?),
        _ => Item::Other(serde_json::from_str(text).map_err(read)?),
    })
}

#[derive(Deserialize)]
#[serde(bound(deserialize = "'de: 'a, I: Deserialize<'de>"))]
struct ResponseBody<'a, I> {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default, borrow)]
    status: Option<Text<'a>>,
    #[serde(default, deserialize_with = "null_default")]
    error: Option<ResponseError>,
    #[serde(default, deserialize_with = "null_default")]
    incomplete_details: Option<IncompleteDetails>,
    /// Each item read as [`AnyItem`], or as raw JSON borrowed from the body (so that an item
    /// of a kind golem does not read is kept whole).
    #[serde(default = "Vec::new", deserialize_with = "null_default")]
    output: Vec<I>,
    #[serde(default, deserialize_with = "null_default")]
    usage: Option<ResponseUsage>,
}

#[derive(Deserialize, Default)]
struct ResponseError {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize)]
struct IncompleteDetails {
    #[serde(default)]
    reason: Option<String>,
}

/// An output item's kind, read before the item itself.
#[derive(Deserialize)]
struct Typed<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Text<'a>>,
}

/// An output item of a kind golem reads, read in one pass: every kind's fields at once.
/// An item it cannot read, or whose fields do not make its kind's struct, is read by
/// [`read_item`], so that each kind is read exactly as its own struct reads it.
#[derive(Deserialize)]
struct AnyItem<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Text<'a>>,
    #[serde(default, deserialize_with = "null_default", borrow)]
    content: Vec<ContentIn<'a>>,
    #[serde(default, deserialize_with = "null_default")]
    call_id: String,
    name: Option<String>,
    arguments: Option<String>,
    /// Borrowed from the body, and kept by the items that need it.
    #[serde(borrow)]
    id: Option<Text<'a>>,
    #[serde(default, deserialize_with = "null_default")]
    summary: Vec<SummaryText>,
    #[serde(default)]
    encrypted_content: Option<String>,
}

impl AnyItem<'_> {
    /// The item, when it is of a kind golem reads and has what that kind needs.
    fn known(self) -> Option<Item> {
        match self.kind.as_deref()? {
            "message" => Some(Item::Message(MessageItem {
                id: self.id.map(|id| id.0.into_owned()),
                content: self
                    .content
                    .into_iter()
                    .map(ContentIn::known)
                    .collect::<Option<_>>()?,
            })),
            "function_call" => Some(Item::FunctionCall(FunctionCallItem {
                id: self.id.map(|id| id.0.into_owned()),
                call_id: self.call_id,
                name: self.name?,
                arguments: self.arguments?,
            })),
            "reasoning" => Some(Item::Reasoning(ReasoningItem {
                id: self.id?.0.into_owned(),
                summary: self.summary,
                content: self
                    .content
                    .into_iter()
                    .filter(|content| content.kind.as_deref() == Some("reasoning_text"))
                    .map(|content| SummaryText {
                        text: content.text.unwrap_or_default(),
                    })
                    .collect(),
                encrypted_content: self.encrypted_content,
            })),
            _ => None,
        }
    }
}

/// A `message` item's content, read in one pass with [`AnyItem`]: the kinds' fields at
/// once, without the buffering an internally tagged enum does.
#[derive(Deserialize)]
struct ContentIn<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Text<'a>>,
    text: Option<String>,
    #[serde(default, deserialize_with = "text_only")]
    refusal: Option<String>,
}

impl ContentIn<'_> {
    /// The content as [`MessageContent`] reads it, when it reads as that would.
    fn known(self) -> Option<MessageContent> {
        match self.kind.as_deref()? {
            "output_text" => Some(MessageContent::OutputText { text: self.text? }),
            "refusal" => Some(MessageContent::Refusal {
                refusal: self.refusal,
            }),
            _ => Some(MessageContent::Other),
        }
    }
}

/// A `message` output item.
#[derive(Deserialize)]
struct MessageItem {
    #[serde(default)]
    id: Option<String>,
    #[serde(default, deserialize_with = "null_default")]
    content: Vec<MessageContent>,
}

/// A `function_call` output item.
#[derive(Deserialize)]
struct FunctionCallItem {
    #[serde(default)]
    id: Option<String>,
    #[serde(default, deserialize_with = "null_default")]
    call_id: String,
    name: String,
    #[serde(default = "empty_arguments")]
    arguments: String,
}

/// A `reasoning` output item.
#[derive(Deserialize)]
struct ReasoningItem {
    id: String,
    #[serde(default, deserialize_with = "null_default")]
    summary: Vec<SummaryText>,
    /// The raw reasoning (`reasoning_text`), which servers of open models (gpt-oss on
    /// vLLM) send where OpenAI sends a summary.
    #[serde(default, deserialize_with = "null_default")]
    content: Vec<SummaryText>,
    #[serde(default)]
    encrypted_content: Option<String>,
}

fn empty_arguments() -> String {
    "{}".to_owned()
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum MessageContent {
    OutputText {
        text: String,
    },
    Refusal {
        #[serde(default, deserialize_with = "text_only")]
        refusal: Option<String>,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct SummaryText {
    #[serde(default)]
    text: String,
}

#[derive(Deserialize)]
struct ResponseUsage {
    #[serde(default, deserialize_with = "null_default")]
    input_tokens: u64,
    #[serde(default, deserialize_with = "null_default")]
    output_tokens: u64,
    #[serde(default, deserialize_with = "null_default")]
    input_tokens_details: InputTokensDetails,
    #[serde(default, deserialize_with = "null_default")]
    output_tokens_details: OutputTokensDetails,
}

#[derive(Deserialize, Default)]
struct InputTokensDetails {
    #[serde(default, deserialize_with = "null_default")]
    cached_tokens: u64,
    #[serde(default, deserialize_with = "null_default")]
    cache_write_tokens: u64,
}

#[derive(Deserialize, Default)]
struct OutputTokensDetails {
    #[serde(default, deserialize_with = "null_default")]
    reasoning_tokens: u64,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(output: serde_json::Value) -> Result<ModelResponse, String> {
        let body = json!({"id": "resp_1", "status": "completed", "output": output});
        parse(
            body.to_string().as_bytes(),
            &RequestParams::text(Vec::new()),
            false,
        )
    }

    #[test]
    fn an_item_read_in_one_pass_is_read_as_its_kinds_own_struct() {
        let response = read(json!([
            {"type": "function_call", "id": "fc_0", "call_id": "call_0", "name": "roll", "arguments": "{}"},
            {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Roll."}]},
            {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "roll", "arguments": "{\"n\":2}"},
            {"type": "function_call", "call_id": "call_2", "name": "roll"},
            {"type": "function_call", "id": "fc_3", "call_id": "call_3", "name": "roll", "arguments": "{}", "content": "not a list"},
            {"type": "message", "id": "msg_4", "content": [{"type": "output_text", "text": "Rolled."}]},
            {"type": "web_search_call", "id": "ws_1", "status": "completed"}
        ]))
        .expect("readable");
        // The items after the reasoning item keep their ids, whichever way they are read.
        assert_eq!(
            response.parts,
            [
                ResponsePart::tool_call("roll", "{}", "call_0"),
                ResponsePart::Thinking(ThinkingPart {
                    content: "Roll.".into(),
                    signature: None,
                    provider: Some(PROVIDER.into()),
                    id: Some("rs_1".into()),
                }),
                ResponsePart::ToolCall(
                    ToolCallPart::new("roll", "{\"n\":2}", "call_1").with_id("fc_1")
                ),
                ResponsePart::tool_call("roll", "{}", "call_2"),
                ResponsePart::ToolCall(ToolCallPart::new("roll", "{}", "call_3").with_id("fc_3")),
                ResponsePart::Text(TextPart::new("Rolled.").with_id("msg_4")),
                ResponsePart::Provider(ProviderPart::new(
                    PROVIDER,
                    json!({"type": "web_search_call", "id": "ws_1", "status": "completed"})
                )),
            ]
        );
    }

    #[test]
    fn raw_reasoning_is_read_where_there_is_no_summary() {
        // gpt-oss on vLLM: the reasoning itself, as `reasoning_text`.
        let item = json!({"type": "reasoning", "id": "rs_1", "summary": [], "content": [
            {"type": "reasoning_text", "text": "Two dice"}, {"type": "reasoning_text", "text": ", summed."}
        ]});
        // A field the one-pass read takes otherwise sends the item to its own struct.
        let mut by_item = item.clone();
        by_item["name"] = json!(7);
        for item in [item, by_item] {
            let response = read(json!([item])).expect("readable");
            let ResponsePart::Thinking(thinking) = &response.parts[0] else {
                panic!("{response:?}");
            };
            assert_eq!(thinking.content, "Two dice\n\n, summed.");
        }
    }

    #[test]
    fn a_refusal_after_reasoning_stands_in_its_place_with_its_id() {
        let response = read(json!([
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "message", "id": "msg_1", "content": [{"type": "refusal", "refusal": "No."}]}
        ]))
        .expect("readable");
        assert_eq!(response.finish_reason, Some(FinishReason::ContentFilter));
        assert_eq!(
            response.parts[1],
            ResponsePart::Text(TextPart::new("No.").with_id("msg_1"))
        );
    }

    #[test]
    fn a_messages_content_reads_alike_in_one_pass_and_item_by_item() {
        let message = json!({"type": "message", "id": "msg_1", "role": "assistant", "content": [
            {"type": "output_text", "text": "Six", "annotations": []},
            {"type": "refusal", "refusal": "No."},
            {"type": "output_audio", "text": 7},
            {"type": "output_text", "text": "."}
        ]});
        // The content of another kind whose `text` is no string sends the item to the
        // item-by-item read, which skips it as before.
        let by_item = read(json!([message])).expect("readable");
        assert_eq!(by_item.parts, [ResponsePart::text("Six.")]);
        let mut one_pass = message.clone();
        one_pass["content"][2]["text"] = json!("seven");
        assert_eq!(read(json!([one_pass])).expect("readable"), by_item);
    }

    #[test]
    fn an_item_that_is_not_as_its_kind_should_be_is_refused_with_what_is_wrong() {
        for (item, error) in [
            (json!({"id": "x"}), "an output item has no type"),
            (
                json!({"type": "function_call", "call_id": "call_1", "arguments": "{}"}),
                "a `function_call` output item cannot be read: missing field `name`",
            ),
            (
                json!({"type": "function_call", "name": "roll", "arguments": null}),
                "a `function_call` output item cannot be read: invalid type: null, expected a string",
            ),
            (
                json!({"type": "reasoning", "summary": []}),
                "a `reasoning` output item cannot be read: missing field `id`",
            ),
            (
                json!({"type": "message", "content": [{"type": "output_text", "text": null}]}),
                "a `message` output item cannot be read: invalid type: null, expected a string",
            ),
            (
                json!({"type": "message", "content": [{"text": "Six."}]}),
                "a `message` output item cannot be read: missing field `type`",
            ),
        ] {
            assert_eq!(read(json!([item])).unwrap_err(), error);
        }
    }
}
