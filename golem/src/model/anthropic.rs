//! Anthropic's Messages API.
//!
//! ```no_run
//! use golem::model::anthropic::AnthropicModel;
//!
//! // ANTHROPIC_API_KEY from the environment:
//! let model = AnthropicModel::from_env("claude-sonnet-4-5")?;
//! # Ok::<_, golem::model::ProviderError>(())
//! ```
//!
//! Structured output goes through the output tool ([`OutputMode::Tool`]); the Messages API
//! has no native JSON-schema response format, so [`OutputMode::Native`] is refused with a
//! clear error.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::http::{ApiKey, HttpSettings, Transport};
use super::infer::{env_var, normalize_base_url};
use super::{
    FinishReason, Message, Model, ModelError, ModelResponse, ModelSettings, ProviderError,
    RequestParams, RequestPart, ResponsePart, ToolChoice,
};
use crate::output::OutputMode;
use crate::usage::Usage;

/// Where the API key is read from.
pub const API_KEY_ENV: &str = "ANTHROPIC_API_KEY";
/// Where a base URL other than Anthropic's is read from.
pub const BASE_URL_ENV: &str = "ANTHROPIC_BASE_URL";
/// Anthropic's own API.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com/v1";
/// The `anthropic-version` header golem speaks.
pub const API_VERSION: &str = "2023-06-01";
/// `max_tokens` when the settings give none; the Messages API requires one.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

const PROVIDER: &str = "anthropic";

/// A Messages API model. Cheap to clone; clones share one connection pool.
#[derive(Clone)]
pub struct AnthropicModel {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    url: String,
    transport: Transport,
    settings: ModelSettings,
}

impl fmt::Debug for AnthropicModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicModel")
            .field("name", &self.inner.name)
            .field("url", &self.inner.url)
            .field("transport", &self.inner.transport)
            .field("settings", &self.inner.settings)
            .finish()
    }
}

impl AnthropicModel {
    /// Starts configuring `model`.
    pub fn builder(model: impl Into<String>) -> AnthropicBuilder {
        AnthropicBuilder {
            name: model.into(),
            api_key: None,
            base_url: DEFAULT_BASE_URL.to_owned(),
            http: HttpSettings::default(),
            settings: ModelSettings::default(),
        }
    }

    /// `model` with the key from `ANTHROPIC_API_KEY` (and a base URL from
    /// `ANTHROPIC_BASE_URL`, if set).
    ///
    /// # Errors
    /// [`ProviderError::MissingApiKey`] without a key; an invalid base URL.
    pub fn from_env(model: impl Into<String>) -> Result<Self, ProviderError> {
        let mut builder = AnthropicModel::builder(model);
        if let Some(key) = env_var(API_KEY_ENV) {
            builder = builder.api_key(key);
        }
        if let Some(url) = env_var(BASE_URL_ENV) {
            builder = builder.base_url(url);
        }
        builder.build()
    }

    fn body(&self, messages: &[Message], params: &RequestParams) -> Result<Vec<u8>, ModelError> {
        if params.output_mode == OutputMode::Native && params.output_schema.is_some() {
            return Err(ModelError::other(
                "Anthropic's Messages API has no native structured output; use OutputMode::Tool",
            ));
        }
        let settings = &self.inner.settings;
        let tools: Vec<AnthropicTool<'_>> = params
            .all_tools()
            .map(|tool| AnthropicTool {
                name: &tool.name,
                description: tool.description.as_deref(),
                input_schema: &tool.parameters,
            })
            .collect();
        let has_tools = !tools.is_empty();
        let mut tool_choice = match &settings.tool_choice {
            Some(choice) if has_tools => Some(tool_choice(choice)),
            None if has_tools && !params.allow_text_output => {
                Some(serde_json::json!({"type": "any"}))
            }
            _ => None,
        };
        if let (Some(false), true) = (settings.parallel_tool_calls, has_tools) {
            let choice = tool_choice.get_or_insert_with(|| serde_json::json!({"type": "auto"}));
            choice["disable_parallel_tool_use"] = Value::Bool(true);
        }
        let (system, messages) = anthropic_messages(messages);
        let request = MessagesRequest {
            model: &self.inner.name,
            max_tokens: settings.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            system,
            messages,
            tools,
            tool_choice,
            temperature: settings.temperature,
            top_p: settings.top_p,
            extra: &settings.extra_body,
        };
        serde_json::to_vec(&request).map_err(ModelError::other)
    }

    fn parse(&self, body: &[u8]) -> Result<ModelResponse, ModelError> {
        let response: MessagesResponse = serde_json::from_slice(body).map_err(|error| {
            self.inner
                .transport
                .invalid(format!("the body is not a message: {error}"))
        })?;
        let mut parts = Vec::new();
        for block in response.content {
            match block {
                ContentBlock::Text { text } => parts.push(ResponsePart::text(text)),
                ContentBlock::ToolUse { id, name, input } => {
                    parts.push(ResponsePart::tool_call(name, input, id));
                }
                ContentBlock::Other => {}
            }
        }
        let finish_reason = response.stop_reason.as_deref().map(|reason| match reason {
            "end_turn" | "stop_sequence" | "pause_turn" => FinishReason::Stop,
            "max_tokens" => FinishReason::Length,
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
            usage: Usage {
                cache_read_tokens: usage.cache_read_input_tokens.unwrap_or(0),
                cache_write_tokens: usage.cache_creation_input_tokens.unwrap_or(0),
                ..Usage::request(input_tokens, usage.output_tokens)
            },
            model_name: response.model,
            provider_response_id: response.id,
            finish_reason,
        })
    }
}

