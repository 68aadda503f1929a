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
//! Structured output goes through the output tool ([`OutputMode::Tool`](crate::output::OutputMode::Tool)); the Messages API
//! has no native JSON-schema response format, so [`OutputMode::Native`](crate::output::OutputMode::Native) is refused with a
//! clear error.

use std::fmt;
use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::http::{ApiKey, HttpSettings, Transport};
use super::provider::{HttpConfig, env_var, header_value, normalize_base_url};
use super::{
    Message, Model, ModelError, ModelResponse, ModelSettings, ProviderError, RequestParams,
};

pub(super) mod wire;

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

/// A Messages API model. Cheap to clone; clones share one connection pool, however many
/// agents use them.
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
            config: HttpConfig::new(DEFAULT_BASE_URL),
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
}

impl Model for AnthropicModel {
    fn request<'a>(
        &'a self,
        messages: &'a [Message],
        params: &'a RequestParams,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        async move {
            let body = wire::body(&self.inner.name, &self.inner.settings, messages, params)?;
            let bytes = self
                .inner
                .transport
                .post_json(&self.inner.url, body)
                .await?;
            wire::parse(&self.inner.transport, &bytes)
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
    config: HttpConfig,
}

impl fmt::Debug for AnthropicBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicBuilder")
            .field("name", &self.name)
            .field("config", &self.config)
            .finish()
    }
}

impl AnthropicBuilder {
    /// Sets the API key, sent as `x-api-key`.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.config.api_key = Some(ApiKey::new(key));
        self
    }

    /// Sets the base URL; requests go to `{base_url}/messages`.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.config.base_url = url.into();
        self
    }

    /// Sends a header with every request (`anthropic-beta`, a proxy's own); it replaces a
    /// header golem would send under the same name.
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

    /// Sets timeouts, retries, the overall deadline and the response size limit.
    pub fn http(mut self, http: HttpSettings) -> Self {
        self.config.http = http;
        self
    }

    /// Sets the model's settings (temperature, max tokens, tool choice, extra body
    /// fields); an agent's and a run's settings are merged over them.
    pub fn settings(mut self, settings: ModelSettings) -> Self {
        self.config.settings = settings;
        self
    }

    /// Builds the model.
    ///
    /// # Errors
    /// [`ProviderError::MissingApiKey`] without a key; an invalid base URL;
    /// [`ProviderError::InvalidHeader`] for a header HTTP cannot carry.
    pub fn build(self) -> Result<AnthropicModel, ProviderError> {
        let base_url = normalize_base_url(&self.config.base_url)?;
        let Some(key) = &self.config.api_key else {
            return Err(ProviderError::MissingApiKey {
                provider: PROVIDER,
                env_var: API_KEY_ENV,
            });
        };
        let mut headers = HeaderMap::new();
        headers.insert(
            HeaderName::from_static("x-api-key"),
            header_value("x-api-key", key.expose())?,
        );
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        );
        let transport = self.config.transport(PROVIDER, API_KEY_ENV, headers)?;
        Ok(AnthropicModel {
            inner: Arc::new(Inner {
                name: self.name,
                url: format!("{base_url}/messages"),
                transport,
                settings: self.config.settings,
            }),
        })
    }
}
