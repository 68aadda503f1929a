//! The Messages API wire format: the request body golem sends, the response it reads,
//! and the mapping between them and golem's messages.

use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::super::json_out;
use super::super::media::{Accepts, At, MB, essence, split_data_url};
use super::super::provider::{Text, ToolUse, decode, request_settings, tool_use};
use super::super::tool_forms::ToolForms;
use super::super::{
    FinishReason, Message, ModelError, ModelResponse, ModelSettings, RequestParams, RequestPart,
    ResponsePart,
};
use super::super::{MediaKind, ProviderPart, ThinkingPart, UserContent};
use super::{DEFAULT_MAX_TOKENS, PROVIDER};
use crate::output::OutputMode;
use crate::usage::RequestUsage;

/// The request body for `messages` and `params`, written straight into a buffer of
/// `capacity` bytes to start with (see [`json_out`]): the same text `serde_json` writes for
/// the request's structs (see the tests).
pub(super) fn body(
    tool_forms: &ToolForms,
    model: &str,
    provider_settings: &ModelSettings,
    messages: &[Message],
    params: &RequestParams,
    stream: bool,
    capacity: usize,
) -> Result<Vec<u8>, ModelError> {
    let output_config = match (&params.output_mode, &params.output_schema) {
        (OutputMode::Native, Some(schema)) => {
            if let Some(path) = open_object(&schema.schema, "#") {
                return Err(ModelError::other(format!(
                    "anthropic's structured outputs close every object, so the map at {path} \
                     of the output `{}` could only be empty: use tool or prompted output \
                     for it (`OutputMode::Tool`, the default, or `OutputMode::Prompted`)",
                    schema.name
                )));
            }
            if let Some(path) = flattened_variants(&schema.schema, "#") {
                return Err(ModelError::other(format!(
                    "anthropic's structured outputs close every object, so the object at \
                     {path} of the output `{}`, whose fields its enum's variants add to \
                     (`#[serde(flatten)]`), could match nothing: use tool or prompted output \
                     for it (`OutputMode::Tool`, the default, or `OutputMode::Prompted`)",
                    schema.name
                )));
            }
            Some(OutputConfig {
                format: OutputFormat {
                    kind: "json_schema",
                    schema: output_schema(&schema.schema),
                },
            })
        }
        _ => None,
    };
    let settings = request_settings(provider_settings, params);
    let forms = tool_forms.for_params(params, |tool| {
        serde_json::value::to_raw_value(&AnthropicTool {
            name: &tool.name,
            description: tool.description.as_deref(),
            input_schema: &tool.parameters,
        })
    })?;
    let has_tools = !forms.is_empty();
    let (system, sent) = anthropic_messages(params.instructions.as_deref(), messages)?;
    let thinking_kind = settings
        .extra_body
        .get("thinking")
        .and_then(|thinking| thinking.get("type"))
        .and_then(Value::as_str);
    let asks_thinking = thinking_kind.is_some_and(|kind| kind != "disabled");
    // With thinking `enabled`, every turn of the model's begins with its thinking, and the
    // API wants the turn of a tool loop to: another provider's calls (after a fallback)
    // never do, so that request goes without thinking. (Adaptive thinking may skip it.)
    let dropped = thinking_kind == Some("enabled") && in_loop_without_thinking(&sent);
    let thinking = asks_thinking && !dropped;
    let left_out: &[&str] = if dropped { &["thinking"] } else { &[] };
    // With extended thinking on, the API refuses a forced tool (`any`, a named tool): the
    // model decides, and the run's feedback asks for the output tool if it answers in text.
    let mut tool_choice = tool_use(messages, params, settings.tool_choice.as_ref())
        .map(|choice| match choice {
            ToolUse::Required | ToolUse::Tool(_) if thinking => ToolUse::Auto,
            other => other,
        })
        .map(tool_choice);
    if let (Some(false), true) = (settings.parallel_tool_calls, has_tools) {
        let choice = tool_choice.get_or_insert_with(|| serde_json::json!({"type": "auto"}));
        // A choice of no tool takes no such flag: the API refuses it there.
        if choice["type"] != "none" {
            choice["disable_parallel_tool_use"] = Value::Bool(true);
        }
    }
    let mut out = Vec::with_capacity(capacity);
    out.extend_from_slice(b"{\"model\":");
    json_out::string(&mut out, model);
    out.extend_from_slice(b",\"max_tokens\":");
    json_out::value(
        &mut out,
        &settings.max_tokens.unwrap_or_else(|| {
            default_max_tokens(settings.extra_body.get("thinking").filter(|_| !dropped))
        }),
    )?;
    if let Some(system) = &system {
        out.extend_from_slice(b",\"system\":");
        json_out::string(&mut out, system);
    }
    out.extend_from_slice(b",\"messages\":");
    json_out::list(&mut out, &sent, |out, message| {
        out.extend_from_slice(b"{\"role\":");
        json_out::string(out, message.role);
        out.extend_from_slice(b",\"content\":");
        json_out::list(out, &message.content, |out, block| block.write(out))?;
        out.push(b'}');
        Ok(())
    })?;
    if has_tools {
        out.extend_from_slice(b",\"tools\":");
        json_out::raw_list(&mut out, &forms);
    }
    json_out::field(&mut out, b",\"tool_choice\":", tool_choice.as_ref())?;
    json_out::field(
        &mut out,
        b",\"temperature\":",
        settings.temperature.as_ref(),
    )?;
    json_out::field(&mut out, b",\"top_p\":", settings.top_p.as_ref())?;
    json_out::field(
        &mut out,
        b",\"stop_sequences\":",
        settings.stop_sequences.as_ref(),
    )?;
    json_out::field(&mut out, b",\"output_config\":", output_config.as_ref())?;
    if stream {
        out.extend_from_slice(b",\"stream\":true");
    }
    json_out::close_with_extra(out, &settings.extra_body, left_out)
}

