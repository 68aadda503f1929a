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
//! Structured output goes through the output tool ([`OutputMode::Tool`](crate::output::OutputMode::Tool)) by default.
//! [`OutputMode::Native`](crate::output::OutputMode::Native) uses the Messages API's structured outputs: the
//! schema goes as `output_config: {"format": {"type": "json_schema", "schema": ...}}` (no
//! beta header), and the answer is a text block holding the JSON. Keywords the API does not
//! enforce (`minimum`, `maxLength`, `pattern`, ...) move into the description; golem's
//! decoder still checks the answer against the whole schema. The models that take it are
//! Anthropic's to list (Claude Sonnet 4.5, Opus 4.5, Haiku 4.5 and later); an older one
//! answers HTTP 400. [`OutputMode::Prompted`](crate::output::OutputMode::Prompted) works too: the schema goes with the
//! instructions.

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::http::{ApiKey, HttpBuilder, HttpModel, Wire};
use super::provider::header_value;
use super::tool_forms::ToolForms;
use super::{Message, ModelError, ModelResponse, ModelSettings, ProviderError, RequestParams};

mod stream;
pub(super) mod wire;

/// Where the API key is read from.
pub const API_KEY_ENV: &str = "ANTHROPIC_API_KEY";
/// Where a base URL other than Anthropic's is read from: as Anthropic's SDKs read it, the
/// API's root, without `/v1` (`https://gateway.example.com/anthropic`), which golem
/// completes to the base URL its builder takes (a value that already ends in `/v1` is
/// taken as it is).
pub const BASE_URL_ENV: &str = "ANTHROPIC_BASE_URL";
/// Anthropic's own API.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com/v1";
/// The `anthropic-version` header golem speaks.
pub const API_VERSION: &str = "2023-06-01";
/// `max_tokens` when the settings give none; the Messages API requires one.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

const PROVIDER: &str = "anthropic";

/// A Messages API model: an [`HttpModel`] speaking [`Messages`]. Cheap to clone; clones
/// share one connection pool, however many agents use them.
pub type AnthropicModel = HttpModel<Messages>;

/// Configures an [`AnthropicModel`]: the setters every provider has ([`HttpBuilder`]).
pub type AnthropicBuilder = HttpBuilder<Messages>;

/// The Messages API wire format.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Messages {
    /// Each tool as sent, serialized once per tool definition.
    tool_forms: ToolForms,
}

impl Wire for Messages {
    const PROVIDER: &'static str = PROVIDER;
    const TYPE_NAME: &'static str = "AnthropicModel";
    const API_KEY_ENV: &'static str = API_KEY_ENV;
    const BASE_URL_ENV: &'static str = BASE_URL_ENV;
    const DEFAULT_BASE_URL: &'static str = DEFAULT_BASE_URL;
    const PATH: &'static str = "/messages";
    const COUNT_PATH: Option<&'static str> = Some("/messages/count_tokens");

    fn requires_key(_base_url: &str) -> bool {
        true
    }

    fn base_url_from_env(url: String) -> String {
        let root = url.trim_end_matches('/');
        if root.ends_with("/v1") {
            root.to_owned()
        } else {
            format!("{root}/v1")
        }
    }

    fn prepare(
        &mut self,
        key: Option<&ApiKey>,
        _base_url: &str,
        headers: &mut HeaderMap,
    ) -> Result<(), ProviderError> {
        if let Some(key) = key {
            headers.insert(
                HeaderName::from_static("x-api-key"),
                header_value("x-api-key", key.expose())?,
            );
        }
        headers.insert(
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static(API_VERSION),
        );
        Ok(())
    }

    type Assembler = stream::Events;

    fn body(
        &self,
        model: &str,
        settings: &ModelSettings,
        messages: &[Message],
        params: &RequestParams,
        stream: bool,
        capacity: usize,
    ) -> Result<Vec<u8>, ModelError> {
        wire::body(
            &self.tool_forms,
            model,
            settings,
            messages,
            params,
            stream,
            capacity,
        )
    }

    fn assembler(&self, _params: &RequestParams) -> stream::Events {
        stream::Events::default()
    }

    fn parse(&self, body: &[u8], _params: &RequestParams) -> Result<ModelResponse, String> {
        wire::parse(body)
    }

    fn count_body(
        &self,
        model: &str,
        settings: &ModelSettings,
        messages: &[Message],
        params: &RequestParams,
    ) -> Result<Vec<u8>, ModelError> {
        wire::count_body(&self.tool_forms, model, settings, messages, params)
    }

    fn parse_count(&self, body: &[u8]) -> Result<u64, String> {
        wire::parse_count(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_url_variable_is_read_as_anthropics_sdks_read_it() {
        for (value, base_url) in [
            (
                "https://gateway.example.com/anthropic",
                "https://gateway.example.com/anthropic/v1",
            ),
            ("http://localhost:4000/", "http://localhost:4000/v1"),
            (
                "https://api.anthropic.com/v1",
                "https://api.anthropic.com/v1",
            ),
            (
                "https://api.anthropic.com/v1/",
                "https://api.anthropic.com/v1",
            ),
        ] {
            assert_eq!(Messages::base_url_from_env(value.to_owned()), base_url);
        }
    }
}
