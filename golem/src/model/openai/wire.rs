//! The Chat Completions wire format: the request body golem sends, the response it reads,
//! and the mapping between them and golem's messages.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::super::json_out;
use super::super::media::{Accepts, At, MB, essence, media_preface};
use super::super::provider::{Text, ToolUse, decode, request_settings, tool_use};
use super::super::{
    FinishReason, MediaKind, Message, ModelError, ModelResponse, ModelSettings, RequestParams,
    RequestPart, ResponsePart, ThinkingPart, UserContent,
};
use super::content::Content;
use super::{ChatCompletions, ServerProfile};
use crate::output::OutputMode;
use crate::schema::{drop_added_nulls, is_strict_compatible};
use crate::tool::ToolDefinition;
use crate::usage::RequestUsage;

/// The request body for `messages` and `params`, written straight into a buffer of
/// `capacity` bytes to start with (see [`json_out`]): the same text `serde_json` writes for
/// the request's structs (see the tests).
pub(super) fn body(
    wire: &ChatCompletions,
    model: &str,
    provider_settings: &ModelSettings,
    messages: &[Message],
    params: &RequestParams,
    stream: bool,
    capacity: usize,
) -> Result<Vec<u8>, ModelError> {
    let settings = request_settings(provider_settings, params);
    let profile = wire.profile();
    let forms = wire.tool_forms(params)?;
    let has_tools = !forms.is_empty();
    let tool_choice = tool_use(messages, params, settings.tool_choice.as_ref())
        .and_then(|choice| tool_choice(choice, profile, params));
    let response_format = match (&params.output_mode, &params.output_schema) {
        (OutputMode::Native, Some(schema)) => Some(ResponseFormat {
            kind: "json_schema",
            json_schema: JsonSchemaFormat {
                name: &schema.name,
                description: schema.description.as_deref(),
                strict: is_strict_compatible(&schema.schema),
                schema: &schema.schema,
            },
        }),
        _ => None,
    };
    let (max_tokens, max_completion_tokens) = if profile.max_completion_tokens() {
        (None, settings.max_tokens)
    } else {
        (settings.max_tokens, None)
    };
    let mut out = Vec::with_capacity(capacity);
    out.extend_from_slice(b"{\"model\":");
    json_out::string(&mut out, model);
    out.extend_from_slice(b",\"messages\":");
    json_out::list(
        &mut out,
        &chat_messages(
            params.instructions.as_deref(),
            messages,
            wire.sends_reasoning(),
            profile,
        )?,
        |out, message| message.write(out),
    )?;
    if has_tools {
        out.extend_from_slice(b",\"tools\":");
        json_out::raw_list(&mut out, &forms);
    }
    json_out::field(&mut out, b",\"tool_choice\":", tool_choice.as_ref())?;
    json_out::field(
        &mut out,
        b",\"parallel_tool_calls\":",
        settings.parallel_tool_calls.filter(|_| has_tools).as_ref(),
    )?;
    json_out::field(&mut out, b",\"response_format\":", response_format.as_ref())?;
    json_out::field(
        &mut out,
        b",\"temperature\":",
        settings.temperature.as_ref(),
    )?;
    json_out::field(&mut out, b",\"top_p\":", settings.top_p.as_ref())?;
    json_out::field(&mut out, b",\"max_tokens\":", max_tokens.as_ref())?;
    json_out::field(
        &mut out,
        b",\"max_completion_tokens\":",
        max_completion_tokens.as_ref(),
    )?;
    json_out::field(&mut out, b",\"stop\":", settings.stop_sequences.as_ref())?;
    json_out::field(&mut out, b",\"seed\":", settings.seed.as_ref())?;
    if stream {
        out.extend_from_slice(b",\"stream\":true");
        if !wire.no_stream_usage {
            out.extend_from_slice(b",\"stream_options\":{\"include_usage\":true}");
        }
    }
    json_out::close_with_extra(out, &settings.extra_body, &[])
}

/// The `tool_choice` for `choice`, as the server understands it, or `None` to send none.
fn tool_choice(
    choice: ToolUse<'_>,
    profile: ServerProfile,
    params: &RequestParams,
) -> Option<Value> {
    let only_tool = {
        let mut tools = params.all_tools();
        match (tools.next(), tools.next()) {
            (Some(only), None) => Some(only.name.as_str()),
            _ => None,
        }
    };
    let named = |name: &str| serde_json::json!({"type": "function", "function": {"name": name}});
    Some(match (choice, profile) {
        (ToolUse::Auto, _) => Value::from("auto"),
        (ToolUse::None, _) => Value::from("none"),
        // Refused by vLLM: the one tool that can answer is named instead; with several,
        // nothing is forced and the run's feedback asks for a call.
        (ToolUse::Required, ServerProfile::Vllm) => named(only_tool?),
        (ToolUse::Required, _) => Value::from("required"),
        // llama.cpp reads a named choice as `auto`; `required` at least forces a call.
        (ToolUse::Tool(_), ServerProfile::LlamaCpp) => Value::from("required"),
        (ToolUse::Tool(name), _) => named(name),
    })
}