/// Whether the last assistant message calls tools without beginning with thinking.
fn in_loop_without_thinking(messages: &[AnthropicMessage<'_>]) -> bool {
    messages
        .iter()
        .rev()
        .find(|message| message.role == "assistant")
        .is_some_and(|message| {
            message
                .content
                .iter()
                .any(|block| matches!(block, Block::ToolUse { .. }))
                && !message.content.first().is_some_and(Block::is_thinking)
        })
}

/// The fields of a Messages request the token-counting endpoint takes: the request minus
/// what only shapes the answer (`max_tokens`, sampling, `stream`), which it refuses.
const COUNTED_FIELDS: [&str; 6] = [
    "model",
    "system",
    "messages",
    "tools",
    "tool_choice",
    "thinking",
];

/// The body of a `/v1/messages/count_tokens` request for `messages` and `params`: what
/// [`body`] would send, without the fields the endpoint refuses.
pub(super) fn count_body(
    tool_forms: &ToolForms,
    model: &str,
    provider_settings: &ModelSettings,
    messages: &[Message],
    params: &RequestParams,
) -> Result<Vec<u8>, ModelError> {
    let full = body(
        tool_forms,
        model,
        provider_settings,
        messages,
        params,
        false,
        0,
    )?;
    let Value::Object(mut fields) = serde_json::from_slice(&full).map_err(ModelError::other)?
    else {
        return Err(ModelError::other(
            "a Messages request body is a JSON object",
        ));
    };
    fields.retain(|key, _| COUNTED_FIELDS.contains(&key.as_str()));
    serde_json::to_vec(&fields).map_err(ModelError::other)
}

/// Reads a token count: `{"input_tokens": n}`.
pub(super) fn parse_count(body: &[u8]) -> Result<u64, String> {
    #[derive(Deserialize)]
    struct Counted {
        input_tokens: u64,
    }
    serde_json::from_slice::<Counted>(body)
        .map(|counted| counted.input_tokens)
        .map_err(|error| format!("unreadable token count: {error}"))
}

/// Reads a message: in one pass when every content block is of a kind golem reads and reads
/// as it should; else again, block by block, so that a block of another kind is kept whole
/// and a block that cannot be read says what is wrong with it.
pub(in crate::model) fn parse(body: &[u8]) -> Result<ModelResponse, String> {
    const WHAT: &str = "a message";
    if let Ok(response) = decode::<MessagesResponse<'_, AnyBlock<'_>>>(body, WHAT)
        && let Ok(response) = respond(response, |block| block.known().ok_or_else(String::new))
    {
        return Ok(response);
    }
    respond(
        decode::<MessagesResponse<'_, Value>>(body, WHAT)?,
        read_block,
    )
}

/// Reads a content block read as JSON: a kind golem reads as its own struct, any other kept
/// whole.
fn read_block(block: Value) -> Result<ResponsePart, String> {
    let Some(kind) = block.get("type").and_then(Value::as_str) else {
        return Err("a content block has no type".to_owned());
    };
    if !matches!(kind, "text" | "tool_use" | "thinking") {
        // `redacted_thinking`, server tools, whatever comes next: kept to be echoed.
        return Ok(ResponsePart::Provider(ProviderPart {
            provider: PROVIDER.to_owned(),
            data: block,
        }));
    }
    let kind = kind.to_owned();
    let block: ContentBlock = serde_json::from_value(block)
        .map_err(|error| format!("a `{kind}` content block cannot be read: {error}"))?;
    Ok(match block {
        ContentBlock::Text { text } => ResponsePart::text(text),
        ContentBlock::ToolUse { id, name, input } => ResponsePart::tool_call(name, input, id),
        ContentBlock::Thinking {
            thinking,
            signature,
        } => ResponsePart::Thinking(ThinkingPart {
            content: thinking,
            signature,
            provider: Some(PROVIDER.to_owned()),
            id: None,
        }),
    })
}

/// The message, its content blocks read by `read`.
fn respond<B>(
    response: MessagesResponse<'_, B>,
    read: impl Fn(B) -> Result<ResponsePart, String>,
) -> Result<ModelResponse, String> {
    let parts = response
        .content
        .into_iter()
        .map(read)
        .collect::<Result<Vec<_>, _>>()?;
    let finish_reason = response.stop_reason.as_deref().map(|reason| match reason {
        "end_turn" | "stop_sequence" | "pause_turn" => FinishReason::Stop,
        // Cut off: at the output limit, or at the context window's (the stop reason of
        // the newer models when the input leaves no room).
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "tool_use" => FinishReason::ToolCall,
        "refusal" => FinishReason::ContentFilter,
        _ => FinishReason::Error,
    });
    let usage = &response.usage;
    let input_tokens = usage
        .input_tokens
        .saturating_add(usage.cache_creation_input_tokens.unwrap_or(0))
        .saturating_add(usage.cache_read_input_tokens.unwrap_or(0));
    Ok(ModelResponse {
        parts,
        usage: RequestUsage {
            cache_read_tokens: usage.cache_read_input_tokens.unwrap_or(0),
            cache_write_tokens: usage.cache_creation_input_tokens.unwrap_or(0),
            ..RequestUsage::new(input_tokens, usage.output_tokens)
        },
        model_name: response.model,
        provider_response_id: response.id,
        finish_reason,
    })
}

fn tool_choice(choice: ToolUse<'_>) -> Value {
    match choice {
        ToolUse::Auto => serde_json::json!({"type": "auto"}),
        ToolUse::Required => serde_json::json!({"type": "any"}),
        ToolUse::None => serde_json::json!({"type": "none"}),
        ToolUse::Tool(name) => serde_json::json!({"type": "tool", "name": name}),
    }
}

/// The system prompt (the instructions, then the history's system prompts) and the
/// alternating user/assistant messages of a history.
fn anthropic_messages<'a>(
    instructions: Option<&str>,
    messages: &'a [Message],
) -> Result<(Option<String>, Vec<AnthropicMessage<'a>>), ModelError> {
    let mut system: Option<String> = instructions.map(str::to_owned);
    let mut out: Vec<AnthropicMessage<'_>> = Vec::with_capacity(messages.len());
    for (index, message) in messages.iter().enumerate() {
        let (role, blocks) = match message {
            Message::Request(request) => {
                let mut blocks = Vec::with_capacity(request.parts.len());
                for (part_index, part) in request.parts.iter().enumerate() {
                    let at = At {
                        provider: PROVIDER,
                        message: index,
                        part: part_index,
                    };
                    match part {
                        RequestPart::SystemPrompt(p) => match &mut system {
                            Some(text) => {
                                text.push_str("\n\n");
                                text.push_str(&p.content);
                            }
                            None => system = Some(p.content.clone()),
                        },
                        RequestPart::UserPrompt(p) => {
                            media_blocks(at, &p.content, "in a message", &mut blocks)?;
                        }
                        RequestPart::ToolReturn(p) if p.media.is_empty() => {
                            blocks.push(Block::ToolResult {
                                tool_use_id: tool_use_id(&p.tool_call_id),
                                content: ToolResultContent::Returned(&p.content),
                                is_error: false,
                            });
                        }
                        RequestPart::ToolReturn(p) => {
                            let text = p.model_text();
                            let mut content = Vec::with_capacity(p.media.len() + 1);
                            if !text.trim().is_empty() {
                                content.push(Block::Text { text });
                            }
                            media_blocks(at, &p.media, "in a tool result", &mut content)?;
                            blocks.push(Block::ToolResult {
                                tool_use_id: tool_use_id(&p.tool_call_id),
                                content: ToolResultContent::Blocks(content),
                                is_error: false,
                            });
                        }
                        RequestPart::RetryPrompt(p) => match &p.tool_call_id {
                            Some(id) => blocks.push(Block::ToolResult {
                                tool_use_id: tool_use_id(id),
                                content: ToolResultContent::Pieces(p.model_text_pieces()),
                                is_error: true,
                            }),
                            None => blocks.push(Block::Text {
                                text: Cow::Owned(p.model_text()),
                            }),
                        },
                    }
                }
                ("user", blocks)
            }
            Message::Response(response) => {
                let mut blocks: Vec<Block<'_>> = response
                    .parts
                    .iter()
                    .filter_map(|part| match part {
                        // The API refuses text blocks of whitespace alone.
                        ResponsePart::Text(p) if p.content.trim().is_empty() => None,
                        ResponsePart::Text(p) => Some(Block::Text {
                            text: Cow::Borrowed(&p.content),
                        }),
                        ResponsePart::ToolCall(call) => Some(Block::ToolUse {
                            id: tool_use_id(&call.tool_call_id),
                            name: &call.tool_name,
                            // Arguments another provider sent as invalid JSON go as `{}`.
                            input: serde_json::from_str::<Map<String, Value>>(&call.args)
                                .map(Value::Object)
                                .unwrap_or_else(|_| Value::Object(Map::new())),
                        }),
                        // Only Anthropic's own, signed thinking goes back: the API checks
                        // the signature, and requires it beside tool use.
                        ResponsePart::Thinking(ThinkingPart {
                            content,
                            signature: Some(signature),
                            provider,
                            ..
                        }) if provider.as_deref().is_none_or(|p| p == PROVIDER) => {
                            Some(Block::Thinking {
                                thinking: content,
                                signature,
                            })
                        }
                        ResponsePart::Thinking(_) => None,
                        ResponsePart::Provider(part) if part.provider == PROVIDER => {
                            Some(Block::Raw(&part.data))
                        }
                        ResponsePart::Provider(_) => None,
                    })
                    .collect();
                // Nor may an assistant message end in thinking (a response that was
                // thinking alone, kept as evidence for a rejection).
                while blocks.last().is_some_and(Block::is_thinking) {
                    blocks.pop();
                }
                ("assistant", blocks)
            }
        };
        if blocks.is_empty() {
            continue;
        }
        // The API wants roles to alternate: consecutive same-role messages are merged.
        match out.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => out.push(AnthropicMessage {
                role,
                content: blocks,
            }),
        }
    }
    Ok((system, out))
}

