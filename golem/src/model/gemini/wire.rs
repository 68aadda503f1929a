//! The `generateContent` request: golem's messages mapped to Gemini's contents, and the
//! body written from them (the response is read in `read`).

use std::borrow::Cow;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use smallvec::SmallVec;

use super::super::json_out;
use super::super::media::{Accepts, At, MB, essence, media_preface, split_data_url};
use super::super::provider::{ToolUse, request_settings, tool_use};
use super::super::{MediaKind, UserContent};
use super::super::{
    Message, ModelError, ModelResponse, ModelSettings, RequestParams, RequestPart, ResponsePart,
    ThinkingPart,
};
use super::PROVIDER;
use crate::output::OutputMode;
use crate::schema::to_gemini_schema;
use crate::tool::ToolDefinition;

/// The request body of `model` for `messages` and `params`, written straight into a buffer
/// of `capacity` bytes to start with (see [`json_out`]).
///
/// # Errors
/// Before Gemini 3, native output beside function tools, which those models refuse.
pub(super) fn body(
    model: &str,
    provider_settings: &ModelSettings,
    messages: &[Message],
    params: &RequestParams,
    declarations: &[Arc<RawValue>],
    capacity: usize,
) -> Result<Vec<u8>, ModelError> {
    let settings = request_settings(provider_settings, params);
    let choice = tool_use(messages, params, settings.tool_choice.as_ref())
        .filter(|_| !declarations.is_empty());
    let before_3 = before_gemini_3(model);
    let (response_mime_type, response_schema, response_json_schema) =
        match (&params.output_mode, &params.output_schema) {
            (OutputMode::Native, Some(_)) if before_3 && !declarations.is_empty() => {
                return Err(ModelError::other(format!(
                    "Gemini {model} takes no native output beside function tools (Gemini 3 \
                     does): use OutputMode::Tool or OutputMode::Prompted, or a Gemini 3 model"
                )));
            }
            (OutputMode::Native, Some(schema)) => {
                let converted = to_gemini_schema(&schema.schema);
                // What Gemini's dialect cannot say goes as JSON Schema, which Gemini also
                // takes (`responseJsonSchema`).
                let (mut converted, mut json) = if says_less(&converted, &schema.schema) {
                    (None, Some(schema.schema.clone()))
                } else {
                    (Some(converted), None)
                };
                if let (Some(Value::Object(map)), Some(description)) =
                    (converted.as_mut().or(json.as_mut()), &schema.description)
                {
                    map.entry("description")
                        .or_insert_with(|| Value::String(description.clone()));
                }
                (Some("application/json"), converted, json)
            }
            _ => (None, None, None),
        };
    let generation_config = GenerationConfig {
        max_output_tokens: settings.max_tokens,
        temperature: settings.temperature,
        top_p: settings.top_p,
        stop_sequences: settings.stop_sequences.as_deref(),
        seed: settings.seed,
        response_mime_type,
        response_schema,
        response_json_schema,
    };
    let mut out = Vec::with_capacity(capacity);
    out.extend_from_slice(b"{\"contents\":[");
    let system_instruction = write_contents(
        &mut out,
        params.instructions.as_deref(),
        messages,
        !before_3,
    )?;
    out.push(b']');
    if let Some(text) = system_instruction {
        out.extend_from_slice(b",\"systemInstruction\":{\"parts\":[{\"text\":");
        json_out::string(&mut out, &text);
        out.extend_from_slice(b"}]}");
    }
    if !declarations.is_empty() {
        out.extend_from_slice(b",\"tools\":[{\"functionDeclarations\":");
        json_out::raw_list(&mut out, declarations);
        out.extend_from_slice(b"}]");
    }
    if let Some(choice) = choice {
        write_tool_config(&mut out, choice);
    }
    if !generation_config.is_empty() {
        out.extend_from_slice(b",\"generationConfig\":");
        json_out::value(&mut out, &generation_config)?;
    }
    json_out::close_with_extra(out, &settings.extra_body, &[])
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
    let full = body(model, provider_settings, messages, params, declarations, 0)?;
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

/// Whether `model` (its id, without `models/`) is of a generation before Gemini 3, which
/// takes no native output beside tools and does not check thought signatures. A name that
/// does not tell (`gemini-flash-latest`) is taken as the latest generation's.
fn before_gemini_3(model: &str) -> bool {
    ["gemini-1", "gemini-2", "gemma-"]
        .iter()
        .any(|old| model.starts_with(old))
}

/// The signature Google documents for a function call no Gemini model signed (one another
/// provider made, say), which Gemini 3 requires on a step's first call.
const UNSIGNED: &str = "skip_thought_signature_validator";

/// `{}`, for arguments that cannot be sent as they are.
fn empty_object() -> &'static RawValue {
    static EMPTY: std::sync::LazyLock<Box<RawValue>> =
        std::sync::LazyLock::new(|| RawValue::from_string("{}".to_owned()).expect("`{}` is JSON"));
    &EMPTY
}