/// Reads a chat completion. With strict tools, the `null`s the strict form made the model
/// write for optional properties are removed from tool-call arguments.
pub(in crate::model) fn parse(
    body: &[u8],
    params: &RequestParams,
    strict_tools: bool,
) -> Result<ModelResponse, String> {
    let response: ChatResponse<'_> = decode(body, "a chat completion")?;
    let Some(choice) = response.choices.into_iter().next() else {
        return Err("the response has no choices".to_owned());
    };
    let mut parts = Vec::new();
    // DeepSeek, llama.cpp and older vLLM show reasoning as `reasoning_content`; vLLM,
    // Ollama and OpenRouter as `reasoning`. It is kept, and sent back only to a server
    // that asks for it (`send_reasoning`).
    let message = choice.message;
    let content = message.content.unwrap_or_default();
    let written = |text: &Option<String>| text.as_ref().is_some_and(|text| !text.is_empty());
    if let Some(reasoning) = [
        message.reasoning_content,
        message.reasoning,
        content.thinking,
    ]
    .into_iter()
    .find(written)
    .flatten()
    {
        parts.push(ResponsePart::Thinking(ThinkingPart {
            content: reasoning,
            signature: None,
            provider: Some(super::PROVIDER.to_owned()),
            id: None,
        }));
    }
    // llama.cpp and others send `""` rather than null beside tool calls.
    if let Some(text) = content.text.filter(|text| !text.is_empty()) {
        parts.push(ResponsePart::text(text.into_owned()));
    }
    for call in message.tool_calls {
        let mut args = match call.function.arguments {
            Value::String(args) => args,
            // Some compatible servers send the arguments as an object.
            other => other.to_string(),
        };
        if strict_tools && args.contains("null") {
            args = without_added_nulls(args, &call.function.name, params);
        }
        // A call without an id gets one from the run.
        parts.push(ResponsePart::tool_call(call.function.name, args, call.id));
    }
    let mut finish_reason = choice.finish_reason.as_deref().map(|reason| match reason {
        "stop" => FinishReason::Stop,
        "length" => FinishReason::Length,
        "tool_calls" | "function_call" => FinishReason::ToolCall,
        "content_filter" => FinishReason::ContentFilter,
        _ => FinishReason::Error,
    });
    // A refusal and no answer (reasoning aside): the content filter's, its words kept as
    // the text.
    let answered = parts
        .iter()
        .any(|part| !matches!(part, ResponsePart::Thinking(_)));
    if let Some(refusal) = message.refusal.filter(|_| !answered) {
        finish_reason = Some(FinishReason::ContentFilter);
        if !refusal.is_empty() {
            parts.push(ResponsePart::text(refusal.0.into_owned()));
        }
    }
    let usage = response.usage.map_or_else(RequestUsage::default, |usage| {
        let prompt = usage.prompt_tokens_details.unwrap_or_default();
        let completion = usage.completion_tokens_details.unwrap_or_default();
        RequestUsage {
            // DeepSeek counts its cache hits in a field of its own.
            cache_read_tokens: match prompt.cached_tokens {
                0 => usage.prompt_cache_hit_tokens,
                cached => cached,
            },
            audio_input_tokens: prompt.audio_tokens,
            reasoning_tokens: completion.reasoning_tokens,
            audio_output_tokens: completion.audio_tokens,
            ..RequestUsage::new(usage.prompt_tokens, usage.completion_tokens)
        }
    });
    Ok(ModelResponse {
        parts,
        usage,
        model_name: response.model,
        provider_response_id: response.id,
        finish_reason,
    })
}

