//! Reading a Responses API response into golem's parts: its output items, each read as its
//! kind's own struct (a kind golem does not read is kept whole), the status and the usage.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::super::super::provider::{decode, without_position};
use super::super::super::{
    FinishReason, ModelResponse, ProviderPart, RequestParams, ResponsePart, ThinkingPart,
};
use super::super::PROVIDER;
use super::super::wire::null_default;
use crate::schema::drop_added_nulls;
use crate::usage::RequestUsage;

/// Reads a response. With strict tools, the `null`s the strict form made the model write
/// for optional properties are removed from function-call arguments.
pub(in crate::model) fn parse(
    body: &[u8],
    params: &RequestParams,
    strict_tools: bool,
) -> Result<ModelResponse, String> {
    let response: ResponseBody = decode(body, "a response")?;
    if response.status.as_deref() == Some("failed") {
        let error = response.error.unwrap_or_default();
        return Err(format!(
            "the response failed: {}: {}",
            error.code.as_deref().unwrap_or("error"),
            error.message.as_deref().unwrap_or("no message")
        ));
    }
    let mut parts = Vec::with_capacity(response.output.len());
    let mut refused = false;
    let mut called = false;
    for item in &response.output {
        let Ok(Typed { kind: Some(kind) }) = serde_json::from_str::<Typed<'_>>(item.get()) else {
            return Err("an output item has no type".to_owned());
        };
        // Each kind is read as its own struct: an internally tagged enum would buffer the
        // item first to find its tag, which is known already.
        let text = item.get();
        let read = |error: serde_json::Error| {
            format!(
                "a `{kind}` output item cannot be read: {}",
                without_position(&error)
            )
        };
        match &*kind {
            "message" => {
                let MessageItem { content } = serde_json::from_str(text).map_err(read)?;
                let mut text: Option<String> = None;
                for content in content {
                    match content {
                        MessageContent::OutputText { text: more } => {
                            text.get_or_insert_with(String::new).push_str(&more);
                        }
                        MessageContent::Refusal {} => refused = true,
                        MessageContent::Other => {}
                    }
                }
                if let Some(text) = text.filter(|text| !text.is_empty()) {
                    parts.push(ResponsePart::text(text));
                }
            }
            "function_call" => {
                let FunctionCallItem {
                    call_id,
                    name,
                    mut arguments,
                } = serde_json::from_str(text).map_err(read)?;
                called = true;
                if strict_tools && arguments.contains("null") {
                    arguments = without_added_nulls(arguments, &name, params);
                }
                parts.push(ResponsePart::tool_call(name, arguments, call_id));
            }
            "reasoning" => {
                let ReasoningItem {
                    id,
                    summary,
                    encrypted_content,
                } = serde_json::from_str(text).map_err(read)?;
                let content = summary
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
            _ => {
                // Built-in tools' items and whatever comes next: kept to be sent back.
                let item: Value = serde_json::from_str(text).map_err(read)?;
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
        _ if refused
            && !parts
                .iter()
                .any(|part| matches!(part, ResponsePart::Text(_))) =>
        {
            FinishReason::ContentFilter
        }
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

/// `args` without the `null`s the strict form of `tool`'s schema added; as they were when
/// they are not JSON or hold no such `null`.
fn without_added_nulls(args: String, tool: &str, params: &RequestParams) -> String {
    let Some(definition) = params.all_tools().find(|t| t.name == tool) else {
        return args;
    };
    let Ok(mut value) = serde_json::from_str::<Value>(&args) else {
        return args;
    };
    if drop_added_nulls(&mut value, &definition.parameters) {
        value.to_string()
    } else {
        args
    }
}

#[derive(Deserialize)]
struct ResponseBody {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default, deserialize_with = "null_default")]
    error: Option<ResponseError>,
    #[serde(default, deserialize_with = "null_default")]
    incomplete_details: Option<IncompleteDetails>,
    /// Read item by item, so unknown kinds are kept whole.
    #[serde(default, deserialize_with = "null_default")]
    output: Vec<Box<RawValue>>,
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
    kind: Option<Cow<'a, str>>,
}

/// A `message` output item.
#[derive(Deserialize)]
struct MessageItem {
    #[serde(default, deserialize_with = "null_default")]
    content: Vec<MessageContent>,
}

/// A `function_call` output item.
#[derive(Deserialize)]
struct FunctionCallItem {
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
    Refusal {},
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
