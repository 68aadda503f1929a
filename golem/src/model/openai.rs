//! OpenAI Chat Completions, and every server that speaks it (Ollama, vLLM, llama.cpp
//! server, LM Studio, OpenRouter, Groq) through a configurable base URL.
//!
//! ```no_run
//! use golem::model::openai::OpenAiModel;
//! use golem::model::ModelSettings;
//!
//! // OPENAI_API_KEY and, optionally, OPENAI_BASE_URL from the environment:
//! let model = OpenAiModel::from_env("gpt-4o-mini")?;
//!
//! // A local Ollama server, no key:
//! let local = OpenAiModel::builder("llama3.2")
//!     .base_url("http://localhost:11434/v1")
//!     .settings(ModelSettings::default().temperature(0.0))
//!     .build()?;
//! # Ok::<_, golem::model::ProviderError>(())
//! ```

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::http::{ApiKey, HttpSettings, Transport};
use super::infer::{env_var, normalize_base_url};
use super::{
    FinishReason, Message, Model, ModelError, ModelResponse, ModelSettings, ProviderError,
    RequestParams, RequestPart, ResponsePart, ToolChoice,
};
use crate::output::OutputMode;
use crate::tool::ToolDefinition;
use crate::usage::Usage;

/// Where the API key is read from.
pub const API_KEY_ENV: &str = "OPENAI_API_KEY";
/// Where a base URL other than OpenAI's is read from.
pub const BASE_URL_ENV: &str = "OPENAI_BASE_URL";
/// OpenAI's own API.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

const PROVIDER: &str = "openai";

/// A Chat Completions model. Cheap to clone; clones share one connection pool.
#[derive(Clone)]
pub struct OpenAiModel {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    url: String,
    transport: Transport,
    settings: ModelSettings,
    strict_tools: bool,
}

impl fmt::Debug for OpenAiModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiModel")
            .field("name", &self.inner.name)
            .field("url", &self.inner.url)
            .field("transport", &self.inner.transport)
            .field("settings", &self.inner.settings)
            .field("strict_tools", &self.inner.strict_tools)
            .finish()
    }
}

impl OpenAiModel {
    /// Starts configuring `model` against OpenAI's API.
    pub fn builder(model: impl Into<String>) -> OpenAiBuilder {
        OpenAiBuilder {
            name: model.into(),
            api_key: None,
            base_url: DEFAULT_BASE_URL.to_owned(),
            organization: None,
            project: None,
            http: HttpSettings::default(),
            settings: ModelSettings::default(),
            strict_tools: false,
        }
    }

    /// `model` with the key from `OPENAI_API_KEY` and the base URL from `OPENAI_BASE_URL`
    /// (OpenAI's own when unset). A key is required for OpenAI's API, optional for other
    /// servers.
    ///
    /// # Errors
    /// [`ProviderError::MissingApiKey`] when OpenAI's API is used without a key; an invalid
    /// base URL.
    pub fn from_env(model: impl Into<String>) -> Result<Self, ProviderError> {
        let mut builder = OpenAiModel::builder(model);
        if let Some(key) = env_var(API_KEY_ENV) {
            builder = builder.api_key(key);
        }
        if let Some(url) = env_var(BASE_URL_ENV) {
            builder = builder.base_url(url);
        }
        builder.build()
    }

    fn body(&self, messages: &[Message], params: &RequestParams) -> Result<Vec<u8>, ModelError> {
        let settings = &self.inner.settings;
        let tools: Vec<ChatTool<'_>> = params
            .all_tools()
            .map(|tool| ChatTool::new(tool, self.inner.strict_tools))
            .collect();
        let has_tools = !tools.is_empty();
        let tool_choice = match &settings.tool_choice {
            Some(choice) if has_tools => Some(tool_choice(choice)),
            None if has_tools && !params.allow_text_output => Some(Value::from("required")),
            _ => None,
        };
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
        let request = ChatRequest {
            model: &self.inner.name,
            messages: chat_messages(messages),
            tools,
            tool_choice,
            parallel_tool_calls: settings.parallel_tool_calls.filter(|_| has_tools),
            response_format,
            temperature: settings.temperature,
            top_p: settings.top_p,
            max_tokens: settings.max_tokens,
            seed: settings.seed,
            extra: &settings.extra_body,
        };
        serde_json::to_vec(&request).map_err(ModelError::other)
    }