/// What the Messages API takes of each media kind (Anthropic's limits: images of up to
/// 5 MB, documents of up to 32 MB, the request's limit; no audio).
const ACCEPTS: &[Accepts] = &[
    Accepts {
        kind: MediaKind::Image,
        types: &["image/jpeg", "image/png", "image/gif", "image/webp"],
        // The API measures an image's 5 MB on its base64 text.
        max_bytes: 5 * MB,
        encoded: true,
    },
    Accepts {
        kind: MediaKind::Document,
        types: &["application/pdf", "text/plain"],
        // The request's limit, which the base64 text counts against.
        max_bytes: 32 * MB,
        encoded: true,
    },
];

/// The blocks of `content` (a prompt's parts, a tool's media), refused before sending when
/// the Messages API does not take one `where_`.
fn media_blocks<'a>(
    at: At,
    content: &'a [UserContent],
    where_: &str,
    out: &mut Vec<Block<'a>>,
) -> Result<(), ModelError> {
    for part in content {
        at.check(part, ACCEPTS, where_)?;
        match part {
            // The API refuses empty text blocks. (A prompt of whitespace alone goes, to be
            // refused as the user's: left out, the request would end in the model's turn,
            // which the API continues.)
            UserContent::Text(text) if text.is_empty() => {}
            UserContent::Text(text) => out.push(Block::Text {
                text: Cow::Borrowed(text),
            }),
            UserContent::ImageUrl(image) => out.push(Block::Image {
                source: url_source(at, part, &image.url)?,
            }),
            UserContent::DocumentUrl(document) => out.push(Block::Document {
                source: url_source(at, part, &document.url)?,
            }),
            UserContent::Binary(binary) => {
                let source = if essence(&binary.media_type) == "text/plain" {
                    Source::Text {
                        media_type: "text/plain",
                        data: String::from_utf8_lossy(&binary.data).into_owned(),
                    }
                } else {
                    Source::Base64 {
                        media_type: essence(&binary.media_type),
                        data: Cow::Owned(binary.base64()),
                    }
                };
                out.push(match binary.kind() {
                    MediaKind::Image => Block::Image { source },
                    _ => Block::Document { source },
                });
            }
        }
    }
    Ok(())
}