/// `args` without the `null`s the strict form of `tool`'s schema added; as they were when
/// they are not JSON (the run shows the model what it sent) or hold no such `null`.
pub(super) fn without_added_nulls(args: String, tool: &str, params: &RequestParams) -> String {
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

/// What Chat Completions takes of each media kind (OpenAI's limits: 50 MB of images in a
/// request, audio as WAV or MP3, 32 MB of PDF content in a request).
const ACCEPTS: &[Accepts] = &[
    Accepts {
        kind: MediaKind::Image,
        types: &["image/png", "image/jpeg", "image/gif", "image/webp"],
        max_bytes: 50 * MB,
        encoded: false,
    },
    Accepts {
        kind: MediaKind::Audio,
        types: &[
            "audio/wav",
            "audio/x-wav",
            "audio/wave",
            "audio/mpeg",
            "audio/mp3",
        ],
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

/// The content parts of a user message for `content`, refused before sending when Chat
/// Completions does not take one.
fn content_parts<'a>(
    at: At,
    content: &'a [UserContent],
    out: &mut Vec<ChatContent<'a>>,
) -> Result<(), ModelError> {
    for part in content {
        at.check(part, ACCEPTS, "in a message")?;
        out.push(match part {
            UserContent::Text(text) => ChatContent::Text {
                text: Cow::Borrowed(text),
            },
            UserContent::ImageUrl(image) => {
                if !["https://", "http://", "data:"]
                    .iter()
                    .any(|scheme| image.url.starts_with(scheme))
                {
                    return Err(at.refuse(part, "openai takes image URLs of http(s) or data: only"));
                }
                ChatContent::ImageUrl {
                    image_url: ChatImageUrl {
                        url: Cow::Borrowed(&image.url),
                    },
                }
            }
            UserContent::DocumentUrl(_) => {
                return Err(at.refuse(
                    part,
                    "openai Chat Completions takes documents as bytes only: load the file and \
                     send it as BinaryContent",
                ));
            }
            UserContent::Binary(binary) => match binary.kind() {
                MediaKind::Image => ChatContent::ImageUrl {
                    image_url: ChatImageUrl {
                        url: Cow::Owned(binary.data_url()),
                    },
                },
                MediaKind::Audio => ChatContent::InputAudio {
                    input_audio: ChatAudio {
                        data: binary.base64(),
                        format: if essence(&binary.media_type).contains("mp") {
                            "mp3"
                        } else {
                            "wav"
                        },
                    },
                },
                _ => ChatContent::File {
                    file: ChatFile {
                        filename: "document.pdf",
                        file_data: binary.data_url(),
                    },
                },
            },
        });
    }
    Ok(())
}

/// The instructions and the history as Chat Completions messages. A tool's media go in a
/// user message after the request's tool results (Chat Completions takes text only in a
/// tool message). With `send_reasoning`, a response's reasoning from a Chat Completions
/// server goes back as its message's `reasoning_content`. Call ids go in the form
/// `profile`'s server takes ([`call_id`]).
fn chat_messages<'a>(
    instructions: Option<&'a str>,
    messages: &'a [Message],
    send_reasoning: bool,
    profile: ServerProfile,
) -> Result<Vec<ChatMessage<'a>>, ModelError> {
    let call_id = |id| call_id(id, profile);
    let mut out = Vec::with_capacity(messages.len() + 1);
    if let Some(instructions) = instructions {
        out.push(ChatMessage::System {
            content: Cow::Borrowed(instructions),
        });
    }
    for (index, message) in messages.iter().enumerate() {
        match message {
            Message::Request(request) => {
                let mut tool_media: Vec<ChatContent<'a>> = Vec::new();
                for (part_index, part) in request.parts.iter().enumerate() {
                    let at = At {
                        provider: "openai",
                        message: index,
                        part: part_index,
                    };
                    // The media wait until the tool messages end: a rejected call's
                    // feedback is a tool message too.
                    let tool_message = match part {
                        RequestPart::ToolReturn(_) => true,
                        RequestPart::RetryPrompt(p) => p.tool_call_id.is_some(),
                        _ => false,
                    };
                    if !tool_message && !tool_media.is_empty() {
                        out.push(ChatMessage::User {
                            content: UserMessage::Parts(std::mem::take(&mut tool_media)),
                        });
                    }
                    out.push(match part {
                        RequestPart::SystemPrompt(p) => ChatMessage::System {
                            content: Cow::Borrowed(&p.content),
                        },
                        RequestPart::UserPrompt(p) => ChatMessage::User {
                            content: match p.content.as_slice() {
                                [UserContent::Text(text)] => UserMessage::Text(Cow::Borrowed(text)),
                                content => {
                                    let mut parts = Vec::with_capacity(content.len());
                                    content_parts(at, content, &mut parts)?;
                                    UserMessage::Parts(parts)
                                }
                            },
                        },
                        RequestPart::ToolReturn(p) => {
                            if !p.media.is_empty() {
                                tool_media.push(ChatContent::Text {
                                    text: Cow::Owned(media_preface(
                                        &p.tool_name,
                                        &call_id(&p.tool_call_id),
                                    )),
                                });
                                content_parts(at, &p.media, &mut tool_media)?;
                            }
                            ChatMessage::Tool {
                                tool_call_id: call_id(&p.tool_call_id),
                                content: ToolText::Returned(&p.content),
                            }
                        }
                        RequestPart::RetryPrompt(p) => match &p.tool_call_id {
                            Some(id) => ChatMessage::Tool {
                                tool_call_id: call_id(id),
                                content: ToolText::Pieces(p.model_text_pieces()),
                            },
                            None => ChatMessage::User {
                                content: UserMessage::Text(Cow::Owned(p.model_text())),
                            },
                        },
                    });
                }
                if !tool_media.is_empty() {
                    out.push(ChatMessage::User {
                        content: UserMessage::Parts(tool_media),
                    });
                }
            }
            Message::Response(response) => {
                let mut text: Option<Cow<'_, str>> = None;
                let mut reasoning: Option<Cow<'_, str>> = None;
                let mut tool_calls = Vec::new();
                for part in &response.parts {
                    match part {
                        ResponsePart::Text(p) => join(&mut text, &p.content),
                        // A Chat Completions server's reasoning: no signature, no id (the
                        // Responses API's reasoning has an id).
                        ResponsePart::Thinking(ThinkingPart {
                            content,
                            provider,
                            signature: None,
                            id: None,
                            ..
                        }) if send_reasoning && provider.as_deref() == Some(super::PROVIDER) => {
                            join(&mut reasoning, content);
                        }
                        ResponsePart::ToolCall(call) => tool_calls.push(ChatToolCall {
                            id: call_id(&call.tool_call_id),
                            kind: "function",
                            function: ChatFunctionCall {
                                name: &call.tool_name,
                                arguments: &call.args,
                            },
                        }),
                        // Other reasoning and other providers' parts are not sent back:
                        // Chat Completions has no field for them.
                        ResponsePart::Thinking(_) | ResponsePart::Provider(_) => {}
                    }
                }
                // OpenAI accepts a null content only beside tool calls; an empty response
                // (kept as evidence for a rejection) goes as an empty string.
                if text.is_none() && tool_calls.is_empty() {
                    text = Some(Cow::Borrowed(""));
                }
                // DeepSeek's thinking mode wants the field on every message with calls, empty
                // when there was no reasoning (or another provider made the calls).
                if send_reasoning && reasoning.is_none() && !tool_calls.is_empty() {
                    reasoning = Some(Cow::Borrowed(""));
                }
                out.push(ChatMessage::Assistant {
                    content: text,
                    reasoning_content: reasoning,
                    tool_calls,
                });
            }
        }
    }
    Ok(out)
}

