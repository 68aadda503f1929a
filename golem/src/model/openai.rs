//! OpenAI Chat Completions, and every server that speaks it (Ollama, vLLM, llama.cpp
//! server, LM Studio, OpenRouter, Groq) through a configurable base URL.
//!
//! ```no_run
//! use golem::model::openai::{OpenAiModel, ServerProfile};
//! use golem::model::ModelSettings;
//!
//! // OPENAI_API_KEY and, optionally, OPENAI_BASE_URL from the environment:
//! let model = OpenAiModel::from_env("gpt-4o-mini")?;
//!
//! // A local llama.cpp server, no key:
//! let local = OpenAiModel::builder("qwen2.5-7b-instruct")
//!     .base_url("http://localhost:8080/v1")
//!     .profile(ServerProfile::LlamaCpp)
//!     .settings(ModelSettings::default().temperature(0.0).max_tokens(2048))
//!     .build()?;
//! # Ok::<_, golem::model::ProviderError>(())
//! ```
//!
//! Servers differ in a few places, and a [`ServerProfile`] says how: the field that limits
//! the output (`max_completion_tokens` for OpenAI's own API, which its reasoning models
//! require; `max_tokens` elsewhere) and the tool choices a server honours. The profile is
//! chosen from the base URL (OpenAI's host, Ollama's port 11434) or set explicitly.
//!
//! OpenAI's Responses API, which its reasoning models want, is [`responses`].

use std::fmt;
use std::sync::Arc;

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName};
use serde_json::value::RawValue;

use super::http::{ApiKey, HttpBuilder, HttpModel, Wire};
use super::provider::header_value;
use super::tool_forms::ToolForms;
use super::{Message, ModelError, ModelResponse, ModelSettings, ProviderError, RequestParams};

mod content;
pub mod hosts;
pub mod responses;
mod stream;
pub(super) mod wire;

pub use crate::schema::to_strict_schema;

/// Where the API key is read from.
pub const API_KEY_ENV: &str = "OPENAI_API_KEY";
/// Where a base URL other than OpenAI's is read from.
pub const BASE_URL_ENV: &str = "OPENAI_BASE_URL";
/// OpenAI's own API.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

const PROVIDER: &str = "openai";

/// The kind of server behind the base URL, for the few places Chat Completions servers
/// differ.
///
/// ```
/// use golem::model::openai::ServerProfile;
///
/// assert_eq!(ServerProfile::from_base_url("https://api.openai.com/v1"), ServerProfile::OpenAi);
/// assert_eq!(ServerProfile::from_base_url("http://localhost:11434/v1"), ServerProfile::Ollama);
/// assert_eq!(ServerProfile::from_base_url("https://api.mistral.ai/v1"), ServerProfile::Mistral);
/// assert_eq!(
///     ServerProfile::from_base_url("https://my-resource.openai.azure.com/openai/v1"),
///     ServerProfile::OpenAi
/// );
/// assert_eq!(ServerProfile::from_base_url("http://10.0.0.7:8000/v1"), ServerProfile::Compatible);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ServerProfile {
    /// OpenAI's own API: the output limit goes as `max_completion_tokens` (its reasoning
    /// models refuse `max_tokens`); every tool choice.
    OpenAi,
    /// Any other OpenAI-compatible server (LM Studio, OpenRouter, Groq, ...): `max_tokens`;
    /// every tool choice.
    Compatible,
    /// llama.cpp's `llama-server` (started with `--jinja` for tools): `max_tokens`. It
    /// silently treats a named tool choice as `auto`, so golem sends `required` instead
    /// (exact when only one tool is sent). It answers HTTP 500 when the model's output does
    /// not match its tool-call grammar; golem retries that like any 5xx.
    LlamaCpp,
    /// vLLM: `max_tokens`. It refuses `tool_choice: "required"` unless configured for it,
    /// so golem names the tool when only one can answer, and otherwise sends no choice and
    /// lets the run's feedback ask for a tool call. Use [`Compatible`](Self::Compatible)
    /// for a vLLM that accepts `required`.
    Vllm,
    /// Ollama's `/v1` compatibility endpoint: `max_tokens`; tool choices are sent as for
    /// any compatible server (Ollama ignores them).
    Ollama,
    /// Mistral's API (and servers running Mistral's chat template): `max_tokens`. A tool
    /// call's id must be nine letters or digits, so an id of another form (another
    /// provider's, after a fallback, or one golem gave) goes as nine characters of its hash,
    /// alike in the call and its result.
    Mistral,
}