/// A URL as a source: a base64 `data:` URL as its bytes (plain text as text, as the API
/// takes it), any other as a URL.
fn url_source<'a>(at: At, content: &UserContent, url: &'a str) -> Result<Source<'a>, ModelError> {
    Ok(match split_data_url(url) {
        Some((media_type, data)) if essence(media_type) == "text/plain" => {
            let bytes = BASE64
                .decode(data)
                .map_err(|_| at.refuse(content, "its `data:` URL's base64 cannot be read"))?;
            Source::Text {
                media_type: "text/plain",
                data: String::from_utf8_lossy(&bytes).into_owned(),
            }
        }
        Some((media_type, data)) => Source::Base64 {
            media_type: essence(media_type),
            data: Cow::Borrowed(data),
        },
        None => Source::Url { url },
    })
}

/// Where an image's or a document's bytes come from.
#[cfg_attr(
    test,
    derive(Serialize),
    serde(tag = "type", rename_all = "snake_case")
)]
enum Source<'a> {
    Base64 {
        media_type: Cow<'a, str>,
        data: Cow<'a, str>,
    },
    Url {
        url: &'a str,
    },
    Text {
        media_type: &'static str,
        data: String,
    },
}

/// A tool result's content: text (a tool's result as the model reads it, or a rejection's
/// feedback in its pieces, each written without being put together first), or blocks
/// (text, images, documents).
enum ToolResultContent<'a> {
    Returned(&'a Value),
    Pieces([&'a str; 3]),
    Blocks(Vec<Block<'a>>),
}

/// The content as one string or a list, as the reference for the writer.
#[cfg(test)]
impl Serialize for ToolResultContent<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ToolResultContent::Returned(Value::String(text)) => serializer.serialize_str(text),
            ToolResultContent::Returned(value) => serializer.serialize_str(&value.to_string()),
            ToolResultContent::Pieces(pieces) => serializer.serialize_str(&pieces.concat()),
            ToolResultContent::Blocks(blocks) => blocks.serialize(serializer),
        }
    }
}

/// The request's structs as serde would write them: the reference the writer above is
/// tested against, byte for byte.
#[cfg(test)]
#[derive(Serialize)]
struct MessagesRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<String>,
    messages: Vec<AnthropicMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stop_sequences: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_config: Option<OutputConfig>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    #[serde(flatten)]
    extra: &'a Map<String, Value>,
}

/// `output_config`: the JSON schema the answer's text must follow.
#[derive(Serialize)]
struct OutputConfig {
    format: OutputFormat,
}

#[derive(Serialize)]
struct OutputFormat {
    #[serde(rename = "type")]
    kind: &'static str,
    schema: Value,
}

/// Keywords structured outputs do not enforce: each moves into the description, so the
/// model still reads it (and golem's decoder still checks the answer against the original
/// schema).
const MOVED_TO_DESCRIPTION: [&str; 10] = [
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "maxItems",
    "uniqueItems",
];

/// `schema` in the subset Anthropic's structured outputs take: `oneOf` read as `anyOf`,
/// `title` and `$schema` dropped, `minItems` above 1 and the constraints of
/// [`MOVED_TO_DESCRIPTION`] written into the description instead, and every object closed
/// (`additionalProperties: false`).
pub(super) fn output_schema(schema: &Value) -> Value {
    let mut out = schema.clone();
    restrict(&mut out);
    out
}

/// Where in `schema` (a JSON pointer under `at`) an object takes properties of its own
/// (`additionalProperties` or `unevaluatedProperties` with a schema or `true`,
/// `patternProperties`): a map, which structured outputs, closing every object, would make
/// always empty.
fn open_object(schema: &Value, at: &str) -> Option<String> {
    find_schema(schema, at, &|map| {
        ["additionalProperties", "unevaluatedProperties"]
            .iter()
            .any(|key| matches!(map.get(*key), Some(Value::Object(_) | Value::Bool(true))))
            || map.contains_key("patternProperties")
    })
}

