//! One HTTP provider, parameterised by its wire format: the skeleton every provider shares
//! (a cheap clone around an `Arc`, `from_env`, the builder's common setters, the `Model`
//! impl), so a new provider is one wire module.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use reqwest::header::HeaderMap;

use super::{ApiKey, HttpSettings, Transport};
use crate::model::provider::{HttpConfig, env_var, normalize_base_url};
use crate::model::{
    Message, Model, ModelError, ModelResponse, ModelSettings, ModelStream, ProviderError,
    RequestParams,
};

pub(crate) mod sealed {
    use std::fmt;

    use reqwest::header::HeaderMap;

    use crate::model::http::{ApiKey, Assemble};
    use crate::model::{
        Message, ModelError, ModelResponse, ModelSettings, ProviderError, RequestParams,
    };

    /// What a wire format tells the shared provider.
    pub trait Wire: Default + fmt::Debug + Send + Sync + 'static {
        /// The provider's name (`openai`).
        const PROVIDER: &'static str;
        /// The public type's name, for `Debug`.
        const TYPE_NAME: &'static str;
        /// Where the key is read from.
        const API_KEY_ENV: &'static str;
        /// Where the key is read from before [`API_KEY_ENV`](Self::API_KEY_ENV), in order:
        /// the first that is set wins, as in the provider's own SDKs.
        const API_KEY_ENV_FIRST: &'static [&'static str] = &[];
        /// Where a base URL is read from.
        const BASE_URL_ENV: &'static str;
        /// The provider's own API.
        const DEFAULT_BASE_URL: &'static str;
        /// The endpoint under the base URL (`/chat/completions`).
        const PATH: &'static str;
        /// The token-counting endpoint under the base URL, for a provider that has one.
        const COUNT_PATH: Option<&'static str> = None;

        /// The endpoint under the base URL for `model`, streamed or not: [`PATH`](Self::PATH),
        /// unless the provider names the model and the streaming in the path (Gemini's
        /// `/models/{model}:streamGenerateContent?alt=sse`).
        fn path(model: &str, stream: bool) -> std::borrow::Cow<'static, str> {
            let _ = (model, stream);
            std::borrow::Cow::Borrowed(Self::PATH)
        }

        /// The token-counting endpoint under the base URL for `model`:
        /// [`COUNT_PATH`](Self::COUNT_PATH), unless the provider names the model in the path.
        fn count_path(model: &str) -> Option<std::borrow::Cow<'static, str>> {
            let _ = model;
            Self::COUNT_PATH.map(std::borrow::Cow::Borrowed)
        }

        /// Whether `base_url` needs a key.
        fn requires_key(base_url: &str) -> bool;

        /// The base URL a value of [`BASE_URL_ENV`](Self::BASE_URL_ENV) names, where the
        /// provider's own SDKs read that variable another way than golem's builder reads a
        /// base URL.
        fn base_url_from_env(url: String) -> String {
            url
        }

        /// Adds the provider's headers (the key's among them) and settles what depends on
        /// the base URL.
        fn prepare(
            &mut self,
            key: Option<&ApiKey>,
            base_url: &str,
            headers: &mut HeaderMap,
        ) -> Result<(), ProviderError>;

        /// Reads the events of a streamed response.
        type Assembler: Assemble;

        /// The request body, serialized into a buffer of `capacity` bytes to start with;
        /// with `stream`, asking for the response as an event stream.
        fn body(
            &self,
            model: &str,
            settings: &ModelSettings,
            messages: &[Message],
            params: &RequestParams,
            stream: bool,
            capacity: usize,
        ) -> Result<Vec<u8>, ModelError>;

        /// A fresh reader for one streamed response.
        fn assembler(&self, params: &RequestParams) -> Self::Assembler;

        /// Reads a response body; an error is what is wrong with it (the transport makes it
        /// an `InvalidResponse`, redacted).
        fn parse(&self, body: &[u8], params: &RequestParams) -> Result<ModelResponse, String>;

        /// The body of a token-counting request, for a provider with
        /// [`COUNT_PATH`](Self::COUNT_PATH).
        fn count_body(
            &self,
            model: &str,
            settings: &ModelSettings,
            messages: &[Message],
            params: &RequestParams,
        ) -> Result<Vec<u8>, ModelError> {
            let _ = (model, settings, messages, params);
            Err(ModelError::other("this provider cannot count tokens"))
        }

        /// Reads a token-counting response body.
        fn parse_count(&self, body: &[u8]) -> Result<u64, String> {
            let _ = body;
            Err("this provider cannot count tokens".to_owned())
        }
    }
}