impl ServerProfile {
    /// The profile a base URL suggests: [`OpenAi`](Self::OpenAi) for `api.openai.com` and
    /// Azure OpenAI (`*.openai.azure.com`), [`Mistral`](Self::Mistral) for `api.mistral.ai`,
    /// [`Ollama`](Self::Ollama) for port 11434, [`Compatible`](Self::Compatible) otherwise (a
    /// proxy of OpenAI's API among them: give it [`OpenAi`](Self::OpenAi) with
    /// [`OpenAiBuilder::profile`], or its reasoning models refuse `max_tokens`).
    pub fn from_base_url(url: &str) -> Self {
        let Ok(parsed) = reqwest::Url::parse(url) else {
            return ServerProfile::Compatible;
        };
        match (parsed.host_str(), parsed.port_or_known_default()) {
            (Some("api.openai.com"), _) => ServerProfile::OpenAi,
            (Some(host), _) if host.ends_with(".openai.azure.com") => ServerProfile::OpenAi,
            (Some("api.mistral.ai"), _) => ServerProfile::Mistral,
            (_, Some(11434)) => ServerProfile::Ollama,
            _ => ServerProfile::Compatible,
        }
    }

    /// Whether the output limit goes as `max_completion_tokens`.
    fn max_completion_tokens(self) -> bool {
        self == ServerProfile::OpenAi
    }
}

/// A Chat Completions model: an [`HttpModel`] speaking [`ChatCompletions`]. Cheap to clone;
/// clones share one connection pool, however many agents use them.
pub type OpenAiModel = HttpModel<ChatCompletions>;

/// Configures an [`OpenAiModel`]: the setters every provider has ([`HttpBuilder`]), and
/// OpenAI's own ([`organization`](HttpBuilder::organization),
/// [`project`](HttpBuilder::project), [`profile`](HttpBuilder::profile),
/// [`strict_tools`](HttpBuilder::strict_tools)).
pub type OpenAiBuilder = HttpBuilder<ChatCompletions>;

/// The Chat Completions wire format, and what an [`OpenAiModel`] keeps for it: the server
/// profile, strict mode and each tool's form as sent.
#[derive(Default)]
pub struct ChatCompletions {
    organization: Option<String>,
    project: Option<String>,
    /// Set by the builder, or from the base URL at `build()`.
    profile: Option<ServerProfile>,
    strict_tools: bool,
    /// Whether streamed requests go without `stream_options.include_usage`.
    no_stream_usage: bool,
    /// Whether a response's reasoning goes back as `reasoning_content`.
    send_reasoning: bool,
    /// Each tool as sent, built once per tool definition.
    tool_forms: ToolForms,
}

impl fmt::Debug for ChatCompletions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChatCompletions")
            .field("organization", &self.organization)
            .field("project", &self.project)
            .field("profile", &self.profile)
            .field("strict_tools", &self.strict_tools)
            .field("stream_usage", &!self.no_stream_usage)
            .field("send_reasoning", &self.send_reasoning)
            .finish_non_exhaustive()
    }
}

impl ChatCompletions {
    fn profile(&self) -> ServerProfile {
        self.profile.unwrap_or(ServerProfile::Compatible)
    }

    /// Whether a response's reasoning goes back as `reasoning_content`.
    fn sends_reasoning(&self) -> bool {
        self.send_reasoning
    }

    /// Each tool as sent, serialized (its strict form in strict mode): from the cache, or
    /// built once.
    fn tool_forms(&self, params: &RequestParams) -> Result<Arc<[Arc<RawValue>]>, ModelError> {
        self.tool_forms.for_params(params, |tool| {
            if self.strict_tools {
                serde_json::value::to_raw_value(&wire::ChatTool::strict(
                    tool,
                    &to_strict_schema(&tool.parameters),
                ))
            } else {
                serde_json::value::to_raw_value(&wire::ChatTool::plain(tool))
            }
        })
    }
}

impl Wire for ChatCompletions {
    const PROVIDER: &'static str = PROVIDER;
    const TYPE_NAME: &'static str = "OpenAiModel";
    const API_KEY_ENV: &'static str = API_KEY_ENV;
    const BASE_URL_ENV: &'static str = BASE_URL_ENV;
    const DEFAULT_BASE_URL: &'static str = DEFAULT_BASE_URL;
    const PATH: &'static str = "/chat/completions";

    fn requires_key(base_url: &str) -> bool {
        base_url == DEFAULT_BASE_URL
    }

    fn prepare(
        &mut self,
        key: Option<&ApiKey>,
        base_url: &str,
        headers: &mut HeaderMap,
    ) -> Result<(), ProviderError> {
        self.profile
            .get_or_insert_with(|| ServerProfile::from_base_url(base_url));
        openai_headers(
            key,
            self.organization.as_deref(),
            self.project.as_deref(),
            headers,
        )
    }

    type Assembler = stream::Chunks;

    fn body(
        &self,
        model: &str,
        settings: &ModelSettings,
        messages: &[Message],
        params: &RequestParams,
        stream: bool,
        capacity: usize,
    ) -> Result<Vec<u8>, ModelError> {
        wire::body(self, model, settings, messages, params, stream, capacity)
    }

    fn assembler(&self, _params: &RequestParams) -> stream::Chunks {
        stream::Chunks::new(!self.no_stream_usage)
    }