/// Where in `schema` (a JSON pointer under `at`) an object has variants beside its own
/// properties (an enum flattened into a struct): closed, as structured outputs close every
/// object, the object and its variants would forbid each other's fields.
fn flattened_variants(schema: &Value, at: &str) -> Option<String> {
    find_schema(schema, at, &|map| {
        let object = map.get("type").and_then(Value::as_str) == Some("object")
            || map.contains_key("properties");
        object
            && ["oneOf", "anyOf", "allOf"]
                .iter()
                .any(|key| map.contains_key(*key))
    })
}

/// The first place in `schema` (a JSON pointer under `at`) whose schema object `found`
/// holds for, through the schema's own children.
fn find_schema(
    schema: &Value,
    at: &str,
    found: &impl Fn(&Map<String, Value>) -> bool,
) -> Option<String> {
    match schema {
        Value::Object(map) if found(map) => Some(at.to_owned()),
        Value::Object(map) => crate::schema::find_in_children(map, |path, child| {
            find_schema(child, &format!("{at}/{path}"), found)
        }),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(index, item)| find_schema(item, &format!("{at}/{index}"), found)),
        _ => None,
    }
}

fn restrict(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            map.remove("$schema");
            map.remove("title");
            if let Some(variants) = map.remove("oneOf") {
                match map.remove("anyOf") {
                    // Both (a tagged and an untagged enum, flattened side by side): each
                    // must hold, as `allOf` of the two.
                    Some(other) => {
                        let both = [
                            serde_json::json!({"anyOf": variants}),
                            serde_json::json!({"anyOf": other}),
                        ];
                        match map.get_mut("allOf") {
                            Some(Value::Array(all)) => all.extend(both),
                            _ => {
                                map.insert("allOf".into(), Value::Array(both.into()));
                            }
                        }
                    }
                    None => {
                        map.insert("anyOf".into(), variants);
                    }
                }
            }
            let mut moved = Vec::new();
            for key in MOVED_TO_DESCRIPTION {
                if let Some(value) = map.remove(key) {
                    moved.push(format!("{key}: {value}"));
                }
            }
            if map
                .get("minItems")
                .and_then(Value::as_u64)
                .is_some_and(|n| n > 1)
                && let Some(value) = map.remove("minItems")
            {
                moved.push(format!("minItems: {value}"));
            }
            if !moved.is_empty() {
                let constraints = format!("{{{}}}", moved.join(", "));
                let description = match map.get("description").and_then(Value::as_str) {
                    Some(description) => format!("{description}\n\n{constraints}"),
                    None => constraints,
                };
                map.insert("description".into(), Value::String(description));
            }
            if crate::schema::is_object_type(map) {
                map.insert("additionalProperties".into(), Value::Bool(false));
            }
            crate::schema::each_child_mut(map, restrict);
        }
        Value::Array(items) => items.iter_mut().for_each(restrict),
        _ => {}
    }
}

#[cfg_attr(test, derive(Serialize))]
struct AnthropicMessage<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

#[cfg_attr(
    test,
    derive(Serialize),
    serde(tag = "type", rename_all = "snake_case")
)]
enum Block<'a> {
    Text {
        text: Cow<'a, str>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    ToolUse {
        id: Cow<'a, str>,
        name: &'a str,
        input: Value,
    },
    Image {
        source: Source<'a>,
    },
    Document {
        source: Source<'a>,
    },
    ToolResult {
        tool_use_id: Cow<'a, str>,
        content: ToolResultContent<'a>,
        #[cfg_attr(test, serde(skip_serializing_if = "std::ops::Not::not"))]
        is_error: bool,
    },
    /// A block kept verbatim from a response.
    #[cfg_attr(test, serde(untagged))]
    Raw(&'a Value),
}

/// `max_tokens` when the settings give none: [`DEFAULT_MAX_TOKENS`] for the answer, beyond
/// extended thinking's budget (the API refuses a `budget_tokens` that is not below
/// `max_tokens`).
fn default_max_tokens(thinking: Option<&Value>) -> u32 {
    let budget = thinking
        .and_then(|thinking| thinking.get("budget_tokens"))
        .and_then(Value::as_u64)
        .map_or(0, |budget| u32::try_from(budget).unwrap_or(u32::MAX));
    DEFAULT_MAX_TOKENS.saturating_add(budget)
}

/// A call's id as the API takes it (`^[a-zA-Z0-9_-]+$`): another provider's (Kimi's
/// `functions.roll:0`) with each other character as `_`, the same in the call and in its
/// result.
fn tool_use_id(id: &str) -> Cow<'_, str> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    if id.chars().all(allowed) {
        Cow::Borrowed(id)
    } else {
        Cow::Owned(
            id.chars()
                .map(|c| if allowed(c) { c } else { '_' })
                .collect(),
        )
    }
}

