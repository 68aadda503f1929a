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

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderName};
use serde_json::value::RawValue;

use super::http::{ApiKey, HttpSettings, Transport};
use super::provider::{HttpConfig, env_var, header_value, normalize_base_url};
use super::{
    Message, Model, ModelError, ModelResponse, ModelSettings, ProviderError, RequestParams,
};
use crate::tool::ToolDefinition;

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
}

impl ServerProfile {
    /// The profile a base URL suggests: [`OpenAi`](Self::OpenAi) for `api.openai.com`,
    /// [`Ollama`](Self::Ollama) for port 11434, [`Compatible`](Self::Compatible) otherwise.
    pub fn from_base_url(url: &str) -> Self {
        let Ok(parsed) = reqwest::Url::parse(url) else {
            return ServerProfile::Compatible;
        };
        match (parsed.host_str(), parsed.port_or_known_default()) {
            (Some("api.openai.com"), _) => ServerProfile::OpenAi,
            (_, Some(11434)) => ServerProfile::Ollama,
            _ => ServerProfile::Compatible,
        }
    }

    /// Whether the output limit goes as `max_completion_tokens`.
    fn max_completion_tokens(self) -> bool {
        self == ServerProfile::OpenAi
    }
}

/// A Chat Completions model. Cheap to clone; clones share one connection pool, however
/// many agents use them.
#[derive(Clone)]
pub struct OpenAiModel {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    url: String,
    transport: Transport,
    settings: ModelSettings,
    profile: ServerProfile,
    strict_tools: bool,
    /// Each tool as sent in strict mode, built once per tool definition.
    strict_cache: Mutex<HashMap<String, StrictTool>>,
}

/// A tool's strict form, serialized, and the definition it was built from.
struct StrictTool {
    definition: ToolDefinition,
    json: Arc<RawValue>,
}

/// Strict forms kept at most; past this the cache starts again.
const STRICT_CACHE_LIMIT: usize = 512;

impl fmt::Debug for OpenAiModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiModel")
            .field("name", &self.inner.name)
            .field("url", &self.inner.url)
            .field("profile", &self.inner.profile)
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
            config: HttpConfig::new(DEFAULT_BASE_URL),
            organization: None,
            project: None,
            profile: None,
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

    /// The server profile in use.
    pub fn profile(&self) -> ServerProfile {
        self.inner.profile
    }

    /// The strict form of each tool, serialized: from the cache, or built once.
    fn strict_tools<'a>(
        &self,
        tools: impl Iterator<Item = &'a ToolDefinition>,
    ) -> Result<Vec<Arc<RawValue>>, ModelError> {
        // A poisoned lock only means another request panicked mid-insert: the map is
        // still a valid cache.
        let mut cache = self
            .inner
            .strict_cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut out = Vec::new();
        for tool in tools {
            if let Some(cached) = cache.get(&tool.name)
                && cached.definition == *tool
            {
                out.push(Arc::clone(&cached.json));
                continue;
            }
            let json: Arc<RawValue> = serde_json::value::to_raw_value(&wire::ChatTool::strict(
                tool,
                &to_strict_schema(&tool.parameters),
            ))
            .map_err(ModelError::other)?
            .into();
            if cache.len() >= STRICT_CACHE_LIMIT {
                cache.clear();
            }
            cache.insert(
                tool.name.clone(),
                StrictTool {
                    definition: tool.clone(),
                    json: Arc::clone(&json),
                },
            );
            out.push(json);
        }
        Ok(out)
    }
}

impl Model for OpenAiModel {
    fn request<'a>(
        &'a self,
        messages: &'a [Message],
        params: &'a RequestParams,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        async move {
            let body = wire::body(self, messages, params)?;
            let bytes = self
                .inner
                .transport
                .post_json(&self.inner.url, body)
                .await?;
            wire::parse(
                &self.inner.transport,
                &bytes,
                params,
                self.inner.strict_tools,
            )
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
    config: HttpConfig,
    organization: Option<String>,
    project: Option<String>,
    profile: Option<ServerProfile>,
    strict_tools: bool,
}

impl fmt::Debug for OpenAiBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiBuilder")
            .field("name", &self.name)
            .field("config", &self.config)
            .field("organization", &self.organization)
            .field("project", &self.project)
            .field("profile", &self.profile)
            .field("strict_tools", &self.strict_tools)
            .finish()
    }
}