/// A wire format an [`HttpModel`] speaks: [`ChatCompletions`](crate::model::openai::ChatCompletions)
/// or [`Messages`](crate::model::anthropic::Messages). Sealed: new formats live in golem.
pub trait WireFormat: sealed::Wire {}

impl<W: sealed::Wire> WireFormat for W {}

/// An HTTP model speaking wire format `W`: [`OpenAiModel`](crate::model::openai::OpenAiModel)
/// and [`AnthropicModel`](crate::model::anthropic::AnthropicModel) are two of them.
///
/// Cheap to clone; clones share one connection pool, however many agents use them.
pub struct HttpModel<W: WireFormat> {
    inner: Arc<Inner<W>>,
}

struct Inner<W> {
    /// The provider, as [`Model::system`] names it.
    provider: &'static str,
    name: String,
    /// Parsed once, not per request.
    url: reqwest::Url,
    /// The endpoint of a streamed request.
    stream_url: reqwest::Url,
    /// The token-counting endpoint, for a provider that has one.
    count_url: Option<reqwest::Url>,
    transport: Transport,
    settings: ModelSettings,
    wire: W,
    /// The size of the last request body: the next one's buffer starts that large, instead
    /// of growing through several reallocations.
    last_body_len: AtomicUsize,
}

impl<W: WireFormat> Clone for HttpModel<W> {
    fn clone(&self) -> Self {
        HttpModel {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<W: WireFormat> fmt::Debug for HttpModel<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(W::TYPE_NAME)
            .field("name", &self.inner.name)
            .field("url", &self.inner.url.as_str())
            .field("wire", &self.inner.wire)
            .field("transport", &self.inner.transport)
            .field("settings", &self.inner.settings)
            .finish()
    }
}

impl<W: WireFormat> HttpModel<W> {
    /// Starts configuring `model` against the provider's own API.
    pub fn builder(model: impl Into<String>) -> HttpBuilder<W> {
        HttpBuilder {
            name: model.into(),
            config: HttpConfig::new(W::DEFAULT_BASE_URL),
            wire: W::default(),
            provider: W::PROVIDER,
            api_key_env: W::API_KEY_ENV,
        }
    }

    /// `model` with the key and the base URL from the provider's environment variables
    /// (`OPENAI_API_KEY` and `OPENAI_BASE_URL`; `ANTHROPIC_API_KEY` and
    /// `ANTHROPIC_BASE_URL`; `GOOGLE_API_KEY`, else `GEMINI_API_KEY`, as Google's SDKs read
    /// them, and `GEMINI_BASE_URL`). The provider's own API needs a key; a key is optional
    /// for other OpenAI-compatible servers. A credentials error names the variable the key
    /// was read from.
    ///
    /// # Errors
    /// [`ProviderError::MissingApiKey`] when the key is needed and not set; an invalid
    /// base URL.
    pub fn from_env(model: impl Into<String>) -> Result<Self, ProviderError> {
        let mut builder = Self::builder(model);
        let key = W::API_KEY_ENV_FIRST
            .iter()
            .copied()
            .chain(std::iter::once(W::API_KEY_ENV))
            .find_map(|name| Some((name, env_var(name)?)));
        if let Some((name, key)) = key {
            builder.api_key_env = name;
            builder = builder.api_key(key);
        }
        if let Some(url) = env_var(W::BASE_URL_ENV) {
            builder = builder.base_url(W::base_url_from_env(url));
        }
        builder.build()
    }