/// Writes the `toolConfig` field: how the model may call the tools.
fn write_tool_config(out: &mut Vec<u8>, choice: ToolUse<'_>) {
    let (mode, allowed): (&[u8], _) = match choice {
        ToolUse::Auto => (b"AUTO", None),
        ToolUse::Required => (b"ANY", None),
        ToolUse::None => (b"NONE", None),
        ToolUse::Tool(name) => (b"ANY", Some(name)),
    };
    out.extend_from_slice(b",\"toolConfig\":{\"functionCallingConfig\":{\"mode\":\"");
    out.extend_from_slice(mode);
    out.push(b'"');
    if let Some(name) = allowed {
        out.extend_from_slice(b",\"allowedFunctionNames\":[");
        json_out::string(out, name);
        out.push(b']');
    }
    out.extend_from_slice(b"}}");
}

/// Writes the `user` / `model` contents of a history (consecutive messages of one role in
/// one content) and returns the system instruction: the instructions, then the history's
/// system prompts.
fn write_contents<'a>(
    out: &mut Vec<u8>,
    instructions: Option<&'a str>,
    messages: &'a [Message],
    signs_calls: bool,
) -> Result<Option<Cow<'a, str>>, ModelError> {
    let mut system: Option<Cow<'a, str>> = instructions.map(Cow::Borrowed);
    let mut contents = Contents { open: None };
    // The last response, whose calls' order the function responses follow.
    let mut calls: Option<&ModelResponse> = None;
    for (index, message) in messages.iter().enumerate() {
        match message {
            Message::Request(request) => {
                // Gemini pairs calls and answers by order: answers go first, in the order
                // of the calls, then the message's other parts.
                // Most requests carry a part or two: kept on the stack.
                let mut answers: SmallVec<[(usize, Part<'a>); 2]> = SmallVec::new();
                let mut rest: SmallVec<[Part<'a>; 2]> = SmallVec::new();
                let rank = |id: &str| {
                    calls
                        .and_then(|response| {
                            response
                                .tool_calls()
                                .position(|call| call.tool_call_id == id)
                        })
                        .unwrap_or(usize::MAX)
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
                                        rest.push(Part::text(Cow::Borrowed(text)));
                                    }
                                    media => {
                                        at.check(media, ACCEPTS, "in a message")?;
                                        let (inline_data, file_data) = media_data(at, media)?;
                                        rest.push(Part {
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
                                // A function response's parts take only media: the tool's
                                // texts follow the answers, as OpenAI Chat sends its media.
                                let mut texts = p
                                    .media
                                    .iter()
                                    .filter_map(UserContent::as_text)
                                    .filter(|text| !text.is_empty())
                                    .peekable();
                                if texts.peek().is_some() {
                                    rest.push(Part::text(Cow::Owned(media_preface(
                                        &p.tool_name,
                                        &p.tool_call_id,
                                    ))));
                                    rest.extend(texts.map(|text| Part::text(Cow::Borrowed(text))));
                                }
                                for media in p.media.iter().filter(|m| m.as_text().is_none()) {
                                    at.check(media, TOOL_ACCEPTS, "in a function response")?;
                                    let (inline_data, file_data) = media_data(at, media)?;
                                    answer.parts.push(FunctionResponsePart {
                                        inline_data,
                                        file_data,
                                    });
                                }
                            }
                            answers.push((rank(&p.tool_call_id), part));
                        }
                        RequestPart::RetryPrompt(p) => match (&p.tool_name, &p.tool_call_id) {
                            (Some(name), Some(id)) => answers.push((
                                rank(id),
                                Part::function_response(
                                    name,
                                    id,
                                    Answer::Error(p.model_text_pieces()),
                                ),
                            )),
                            _ => rest.push(Part::text(Cow::Owned(p.model_text()))),
                        },
                    }
                }
                answers.sort_by_key(|(rank, _)| *rank);
                for part in answers.iter().map(|(_, part)| part).chain(&rest) {
                    part.write(contents.part(out, "user"))?;
                }
            }
            Message::Response(response) => {
                calls = Some(response);
                for part in model_parts(&response.parts, signs_calls) {
                    part.write(contents.part(out, "model"))?;
                }
            }
        }
    }
    contents.close(out);
    Ok(system)
}

/// The contents being written: the role of the one open, whose parts a message of the same
/// role goes on.
struct Contents {
    open: Option<&'static str>,
}

impl Contents {
    /// Readies `out` for a part of `role`: in the open content when it is of that role, else
    /// in a new one.
    fn part<'o>(&mut self, out: &'o mut Vec<u8>, role: &'static str) -> &'o mut Vec<u8> {
        match self.open {
            Some(open) if open == role => out.push(b','),
            open => {
                if open.is_some() {
                    out.extend_from_slice(b"]},");
                }
                out.extend_from_slice(b"{\"role\":\"");
                out.extend_from_slice(role.as_bytes());
                out.extend_from_slice(b"\",\"parts\":[");
                self.open = Some(role);
            }
        }
        out
    }

    fn close(self, out: &mut Vec<u8>) {
        if self.open.is_some() {
            out.extend_from_slice(b"]}");
        }
    }
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
        encoded: false,
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
        encoded: false,
    },
    Accepts {
        kind: MediaKind::Document,
        types: &["application/pdf", "text/plain"],
        max_bytes: 50 * MB,
        encoded: false,
    },
];

