//! The `generateContent` wire format: the request body golem sends, the response it reads,
//! and the mapping between them and golem's messages.

use std::borrow::Cow;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::super::media::{Accepts, At, MB, split_data_url};
use super::super::provider::{ToolUse, decode, request_settings, tool_use, without_position};
use super::super::{
    FinishReason, Message, ModelError, ModelResponse, ModelSettings, ProviderPart, RequestParams,
    RequestPart, ResponsePart, ThinkingPart,
};
use super::super::{MediaKind, UserContent};
use super::PROVIDER;
use crate::output::OutputMode;
use crate::schema::to_gemini_schema;
use crate::tool::ToolDefinition;
use crate::usage::RequestUsage;

/// The request body for `messages` and `params`.
pub(super) fn body(
    provider_settings: &ModelSettings,
    messages: &[Message],
    params: &RequestParams,
    declarations: &[Arc<RawValue>],
    capacity: usize,
) -> Result<Vec<u8>, ModelError> {
    let settings = request_settings(provider_settings, params);
    let tool_config = tool_use(messages, params, settings.tool_choice.as_ref())
        .filter(|_| !declarations.is_empty())
        .map(tool_config);
    let tools = (!declarations.is_empty()).then_some([Tools {
        function_declarations: declarations,
    }]);
    let (response_mime_type, response_schema) = match (&params.output_mode, &params.output_schema) {
        (OutputMode::Native, Some(schema)) => {
            let mut converted = to_gemini_schema(&schema.schema);
            if let (Value::Object(map), Some(description)) = (&mut converted, &schema.description) {
                map.entry("description")
                    .or_insert_with(|| Value::String(description.clone()));
            }
            (Some("application/json"), Some(converted))
        }
        _ => (None, None),
    };
    let generation_config = GenerationConfig {
        max_output_tokens: settings.max_tokens,
        temperature: settings.temperature,
        top_p: settings.top_p,
        stop_sequences: settings.stop_sequences.as_deref(),
        seed: settings.seed,
        response_mime_type,
        response_schema,
    };
    let (system_instruction, contents) = contents(params.instructions.as_deref(), messages)?;
    let request = GenerateContentRequest {
        contents,
        system_instruction: system_instruction.map(|text| SystemInstruction {
            parts: [TextOnly { text }],
        }),
        tools,
        tool_config,
        generation_config: (!generation_config.is_empty()).then_some(generation_config),
    };
    let mut body = Vec::with_capacity(capacity);
    if settings.extra_body.is_empty() {
        serde_json::to_writer(&mut body, &request).map_err(ModelError::other)?;
    } else {
        let mut value = serde_json::to_value(&request).map_err(ModelError::other)?;
        if let Value::Object(fields) = &mut value {
            merge(fields, &settings.extra_body);
        }
        serde_json::to_writer(&mut body, &value).map_err(ModelError::other)?;
    }
    Ok(body)
}

/// The body of a `:countTokens` request: the `generateContentRequest` [`body`] would send,
/// with the model it is for.
pub(super) fn count_body(
    model: &str,
    provider_settings: &ModelSettings,
    messages: &[Message],
    params: &RequestParams,
    declarations: &[Arc<RawValue>],
) -> Result<Vec<u8>, ModelError> {
    let full = body(provider_settings, messages, params, declarations, 0)?;
    let Value::Object(mut request) = serde_json::from_slice(&full).map_err(ModelError::other)?
    else {
        return Err(ModelError::other(
            "a generateContent request body is a JSON object",
        ));
    };
    request.insert("model".to_owned(), Value::String(format!("models/{model}")));
    serde_json::to_vec(&serde_json::json!({ "generateContentRequest": request }))
        .map_err(ModelError::other)
}

/// Reads a token count: `{"totalTokens": n}`.
pub(super) fn parse_count(body: &[u8]) -> Result<u64, String> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Counted {
        #[serde(default)]
        total_tokens: u64,
    }
    serde_json::from_slice::<Counted>(body)
        .map(|counted| counted.total_tokens)
        .map_err(|error| format!("unreadable token count: {error}"))
}