impl Block<'_> {
    /// Whether the block is reasoning: signed thinking, or a `redacted_thinking` block.
    fn is_thinking(&self) -> bool {
        match self {
            Block::Thinking { .. } => true,
            Block::Raw(raw) => raw.get("type").and_then(Value::as_str) == Some("redacted_thinking"),
            _ => false,
        }
    }

    /// Appends the block as serde would write it (see [`json_out`]).
    fn write(&self, out: &mut Vec<u8>) -> Result<(), ModelError> {
        match self {
            Block::Text { text } => {
                out.extend_from_slice(b"{\"type\":\"text\",\"text\":");
                json_out::string(out, text);
            }
            Block::Thinking {
                thinking,
                signature,
            } => {
                out.extend_from_slice(b"{\"type\":\"thinking\",\"thinking\":");
                json_out::string(out, thinking);
                out.extend_from_slice(b",\"signature\":");
                json_out::string(out, signature);
            }
            Block::ToolUse { id, name, input } => {
                out.extend_from_slice(b"{\"type\":\"tool_use\",\"id\":");
                json_out::string(out, id);
                out.extend_from_slice(b",\"name\":");
                json_out::string(out, name);
                out.extend_from_slice(b",\"input\":");
                json_out::value(out, input)?;
            }
            Block::Image { source } => {
                out.extend_from_slice(b"{\"type\":\"image\",\"source\":");
                source.write(out);
            }
            Block::Document { source } => {
                out.extend_from_slice(b"{\"type\":\"document\",\"source\":");
                source.write(out);
            }
            Block::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => {
                out.extend_from_slice(b"{\"type\":\"tool_result\",\"tool_use_id\":");
                json_out::string(out, tool_use_id);
                out.extend_from_slice(b",\"content\":");
                match content {
                    ToolResultContent::Returned(value) => json_out::value_text(out, value)?,
                    ToolResultContent::Pieces(pieces) => json_out::string_of(out, pieces),
                    ToolResultContent::Blocks(blocks) => {
                        json_out::list(out, blocks, |out, block| block.write(out))?;
                    }
                }
                if *is_error {
                    out.extend_from_slice(b",\"is_error\":true");
                }
            }
            Block::Raw(value) => return json_out::value(out, value),
        }
        out.push(b'}');
        Ok(())
    }
}

impl Source<'_> {
    /// Appends the source as serde would write it (see [`json_out`]).
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            Source::Base64 { media_type, data } => {
                out.extend_from_slice(b"{\"type\":\"base64\",\"media_type\":");
                json_out::string(out, media_type);
                out.extend_from_slice(b",\"data\":");
                json_out::string(out, data);
            }
            Source::Url { url } => {
                out.extend_from_slice(b"{\"type\":\"url\",\"url\":");
                json_out::string(out, url);
            }
            Source::Text { media_type, data } => {
                out.extend_from_slice(b"{\"type\":\"text\",\"media_type\":");
                json_out::string(out, media_type);
                out.extend_from_slice(b",\"data\":");
                json_out::string(out, data);
            }
        }
        out.push(b'}');
    }
}

#[derive(Serialize)]
struct AnthropicTool<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    input_schema: &'a Value,
}

#[derive(Deserialize)]
#[serde(bound(deserialize = "'de: 'a, B: Deserialize<'de>"))]
struct MessagesResponse<'a, B> {
    id: Option<String>,
    model: Option<String>,
    /// Each block read as [`AnyBlock`], or as JSON (so that a block of another kind is kept
    /// whole).
    content: Vec<B>,
    #[serde(borrow)]
    stop_reason: Option<Text<'a>>,
    usage: AnthropicUsage,
}

/// A content block of a kind golem reads, read in one pass: every kind's fields at once. A
/// block it cannot read, or whose fields do not make its kind's, is read by [`read_block`],
/// so that each kind is read exactly as [`ContentBlock`] reads it.
#[derive(Deserialize)]
struct AnyBlock<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Text<'a>>,
    text: Option<String>,
    id: Option<String>,
    name: Option<String>,
    #[serde(borrow)]
    input: Option<&'a RawValue>,
    thinking: Option<String>,
    signature: Option<String>,
}

impl AnyBlock<'_> {
    /// The block, when it is of a kind golem reads and has what that kind needs.
    fn known(self) -> Option<ResponsePart> {
        Some(match &*self.kind? {
            "text" => ResponsePart::text(self.text?),
            "tool_use" => {
                let args = json_out::args_text(self.input?).ok()?;
                ResponsePart::tool_call(self.name?, args, self.id?)
            }
            "thinking" => ResponsePart::Thinking(ThinkingPart {
                content: self.thinking?,
                signature: self.signature,
                provider: Some(PROVIDER.to_owned()),
                id: None,
            }),
            _ => return None,
        })
    }
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ContentBlock {
    Text {
        text: String,
    },
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    Thinking {
        thinking: String,
        #[serde(default)]
        signature: Option<String>,
    },
}

#[derive(Deserialize)]
struct AnthropicUsage {
    input_tokens: u64,
    output_tokens: u64,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::{ModelRequest, OutputSchema, ToolChoice, ToolContent};
    use crate::tool::ToolDefinition;

    fn read(content: Value) -> Result<ModelResponse, String> {
        let body = json!({
            "id": "msg_1", "model": "claude-sonnet-4-5", "content": content,
            "stop_reason": "tool_use", "usage": {"input_tokens": 5, "output_tokens": 3}
        });
        parse(body.to_string().as_bytes())
    }