/// What Gemini takes in a function response (multimodal function responses: images and
/// documents, no audio).
const TOOL_ACCEPTS: &[Accepts] = &[
    Accepts {
        kind: MediaKind::Image,
        types: &["image/png", "image/jpeg", "image/webp"],
        max_bytes: 20 * MB,
        encoded: false,
    },
    Accepts {
        kind: MediaKind::Document,
        types: &["application/pdf", "text/plain"],
        max_bytes: 50 * MB,
        encoded: false,
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
                    mime_type: essence(&binary.media_type),
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
                mime_type: essence(mime_type),
                data: Cow::Borrowed(data),
            }),
            None,
        )),
        (None, Some(mime_type)) => Ok((
            None,
            Some(FileData {
                mime_type: Cow::Owned(essence(&mime_type).into_owned()),
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
struct Blob<'a> {
    mime_type: Cow<'a, str>,
    data: Cow<'a, str>,
}

/// Media the API fetches from a URL.
struct FileData<'a> {
    mime_type: Cow<'a, str>,
    file_uri: &'a str,
}

/// Media inside a function response.
struct FunctionResponsePart<'a> {
    inline_data: Option<Blob<'a>>,
    file_data: Option<FileData<'a>>,
}

/// A response's parts as Gemini's `model` parts: a signature golem kept apart goes back
/// onto the part before it. With `signs_calls` (Gemini 3), a response whose first call no
/// Gemini model signed gets the signature Google documents for such calls on it.
fn model_parts(parts: &[ResponsePart], signs_calls: bool) -> SmallVec<[Part<'_>; 2]> {
    let mut out: SmallVec<[Part<'_>; 2]> = SmallVec::with_capacity(parts.len());
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
                    && !raw.contains_key(STOPPED)
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
    if signs_calls
        && let Some(first) = out.iter_mut().find(|part| part.function_call.is_some())
        && first.thought_signature.is_none()
    {
        first.thought_signature = Some(UNSIGNED);
    }
    out
}

/// The key of the provider part holding a response's safety verdict, kept for the user and
/// never sent back.
pub(super) const VERDICT: &str = "safetyVerdict";

/// The key of the provider part holding why a response stopped short of an answer for
/// another reason (`MALFORMED_FUNCTION_CALL`, with Google's message), kept for the user and
/// never sent back.
pub(super) const STOPPED: &str = "stopped";

/// One part: text (a thought, maybe), a function call or response, or a part kept verbatim.
#[derive(Default)]
struct Part<'a> {
    text: Option<Cow<'a, str>>,
    thought: bool,
    function_call: Option<FunctionCall<'a>>,
    function_response: Option<FunctionResponse<'a>>,
    inline_data: Option<Blob<'a>>,
    file_data: Option<FileData<'a>>,
    thought_signature: Option<&'a str>,
    /// A part of a kind golem does not read, sent back as it came.
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

struct FunctionCall<'a> {
    name: &'a str,
    args: &'a RawValue,
    id: Option<&'a str>,
}

struct FunctionResponse<'a> {
    name: &'a str,
    id: Option<&'a str>,
    response: Answer<'a>,
    parts: Vec<FunctionResponsePart<'a>>,
}