/// Merges `extra` into `fields`: objects key by key, anything else replacing.
fn merge(fields: &mut Map<String, Value>, extra: &Map<String, Value>) {
    for (key, value) in extra {
        match (fields.get_mut(key), value) {
            (Some(Value::Object(existing)), Value::Object(added)) => merge(existing, added),
            _ => {
                fields.insert(key.clone(), value.clone());
            }
        }
    }
}

/// `{}`, for arguments that cannot be sent as they are.
fn empty_object() -> &'static RawValue {
    static EMPTY: std::sync::LazyLock<Box<RawValue>> =
        std::sync::LazyLock::new(|| RawValue::from_string("{}".to_owned()).expect("`{}` is JSON"));
    &EMPTY
}

fn tool_config(choice: ToolUse<'_>) -> ToolConfig<'_> {
    let (mode, allowed_function_names) = match choice {
        ToolUse::Auto => ("AUTO", None),
        ToolUse::Required => ("ANY", None),
        ToolUse::None => ("NONE", None),
        ToolUse::Tool(name) => ("ANY", Some([name])),
    };
    ToolConfig {
        function_calling_config: FunctionCallingConfig {
            mode,
            allowed_function_names,
        },
    }
}

/// The system instruction (the instructions, then the history's system prompts) and the
/// `user` / `model` contents of a history.
fn contents<'a>(
    instructions: Option<&'a str>,
    messages: &'a [Message],
) -> Result<(Option<Cow<'a, str>>, Vec<Content<'a>>), ModelError> {
    let mut system: Option<Cow<'a, str>> = instructions.map(Cow::Borrowed);
    let mut out: Vec<Content<'a>> = Vec::with_capacity(messages.len());
    // The last response, whose calls' order the function responses follow.
    let mut calls: Option<&ModelResponse> = None;
    for (index, message) in messages.iter().enumerate() {
        let (role, parts) = match message {
            Message::Request(request) => {
                let mut answers: Vec<(usize, Part<'a>)> = Vec::new();
                let mut parts = Vec::with_capacity(request.parts.len());
                let rank = |id: &str| {
                    calls.and_then(|response| {
                        response
                            .tool_calls()
                            .position(|call| call.tool_call_id == id)
                    })
                };
                for (part_index, part) in request.parts.iter().enumerate() {
                    let at = At {
                        provider: PROVIDER,
                        message: index,
                        part: part_index,
                    };
                    match part {
                        RequestPart::SystemPrompt(p) => match &mut system {
                            Some(text) => {
                                let text = text.to_mut();
                                text.push_str("\n\n");
                                text.push_str(&p.content);
                            }
                            None => system = Some(Cow::Borrowed(&p.content)),
                        },
                        RequestPart::UserPrompt(p) => {
                            for content in &p.content {
                                match content {
                                    UserContent::Text(text) if text.is_empty() => {}
                                    UserContent::Text(text) => {
                                        parts.push(Part::text(Cow::Borrowed(text)));
                                    }
                                    media => {
                                        at.check(media, ACCEPTS, "in a message")?;
                                        let (inline_data, file_data) = media_data(at, media)?;
                                        parts.push(Part {
                                            inline_data,
                                            file_data,
                                            ..Part::default()
                                        });
                                    }
                                }
                            }
                        }
                        RequestPart::ToolReturn(p) => {
                            let response = match &p.content {
                                Value::Object(_) => Answer::Object(&p.content),
                                other => Answer::Result(other),
                            };
                            let mut part =
                                Part::function_response(&p.tool_name, &p.tool_call_id, response);
                            if let Some(answer) = &mut part.function_response {
                                for media in p.media.iter().filter(|m| m.as_text().is_none()) {
                                    at.check(media, TOOL_ACCEPTS, "in a function response")?;
                                    let (inline_data, file_data) = media_data(at, media)?;
                                    answer.parts.push(FunctionResponsePart {
                                        inline_data,
                                        file_data,
                                    });
                                }
                            }
                            answers.push((rank(&p.tool_call_id).unwrap_or(usize::MAX), part));
                        }
                        RequestPart::RetryPrompt(p) => match (&p.tool_name, &p.tool_call_id) {
                            (Some(name), Some(id)) => answers.push((
                                rank(id).unwrap_or(usize::MAX),
                                Part::function_response(name, id, Answer::Error(p.model_text())),
                            )),
                            _ => parts.push(Part::text(Cow::Owned(p.model_text()))),
                        },
                    }
                }
                // Gemini pairs calls and answers by order: answers go first, in the order
                // of the calls.
                let ordered = if answers.is_empty() {
                    parts
                } else {
                    answers.sort_by_key(|(rank, _)| *rank);
                    let mut ordered: Vec<Part<'a>> =
                        answers.into_iter().map(|(_, part)| part).collect();
                    ordered.extend(parts);
                    ordered
                };
                ("user", ordered)
            }
            Message::Response(response) => {
                calls = Some(response);
                ("model", model_parts(&response.parts))
            }
        };
        if parts.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last.role == role => last.parts.extend(parts),
            _ => out.push(Content { role, parts }),
        }
    }
    Ok((system, out))
}