/// The longest call id OpenAI takes ("string too long. Expected a string with maximum
/// length 40").
const MAX_CALL_ID: usize = 40;

/// The length of a call id Mistral takes ("must be a-z, A-Z, 0-9, with a length of 9").
const MISTRAL_CALL_ID: usize = 9;

/// A call's id as the server of `profile` takes it, the same in the call and in its result.
/// For OpenAI and most servers: as it is, or, longer than [`MAX_CALL_ID`] (vLLM's
/// `chatcmpl-tool-` and 32 hex digits, from a history another server wrote), its start and a
/// hash of the whole. For Mistral: as it is when it is nine letters or digits (Mistral's
/// own), otherwise nine letters and digits of its hash.
fn call_id(id: &str, profile: ServerProfile) -> Cow<'_, str> {
    if profile == ServerProfile::Mistral {
        if id.len() == MISTRAL_CALL_ID && id.bytes().all(|byte| byte.is_ascii_alphanumeric()) {
            return Cow::Borrowed(id);
        }
        const DIGITS: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        let mut hash = fnv1a(id);
        let short = (0..MISTRAL_CALL_ID)
            .map(|_| {
                // `hash % 62` is below 62.
                let digit = char::from(DIGITS[(hash % 62) as usize]);
                hash /= 62;
                digit
            })
            .collect();
        return Cow::Owned(short);
    }
    if id.len() <= MAX_CALL_ID {
        return Cow::Borrowed(id);
    }
    let start: String = id.chars().take(MAX_CALL_ID - 17).collect();
    Cow::Owned(format!("{start}_{:016x}", fnv1a(id)))
}

/// FNV-1a of `text`: stable, and enough to keep a request's few call ids apart.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `more` added to `text`, borrowed while it is the only piece.
fn join<'a>(text: &mut Option<Cow<'a, str>>, more: &'a str) {
    *text = Some(match text.take() {
        None => Cow::Borrowed(more),
        Some(previous) => Cow::Owned(format!("{previous}{more}")),
    });
}

/// The request's structs as serde would write them: the reference the writer above is
/// tested against, byte for byte.
#[cfg(test)]
#[derive(Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    messages: Vec<ChatMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<&'a serde_json::value::RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parallel_tool_calls: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stop: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<i64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    #[serde(flatten)]
    extra: &'a Map<String, Value>,
}