impl Model for AnthropicModel {
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

/// Configures an [`AnthropicModel`].
#[must_use = "an AnthropicBuilder does nothing until `build()`"]
pub struct AnthropicBuilder {
    name: String,
    api_key: Option<ApiKey>,
    base_url: String,
    http: HttpSettings,
    settings: ModelSettings,
}

impl fmt::Debug for AnthropicBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicBuilder")
            .field("name", &self.name)
            .field("api_key", &self.api_key)
            .field("base_url", &self.base_url)
            .field("http", &self.http)
            .field("settings", &self.settings)
            .finish()
    }
}

impl AnthropicBuilder {
    /// Sets the API key.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(ApiKey::new(key));
        self
    }

    /// Sets the base URL; requests go to `{base_url}/messages`.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = url.into();
        self
    }

    /// Sets timeouts, retries and the response size limit.
    pub fn http(mut self, http: HttpSettings) -> Self {
        self.http = http;
        self
    }

    /// Sets temperature, max_tokens, tool choice and extra body fields.
    pub fn settings(mut self, settings: ModelSettings) -> Self {
        self.settings = settings;
        self
    }

    /// Builds the model.
    ///
    /// # Errors
    /// [`ProviderError::MissingApiKey`] without a key; an invalid base URL.
    pub fn build(self) -> Result<AnthropicModel, ProviderError> {
        let base_url = normalize_base_url(&self.base_url)?;
        let Some(key) = self.api_key else {
            return Err(ProviderError::MissingApiKey {
                provider: PROVIDER,
                env_var: API_KEY_ENV,
            });
        };
        let mut headers = HeaderMap::new();
        headers.insert(
            HeaderName::from_static("x-api-key"),
            HeaderValue::from_str(key.expose()).map_err(|_| ProviderError::MissingApiKey {
                provider: PROVIDER,
                env_var: API_KEY_ENV,
            })?,
        );
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        );
        let transport = Transport::new(PROVIDER, self.http, headers, Some(key), API_KEY_ENV)
            .map_err(ProviderError::Client)?;
        Ok(AnthropicModel {
            inner: Arc::new(Inner {
                name: self.name,
                url: format!("{base_url}/messages"),
                transport,
                settings: self.settings,
            }),
        })
    }
}

fn tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => serde_json::json!({"type": "auto"}),
        ToolChoice::Required => serde_json::json!({"type": "any"}),
        ToolChoice::None => serde_json::json!({"type": "none"}),
        ToolChoice::Tool(name) => serde_json::json!({"type": "tool", "name": name}),
    }
}

/// The system prompt and the alternating user/assistant messages of a history.
fn anthropic_messages(messages: &[Message]) -> (Option<String>, Vec<AnthropicMessage<'_>>) {
    let mut system: Option<String> = None;
    let mut out: Vec<AnthropicMessage<'_>> = Vec::with_capacity(messages.len());
    for message in messages {
        let (role, blocks) = match message {
            Message::Request(request) => {
                let mut blocks = Vec::with_capacity(request.parts.len());
                for part in &request.parts {
                    match part {
                        RequestPart::SystemPrompt(p) => match &mut system {
                            Some(text) => {
                                text.push_str("\n\n");
                                text.push_str(&p.content);
                            }
                            None => system = Some(p.content.clone()),
                        },
                        // The API refuses empty text blocks.
                        RequestPart::UserPrompt(p) if p.content.is_empty() => {}
                        RequestPart::UserPrompt(p) => blocks.push(Block::Text {
                            text: Cow::Borrowed(&p.content),
                        }),
                        RequestPart::ToolReturn(p) => blocks.push(Block::ToolResult {
                            tool_use_id: &p.tool_call_id,
                            content: p.model_text(),
                            is_error: false,
                        }),
                        RequestPart::RetryPrompt(p) => match &p.tool_call_id {
                            Some(id) => blocks.push(Block::ToolResult {
                                tool_use_id: id,
                                content: Cow::Owned(p.model_text()),
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
                let blocks = response
                    .parts
                    .iter()
                    .filter_map(|part| match part {
                        ResponsePart::Text(p) if p.content.is_empty() => None,
                        ResponsePart::Text(p) => Some(Block::Text {
                            text: Cow::Borrowed(&p.content),
                        }),
                        ResponsePart::ToolCall(call) => Some(Block::ToolUse {
                            id: &call.tool_call_id,
                            name: &call.tool_name,
                            // Arguments another provider sent as invalid JSON go as `{}`.
                            input: serde_json::from_str::<Map<String, Value>>(&call.args)
                                .map(Value::Object)
                                .unwrap_or_else(|_| Value::Object(Map::new())),
                        }),
                    })
                    .collect();
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
    (system, out)
}

#[derive(Serialize)]
struct MessagesRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<String>,
    messages: Vec<AnthropicMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<AnthropicTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(flatten)]
    extra: &'a Map<String, Value>,
}

#[derive(Serialize)]
struct AnthropicMessage<'a> {
    role: &'static str,
    content: Vec<Block<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: Cow<'a, str>,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Value,
    },
    ToolResult {
        tool_use_id: &'a str,
        content: Cow<'a, str>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

#[derive(Serialize)]
struct AnthropicTool<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    input_schema: &'a Value,
}

#[derive(Deserialize)]
struct MessagesResponse {
    id: Option<String>,
    model: Option<String>,
    content: Vec<ContentBlock>,
    stop_reason: Option<String>,
    usage: AnthropicUsage,
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
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct AnthropicUsage {
    input_tokens: u64,
    output_tokens: u64,
    cache_creation_input_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
}