/// A function response's `response`, which Gemini takes as an object: the tool's own
/// object, or what it returned under `result`, or a rejection's feedback under `error`.
/// Written as it is sent, without building the object.
enum Answer<'a> {
    Object(&'a Value),
    Result(&'a Value),
    /// A rejection's feedback, in its pieces.
    Error([&'a str; 3]),
}

/// An object being written: its fields' names are written with the comma before them.
struct Object {
    empty: bool,
}

impl Object {
    fn open(out: &mut Vec<u8>) -> Self {
        out.push(b'{');
        Object { empty: true }
    }

    /// Writes the comma before a field, unless it is the first.
    fn next(&mut self, out: &mut Vec<u8>) {
        if !std::mem::replace(&mut self.empty, false) {
            out.push(b',');
        }
    }

    /// Writes `"name":`; `name` is one of the wire's own names, which need no escaping.
    fn field(&mut self, out: &mut Vec<u8>, name: &str) {
        self.next(out);
        out.push(b'"');
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(b"\":");
    }

    /// Writes the `inlineData` and `fileData` fields a media part has.
    fn media(&mut self, out: &mut Vec<u8>, blob: Option<&Blob<'_>>, file: Option<&FileData<'_>>) {
        if let Some(blob) = blob {
            self.field(out, "inlineData");
            blob.write(out);
        }
        if let Some(file) = file {
            self.field(out, "fileData");
            file.write(out);
        }
    }

    fn close(self, out: &mut Vec<u8>) {
        out.push(b'}');
    }
}

impl Part<'_> {
    fn write(&self, out: &mut Vec<u8>) -> Result<(), ModelError> {
        let mut object = Object::open(out);
        if let Some(text) = &self.text {
            object.field(out, "text");
            json_out::string(out, text);
        }
        if self.thought {
            object.field(out, "thought");
            out.extend_from_slice(b"true");
        }
        if let Some(call) = &self.function_call {
            object.field(out, "functionCall");
            call.write(out);
        }
        if let Some(response) = &self.function_response {
            object.field(out, "functionResponse");
            response.write(out)?;
        }
        object.media(out, self.inline_data.as_ref(), self.file_data.as_ref());
        if let Some(signature) = self.thought_signature {
            object.field(out, "thoughtSignature");
            json_out::string(out, signature);
        }
        for (name, value) in self.raw.into_iter().flatten() {
            object.next(out);
            json_out::entry(out, name, value)?;
        }
        object.close(out);
        Ok(())
    }
}

impl FunctionCall<'_> {
    fn write(&self, out: &mut Vec<u8>) {
        let mut object = Object::open(out);
        object.field(out, "name");
        json_out::string(out, self.name);
        object.field(out, "args");
        out.extend_from_slice(self.args.get().as_bytes());
        if let Some(id) = self.id {
            object.field(out, "id");
            json_out::string(out, id);
        }
        object.close(out);
    }
}

impl FunctionResponse<'_> {
    fn write(&self, out: &mut Vec<u8>) -> Result<(), ModelError> {
        let mut object = Object::open(out);
        object.field(out, "name");
        json_out::string(out, self.name);
        if let Some(id) = self.id {
            object.field(out, "id");
            json_out::string(out, id);
        }
        object.field(out, "response");
        match &self.response {
            Answer::Object(value) => json_out::value(out, value)?,
            Answer::Result(value) => {
                out.extend_from_slice(b"{\"result\":");
                json_out::value(out, value)?;
                out.push(b'}');
            }
            Answer::Error(pieces) => {
                out.extend_from_slice(b"{\"error\":");
                json_out::string_of(out, pieces);
                out.push(b'}');
            }
        }
        if !self.parts.is_empty() {
            object.field(out, "parts");
            out.push(b'[');
            for (index, part) in self.parts.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                let mut media = Object::open(out);
                media.media(out, part.inline_data.as_ref(), part.file_data.as_ref());
                media.close(out);
            }
            out.push(b']');
        }
        object.close(out);
        Ok(())
    }
}

impl Blob<'_> {
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"mimeType\":");
        json_out::string(out, &self.mime_type);
        out.extend_from_slice(b",\"data\":");
        json_out::string(out, &self.data);
        out.push(b'}');
    }
}

impl FileData<'_> {
    fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"mimeType\":");
        json_out::string(out, &self.mime_type);
        out.extend_from_slice(b",\"fileUri\":");
        json_out::string(out, self.file_uri);
        out.push(b'}');
    }
}

/// A tool as Gemini declares it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct FunctionDeclaration<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters: Option<Value>,
    /// The parameters as JSON Schema, when Gemini's dialect cannot say them (a map, a type
    /// that holds itself): Gemini takes one or the other.
    #[serde(skip_serializing_if = "Option::is_none")]
    parameters_json_schema: Option<&'a Value>,
}

