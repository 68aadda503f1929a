//! The Responses wire format: the request body golem sends, the response it reads, and the
//! mapping between them and golem's messages.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::super::super::media::{Accepts, At, MB};
use super::super::super::provider::{
    ToolUse, decode, request_settings, tool_use, without_position,
};
use super::super::super::{
    FinishReason, MediaKind, Message, ModelError, ModelResponse, ModelSettings, ProviderPart,
    RequestParams, RequestPart, ResponsePart, ThinkingPart, UserContent,
};
use super::super::PROVIDER;
use super::super::wire::null_default;
use super::Responses;
use crate::output::OutputMode;
use crate::schema::{drop_added_nulls, is_strict_compatible, to_strict_schema};
use crate::tool::ToolDefinition;
use crate::usage::RequestUsage;

/// What a request asks to be included when OpenAI stores nothing: the reasoning, encrypted,
/// to be sent back with the next request.
const ENCRYPTED_REASONING: &[&str] = &["reasoning.encrypted_content"];

/// The request body for `messages` and `params`.
///
/// # Errors
/// Settings the Responses API has no field for (stop sequences, a seed) are refused before
/// anything is sent, rather than dropped.
pub(super) fn body(
    wire: &Responses,
    model: &str,
    provider_settings: &ModelSettings,
    messages: &[Message],
    params: &RequestParams,
    stream: bool,
    capacity: usize,
) -> Result<Vec<u8>, ModelError> {
    let settings = request_settings(provider_settings, params);
    if settings
        .stop_sequences
        .as_ref()
        .is_some_and(|s| !s.is_empty())
    {
        return Err(ModelError::other(
            "the OpenAI Responses API takes no stop sequences: unset ModelSettings::stop_sequences",
        ));
    }
    if settings.seed.is_some() {
        return Err(ModelError::other(
            "the OpenAI Responses API takes no seed: unset ModelSettings::seed",
        ));
    }
    let forms = wire.tool_forms.get(params.all_tools(), |tool| {
        let strict = wire
            .strict_tools
            .then(|| to_strict_schema(&tool.parameters));
        serde_json::value::to_raw_value(&FunctionTool::new(tool, strict.as_ref()))
    })?;
    let tools: Vec<&RawValue> = forms.iter().map(|form| &**form).collect();
    let has_tools = !tools.is_empty();
    let tool_choice = tool_use(messages, params, settings.tool_choice.as_ref()).map(tool_choice);
    let text = match (&params.output_mode, &params.output_schema) {
        (OutputMode::Native, Some(schema)) => Some(TextConfig {
            format: TextFormat {
                kind: "json_schema",
                name: &schema.name,
                description: schema.description.as_deref(),
                strict: is_strict_compatible(&schema.schema),
                schema: &schema.schema,
            },
        }),
        _ => None,
    };
    let reasoning = (wire.reasoning_effort.is_some() || wire.reasoning_summary.is_some())
        .then_some(Reasoning {
            effort: wire.reasoning_effort.as_deref(),
            summary: wire.reasoning_summary.as_deref(),
        });
    let request = ResponsesRequest {
        model,
        instructions: params.instructions.as_deref(),
        input: input_items(messages, wire.store)?,
        tools,
        tool_choice,
        parallel_tool_calls: settings.parallel_tool_calls.filter(|_| has_tools),
        text,
        reasoning,
        temperature: settings.temperature,
        top_p: settings.top_p,
        max_output_tokens: settings.max_tokens,
        store: wire.store,
        include: if wire.store { &[] } else { ENCRYPTED_REASONING },
        stream,
        extra: &settings.extra_body,
    };
    let mut body = Vec::with_capacity(capacity);
    serde_json::to_writer(&mut body, &request).map_err(ModelError::other)?;
    Ok(body)
}

