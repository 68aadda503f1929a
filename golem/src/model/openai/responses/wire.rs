//! The Responses API request: golem's messages mapped to input items, and the body written
//! from them (the response is read in `read`).

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use super::super::super::json_out;
use super::super::super::media::{Accepts, At, MB};
use super::super::super::provider::{ToolUse, request_settings, tool_use};
use super::super::super::{
    MediaKind, Message, ModelError, ModelSettings, RequestParams, RequestPart, ResponsePart,
    ThinkingPart, UserContent,
};
use super::super::PROVIDER;
use super::Responses;
use crate::output::OutputMode;
use crate::schema::{is_strict_compatible, to_strict_schema};
use crate::tool::ToolDefinition;

/// The request body for `messages` and `params`, written straight into a buffer of
/// `capacity` bytes to start with (see [`json_out`]).
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
    if wire.openai
        && settings
            .max_tokens
            .is_some_and(|max| max < MIN_OUTPUT_TOKENS)
    {
        return Err(ModelError::other(format!(
            "the OpenAI Responses API takes a max_output_tokens of {MIN_OUTPUT_TOKENS} or more: \
             raise ModelSettings::max_tokens"
        )));
    }
    let forms = wire.tool_forms.for_params(params, |tool| {
        let strict = wire
            .strict_tools
            .then(|| to_strict_schema(&tool.parameters));
        serde_json::value::to_raw_value(&FunctionTool::new(tool, strict.as_ref()))
    })?;
    let choice = tool_use(messages, params, settings.tool_choice.as_ref());
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
    let mut out = Vec::with_capacity(capacity);
    out.extend_from_slice(b"{\"model\":");
    json_out::string(&mut out, model);
    if let Some(instructions) = &params.instructions {
        out.extend_from_slice(b",\"instructions\":");
        json_out::string(&mut out, instructions);
    }
    out.extend_from_slice(b",\"input\":[");
    write_input(&mut out, messages, wire.store, wire.takes_reasoning(model))?;
    out.push(b']');
    if !forms.is_empty() {
        out.extend_from_slice(b",\"tools\":");
        json_out::raw_list(&mut out, &forms);
    }
    if let Some(choice) = choice {
        out.extend_from_slice(b",\"tool_choice\":");
        match choice {
            ToolUse::Auto => out.extend_from_slice(b"\"auto\""),
            ToolUse::None => out.extend_from_slice(b"\"none\""),
            ToolUse::Required => out.extend_from_slice(b"\"required\""),
            ToolUse::Tool(name) => {
                out.extend_from_slice(b"{\"type\":\"function\",\"name\":");
                json_out::string(&mut out, name);
                out.push(b'}');
            }
        }
    }
    json_out::field(
        &mut out,
        b",\"parallel_tool_calls\":",
        settings
            .parallel_tool_calls
            .filter(|_| !forms.is_empty())
            .as_ref(),
    )?;
    json_out::field(&mut out, b",\"text\":", text.as_ref())?;
    json_out::field(&mut out, b",\"reasoning\":", reasoning.as_ref())?;
    json_out::field(
        &mut out,
        b",\"temperature\":",
        settings.temperature.as_ref(),
    )?;
    json_out::field(&mut out, b",\"top_p\":", settings.top_p.as_ref())?;
    json_out::field(
        &mut out,
        b",\"max_output_tokens\":",
        settings.max_tokens.as_ref(),
    )?;
    if wire.store {
        out.extend_from_slice(b",\"store\":true");
    } else {
        out.extend_from_slice(b",\"store\":false");
    }
    // Nothing stored: the reasoning comes back encrypted, to be sent with the next request.
    // What the user asks to include joins it, rather than replacing it.
    let encrypted = wire
        .asks_encrypted_reasoning(model)
        .then_some(ENCRYPTED_REASONING);
    let extra_include = settings
        .extra_body
        .get("include")
        .filter(|include| !include.is_null());
    if encrypted.is_some() || extra_include.is_some() {
        let mut include: Vec<Value> = encrypted.map(Value::from).into_iter().collect();
        let more = match extra_include {
            Some(Value::Array(more)) => more.as_slice(),
            more => more.map(std::slice::from_ref).unwrap_or_default(),
        };
        for value in more {
            if !include.contains(value) {
                include.push(value.clone());
            }
        }
        out.extend_from_slice(b",\"include\":");
        json_out::value(&mut out, &include)?;
    }
    if stream {
        out.extend_from_slice(b",\"stream\":true");
    }
    // The user's `include` is written above.
    json_out::close_with_extra(out, &settings.extra_body, &["include"])
}