impl<'a> FunctionDeclaration<'a> {
    /// `tool`'s declaration, its parameters in Gemini's dialect, or as JSON Schema when
    /// the dialect says less.
    pub(super) fn new(tool: &'a ToolDefinition) -> Self {
        let parameters = to_gemini_schema(&tool.parameters);
        if says_less(&parameters, &tool.parameters) {
            return FunctionDeclaration {
                name: &tool.name,
                description: tool.description.as_deref(),
                parameters: None,
                parameters_json_schema: Some(&tool.parameters),
            };
        }
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
            parameters_json_schema: None,
        }
    }
}

/// Whether `converted`, a schema in Gemini's dialect, says less than `original`: it has an
/// object without properties (which Gemini refuses) where the original has a map (values
/// with a schema of their own) or a type that holds itself, whose recursion the dialect ends
/// in an open object. A root without properties is a tool without parameters, unless the
/// original root is a map. A node without a type (see [`untyped`]) says less too.
fn says_less(converted: &Value, original: &Value) -> bool {
    fn open_below(schema: &Value) -> bool {
        match schema {
            Value::Object(map) => {
                let open = map.get("type").and_then(Value::as_str) == Some("OBJECT")
                    && map
                        .get("properties")
                        .and_then(Value::as_object)
                        .is_none_or(Map::is_empty);
                open || map.values().any(open_below)
            }
            Value::Array(items) => items.iter().any(open_below),
            _ => false,
        }
    }
    let root_is_map = matches!(
        original.get("additionalProperties"),
        Some(Value::Object(_) | Value::Bool(true))
    );
    let below = match converted {
        Value::Object(map) => map
            .iter()
            .filter(|(key, _)| key.as_str() != "type")
            .any(|(_, child)| open_below(child)),
        _ => false,
    };
    root_is_map || below || untyped(converted)
}

/// Whether a schema in Gemini's dialect has a node without a `type` (a value of any kind, a
/// tuple's items, a lone `null`), which Gemini refuses ("type: must be specified when not
/// using one_of, any_of or all_of fields").
fn untyped(schema: &Value) -> bool {
    let Value::Object(map) = schema else {
        return false;
    };
    if let Some(Value::Array(variants)) = map.get("anyOf") {
        return variants.iter().any(untyped);
    }
    !map.contains_key("type")
        || map
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|properties| properties.values().any(untyped))
        || map.get("items").is_some_and(untyped)
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
    #[serde(skip_serializing_if = "Option::is_none")]
    response_json_schema: Option<Value>,
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn extra_body_fields_leave_golems_own_numbers_exact() {
        let temperature = 0.199_999_999_999_999_98;
        let settings = ModelSettings::default()
            .temperature(temperature)
            .extra("safetySettings", json!([]));
        let written = body(
            "gemini-2.5-flash",
            &settings,
            &[],
            &RequestParams::text(Vec::new()),
            &[],
            0,
        )
        .expect("a body is written");
        let sent: Value = serde_json::from_slice(&written).expect("JSON");
        assert_eq!(
            sent["generationConfig"]["temperature"].as_f64(),
            Some(temperature)
        );
        assert_eq!(sent["safetySettings"], json!([]));
    }

    #[test]
    fn a_schema_with_a_node_of_no_type_goes_as_json_schema() {
        let tool = |parameters: Value| ToolDefinition {
            name: "record".into(),
            description: None,
            parameters,
        };
        for parameters in [
            // A value of any kind (`serde_json::Value`).
            json!({"type": "object", "properties": {"data": {}}, "required": ["data"]}),
            json!({"type": "object", "properties": {"data": true}}),
            // Items of any kind, and a tuple.
            json!({"type": "object", "properties": {"rows": {"type": "array", "items": true}}}),
            json!({"type": "object", "properties": {"pair": {
                "type": "array",
                "prefixItems": [{"type": "string"}, {"type": "integer"}]
            }}}),
            // A lone `null`, and a variant of no type.
            json!({"type": "object", "properties": {"nothing": {"type": "null"}}}),
            json!({"type": "object", "properties": {"either": {"anyOf": [{"type": "string"}, {}]}}}),
        ] {
            let definition = tool(parameters.clone());
            let declaration = FunctionDeclaration::new(&definition);
            assert_eq!(declaration.parameters, None, "{parameters}");
            assert_eq!(
                declaration.parameters_json_schema,
                Some(&parameters),
                "{parameters}"
            );
        }
        let typed = json!({"type": "object", "properties": {
            "n": {"type": "integer"},
            "names": {"type": "array", "items": {"type": "string"}},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]}
        }});
        let definition = tool(typed);
        assert!(FunctionDeclaration::new(&definition).parameters.is_some());
    }
}