/// What Gemini takes inline in a message (Google's limits: 50 MB for an inline PDF, 20 MB
/// for other inline media). A URL (public, signed, or of the Files API) goes as `fileData`,
/// which Gemini fetches.
const ACCEPTS: &[Accepts] = &[
    Accepts {
        kind: MediaKind::Image,
        types: &[
            "image/png",
            "image/jpeg",
            "image/webp",
            "image/heic",
            "image/heif",
        ],
        max_bytes: 20 * MB,
    },
    Accepts {
        kind: MediaKind::Audio,
        types: &[
            "audio/wav",
            "audio/mp3",
            "audio/mpeg",
            "audio/aiff",
            "audio/aac",
            "audio/ogg",
            "audio/flac",
        ],
        max_bytes: 20 * MB,
    },
    Accepts {
        kind: MediaKind::Document,
        types: &["application/pdf", "text/plain"],
        max_bytes: 50 * MB,
    },
];

/// What Gemini takes in a function response (multimodal function responses: images and
/// documents, no audio).
const TOOL_ACCEPTS: &[Accepts] = &[
    Accepts {
        kind: MediaKind::Image,
        types: &["image/png", "image/jpeg", "image/webp"],
        max_bytes: 20 * MB,
    },
    Accepts {
        kind: MediaKind::Document,
        types: &["application/pdf", "text/plain"],
        max_bytes: 50 * MB,
    },
];

/// A media part's bytes (`inlineData`) or URL (`fileData`, which needs a media type).
fn media_data<'a>(
    at: At,
    media: &'a UserContent,
) -> Result<(Option<Blob<'a>>, Option<FileData<'a>>), ModelError> {
    let url = match media {
        UserContent::Binary(binary) => {
            return Ok((
                Some(Blob {
                    mime_type: Cow::Borrowed(&binary.media_type),
                    data: Cow::Owned(binary.base64()),
                }),
                None,
            ));
        }
        UserContent::ImageUrl(image) => (&image.url, image.media_type()),
        UserContent::DocumentUrl(document) => (&document.url, Some(document.media_type())),
        UserContent::Text(_) => return Ok((None, None)),
    };
    match (split_data_url(url.0), url.1) {
        (Some((mime_type, data)), _) => Ok((
            Some(Blob {
                mime_type: Cow::Borrowed(mime_type),
                data: Cow::Borrowed(data),
            }),
            None,
        )),
        (None, Some(mime_type)) => Ok((
            None,
            Some(FileData {
                mime_type: Cow::Owned(mime_type),
                file_uri: url.0,
            }),
        )),
        (None, None) => Err(at.refuse(
            media,
            "gemini needs a URL's media type: set it with `ImageUrl::with_media_type`",
        )),
    }
}

/// Bytes sent inline.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Blob<'a> {
    mime_type: Cow<'a, str>,
    data: Cow<'a, str>,
}

/// Media the API fetches from a URL.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FileData<'a> {
    mime_type: Cow<'a, str>,
    file_uri: &'a str,
}

/// Media inside a function response.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FunctionResponsePart<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    inline_data: Option<Blob<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    file_data: Option<FileData<'a>>,
}