/// The `tool_choice` for `choice`.
fn tool_choice(choice: ToolUse<'_>) -> ToolChoice<'_> {
    match choice {
        ToolUse::Auto => ToolChoice::Mode("auto"),
        ToolUse::None => ToolChoice::Mode("none"),
        ToolUse::Required => ToolChoice::Mode("required"),
        ToolUse::Tool(name) => ToolChoice::Function {
            kind: "function",
            name,
        },
    }
}

/// A `tool_choice`: a mode, or the one function the model must call.
#[derive(Serialize)]
#[serde(untagged)]
enum ToolChoice<'a> {
    Mode(&'static str),
    Function {
        #[serde(rename = "type")]
        kind: &'static str,
        name: &'a str,
    },
}

/// The history as input items. A call and its result are paired by `call_id`; reasoning
/// items go where they came, before the calls they led to, when they can be sent back:
/// with their encrypted content when OpenAI stores nothing (`store`), by id when it does.
fn input_items(messages: &[Message], store: bool) -> Result<Vec<Input<'_>>, ModelError> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    for (index, message) in messages.iter().enumerate() {
        match message {
            Message::Request(request) => {
                for (part_index, part) in request.parts.iter().enumerate() {
                    let at = At {
                        provider: PROVIDER,
                        message: index,
                        part: part_index,
                    };
                    out.push(Input::Item(match part {
                        RequestPart::SystemPrompt(p) => Item::Message {
                            role: "system",
                            content: Content::Text(Cow::Borrowed(&p.content)),
                        },
                        RequestPart::UserPrompt(p) => Item::Message {
                            role: "user",
                            content: match p.content.as_slice() {
                                [UserContent::Text(text)] => Content::Text(Cow::Borrowed(text)),
                                content => {
                                    let mut parts = Vec::with_capacity(content.len());
                                    input_content(at, content, "in a message", &mut parts)?;
                                    Content::Parts(parts)
                                }
                            },
                        },
                        RequestPart::ToolReturn(p) if p.media.is_empty() => {
                            Item::FunctionCallOutput {
                                call_id: &p.tool_call_id,
                                output: Content::Text(p.model_text()),
                            }
                        }
                        RequestPart::ToolReturn(p) => {
                            let mut parts = vec![InputContent::Text {
                                text: p.model_text(),
                            }];
                            input_content(at, &p.media, "in a function call output", &mut parts)?;
                            Item::FunctionCallOutput {
                                call_id: &p.tool_call_id,
                                output: Content::Parts(parts),
                            }
                        }
                        RequestPart::RetryPrompt(p) => match &p.tool_call_id {
                            Some(id) => Item::FunctionCallOutput {
                                call_id: id,
                                output: Content::Text(Cow::Owned(p.model_text())),
                            },
                            None => Item::Message {
                                role: "user",
                                content: Content::Text(Cow::Owned(p.model_text())),
                            },
                        },
                    }));
                }
            }
            Message::Response(response) => {
                let before = out.len();
                for part in &response.parts {
                    match part {
                        ResponsePart::Text(p) if p.content.is_empty() => {}
                        ResponsePart::Text(p) => out.push(Input::Item(Item::Message {
                            role: "assistant",
                            content: Content::Text(Cow::Borrowed(&p.content)),
                        })),
                        ResponsePart::ToolCall(call) => {
                            out.push(Input::Item(Item::FunctionCall {
                                call_id: &call.tool_call_id,
                                name: &call.tool_name,
                                arguments: &call.args,
                            }));
                        }
                        ResponsePart::Thinking(ThinkingPart {
                            content,
                            signature,
                            provider,
                            id: Some(id),
                            ..
                        }) if provider.as_deref() == Some(PROVIDER) => {
                            // Without its encrypted content, a reasoning item OpenAI did
                            // not store cannot be sent back.
                            if store || signature.is_some() {
                                out.push(Input::Item(Item::Reasoning {
                                    id,
                                    summary: if content.is_empty() {
                                        Vec::new()
                                    } else {
                                        vec![Summary {
                                            kind: "summary_text",
                                            text: content,
                                        }]
                                    },
                                    encrypted_content: signature.as_deref().filter(|_| !store),
                                }));
                            }
                        }
                        // Reasoning of other providers and of Chat Completions has no place
                        // in the input.
                        ResponsePart::Thinking(_) => {}
                        ResponsePart::Provider(part) if part.provider == PROVIDER => {
                            out.push(Input::Raw(&part.data));
                        }
                        ResponsePart::Provider(_) => {}
                    }
                }
                // An empty response (kept as evidence for a rejection) goes as an empty
                // answer, so the turns stay in order.
                if out.len() == before {
                    out.push(Input::Item(Item::Message {
                        role: "assistant",
                        content: Content::Text(Cow::Borrowed("")),
                    }));
                }
            }
        }
    }
    Ok(out)
}

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