    fn parse(&self, body: &[u8]) -> Result<ModelResponse, ModelError> {
        let response: ChatResponse = serde_json::from_slice(body).map_err(|error| {
            self.inner
                .transport
                .invalid(format!("the body is not a chat completion: {error}"))
        })?;
        let Some(choice) = response.choices.into_iter().next() else {
            return Err(self.inner.transport.invalid("the response has no choices"));
        };
        let mut parts = Vec::new();
        if let Some(content) = choice.message.content.filter(|c| !c.is_empty()) {
            parts.push(ResponsePart::text(content));
        }
        for call in choice.message.tool_calls {
            // A call without an id gets one from the run.
            let args = match call.function.arguments {
                Value::String(args) => args,
                // Some compatible servers send the arguments as an object.
                other => other.to_string(),
            };
            parts.push(ResponsePart::tool_call(call.function.name, args, call.id));
        }
        let mut finish_reason = choice.finish_reason.as_deref().map(|reason| match reason {
            "stop" => FinishReason::Stop,
            "length" => FinishReason::Length,
            "tool_calls" | "function_call" => FinishReason::ToolCall,
            "content_filter" => FinishReason::ContentFilter,
            _ => FinishReason::Error,
        });
        if choice.message.refusal.is_some() && parts.is_empty() {
            finish_reason = Some(FinishReason::ContentFilter);
        }
        let usage = response.usage.map_or_else(
            || Usage::request(0, 0),
            |usage| Usage {
                cache_read_tokens: usage
                    .prompt_tokens_details
                    .map_or(0, |details| details.cached_tokens),
                ..Usage::request(usage.prompt_tokens, usage.completion_tokens)
            },
        );
        Ok(ModelResponse {
            parts,
            usage,
            model_name: response.model,
            provider_response_id: response.id,
            finish_reason,
        })
    }
}

impl Model for OpenAiModel {
    fn request<'a>(
        &'a self,
        messages: &'a [Message],
        params: &'a RequestParams,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        async move {
            let body = self.body(messages, params)?;
            let bytes = self
                .inner
                .transport
                .post_json(&self.inner.url, body)
                .await?;
            self.parse(&bytes)
        }
        .boxed()
    }

    fn name(&self) -> &str {
        &self.inner.name
    }

    fn system(&self) -> &str {
        PROVIDER
    }
}

/// Configures an [`OpenAiModel`].
#[must_use = "an OpenAiBuilder does nothing until `build()`"]
pub struct OpenAiBuilder {
    name: String,
    api_key: Option<ApiKey>,
    base_url: String,
    organization: Option<String>,
    project: Option<String>,
    http: HttpSettings,
    settings: ModelSettings,
    strict_tools: bool,
}

impl fmt::Debug for OpenAiBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiBuilder")
            .field("name", &self.name)
            .field("api_key", &self.api_key)
            .field("base_url", &self.base_url)
            .field("organization", &self.organization)
            .field("project", &self.project)
            .field("http", &self.http)
            .field("settings", &self.settings)
            .field("strict_tools", &self.strict_tools)
            .finish()
    }
}