/// A response's parts as Gemini's `model` parts: a signature golem kept apart goes back
/// onto the part before it.
fn model_parts(parts: &[ResponsePart]) -> Vec<Part<'_>> {
    let mut out: Vec<Part<'_>> = Vec::with_capacity(parts.len());
    for part in parts {
        match part {
            ResponsePart::Text(p) => out.push(Part::text(Cow::Borrowed(&p.content))),
            ResponsePart::ToolCall(call) => out.push(Part {
                function_call: Some(FunctionCall {
                    name: &call.tool_name,
                    // Arguments another provider sent as invalid JSON, or as JSON that is
                    // not an object, go as `{}`.
                    args: serde_json::from_str::<&RawValue>(&call.args)
                        .ok()
                        .filter(|args| args.get().starts_with('{'))
                        .unwrap_or(empty_object()),
                    id: (!call.tool_call_id.is_empty()).then_some(&call.tool_call_id),
                }),
                ..Part::default()
            }),
            ResponsePart::Thinking(ThinkingPart {
                content,
                signature,
                provider,
                ..
            }) if provider.as_deref() == Some(PROVIDER) => {
                if !content.is_empty() {
                    out.push(Part {
                        text: Some(Cow::Borrowed(content)),
                        thought: true,
                        thought_signature: signature.as_deref(),
                        ..Part::default()
                    });
                } else if let (Some(signature), Some(last)) = (signature, out.last_mut())
                    && last.thought_signature.is_none()
                    && last.raw.is_none()
                {
                    last.thought_signature = Some(signature);
                }
            }
            ResponsePart::Thinking(_) => {}
            ResponsePart::Provider(part) if part.provider == PROVIDER => {
                if let Value::Object(raw) = &part.data
                    && !raw.contains_key(VERDICT)
                {
                    out.push(Part {
                        raw: Some(raw),
                        ..Part::default()
                    });
                }
            }
            ResponsePart::Provider(_) => {}
        }
    }
    // Gemini refuses empty text parts; one carrying a signature stays.
    out.retain(|part| {
        part.text.as_deref() != Some("") || part.thought_signature.is_some() || part.thought
    });
    out
}

/// The key of the provider part holding a response's safety verdict, kept for the user and
/// never sent back.
const VERDICT: &str = "safetyVerdict";

/// Reads a `generateContent` response.
pub(super) fn parse(body: &[u8]) -> Result<ModelResponse, String> {
    let response: GenerateContentResponse<'_> = decode(body, "a generateContent response")?;
    let mut parts = Vec::new();
    let mut finish_reason = None;
    let mut verdict = Map::new();
    if let Some(candidate) = response.candidates.into_iter().next() {
        for part in candidate
            .content
            .map(|content| content.parts)
            .unwrap_or_default()
        {
            read_part(part, &mut parts)?;
        }
        let calls = parts
            .iter()
            .any(|part| matches!(part, ResponsePart::ToolCall(_)));
        finish_reason = candidate
            .finish_reason
            .as_deref()
            .map(|reason| match reason {
                "STOP" if calls => FinishReason::ToolCall,
                "STOP" => FinishReason::Stop,
                "MAX_TOKENS" => FinishReason::Length,
                "SAFETY"
                | "RECITATION"
                | "BLOCKLIST"
                | "PROHIBITED_CONTENT"
                | "SPII"
                | "IMAGE_SAFETY"
                | "IMAGE_PROHIBITED_CONTENT"
                | "IMAGE_RECITATION"
                | "MODEL_ARMOR" => FinishReason::ContentFilter,
                _ => FinishReason::Error,
            });
        if finish_reason == Some(FinishReason::ContentFilter) {
            for (key, value) in [
                ("finishMessage", candidate.finish_message),
                ("safetyRatings", candidate.safety_ratings),
            ] {
                if let Some(value) = value {
                    verdict.insert(key.to_owned(), value);
                }
            }
            if let Some(reason) = candidate.finish_reason {
                verdict.insert("finishReason".to_owned(), Value::String(reason));
            }
        }
    } else if let Some(feedback) = response.prompt_feedback
        && feedback.contains_key("blockReason")
    {
        // The prompt itself was blocked: no candidate at all.
        finish_reason = Some(FinishReason::ContentFilter);
        verdict.insert("promptFeedback".to_owned(), Value::Object(feedback));
    }
    if !verdict.is_empty() {
        let mut data = Map::new();
        data.insert(VERDICT.to_owned(), Value::Object(verdict));
        parts.push(ResponsePart::Provider(ProviderPart::new(
            PROVIDER,
            Value::Object(data),
        )));
    }
    Ok(ModelResponse {
        parts,
        usage: response
            .usage_metadata
            .map(UsageMetadata::usage)
            .unwrap_or_default(),
        model_name: response.model_version,
        provider_response_id: response.response_id,
        finish_reason,
    })
}