    #[test]
    fn blocks_read_in_one_pass_or_block_by_block_read_alike() {
        let known = json!([
            {"type": "thinking", "thinking": "Dice.", "signature": "c2ln"},
            {"type": "text", "text": "Rolling.", "citations": null},
            {"type": "tool_use", "id": "toolu_1", "name": "roll", "input": {"n": 2, "why": "é"}}
        ]);
        let other = json!({"type": "redacted_thinking", "data": "c2VjcmV0"});
        let one_pass = read(known.clone()).expect("readable");
        let mut with_other = known.as_array().expect("a list").clone();
        with_other.push(other.clone());
        let by_block = read(Value::Array(with_other)).expect("readable");
        assert_eq!(one_pass.parts[..], by_block.parts[..3]);
        assert_eq!(
            by_block.parts[3],
            ResponsePart::Provider(ProviderPart::new(PROVIDER, other))
        );
        assert_eq!(
            one_pass.parts[2],
            ResponsePart::tool_call("roll", r#"{"n":2,"why":"é"}"#, "toolu_1")
        );
        assert_eq!(one_pass.finish_reason, Some(FinishReason::ToolCall));
        // Arguments written otherwise than golem writes them are written again.
        let spaced = r#"{"content": [{"type": "tool_use", "id": "t", "name": "roll", "input": {"n" : 2.50}}],
            "usage": {"input_tokens": 1, "output_tokens": 1}}"#;
        let response = parse(spaced.as_bytes()).expect("readable");
        assert_eq!(
            response.parts,
            [ResponsePart::tool_call("roll", r#"{"n":2.5}"#, "t")]
        );
    }

    #[test]
    fn a_block_that_is_not_as_its_kind_should_be_is_refused_with_what_is_wrong() {
        for (block, error) in [
            (json!({"text": "Six."}), "a content block has no type"),
            (
                json!({"type": "tool_use", "id": "t", "name": "roll"}),
                "a `tool_use` content block cannot be read: missing field `input`",
            ),
            (
                json!({"type": "text", "text": 6}),
                "a `text` content block cannot be read: invalid type: integer `6`, expected a string",
            ),
        ] {
            assert_eq!(read(json!([block])).unwrap_err(), error);
        }
    }

    /// A history with every kind of block the Messages API is sent.
    fn history() -> Vec<Message> {
        let png: &[u8] = &[0x89, b'P', b'N', b'G'];
        vec![
            Message::Request(ModelRequest::new(vec![
                RequestPart::system_prompt("Be \"brief\".\nAlways."),
                RequestPart::user_prompt("Roll é 🎲 </script>"),
                RequestPart::user_prompt(vec![
                    UserContent::text("Look:"),
                    UserContent::image_url("https://example.com/a.png"),
                    UserContent::image_url("data:image/png;base64,iVBORw=="),
                    UserContent::binary(png, "image/png"),
                    UserContent::document_url("https://example.com/a.pdf"),
                    UserContent::binary(png, "application/pdf"),
                    UserContent::binary(&b"plain \"words\"\n"[..], "text/plain"),
                ]),
            ])),
            Message::from(
                ModelResponse::new(vec![
                    ResponsePart::Thinking(
                        ThinkingPart::new("Dice.")
                            .with_signature("c2ln")
                            .with_provider(PROVIDER),
                    ),
                    ResponsePart::text("Rolling."),
                    ResponsePart::tool_call("roll", "{\"n\":2}", "toolu_1"),
                    ResponsePart::tool_call("look", "{}", "toolu_2"),
                    ResponsePart::Provider(ProviderPart::new(
                        PROVIDER,
                        json!({"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {}}),
                    )),
                ])
                .with_usage(10, 2),
            ),
            Message::Request(ModelRequest::new(vec![
                RequestPart::tool_return("roll", "toolu_1", json!({"rolled": [3, 4]})),
                RequestPart::tool_return(
                    "look",
                    "toolu_2",
                    ToolContent::new("seen").with(UserContent::binary(png, "image/png")),
                ),
                RequestPart::tool_return("roll", "toolu_1", "a \"string\" result"),
                RequestPart::tool_retry("roll", "toolu_1", "n must be positive"),
                RequestPart::retry_prompt("Answer with the tool."),
            ])),
        ]
    }

    #[test]
    fn native_output_with_a_map_is_refused_before_sending() {
        let mut params = RequestParams::text(Vec::new());
        params.output_mode = OutputMode::Native;
        params.output_schema = Some(OutputSchema {
            name: "final_result".into(),
            description: None,
            schema: json!({
                "type": "object",
                "properties": {
                    "scores": {"type": "object", "additionalProperties": {"type": "integer"}}
                },
                "required": ["scores"]
            }),
        });
        let error = body(
            &ToolForms::default(),
            "claude-sonnet-4-5",
            &ModelSettings::default(),
            &history()[..1],
            &params,
            false,
            0,
        )
        .expect_err("refused");
        assert_eq!(
            error.to_string(),
            "anthropic's structured outputs close every object, so the map at \
             #/properties/scores of the output `final_result` could only be empty: use tool \
             or prompted output for it (`OutputMode::Tool`, the default, or \
             `OutputMode::Prompted`)"
        );
    }

    #[test]
    fn an_object_with_variants_beside_its_fields_is_found() {
        let flattened = json!({
            "type": "object",
            "properties": {"speed": {"type": "integer"}},
            "oneOf": [{"type": "object", "properties": {"kind": {"const": "A"}}}]
        });
        assert_eq!(flattened_variants(&flattened, "#").as_deref(), Some("#"));
        // An enum of its own (its variants alone) is no such object.
        let enumeration = json!({
            "type": "object",
            "properties": {"pick": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}
        });
        assert_eq!(flattened_variants(&enumeration, "#"), None);
    }

    #[test]
    fn one_of_beside_any_of_keeps_both() {
        let schema = json!({
            "type": "object",
            "oneOf": [{"type": "object", "properties": {"kind": {"const": "A"}}}],
            "anyOf": [{"type": "object", "properties": {"fast": {"type": "boolean"}}}]
        });
        let restricted = output_schema(&schema);
        assert_eq!(restricted.get("oneOf"), None);
        assert_eq!(restricted.get("anyOf"), None);
        let all = restricted["allOf"].as_array().expect("both, as allOf");
        assert_eq!(all.len(), 2);
        assert_eq!(all[0]["anyOf"][0]["properties"]["kind"]["const"], "A");
        assert_eq!(all[1]["anyOf"][0]["properties"]["fast"]["type"], "boolean");
    }

    #[test]
    fn a_property_named_like_a_keyword_is_no_map() {
        let schema = json!({
            "type": "object",
            "properties": {"additionalProperties": {"type": "boolean"}},
            "required": ["additionalProperties"]
        });
        assert_eq!(open_object(&schema, "#"), None);
        let map = json!({"type": "object", "properties": {"m": {"type": "object", "unevaluatedProperties": true}}});
        assert_eq!(open_object(&map, "#").as_deref(), Some("#/properties/m"));
    }

    #[test]
    fn a_choice_of_no_tool_takes_no_parallel_flag() {
        let tool = ToolDefinition {
            name: "roll".into(),
            description: None,
            parameters: json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
        };
        let params = RequestParams::text(vec![tool]);
        let choices = [
            (ToolChoice::None, json!({"type": "none"})),
            (
                ToolChoice::Auto,
                json!({"type": "auto", "disable_parallel_tool_use": true}),
            ),
        ];
        for (choice, sent) in choices {
            let settings = ModelSettings::default()
                .parallel_tool_calls(false)
                .tool_choice(choice);
            let written = body(
                &ToolForms::default(),
                "claude-sonnet-4-5",
                &settings,
                &history()[..1],
                &params,
                false,
                0,
            )
            .expect("a body");
            let written: Value = serde_json::from_slice(&written).expect("JSON");
            assert_eq!(written["tool_choice"], sent);
        }
    }

    #[test]
    fn the_body_is_what_serde_writes_for_the_request_byte_for_byte() {
        let tool = ToolDefinition {
            name: "roll".into(),
            description: Some("Rolls \"dice\".".into()),
            parameters: json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
        };
        let forms = ToolForms::default();
        let settings = ModelSettings::default()
            .temperature(0.2)
            .top_p(0.9)
            .max_tokens(100)
            .stop_sequences(["END"])
            .parallel_tool_calls(false)
            .tool_choice(ToolChoice::Tool("roll".into()))
            .extra("metadata", json!({"user_id": "u-1"}))
            .extra("top \"k\"", 5);
        let mut params = RequestParams::text(vec![tool]);
        params.instructions = Some("You referee dice games.".into());
        params.output_mode = OutputMode::Native;
        params.output_schema = Some(OutputSchema {
            name: "final_result".into(),
            description: None,
            schema: json!({"type": "object", "properties": {"winner": {"type": "string"}}}),
        });
        let whole = history();
        for (messages, stream) in [(&whole[..1], false), (&whole[..], true)] {
            let written = body(
                &forms,
                "claude-sonnet-4-5",
                &settings,
                messages,
                &params,
                stream,
                0,
            )
            .expect("a body");
            let kept = forms
                .for_params(&params, |_| unreachable!("the forms are kept"))
                .expect("forms");
            let (system, chat) =
                anthropic_messages(params.instructions.as_deref(), messages).expect("messages");
            let mut choice =
                tool_use(messages, &params, settings.tool_choice.as_ref()).map(tool_choice);
            let parallel = choice.get_or_insert_with(|| json!({"type": "auto"}));
            parallel["disable_parallel_tool_use"] = Value::Bool(true);
            let schema = params.output_schema.as_ref().expect("a schema");
            let reference = MessagesRequest {
                model: "claude-sonnet-4-5",
                max_tokens: 100,
                system,
                messages: chat,
                tools: kept.iter().map(|form| &**form).collect(),
                tool_choice: choice,
                temperature: Some(0.2),
                top_p: Some(0.9),
                stop_sequences: settings.stop_sequences.as_deref(),
                output_config: Some(OutputConfig {
                    format: OutputFormat {
                        kind: "json_schema",
                        schema: output_schema(&schema.schema),
                    },
                }),
                stream,
                extra: &settings.extra_body,
            };
            let expected = serde_json::to_string(&reference).expect("serializes");
            assert_eq!(String::from_utf8(written).expect("UTF-8"), expected);
        }
    }

    #[test]
    fn output_schemas_keep_what_anthropic_enforces_and_describe_the_rest() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Verdict",
            "type": "object",
            "properties": {
                "score": {"type": "integer", "minimum": 0, "maximum": 10, "description": "Points."},
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "minItems": 2},
                "one": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "either": {"oneOf": [{"type": "object", "properties": {"a": {"type": "string", "pattern": "^a"}}}, {"type": "null"}]}
            },
            "required": ["score"]
        });
        assert_eq!(
            output_schema(&schema),
            json!({
                "type": "object",
                "properties": {
                    "score": {"type": "integer", "description": "Points.\n\n{minimum: 0, maximum: 10}"},
                    "tags": {
                        "type": "array",
                        "items": {"type": "string", "description": "{maxLength: 8}"},
                        "description": "{minItems: 2}"
                    },
                    "one": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                    "either": {"anyOf": [
                        {
                            "type": "object",
                            "properties": {"a": {"type": "string", "description": "{pattern: \"^a\"}"}},
                            "additionalProperties": false
                        },
                        {"type": "null"}
                    ]}
                },
                "required": ["score"],
                "additionalProperties": false
            })
        );
    }
}