impl OpenAiBuilder {
    /// Sets the API key.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(ApiKey::new(key));
        self
    }

    /// Sets the base URL, e.g. `http://localhost:11434/v1` for Ollama; requests go to
    /// `{base_url}/chat/completions`.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into();
        self
    }

    /// Sends `OpenAI-Organization`.
    pub fn organization(mut self, organization: impl Into<String>) -> Self {
        self.organization = Some(organization.into());
        self
    }

    /// Sends `OpenAI-Project`.
    pub fn project(mut self, project: impl Into<String>) -> Self {
        self.project = Some(project.into());
        self
    }

    /// Sets timeouts, retries and the response size limit.
    pub fn http(mut self, http: HttpSettings) -> Self {
        self.http = http;
        self
    }

    /// Sets temperature, max_tokens, seed, tool choice and extra body fields.
    pub fn settings(mut self, settings: ModelSettings) -> Self {
        self.settings = settings;
        self
    }

    /// Sends every tool with `"strict": true`, its schema in the form strict mode accepts
    /// (see [`to_strict_schema`]): the model's arguments then always match the schema.
    /// Off by default, as not every compatible server knows strict mode.
    pub fn strict_tools(mut self, strict: bool) -> Self {
        self.strict_tools = strict;
        self
    }

    /// Builds the model.
    ///
    /// # Errors
    /// [`ProviderError::MissingApiKey`] when OpenAI's own API is used without a key; an
    /// invalid base URL or header value.
    pub fn build(self) -> Result<OpenAiModel, ProviderError> {
        let base_url = normalize_base_url(&self.base_url)?;
        if self.api_key.is_none() && base_url == DEFAULT_BASE_URL {
            return Err(ProviderError::MissingApiKey {
                provider: PROVIDER,
                env_var: API_KEY_ENV,
            });
        }
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.api_key {
            headers.insert(
                AUTHORIZATION,
                header_value(&format!("Bearer {}", key.expose()))?,
            );
        }
        if let Some(organization) = &self.organization {
            headers.insert(
                HeaderName::from_static("openai-organization"),
                header_value(organization)?,
            );
        }
        if let Some(project) = &self.project {
            headers.insert(
                HeaderName::from_static("openai-project"),
                header_value(project)?,
            );
        }
        let transport = Transport::new(PROVIDER, self.http, headers, self.api_key, API_KEY_ENV)
            .map_err(ProviderError::Client)?;
        Ok(OpenAiModel {
            inner: Arc::new(Inner {
                name: self.name,
                url: format!("{base_url}/chat/completions"),
                transport,
                settings: self.settings,
                strict_tools: self.strict_tools,
            }),
        })
    }
}

fn header_value(value: &str) -> Result<HeaderValue, ProviderError> {
    HeaderValue::from_str(value).map_err(|_| ProviderError::InvalidBaseUrl {
        url: "(header)".to_owned(),
        reason: "a header value holds characters HTTP headers cannot carry".to_owned(),
    })
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => Value::from("auto"),
        ToolChoice::Required => Value::from("required"),
        ToolChoice::None => Value::from("none"),
        ToolChoice::Tool(name) => {
            serde_json::json!({"type": "function", "function": {"name": name}})
        }
    }
}

/// Whether OpenAI's strict mode accepts `schema`: every object lists all its properties as
/// required and forbids others.
pub(crate) fn is_strict_compatible(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Object(properties)) = map.get("properties") {
                let required: Vec<&str> = map
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|names| names.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if map.get("additionalProperties") != Some(&Value::Bool(false))
                    || properties
                        .keys()
                        .any(|name| !required.contains(&name.as_str()))
                {
                    return false;
                }
            }
            map.values().all(is_strict_compatible)
        }
        Value::Array(items) => items.iter().all(is_strict_compatible),
        _ => true,
    }
}