#[cfg(test)]
#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[cfg_attr(test, derive(Serialize), serde(tag = "role", rename_all = "lowercase"))]
enum ChatMessage<'a> {
    System {
        content: Cow<'a, str>,
    },
    User {
        content: UserMessage<'a>,
    },
    Assistant {
        content: Option<Cow<'a, str>>,
        #[cfg_attr(test, serde(skip_serializing_if = "Option::is_none"))]
        reasoning_content: Option<Cow<'a, str>>,
        #[cfg_attr(test, serde(skip_serializing_if = "Vec::is_empty"))]
        tool_calls: Vec<ChatToolCall<'a>>,
    },
    Tool {
        tool_call_id: Cow<'a, str>,
        content: ToolText<'a>,
    },
}

/// A tool message's text, written without being put together first: a tool's result as
/// the model reads it, or a rejection's feedback in its pieces.
enum ToolText<'a> {
    Returned(&'a Value),
    Pieces([&'a str; 3]),
}

impl ToolText<'_> {
    fn write(&self, out: &mut Vec<u8>) -> Result<(), ModelError> {
        match self {
            ToolText::Returned(value) => json_out::value_text(out, value),
            ToolText::Pieces(pieces) => {
                json_out::string_of(out, pieces);
                Ok(())
            }
        }
    }
}

/// The text as one string, as the reference for the writer.
#[cfg(test)]
impl Serialize for ToolText<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ToolText::Returned(Value::String(text)) => serializer.serialize_str(text),
            ToolText::Returned(value) => serializer.serialize_str(&value.to_string()),
            ToolText::Pieces(pieces) => serializer.serialize_str(&pieces.concat()),
        }
    }
}

impl ChatMessage<'_> {
    /// Appends the message as serde would write it (see [`json_out`]).
    fn write(&self, out: &mut Vec<u8>) -> Result<(), ModelError> {
        match self {
            ChatMessage::System { content } => {
                out.extend_from_slice(b"{\"role\":\"system\",\"content\":");
                json_out::string(out, content);
            }
            ChatMessage::User { content } => {
                out.extend_from_slice(b"{\"role\":\"user\",\"content\":");
                match content {
                    UserMessage::Text(text) => json_out::string(out, text),
                    UserMessage::Parts(parts) => json_out::list(out, parts, |out, part| {
                        part.write(out);
                        Ok(())
                    })?,
                }
            }
            ChatMessage::Assistant {
                content,
                reasoning_content,
                tool_calls,
            } => {
                out.extend_from_slice(b"{\"role\":\"assistant\",\"content\":");
                match content {
                    Some(text) => json_out::string(out, text),
                    None => out.extend_from_slice(b"null"),
                }
                if let Some(reasoning) = reasoning_content {
                    out.extend_from_slice(b",\"reasoning_content\":");
                    json_out::string(out, reasoning);
                }
                if !tool_calls.is_empty() {
                    out.extend_from_slice(b",\"tool_calls\":");
                    json_out::list(out, tool_calls, |out, call| {
                        out.extend_from_slice(b"{\"id\":");
                        json_out::string(out, &call.id);
                        out.extend_from_slice(b",\"type\":");
                        json_out::string(out, call.kind);
                        out.extend_from_slice(b",\"function\":{\"name\":");
                        json_out::string(out, call.function.name);
                        out.extend_from_slice(b",\"arguments\":");
                        json_out::string(out, call.function.arguments);
                        out.extend_from_slice(b"}}");
                        Ok(())
                    })?;
                }
            }
            ChatMessage::Tool {
                tool_call_id,
                content,
            } => {
                out.extend_from_slice(b"{\"role\":\"tool\",\"tool_call_id\":");
                json_out::string(out, tool_call_id);
                out.extend_from_slice(b",\"content\":");
                content.write(out)?;
            }
        }
        out.push(b'}');
        Ok(())
    }
}

/// A user message's content: text, or content parts.
#[cfg_attr(test, derive(Serialize), serde(untagged))]
enum UserMessage<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<ChatContent<'a>>),
}