    /// The wire format's state.
    #[cfg_attr(not(feature = "openai"), allow(dead_code))]
    pub(crate) fn wire(&self) -> &W {
        &self.inner.wire
    }
}

impl<W: WireFormat> Model for HttpModel<W> {
    fn request<'a>(
        &'a self,
        messages: &'a [Message],
        params: &'a RequestParams,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        async move {
            let inner = &*self.inner;
            let last = inner.last_body_len.load(Ordering::Relaxed);
            let body = inner.wire.body(
                &inner.name,
                &inner.settings,
                messages,
                params,
                false,
                last + last / 4,
            )?;
            inner.last_body_len.store(body.len(), Ordering::Relaxed);
            let bytes = inner.transport.post_json(&inner.url, body).await?;
            inner
                .wire
                .parse(&bytes, params)
                .map_err(|message| inner.transport.invalid(message))
        }
        .boxed()
    }

    /// Streams the response as the provider sends it: OpenAI's chunks (with
    /// `stream_options.include_usage`, unless turned off), Anthropic's Messages events.
    /// The events are read into the body the non-streamed API would have sent, and that
    /// body is decoded as [`request`](Model::request) decodes it, so the final
    /// [`StreamEvent::Done`](crate::model::StreamEvent::Done) equals the non-streamed
    /// response for the same content.
    ///
    /// Statuses before the stream (429, 5xx, ...) are retried under the
    /// [`RetryPolicy`](super::RetryPolicy), within the deadline; once the stream has
    /// begun, nothing is retried. A stream that breaks, ends early, goes idle past
    /// [`HttpSettings::idle_timeout`], carries a corrupt chunk or an error event, or is no
    /// event stream at all ends in a [`ModelError::Stream`] naming the
    /// [`StreamFault`](crate::model::StreamFault). Dropping the stream closes the
    /// connection.
    fn request_stream<'a>(
        &'a self,
        messages: &'a [Message],
        params: &'a RequestParams,
    ) -> ModelStream<'a> {
        let inner = &*self.inner;
        let open = async move {
            let last = inner.last_body_len.load(Ordering::Relaxed);
            let body = inner.wire.body(
                &inner.name,
                &inner.settings,
                messages,
                params,
                true,
                last + last / 4,
            )?;
            inner.last_body_len.store(body.len(), Ordering::Relaxed);
            inner.transport.post_stream(&inner.stream_url, body).await
        }
        .boxed();
        super::sse::stream(
            &inner.transport,
            open,
            inner.wire.assembler(params),
            move |body: &[u8]| {
                inner
                    .wire
                    .parse(body, params)
                    .map_err(|message| inner.transport.invalid(message))
            },
        )
    }

    /// Counts with the provider's token-counting endpoint, when it has one (Anthropic's),
    /// through the same transport: retries, timeouts and redaction as for a request.
    fn count_tokens<'a>(
        &'a self,
        messages: &'a [Message],
        params: &'a RequestParams,
    ) -> BoxFuture<'a, Result<Option<u64>, ModelError>> {
        async move {
            let inner = &*self.inner;
            let Some(url) = &inner.count_url else {
                return Ok(None);
            };
            let body = inner
                .wire
                .count_body(&inner.name, &inner.settings, messages, params)?;
            let bytes = inner.transport.post_json(url, body).await?;
            inner
                .wire
                .parse_count(&bytes)
                .map(Some)
                .map_err(|message| inner.transport.invalid(message))
        }
        .boxed()
    }

    fn name(&self) -> &str {
        &self.inner.name
    }

    fn system(&self) -> &str {
        self.inner.provider
    }
}

/// Configures an [`HttpModel`]; the setters every provider has are here, a provider's own
/// beside its wire format.
#[must_use = "a builder does nothing until `build()`"]
pub struct HttpBuilder<W: WireFormat> {
    name: String,
    config: HttpConfig,
    pub(crate) wire: W,
    /// The provider, as errors, spans and prices name it: the wire's, or a host's.
    provider: &'static str,
    /// Where the key is read from, as errors name it.
    api_key_env: &'static str,
}