/// The smallest `max_output_tokens` OpenAI's API takes.
const MIN_OUTPUT_TOKENS: u32 = 16;

/// What a request that stores nothing includes, to send the reasoning back.
const ENCRYPTED_REASONING: &str = "reasoning.encrypted_content";

/// The history as input items. A call and its result are paired by `call_id`; reasoning
/// items go where they came, before the calls they led to, when they can be sent back:
/// with their encrypted content when OpenAI stores nothing (`store`), by id when it does,
/// and only to a model that `reasons`.
fn write_input(
    body: &mut Vec<u8>,
    messages: &[Message],
    store: bool,
    reasons: bool,
) -> Result<(), ModelError> {
    let mut out = Items { body, count: 0 };
    for (index, message) in messages.iter().enumerate() {
        match message {
            Message::Request(request) => {
                for (part_index, part) in request.parts.iter().enumerate() {
                    let at = At {
                        provider: PROVIDER,
                        message: index,
                        part: part_index,
                    };
                    out.push(match part {
                        RequestPart::SystemPrompt(p) => Item::Message {
                            role: "system",
                            content: Content::Text(&p.content),
                        },
                        RequestPart::UserPrompt(p) => Item::Message {
                            role: "user",
                            content: match p.content.as_slice() {
                                [UserContent::Text(text)] => Content::Text(text),
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
                                output: Content::Returned(&p.content),
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
                                output: Content::Pieces(p.model_text_pieces()),
                            },
                            None => Item::Message {
                                role: "user",
                                content: Content::Pieces(p.model_text_pieces()),
                            },
                        },
                    })?;
                }
            }
            Message::Response(response) => {
                let before = out.count;
                // The items that followed a reasoning item go with their ids when it goes,
                // and without them when it stays out, as OpenAI pairs them.
                let reasoned = reasons
                    && response
                        .parts
                        .iter()
                        .any(|part| sends_reasoning(part, store));
                // A built-in tool's item (`web_search_call`) is its id, the state OpenAI
                // keeps: with its reasoning left out, OpenAI refuses it, so it stays out too.
                let reasoning_left_out = !reasoned
                    && response.parts.iter().any(|part| {
                        matches!(part, ResponsePart::Thinking(ThinkingPart { provider, id: Some(_), .. })
                            if provider.as_deref() == Some(PROVIDER))
                    });
                for part in &response.parts {
                    match part {
                        ResponsePart::Text(p) if p.content.is_empty() => {}
                        ResponsePart::Text(p) => match p.id.as_deref().filter(|_| reasoned) {
                            Some(id) => out.push(Item::OutputMessage {
                                id,
                                text: &p.content,
                            })?,
                            None => out.push(Item::Message {
                                role: "assistant",
                                content: Content::Text(&p.content),
                            })?,
                        },
                        ResponsePart::ToolCall(call) => {
                            out.push(Item::FunctionCall {
                                id: call.id.as_deref().filter(|_| reasoned),
                                call_id: &call.tool_call_id,
                                name: &call.tool_name,
                                arguments: &call.args,
                            })?;
                        }
                        ResponsePart::Thinking(ThinkingPart {
                            content,
                            signature,
                            id: Some(id),
                            ..
                        }) if reasons && sends_reasoning(part, store) => {
                            out.push(Item::Reasoning {
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
                            })?;
                        }
                        // Reasoning of other providers and of Chat Completions has no place
                        // in the input.
                        ResponsePart::Thinking(_) => {}
                        ResponsePart::Provider(part)
                            if part.provider == PROVIDER
                                && !(reasoning_left_out && part.data.get("id").is_some()) =>
                        {
                            out.push(Item::Raw(&part.data))?;
                        }
                        ResponsePart::Provider(_) => {}
                    }
                }
                // An empty response (kept as evidence for a rejection) goes as an empty
                // answer, so the turns stay in order.
                if out.count == before {
                    out.push(Item::Message {
                        role: "assistant",
                        content: Content::Text(""),
                    })?;
                }
            }
        }
    }
    Ok(())
}

/// Whether `part` is reasoning this wire sends back: OpenAI's, with its id, and with its
/// encrypted content unless OpenAI stored it (`store`).
fn sends_reasoning(part: &ResponsePart, store: bool) -> bool {
    matches!(
        part,
        ResponsePart::Thinking(ThinkingPart { provider, id: Some(_), signature, .. })
            if provider.as_deref() == Some(PROVIDER) && (store || signature.is_some())
    )
}