/// Reads one part into golem's parts: a signature on a text or a call follows it as an
/// empty [`ThinkingPart`].
fn read_part(raw: &RawValue, parts: &mut Vec<ResponsePart>) -> Result<(), String> {
    let part: PartIn<'_> = serde_json::from_str(raw.get())
        .map_err(|error| format!("a part cannot be read: {}", without_position(&error)))?;
    if part.function_call.is_none() && part.text.is_none() {
        // Code execution, inline data, whatever comes next: kept whole, to be echoed.
        let whole: Map<String, Value> = serde_json::from_str(raw.get())
            .map_err(|error| format!("a part cannot be read: {}", without_position(&error)))?;
        parts.push(ResponsePart::Provider(ProviderPart::new(
            PROVIDER,
            Value::Object(whole),
        )));
        return Ok(());
    }
    let signature = match part.thought_signature {
        Some(Value::String(signature)) => Some(signature),
        Some(_) => return Err("a `thoughtSignature` is not a string".to_owned()),
        None => None,
    };
    if let Some(call) = part.function_call {
        let call: FunctionCallIn = serde_json::from_str(call.get()).map_err(|error| {
            format!(
                "a `functionCall` part cannot be read: {}",
                without_position(&error)
            )
        })?;
        parts.push(ResponsePart::tool_call(
            call.name,
            call.args.unwrap_or_else(|| Value::Object(Map::new())),
            call.id.unwrap_or_default(),
        ));
    } else {
        let Some(Value::String(text)) = part.text else {
            return Err("a `text` part's text is not a string".to_owned());
        };
        if part.thought.as_ref().and_then(Value::as_bool) == Some(true) {
            let mut thinking = ThinkingPart::new(text).with_provider(PROVIDER);
            thinking.signature = signature;
            parts.push(ResponsePart::Thinking(thinking));
            return Ok(());
        }
        parts.push(ResponsePart::text(text));
    }
    if let Some(signature) = signature {
        parts.push(ResponsePart::Thinking(
            ThinkingPart::new("")
                .with_signature(signature)
                .with_provider(PROVIDER),
        ));
    }
    Ok(())
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GenerateContentRequest<'a> {
    contents: Vec<Content<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    system_instruction: Option<SystemInstruction<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<[Tools<'a>; 1]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_config: Option<ToolConfig<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    generation_config: Option<GenerationConfig<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ToolConfig<'a> {
    function_calling_config: FunctionCallingConfig<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FunctionCallingConfig<'a> {
    mode: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    allowed_function_names: Option<[&'a str; 1]>,
}

#[derive(Serialize)]
struct SystemInstruction<'a> {
    parts: [TextOnly<'a>; 1],
}

#[derive(Serialize)]
struct TextOnly<'a> {
    text: Cow<'a, str>,
}

#[derive(Serialize)]
struct Content<'a> {
    role: &'static str,
    parts: Vec<Part<'a>>,
}

/// One part: text (a thought, maybe), a function call or response, or a part kept verbatim.
#[derive(Serialize, Default)]
#[serde(rename_all = "camelCase")]
struct Part<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    thought: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    function_call: Option<FunctionCall<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    function_response: Option<FunctionResponse<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    inline_data: Option<Blob<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    file_data: Option<FileData<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thought_signature: Option<&'a str>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    raw: Option<&'a Map<String, Value>>,
}

impl<'a> Part<'a> {
    fn text(text: Cow<'a, str>) -> Self {
        Part {
            text: Some(text),
            ..Part::default()
        }
    }

    fn function_response(name: &'a str, id: &'a str, response: Answer<'a>) -> Self {
        Part {
            function_response: Some(FunctionResponse {
                name,
                id: (!id.is_empty()).then_some(id),
                response,
                parts: Vec::new(),
            }),
            ..Part::default()
        }
    }
}

#[derive(Serialize)]
struct FunctionCall<'a> {
    name: &'a str,
    args: &'a RawValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
}

#[derive(Serialize)]
struct FunctionResponse<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a str>,
    response: Answer<'a>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    parts: Vec<FunctionResponsePart<'a>>,
}