impl<W: WireFormat> fmt::Debug for HttpBuilder<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpBuilder")
            .field("name", &self.name)
            .field("config", &self.config)
            .field("wire", &self.wire)
            .finish()
    }
}

impl<W: WireFormat> HttpBuilder<W> {
    /// Sets the API key (`Authorization: Bearer` for OpenAI, `x-api-key` for Anthropic).
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.config.api_key = Some(ApiKey::new(key));
        self
    }

    /// Sets the base URL, e.g. `http://localhost:11434/v1` for Ollama; requests go to
    /// `{base_url}/chat/completions` (OpenAI) or `{base_url}/messages` (Anthropic).
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.config.base_url = url.into();
        self
    }

    /// Sends a header with every request (OpenRouter's `HTTP-Referer`, `anthropic-beta`, a
    /// proxy's own); it replaces a header golem would send under the same name. A header
    /// whose name says it carries a credential (`auth`, `key`, `token`, `secret`, `cookie`,
    /// ... in it, like Azure's `api-key`) is treated as a [`secret_header`](Self::secret_header).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.config.header(name.into(), value.into(), false);
        self
    }

    /// Sends a header that carries a credential: like [`header`](Self::header), and its
    /// value is redacted from every error, log line and body golem returns, as the API key
    /// is.
    pub fn secret_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.config.header(name.into(), value.into(), true);
        self
    }

    /// Names the provider a host of the wire is (`groq` for Chat Completions on Groq) and
    /// where its key is read from, for [`Model::system`], errors and spans.
    #[cfg_attr(not(feature = "openai"), allow(dead_code))]
    pub(crate) fn host(mut self, provider: &'static str, api_key_env: &'static str) -> Self {
        self.provider = provider;
        self.api_key_env = api_key_env;
        self
    }

    /// Sets timeouts, retries, the overall deadline and the response size limit.
    pub fn http(mut self, http: HttpSettings) -> Self {
        self.config.http = http;
        self
    }

    /// Sets the model's settings (temperature, max tokens, stop sequences, seed, tool
    /// choice, extra body fields); an agent's and a run's settings are merged over them.
    pub fn settings(mut self, settings: ModelSettings) -> Self {
        self.config.settings = settings;
        self
    }

    /// Builds the model.
    ///
    /// # Errors
    /// [`ProviderError::MissingApiKey`] when the provider's own API is used without a key;
    /// an invalid base URL; [`ProviderError::InvalidHeader`] for a header HTTP cannot
    /// carry.
    pub fn build(mut self) -> Result<HttpModel<W>, ProviderError> {
        let base_url = normalize_base_url(&self.config.base_url)?;
        if self.config.api_key.is_none() && W::requires_key(&base_url) {
            return Err(ProviderError::MissingApiKey {
                provider: self.provider,
                env_var: self.api_key_env,
            });
        }
        let mut headers = HeaderMap::new();
        self.wire
            .prepare(self.config.api_key.as_ref(), &base_url, &mut headers)?;
        let endpoint = |stream| {
            let url = format!("{base_url}{}", W::path(&self.name, stream));
            reqwest::Url::parse(&url).map_err(|error| ProviderError::InvalidBaseUrl {
                url: base_url.clone(),
                reason: error.to_string(),
            })
        };
        let url = endpoint(false)?;
        let stream_url = endpoint(true)?;
        let count_url = W::count_path(&self.name)
            .map(|path| {
                reqwest::Url::parse(&format!("{base_url}{path}")).map_err(|error| {
                    ProviderError::InvalidBaseUrl {
                        url: base_url.clone(),
                        reason: error.to_string(),
                    }
                })
            })
            .transpose()?;
        let transport = self
            .config
            .transport(self.provider, self.api_key_env, headers)?;
        Ok(HttpModel {
            inner: Arc::new(Inner {
                provider: self.provider,
                name: self.name,
                url,
                stream_url,
                count_url,
                transport,
                settings: self.config.settings,
                wire: self.wire,
                last_body_len: AtomicUsize::new(0),
            }),
        })
    }
}