/// The input items being written, with the count so far.
struct Items<'o> {
    body: &'o mut Vec<u8>,
    count: usize,
}

impl Items<'_> {
    fn push(&mut self, item: Item<'_>) -> Result<(), ModelError> {
        if self.count > 0 {
            self.body.push(b',');
        }
        self.count += 1;
        item.write(self.body)
    }
}

/// An input item: one golem builds, or a provider part sent back as it came.
enum Item<'a> {
    Message {
        role: &'static str,
        content: Content<'a>,
    },
    /// An assistant's text as the output item it came in, with its id.
    OutputMessage {
        id: &'a str,
        text: &'a str,
    },
    FunctionCall {
        id: Option<&'a str>,
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
        encrypted_content: Option<&'a str>,
    },
    Raw(&'a Value),
}

impl Item<'_> {
    fn write(&self, out: &mut Vec<u8>) -> Result<(), ModelError> {
        match self {
            Item::Message { role, content } => {
                out.extend_from_slice(b"{\"type\":\"message\",\"role\":\"");
                out.extend_from_slice(role.as_bytes());
                out.extend_from_slice(b"\",\"content\":");
                content.write(out)?;
            }
            Item::OutputMessage { id, text } => {
                out.extend_from_slice(b"{\"type\":\"message\",\"role\":\"assistant\",\"id\":");
                json_out::string(out, id);
                out.extend_from_slice(
                    b",\"status\":\"completed\",\"content\":[{\"type\":\"output_text\",\"text\":",
                );
                json_out::string(out, text);
                out.extend_from_slice(b",\"annotations\":[]}]");
            }
            Item::FunctionCall {
                id,
                call_id,
                name,
                arguments,
            } => {
                out.extend_from_slice(b"{\"type\":\"function_call\",");
                if let Some(id) = id {
                    out.extend_from_slice(b"\"id\":");
                    json_out::string(out, id);
                    out.push(b',');
                }
                out.extend_from_slice(b"\"call_id\":");
                json_out::string(out, call_id);
                out.extend_from_slice(b",\"name\":");
                json_out::string(out, name);
                out.extend_from_slice(b",\"arguments\":");
                json_out::string(out, arguments);
            }
            Item::FunctionCallOutput { call_id, output } => {
                out.extend_from_slice(b"{\"type\":\"function_call_output\",\"call_id\":");
                json_out::string(out, call_id);
                out.extend_from_slice(b",\"output\":");
                output.write(out)?;
            }
            Item::Reasoning {
                id,
                summary,
                encrypted_content,
            } => {
                out.extend_from_slice(b"{\"type\":\"reasoning\",\"id\":");
                json_out::string(out, id);
                out.extend_from_slice(b",\"summary\":");
                json_out::value(out, summary)?;
                if let Some(encrypted) = encrypted_content {
                    out.extend_from_slice(b",\"encrypted_content\":");
                    json_out::string(out, encrypted);
                }
            }
            Item::Raw(value) => return json_out::value(out, value),
        }
        out.push(b'}');
        Ok(())
    }
}

/// A message's content, or a function call's output: text, or content parts.
enum Content<'a> {
    Text(&'a str),
    /// A text in pieces (a rejection's feedback), written as one string.
    Pieces([&'a str; 3]),
    /// A tool's result as the model reads it (see `ToolReturnPart::model_text`).
    Returned(&'a Value),
    Parts(Vec<InputContent<'a>>),
}

impl Content<'_> {
    fn write(&self, out: &mut Vec<u8>) -> Result<(), ModelError> {
        match self {
            Content::Text(text) => {
                json_out::string(out, text);
                Ok(())
            }
            Content::Pieces(pieces) => {
                json_out::string_of(out, pieces);
                Ok(())
            }
            Content::Returned(value) => json_out::value_text(out, value),
            Content::Parts(parts) => json_out::value(out, parts),
        }
    }
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
        encoded: false,
    },
    Accepts {
        kind: MediaKind::Document,
        types: &["application/pdf"],
        max_bytes: 32 * MB,
        encoded: false,
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
            // A `data:` URL holds the file itself: it goes as the file's data, as bytes do.
            UserContent::DocumentUrl(document) if document.url.starts_with("data:") => {
                InputContent::File {
                    filename: Some("document.pdf"),
                    file_data: Some(document.url.clone()),
                    file_url: None,
                }
            }
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