#[derive(Serialize)]
struct ResponsesRequest<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    instructions: Option<&'a str>,
    input: Vec<Input<'a>>,
    /// Each tool's serialized form, built once per tool definition.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<ToolChoice<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<TextConfig<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<Reasoning<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    store: bool,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    include: &'static [&'static str],
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    #[serde(flatten)]
    extra: &'a Map<String, Value>,
}

/// An input item: one golem builds, or a provider part sent back as it came.
#[derive(Serialize)]
#[serde(untagged)]
enum Input<'a> {
    Item(Item<'a>),
    Raw(&'a Value),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Item<'a> {
    Message {
        role: &'static str,
        content: Content<'a>,
    },
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: &'a str,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: Content<'a>,
    },
    Reasoning {
        id: &'a str,
        summary: Vec<Summary<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<&'a str>,
    },
}

/// A message's content, or a function call's output: text, or content parts.
#[derive(Serialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<InputContent<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type")]
enum InputContent<'a> {
    #[serde(rename = "input_text")]
    Text { text: Cow<'a, str> },
    #[serde(rename = "input_image")]
    Image {
        image_url: Cow<'a, str>,
        detail: &'static str,
    },
    #[serde(rename = "input_file")]
    File {
        #[serde(skip_serializing_if = "Option::is_none")]
        filename: Option<&'static str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        file_data: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        file_url: Option<&'a str>,
    },
}

/// What the Responses API takes of each media kind (OpenAI's limits: 50 MB of images in a
/// request, 32 MB of PDF content in a request; no audio).
const ACCEPTS: &[Accepts] = &[
    Accepts {
        kind: MediaKind::Image,
        types: &["image/png", "image/jpeg", "image/gif", "image/webp"],
        max_bytes: 50 * MB,
    },
    Accepts {
        kind: MediaKind::Document,
        types: &["application/pdf"],
        max_bytes: 32 * MB,
    },
];

/// The input content for `content`, refused before sending when the Responses API does not
/// take one `where_` (in a message, in a function call output).
fn input_content<'a>(
    at: At,
    content: &'a [UserContent],
    where_: &str,
    out: &mut Vec<InputContent<'a>>,
) -> Result<(), ModelError> {
    for part in content {
        at.check(part, ACCEPTS, where_)?;
        out.push(match part {
            UserContent::Text(text) => InputContent::Text {
                text: Cow::Borrowed(text),
            },
            UserContent::ImageUrl(image) => InputContent::Image {
                image_url: Cow::Borrowed(&image.url),
                detail: "auto",
            },
            UserContent::DocumentUrl(document) => InputContent::File {
                filename: None,
                file_data: None,
                file_url: Some(&document.url),
            },
            UserContent::Binary(binary) => match binary.kind() {
                MediaKind::Image => InputContent::Image {
                    image_url: Cow::Owned(binary.data_url()),
                    detail: "auto",
                },
                _ => InputContent::File {
                    filename: Some("document.pdf"),
                    file_data: Some(binary.data_url()),
                    file_url: None,
                },
            },
        });
    }
    Ok(())
}

#[derive(Serialize)]
struct Summary<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

#[derive(Serialize)]
struct FunctionTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    parameters: &'a Value,
    strict: bool,
}

impl<'a> FunctionTool<'a> {
    /// `tool`, in strict mode when its `strict` schema is given.
    fn new(tool: &'a ToolDefinition, strict: Option<&'a Value>) -> Self {
        FunctionTool {
            kind: "function",
            name: &tool.name,
            description: tool.description.as_deref(),
            parameters: strict.unwrap_or(&tool.parameters),
            strict: strict.is_some(),
        }
    }
}

#[derive(Serialize)]
struct TextConfig<'a> {
    format: TextFormat<'a>,
}

#[derive(Serialize)]
struct TextFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    schema: &'a Value,
    strict: bool,
}

#[derive(Serialize)]
struct Reasoning<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    effort: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<&'a str>,
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