#[cfg_attr(
    test,
    derive(Serialize),
    serde(tag = "type", rename_all = "snake_case")
)]
enum ChatContent<'a> {
    Text { text: Cow<'a, str> },
    ImageUrl { image_url: ChatImageUrl<'a> },
    InputAudio { input_audio: ChatAudio },
    File { file: ChatFile },
}

impl ChatContent<'_> {
    /// Appends the content part as serde would write it (see [`json_out`]).
    fn write(&self, out: &mut Vec<u8>) {
        match self {
            ChatContent::Text { text } => {
                out.extend_from_slice(b"{\"type\":\"text\",\"text\":");
                json_out::string(out, text);
            }
            ChatContent::ImageUrl { image_url } => {
                out.extend_from_slice(b"{\"type\":\"image_url\",\"image_url\":{\"url\":");
                json_out::string(out, &image_url.url);
                out.push(b'}');
            }
            ChatContent::InputAudio { input_audio } => {
                out.extend_from_slice(b"{\"type\":\"input_audio\",\"input_audio\":{\"data\":");
                json_out::string(out, &input_audio.data);
                out.extend_from_slice(b",\"format\":");
                json_out::string(out, input_audio.format);
                out.push(b'}');
            }
            ChatContent::File { file } => {
                out.extend_from_slice(b"{\"type\":\"file\",\"file\":{\"filename\":");
                json_out::string(out, file.filename);
                out.extend_from_slice(b",\"file_data\":");
                json_out::string(out, &file.file_data);
                out.push(b'}');
            }
        }
        out.push(b'}');
    }
}

#[cfg_attr(test, derive(Serialize))]
struct ChatImageUrl<'a> {
    url: Cow<'a, str>,
}

#[cfg_attr(test, derive(Serialize))]
struct ChatAudio {
    data: String,
    format: &'static str,
}

#[cfg_attr(test, derive(Serialize))]
struct ChatFile {
    filename: &'static str,
    file_data: String,
}

#[cfg_attr(test, derive(Serialize))]
struct ChatToolCall<'a> {
    id: Cow<'a, str>,
    #[cfg_attr(test, serde(rename = "type"))]
    kind: &'static str,
    function: ChatFunctionCall<'a>,
}

#[cfg_attr(test, derive(Serialize))]
struct ChatFunctionCall<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Serialize)]
pub(super) struct ChatTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: ChatFunction<'a>,
}

#[derive(Serialize)]
struct ChatFunction<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    parameters: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    strict: Option<bool>,
}

impl<'a> ChatTool<'a> {
    /// The tool as it is.
    pub(super) fn plain(tool: &'a ToolDefinition) -> Self {
        ChatTool {
            kind: "function",
            function: ChatFunction {
                name: &tool.name,
                description: tool.description.as_deref(),
                parameters: &tool.parameters,
                strict: None,
            },
        }
    }

    /// The tool in strict mode's form, `parameters` being its strict schema.
    pub(super) fn strict(tool: &'a ToolDefinition, parameters: &'a Value) -> Self {
        ChatTool {
            kind: "function",
            function: ChatFunction {
                name: &tool.name,
                description: tool.description.as_deref(),
                parameters,
                strict: Some(true),
            },
        }
    }
}

#[derive(Serialize)]
struct ResponseFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    json_schema: JsonSchemaFormat<'a>,
}

#[derive(Serialize)]
struct JsonSchemaFormat<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    schema: &'a Value,
    strict: bool,
}

#[derive(Deserialize)]
struct ChatResponse<'a> {
    id: Option<String>,
    model: Option<String>,
    #[serde(borrow)]
    choices: Vec<Choice<'a>>,
    usage: Option<ChatUsage>,
}

/// A choice; the strings golem only looks at are borrowed from the body.
#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(borrow)]
    message: ChoiceMessage<'a>,
    #[serde(borrow)]
    finish_reason: Option<Text<'a>>,
}

// Compatible servers send `null` for absent lists and numbers: `null_default` reads it as
// missing.
#[derive(Deserialize)]
struct ChoiceMessage<'a> {
    #[serde(borrow, default)]
    content: Option<Content<'a>>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default, deserialize_with = "text_only")]
    reasoning: Option<String>,
    #[serde(default, deserialize_with = "null_default")]
    tool_calls: Vec<ResponseToolCall>,
    #[serde(borrow)]
    refusal: Option<Text<'a>>,
}

#[derive(Deserialize)]
struct ResponseToolCall {
    #[serde(default, deserialize_with = "null_default")]
    id: String,
    function: ResponseFunction,
}

#[derive(Deserialize)]
struct ResponseFunction {
    name: String,
    // Missing arguments (some servers, for a tool without parameters) read as `{}`.
    #[serde(default = "empty_object")]
    arguments: Value,
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

#[derive(Deserialize)]
struct ChatUsage {
    #[serde(default, deserialize_with = "null_default")]
    prompt_tokens: u64,
    #[serde(default, deserialize_with = "null_default")]
    completion_tokens: u64,
    #[serde(default, deserialize_with = "null_default")]
    prompt_tokens_details: Option<PromptTokensDetails>,
    #[serde(default, deserialize_with = "null_default")]
    completion_tokens_details: Option<CompletionTokensDetails>,
    #[serde(default, deserialize_with = "null_default")]
    prompt_cache_hit_tokens: u64,
}

#[derive(Deserialize, Default)]
struct PromptTokensDetails {
    #[serde(default, deserialize_with = "null_default")]
    cached_tokens: u64,
    #[serde(default, deserialize_with = "null_default")]
    audio_tokens: u64,
}

#[derive(Deserialize, Default)]
struct CompletionTokensDetails {
    #[serde(default, deserialize_with = "null_default")]
    reasoning_tokens: u64,
    #[serde(default, deserialize_with = "null_default")]
    audio_tokens: u64,
}

/// A field read only when it is text (`reasoning`, which a server might one day send as an
/// object): anything else reads as missing, rather than failing the response.
pub(super) fn text_only<'de, D>(deserializer: D) -> Result<Option<String>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    Ok(match Value::deserialize(deserializer)? {
        Value::String(text) => Some(text),
        _ => None,
    })
}