impl OpenAiBuilder {
    /// Sets the API key, sent as `Authorization: Bearer <key>`.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.config.api_key = Some(ApiKey::new(key));
        self
    }

    /// Sets the base URL, e.g. `http://localhost:11434/v1` for Ollama; requests go to
    /// `{base_url}/chat/completions`.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.config.base_url = url.into();
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

    /// Sends a header with every request (Azure's `api-key`, OpenRouter's `HTTP-Referer`,
    /// a proxy's own); it replaces a header golem would send under the same name.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.config.header(name.into(), value.into(), false);
        self
    }

    /// Sends a header that carries a credential: like [`header`](Self::header), and its
    /// value is redacted from every error and log line, as the API key is.
    pub fn secret_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.config.header(name.into(), value.into(), true);
        self
    }

    /// Sets the server profile, instead of the one the base URL suggests
    /// ([`ServerProfile::from_base_url`]).
    pub fn profile(mut self, profile: ServerProfile) -> Self {
        self.profile = Some(profile);
        self
    }

    /// Sets timeouts, retries, the overall deadline and the response size limit.
    pub fn http(mut self, http: HttpSettings) -> Self {
        self.config.http = http;
        self
    }

    /// Sets the model's settings (temperature, max tokens, seed, tool choice, extra body
    /// fields); an agent's and a run's settings are merged over them.
    pub fn settings(mut self, settings: ModelSettings) -> Self {
        self.config.settings = settings;
        self
    }

    /// Sends every tool with `"strict": true`, its schema in the form strict mode accepts
    /// (see [`to_strict_schema`]): the model's arguments then always match the schema.
    /// The `null`s strict mode makes the model write for optional fields are removed from
    /// its arguments again, so `#[serde(default)]` fields read as absent. Strict forms are
    /// built once per tool, not per request. Off by default, as not every compatible server
    /// knows strict mode.
    pub fn strict_tools(mut self, strict: bool) -> Self {
        self.strict_tools = strict;
        self
    }

    /// Builds the model.
    ///
    /// # Errors
    /// [`ProviderError::MissingApiKey`] when OpenAI's own API is used without a key; an
    /// invalid base URL; [`ProviderError::InvalidHeader`] for a header HTTP cannot carry.
    pub fn build(self) -> Result<OpenAiModel, ProviderError> {
        let base_url = normalize_base_url(&self.config.base_url)?;
        if self.config.api_key.is_none() && base_url == DEFAULT_BASE_URL {
            return Err(ProviderError::MissingApiKey {
                provider: PROVIDER,
                env_var: API_KEY_ENV,
            });
        }
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.config.api_key {
            headers.insert(
                AUTHORIZATION,
                header_value("authorization", &format!("Bearer {}", key.expose()))?,
            );
        }
        if let Some(organization) = &self.organization {
            headers.insert(
                HeaderName::from_static("openai-organization"),
                header_value("openai-organization", organization)?,
            );
        }
        if let Some(project) = &self.project {
            headers.insert(
                HeaderName::from_static("openai-project"),
                header_value("openai-project", project)?,
            );
        }
        let transport = self.config.transport(PROVIDER, API_KEY_ENV, headers)?;
        Ok(OpenAiModel {
            inner: Arc::new(Inner {
                name: self.name,
                url: format!("{base_url}/chat/completions"),
                transport,
                profile: self
                    .profile
                    .unwrap_or_else(|| ServerProfile::from_base_url(&base_url)),
                settings: self.config.settings,
                strict_tools: self.strict_tools,
                strict_cache: Mutex::new(HashMap::new()),
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn strict_forms_are_built_once_per_tool_definition() {
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
        let first = model.strict_tools([&tool].into_iter()).expect("strict");
        let again = model.strict_tools([&tool].into_iter()).expect("strict");
        assert!(Arc::ptr_eq(&first[0], &again[0]));
        let sent: serde_json::Value = serde_json::from_str(first[0].get()).expect("JSON");
        assert_eq!(
            sent["function"]["parameters"]["properties"]["days"]["type"],
            json!(["integer", "null"])
        );
        // A changed definition under the same name is built anew.
        let mut changed = tool.clone();
        changed.description = Some("Days ahead.".into());
        let rebuilt = model.strict_tools([&changed].into_iter()).expect("strict");
        assert!(!Arc::ptr_eq(&first[0], &rebuilt[0]));
        assert!(rebuilt[0].get().contains("Days ahead."));
    }
}