/// The history as Chat Completions messages.
fn chat_messages(messages: &[Message]) -> Vec<ChatMessage<'_>> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    for message in messages {
        match message {
            Message::Request(request) => {
                for part in &request.parts {
                    out.push(match part {
                        RequestPart::SystemPrompt(p) => ChatMessage::System {
                            content: Cow::Borrowed(&p.content),
                        },
                        RequestPart::UserPrompt(p) => ChatMessage::User {
                            content: Cow::Borrowed(&p.content),
                        },
                        RequestPart::ToolReturn(p) => ChatMessage::Tool {
                            tool_call_id: &p.tool_call_id,
                            content: p.model_text(),
                        },
                        RequestPart::RetryPrompt(p) => match &p.tool_call_id {
                            Some(id) => ChatMessage::Tool {
                                tool_call_id: id,
                                content: Cow::Owned(p.model_text()),
                            },
                            None => ChatMessage::User {
                                content: Cow::Owned(p.model_text()),
                            },
                        },
                    });
                }
            }
            Message::Response(response) => {
                let mut text: Option<Cow<'_, str>> = None;
                let mut tool_calls = Vec::new();
                for part in &response.parts {
                    match part {
                        ResponsePart::Text(p) => {
                            text = Some(match text {
                                None => Cow::Borrowed(&p.content),
                                Some(previous) => Cow::Owned(format!("{previous}{}", p.content)),
                            });
                        }
                        ResponsePart::ToolCall(call) => tool_calls.push(ChatToolCall {
                            id: &call.tool_call_id,
                            kind: "function",
                            function: ChatFunctionCall {
                                name: &call.tool_name,
                                arguments: &call.args,
                            },
                        }),
                    }
                }
                // OpenAI accepts a null content only beside tool calls; an empty response
                // (kept as evidence for a rejection) goes as an empty string.
                if text.is_none() && tool_calls.is_empty() {
                    text = Some(Cow::Borrowed(""));
                }
                out.push(ChatMessage::Assistant {
                    content: text,
                    tool_calls,
                });
            }
        }
    }
    out
}

#[derive(Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    messages: Vec<ChatMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ChatTool<'a>>,
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
    seed: Option<i64>,
    #[serde(flatten)]
    extra: &'a Map<String, Value>,
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum ChatMessage<'a> {
    System {
        content: Cow<'a, str>,
    },
    User {
        content: Cow<'a, str>,
    },
    Assistant {
        content: Option<Cow<'a, str>>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ChatToolCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: Cow<'a, str>,
    },
}

#[derive(Serialize)]
struct ChatToolCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: ChatFunctionCall<'a>,
}

#[derive(Serialize)]
struct ChatFunctionCall<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Serialize)]
struct ChatTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: ChatFunction<'a>,
}

#[derive(Serialize)]
struct ChatFunction<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    parameters: Cow<'a, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    strict: Option<bool>,
}

impl<'a> ChatTool<'a> {
    /// The tool as sent: as it is, or in strict mode's form.
    fn new(tool: &'a ToolDefinition, strict: bool) -> Self {
        let (parameters, strict) = if strict {
            (Cow::Owned(to_strict_schema(&tool.parameters)), Some(true))
        } else {
            (Cow::Borrowed(&tool.parameters), None)
        };
        ChatTool {
            kind: "function",
            function: ChatFunction {
                name: &tool.name,
                description: tool.description.as_deref(),
                parameters,
                strict,
            },
        }
    }
}

/// `schema` in the form OpenAI's strict mode accepts: every object lists all its properties
/// as required, and a property that was optional may be `null` instead (which golem reads as
/// absent for `Option` fields).
///
/// ```
/// use serde_json::json;
///
/// let optional = json!({
///     "type": "object",
///     "properties": {"city": {"type": "string"}, "days": {"type": ["integer", "null"]}},
///     "required": ["city"],
///     "additionalProperties": false
/// });
/// assert_eq!(
///     golem::model::openai::to_strict_schema(&optional)["required"],
///     json!(["city", "days"])
/// );
/// ```
pub fn to_strict_schema(schema: &Value) -> Value {
    let mut strict = schema.clone();
    make_strict(&mut strict);
    strict
}