/// A function response's `response`, which Gemini takes as an object: the tool's own
/// object, or what it returned under `result`, or a rejection's feedback under `error`.
/// Written as it is sent, without building the object.
enum Answer<'a> {
    Object(&'a Value),
    Result(&'a Value),
    Error(String),
}

impl Serialize for Answer<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Answer::Object(object) => object.serialize(serializer),
            Answer::Result(value) => one_entry(serializer, "result", value),
            Answer::Error(text) => one_entry(serializer, "error", text),
        }
    }
}

/// The object `{key: value}`.
fn one_entry<S, V>(serializer: S, key: &str, value: &V) -> Result<S::Ok, S::Error>
where
    S: serde::Serializer,
    V: Serialize + ?Sized,
{
    use serde::ser::SerializeMap;

    let mut map = serializer.serialize_map(Some(1))?;
    map.serialize_entry(key, value)?;
    map.end()
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Tools<'a> {
    function_declarations: &'a [Arc<RawValue>],
}

/// A tool as Gemini declares it.
#[derive(Serialize)]
pub(super) struct FunctionDeclaration<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters: Option<Value>,
}

impl<'a> FunctionDeclaration<'a> {
    /// `tool`'s declaration, its parameters in Gemini's dialect.
    pub(super) fn new(tool: &'a ToolDefinition) -> Self {
        let parameters = to_gemini_schema(&tool.parameters);
        let empty = parameters
            .get("properties")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty);
        FunctionDeclaration {
            name: &tool.name,
            description: tool.description.as_deref(),
            // Gemini refuses an object schema without properties: a tool without
            // parameters declares none.
            parameters: (!empty).then_some(parameters),
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct GenerationConfig<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stop_sequences: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seed: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_mime_type: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_schema: Option<Value>,
}

impl GenerationConfig<'_> {
    fn is_empty(&self) -> bool {
        self.max_output_tokens.is_none()
            && self.temperature.is_none()
            && self.top_p.is_none()
            && self.stop_sequences.is_none()
            && self.seed.is_none()
            && self.response_mime_type.is_none()
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GenerateContentResponse<'a> {
    #[serde(default, borrow)]
    candidates: Vec<Candidate<'a>>,
    prompt_feedback: Option<Map<String, Value>>,
    usage_metadata: Option<UsageMetadata>,
    model_version: Option<String>,
    response_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate<'a> {
    #[serde(borrow)]
    content: Option<CandidateContent<'a>>,
    finish_reason: Option<String>,
    /// Kept for a safety verdict, with the safety ratings.
    finish_message: Option<Value>,
    safety_ratings: Option<Value>,
}

#[derive(Deserialize)]
struct CandidateContent<'a> {
    /// Read part by part, so unknown kinds are kept whole; borrowed from the body.
    #[serde(default, borrow)]
    parts: Vec<&'a RawValue>,
}

/// The kinds of part golem reads; any other is kept whole.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PartIn<'a> {
    text: Option<Value>,
    thought: Option<Value>,
    thought_signature: Option<Value>,
    #[serde(borrow)]
    function_call: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct FunctionCallIn {
    name: String,
    args: Option<Value>,
    id: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct UsageMetadata {
    prompt_token_count: u64,
    candidates_token_count: u64,
    thoughts_token_count: u64,
    tool_use_prompt_token_count: u64,
    cached_content_token_count: u64,
    prompt_tokens_details: Vec<ModalityCount>,
    candidates_tokens_details: Vec<ModalityCount>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct ModalityCount {
    modality: String,
    token_count: u64,
}

impl UsageMetadata {
    fn usage(self) -> RequestUsage {
        let audio = |details: &[ModalityCount]| {
            details
                .iter()
                .filter(|detail| detail.modality == "AUDIO")
                .fold(0u64, |sum, detail| sum.saturating_add(detail.token_count))
        };
        RequestUsage {
            cache_read_tokens: self.cached_content_token_count,
            reasoning_tokens: self.thoughts_token_count,
            audio_input_tokens: audio(&self.prompt_tokens_details),
            audio_output_tokens: audio(&self.candidates_tokens_details),
            ..RequestUsage::new(
                self.prompt_token_count
                    .saturating_add(self.tool_use_prompt_token_count),
                self.candidates_token_count
                    .saturating_add(self.thoughts_token_count),
            )
        }
    }
}