    fn parse(&self, body: &[u8], params: &RequestParams) -> Result<ModelResponse, String> {
        wire::parse(body, params, self.strict_tools)
    }
}

/// Adds OpenAI's headers: the key as `Authorization: Bearer`, `OpenAI-Organization` and
/// `OpenAI-Project`.
fn openai_headers(
    key: Option<&ApiKey>,
    organization: Option<&str>,
    project: Option<&str>,
    headers: &mut HeaderMap,
) -> Result<(), ProviderError> {
    if let Some(key) = key {
        headers.insert(
            AUTHORIZATION,
            header_value("authorization", &format!("Bearer {}", key.expose()))?,
        );
    }
    if let Some(organization) = organization {
        headers.insert(
            HeaderName::from_static("openai-organization"),
            header_value("openai-organization", organization)?,
        );
    }
    if let Some(project) = project {
        headers.insert(
            HeaderName::from_static("openai-project"),
            header_value("openai-project", project)?,
        );
    }
    Ok(())
}

impl OpenAiModel {
    /// The server profile in use.
    pub fn profile(&self) -> ServerProfile {
        self.wire().profile()
    }
}

impl OpenAiBuilder {
    /// Sends `OpenAI-Organization`.
    pub fn organization(mut self, organization: impl Into<String>) -> Self {
        self.wire.organization = Some(organization.into());
        self
    }

    /// Sends `OpenAI-Project`.
    pub fn project(mut self, project: impl Into<String>) -> Self {
        self.wire.project = Some(project.into());
        self
    }

    /// Sets the server profile, instead of the one the base URL suggests
    /// ([`ServerProfile::from_base_url`]).
    pub fn profile(mut self, profile: ServerProfile) -> Self {
        self.wire.profile = Some(profile);
        self
    }

    /// Sends every tool with `"strict": true`, its schema in the form strict mode accepts
    /// (see [`to_strict_schema`]): the model's arguments then always match the schema.
    /// The `null`s strict mode makes the model write for optional fields are removed from
    /// its arguments again, so `#[serde(default)]` fields read as absent. Strict forms are
    /// built once per tool, not per request. Off by default, as not every compatible server
    /// knows strict mode.
    pub fn strict_tools(mut self, strict: bool) -> Self {
        self.wire.strict_tools = strict;
        self
    }

    /// Whether a streamed request asks for its usage, with
    /// `stream_options: {"include_usage": true}` (on by default). OpenAI, vLLM, Ollama
    /// and llama.cpp's server honour it; a server that refuses the field (HTTP 400 naming
    /// `stream_options`, as some gateways do) needs it off, and its streamed responses
    /// then count no tokens unless it reports usage on its own.
    pub fn stream_usage(mut self, include: bool) -> Self {
        self.wire.no_stream_usage = !include;
        self
    }

    /// Whether a response's reasoning (a server's `reasoning_content` or `reasoning`, kept
    /// as a [`ThinkingPart`](crate::model::ThinkingPart)) goes back on its assistant message
    /// as `reasoning_content`. Off by default, as OpenAI and several hosts refuse the field;
    /// on for a server whose thinking mode requires it with tool calls (DeepSeek answers
    /// 400 without it, and the `deepseek:` preset turns it on), or whose interleaved
    /// thinking reads it (Kimi K2 on vLLM).
    pub fn send_reasoning(mut self, send: bool) -> Self {
        self.wire.send_reasoning = send;
        self
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tool::ToolDefinition;

    #[test]
    fn tool_forms_are_built_once_per_tool_definition() {
        let model = OpenAiModel::builder("m")
            .base_url("http://127.0.0.1:1/v1")
            .strict_tools(true)
            .build()
            .expect("valid model");
        let tool = ToolDefinition {
            name: "forecast".into(),
            description: None,
            parameters: json!({
                "type": "object",
                "properties": {"days": {"type": "integer", "default": 1}},
                "additionalProperties": false
            }),
        };
        let first = model
            .wire()
            .tool_forms(&RequestParams::text(vec![tool.clone()]))
            .expect("strict");
        let again = model
            .wire()
            .tool_forms(&RequestParams::text(vec![tool.clone()]))
            .expect("strict");
        assert!(Arc::ptr_eq(&first[0], &again[0]));
        let sent: serde_json::Value = serde_json::from_str(first[0].get()).expect("JSON");
        assert_eq!(
            sent["function"]["parameters"]["properties"]["days"]["type"],
            json!(["integer", "null"])
        );
        // A changed definition under the same name is built anew.
        let mut changed = tool.clone();
        changed.description = Some("Days ahead.".into());
        let rebuilt = model
            .wire()
            .tool_forms(&RequestParams::text(vec![changed.clone()]))
            .expect("strict");
        assert!(!Arc::ptr_eq(&first[0], &rebuilt[0]));
        assert!(rebuilt[0].get().contains("Days ahead."));
    }
}