fn make_strict(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if map.get("properties").is_some_and(Value::is_object) {
                let required: Vec<String> = map
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|names| {
                        names
                            .iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default();
                let mut all = Vec::new();
                if let Some(Value::Object(properties)) = map.get_mut("properties") {
                    for (name, property) in properties.iter_mut() {
                        if !required.contains(name) {
                            make_nullable(property);
                        }
                        all.push(Value::String(name.clone()));
                    }
                }
                map.insert("required".into(), Value::Array(all));
                map.insert("additionalProperties".into(), Value::Bool(false));
            }
            for (key, child) in map.iter_mut() {
                match key.as_str() {
                    "properties" | "$defs" | "definitions" => {
                        if let Value::Object(named) = child {
                            named.values_mut().for_each(make_strict);
                        }
                    }
                    "default" | "examples" | "const" | "enum" | "required" => {}
                    _ => make_strict(child),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(make_strict),
        _ => {}
    }
}

/// Lets `schema` also be `null`.
fn make_nullable(schema: &mut Value) {
    let null = Value::from("null");
    let Value::Object(map) = schema else {
        return;
    };
    match map.get_mut("type") {
        Some(Value::Array(types)) => {
            if !types.contains(&null) {
                types.push(null);
            }
        }
        Some(Value::String(single)) => {
            let single = Value::from(single.clone());
            if single != null {
                map.insert("type".into(), Value::Array(vec![single, null]));
            }
            if let Some(Value::Array(values)) = map.get_mut("enum")
                && !values.contains(&Value::Null)
            {
                values.push(Value::Null);
            }
        }
        _ => {
            let inner = std::mem::take(map);
            map.insert(
                "anyOf".into(),
                serde_json::json!([Value::Object(inner), {"type": "null"}]),
            );
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
struct ChatResponse {
    id: Option<String>,
    model: Option<String>,
    choices: Vec<Choice>,
    usage: Option<ChatUsage>,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
    finish_reason: Option<String>,
}

// Compatible servers send `null` for absent lists and numbers: `null_default` reads it as
// missing.
#[derive(Deserialize)]
struct ChoiceMessage {
    content: Option<String>,
    #[serde(default, deserialize_with = "null_default")]
    tool_calls: Vec<ResponseToolCall>,
    refusal: Option<String>,
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
    arguments: Value,
}

#[derive(Deserialize)]
struct ChatUsage {
    #[serde(default, deserialize_with = "null_default")]
    prompt_tokens: u64,
    #[serde(default, deserialize_with = "null_default")]
    completion_tokens: u64,
    prompt_tokens_details: Option<PromptTokensDetails>,
}

#[derive(Deserialize)]
struct PromptTokensDetails {
    #[serde(default, deserialize_with = "null_default")]
    cached_tokens: u64,
}

fn null_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
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

    #[test]
    fn strict_schemas_make_optional_properties_nullable_at_every_depth() {
        let schema = json!({
            "type": "object",
            "properties": {
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "node": {"$ref": "#/$defs/Node"},
                "inner": {
                    "type": ["object", "null"],
                    "properties": {"a": {"type": "string"}},
                    "additionalProperties": false
                }
            },
            "additionalProperties": false,
            "$defs": {"Node": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}}
        });
        let strict = to_strict_schema(&schema);
        assert_eq!(strict["required"], json!(["mode", "node", "inner"]));
        assert_eq!(
            strict["properties"]["mode"]["type"],
            json!(["string", "null"])
        );
        assert_eq!(
            strict["properties"]["mode"]["enum"],
            json!(["fast", "slow", null])
        );
        assert_eq!(
            strict["properties"]["node"],
            json!({"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]})
        );
        assert_eq!(strict["properties"]["inner"]["required"], json!(["a"]));
        assert_eq!(
            strict["properties"]["inner"]["properties"]["a"]["type"],
            json!(["string", "null"])
        );
        assert_eq!(
            strict["$defs"]["Node"]["additionalProperties"],
            json!(false)
        );
        assert!(is_strict_compatible(&strict));
    }

    #[test]
    fn strict_mode_needs_every_property_required() {
        assert!(is_strict_compatible(&json!({
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "required": ["a"],
            "additionalProperties": false
        })));
        assert!(!is_strict_compatible(&json!({
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": ["string", "null"]}},
            "required": ["a"],
            "additionalProperties": false
        })));
    }
}