pub(super) fn null_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Option::unwrap_or_default)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::{ModelRequest, OutputSchema, ToolChoice, ToolContent};

    /// A history with every kind of message and content part Chat Completions is sent.
    fn history() -> Vec<Message> {
        let png: &[u8] = &[0x89, b'P', b'N', b'G'];
        vec![
            Message::Request(ModelRequest::new(vec![
                RequestPart::system_prompt("Be \"brief\".\nAlways."),
                RequestPart::user_prompt("Roll é 🎲 </script>"),
                RequestPart::user_prompt(vec![
                    UserContent::text("Look:"),
                    UserContent::image_url("https://example.com/a.png"),
                    UserContent::binary(png, "image/png"),
                    UserContent::binary(png, "audio/mpeg"),
                    UserContent::binary(png, "application/pdf"),
                ]),
            ])),
            Message::from(
                ModelResponse::new(vec![
                    ResponsePart::text("Rolling."),
                    ResponsePart::text(" Twice."),
                    ResponsePart::tool_call("roll", "{\"n\":2}", "call_1"),
                    ResponsePart::tool_call("look", "{}", "call_2"),
                ])
                .with_usage(10, 2),
            ),
            Message::Request(ModelRequest::new(vec![
                RequestPart::tool_return("roll", "call_1", json!({"rolled": [3, 4]})),
                RequestPart::tool_return(
                    "look",
                    "call_2",
                    ToolContent::new("seen").with(UserContent::binary(png, "image/png")),
                ),
                RequestPart::tool_retry("roll", "call_1", "n must be positive"),
                RequestPart::retry_prompt("Answer with the tool."),
            ])),
            Message::from(ModelResponse::new(Vec::new())),
        ]
    }

    #[test]
    fn a_refusal_beside_reasoning_is_still_the_content_filters() {
        let body = json!({"choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": null, "reasoning_content": "Hmm.", "refusal": "No."
        }}]});
        let response = parse(
            body.to_string().as_bytes(),
            &RequestParams::text(Vec::new()),
            false,
        )
        .expect("readable");
        assert_eq!(response.finish_reason, Some(FinishReason::ContentFilter));
        assert_eq!(response.parts[1], ResponsePart::text("No."));
    }

    #[test]
    fn a_long_call_id_goes_shortened_alike_in_the_call_and_its_result() {
        let long = "chatcmpl-tool-0123456789abcdef0123456789abcdef";
        let history = vec![
            Message::from(ModelResponse::new(vec![
                ResponsePart::tool_call("roll", "{}", long),
                ResponsePart::tool_call("roll", "{}", "call_1"),
            ])),
            Message::Request(ModelRequest::new(vec![
                RequestPart::tool_return(
                    "roll",
                    long,
                    ToolContent::new(3).with(UserContent::binary(&[0x89, b'P'][..], "image/png")),
                ),
                RequestPart::tool_retry("roll", "call_1", "no"),
            ])),
        ];
        let sent = serde_json::to_value(
            chat_messages(None, &history, false, ServerProfile::OpenAi).expect("messages"),
        )
        .expect("serializes");
        let short = sent[0]["tool_calls"][0]["id"].as_str().expect("an id");
        assert_eq!(short.len(), MAX_CALL_ID);
        assert!(short.starts_with("chatcmpl-tool-012345678_"), "{short}");
        assert_eq!(sent[1]["tool_call_id"], json!(short));
        assert_eq!(sent[0]["tool_calls"][1]["id"], json!("call_1"));
        assert_eq!(sent[2]["tool_call_id"], json!("call_1"));
        // The media that follow name the call by the id it went with.
        let preface = sent[3]["content"][0]["text"].as_str().expect("a preface");
        assert!(preface.contains(short), "{preface}");
        let openai = ServerProfile::OpenAi;
        assert_ne!(call_id(&format!("{long}0"), openai), call_id(long, openai));
    }

    /// Mistral takes call ids of nine letters or digits: its own go as they are; another
    /// provider's (after a fallback) or golem's go as nine characters of their hash, alike
    /// in the call, its result and a rejection's feedback, and apart from each other.
    #[test]
    fn mistral_gets_call_ids_of_nine_letters_or_digits() {
        let history = vec![
            Message::from(ModelResponse::new(vec![
                ResponsePart::tool_call("roll", "{}", "D681PevKs"),
                ResponsePart::tool_call("roll", "{}", "call_1"),
                ResponsePart::tool_call("roll", "{}", "toolu_01A09q90qw90lq917835lq9"),
            ])),
            Message::Request(ModelRequest::new(vec![
                RequestPart::tool_return("roll", "D681PevKs", 3),
                RequestPart::tool_retry("roll", "call_1", "no"),
                RequestPart::tool_return("roll", "toolu_01A09q90qw90lq917835lq9", 4),
            ])),
        ];
        let sent = serde_json::to_value(
            chat_messages(None, &history, false, ServerProfile::Mistral).expect("messages"),
        )
        .expect("serializes");
        let ids: Vec<&str> = (0..3)
            .map(|call| sent[0]["tool_calls"][call]["id"].as_str().expect("an id"))
            .collect();
        assert_eq!(ids[0], "D681PevKs");
        for (call, id) in ids.iter().enumerate() {
            assert_eq!(id.len(), 9, "{id}");
            assert!(id.bytes().all(|byte| byte.is_ascii_alphanumeric()), "{id}");
            assert_eq!(sent[call + 1]["tool_call_id"], json!(id));
        }
        assert!(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]);
        // Other servers get the ids as they are.
        let sent = serde_json::to_value(
            chat_messages(None, &history, false, ServerProfile::Compatible).expect("messages"),
        )
        .expect("serializes");
        assert_eq!(sent[0]["tool_calls"][1]["id"], json!("call_1"));
        assert_eq!(sent[2]["tool_call_id"], json!("call_1"));
    }

    #[test]
    fn the_body_is_what_serde_writes_for_the_request_byte_for_byte() {
        let tool = ToolDefinition {
            name: "roll".into(),
            description: Some("Rolls \"dice\".".into()),
            parameters: json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
        };
        let wire = ChatCompletions::default();
        let settings = ModelSettings::default()
            .temperature(0.2)
            .top_p(0.9)
            .max_tokens(100)
            .stop_sequences(["END"])
            .seed(7)
            .parallel_tool_calls(false)
            .tool_choice(ToolChoice::Tool("roll".into()))
            .extra("user", "u-1")
            .extra("logit \"bias\"", json!({"50256": -100}));
        let mut params = RequestParams::text(vec![tool]);
        params.instructions = Some("You referee dice games.".into());
        params.output_mode = OutputMode::Native;
        params.output_schema = Some(OutputSchema {
            name: "final_result".into(),
            description: Some("The verdict.".into()),
            schema: json!({"type": "object", "properties": {"winner": {"type": "string"}}}),
        });
        let whole = history();
        // Right after the prompt, the choice of tool is sent; later, not.
        for (messages, stream) in [(&whole[..1], false), (&whole[..], true)] {
            let written =
                body(&wire, "gpt-4.1", &settings, messages, &params, stream, 0).expect("a body");
            let forms = wire.tool_forms(&params).expect("forms");
            let schema = params.output_schema.as_ref().expect("a schema");
            let reference = ChatRequest {
                model: "gpt-4.1",
                messages: chat_messages(
                    params.instructions.as_deref(),
                    messages,
                    wire.sends_reasoning(),
                    wire.profile(),
                )
                .expect("messages"),
                tools: forms.iter().map(|form| &**form).collect(),
                tool_choice: tool_use(messages, &params, settings.tool_choice.as_ref())
                    .and_then(|choice| tool_choice(choice, wire.profile(), &params)),
                parallel_tool_calls: Some(false),
                response_format: Some(ResponseFormat {
                    kind: "json_schema",
                    json_schema: JsonSchemaFormat {
                        name: &schema.name,
                        description: schema.description.as_deref(),
                        strict: is_strict_compatible(&schema.schema),
                        schema: &schema.schema,
                    },
                }),
                temperature: Some(0.2),
                top_p: Some(0.9),
                max_tokens: Some(100),
                max_completion_tokens: None,
                stop: settings.stop_sequences.as_deref(),
                seed: Some(7),
                stream,
                stream_options: stream.then_some(StreamOptions {
                    include_usage: true,
                }),
                extra: &settings.extra_body,
            };
            assert_eq!(reference.tool_choice.is_some(), !stream);
            let expected = serde_json::to_string(&reference).expect("serializes");
            assert_eq!(String::from_utf8(written).expect("UTF-8"), expected);
        }
    }
}
