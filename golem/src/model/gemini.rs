//! Google's Gemini API (`generateContent`), natively.
//!
//! ```no_run
//! use golem::model::gemini::GeminiModel;
//!
//! // GOOGLE_API_KEY, else GEMINI_API_KEY, from the environment:
//! let model = GeminiModel::from_env("gemini-2.5-flash")?;
//! # Ok::<_, golem::model::ProviderError>(())
//! ```
//!
//! Requests go to `{base_url}/models/{model}:generateContent`, streamed ones to
//! `:streamGenerateContent?alt=sse`, with the key in the `x-goog-api-key` header.
//!
//! - **Messages.** The instructions and system prompts are the `systemInstruction`; each
//!   request is a `user` content, each response a `model` content, of `parts`.
//! - **Tool calls.** Gemini's `functionCall` usually carries no id: golem keeps the id
//!   Gemini sends, if any, and otherwise leaves it empty for the run to fill in with an id
//!   unique in the history (`call_3_0`). The answers go back as `functionResponse` parts in
//!   the order of the calls they answer, which is how Gemini pairs them. A tool's value
//!   goes as the `response` object itself when it is an object, else as
//!   `{"result": value}`; a rejection as `{"error": feedback}`.
//! - **Thought signatures.** Gemini signs its reasoning (`thoughtSignature`) and wants the
//!   signature back on the same part. A thought summary (`thought: true`) becomes a
//!   [`ThinkingPart`](crate::model::ThinkingPart) with its signature; a signature on a text
//!   or `functionCall` part becomes an empty `ThinkingPart` right after that part (provider
//!   `gemini`), and goes back on the part before it. Reasoning from other providers is not
//!   sent.
//! - **Structured output.** Tool output sends the output tool as a function declaration;
//!   [`OutputMode::Native`](crate::output::OutputMode::Native) sends
//!   `responseMimeType: application/json` with the schema as `responseSchema`; schemas go
//!   in Gemini's dialect ([`to_gemini_schema`](crate::schema::to_gemini_schema)).
//! - **Safety.** A response stopped by a safety filter (`SAFETY`, `RECITATION`,
//!   `BLOCKLIST`, `PROHIBITED_CONTENT`, `SPII`, ...) or a prompt blocked outright
//!   (`promptFeedback.blockReason`) finishes with
//!   [`FinishReason::ContentFilter`](crate::model::FinishReason::ContentFilter), which a run
//!   reports as [`ModelError::ContentFilter`]; the
//!   provider's verdict (reason, message, ratings) stays in the response as a
//!   [`ProviderPart`](crate::model::ProviderPart) that is never sent back.
//! - **Usage.** `promptTokenCount` (with `toolUsePromptTokenCount`) is the input, cached
//!   tokens included (`cachedContentTokenCount` as the cache reads);
//!   `candidatesTokenCount` plus `thoughtsTokenCount` is the output, with the thoughts as
//!   the reasoning tokens; the audio shares of the token details are the audio tokens.
//! - **Token counts.** [`Model::count_tokens`](crate::model::Model::count_tokens) (which
//!   [`UsageLimits::count_request_tokens`](crate::usage::UsageLimits::count_request_tokens)
//!   uses) asks `:countTokens` about the request golem would send.
//! - **Settings.** `max_tokens`, `temperature`, `top_p`, `stop_sequences` and `seed` go in
//!   `generationConfig`; `parallel_tool_calls` has no Gemini equivalent and is not sent.
//!   `extra_body` is merged into the body key by key, objects deeply, so
//!   `{"generationConfig": {"thinkingConfig": {"includeThoughts": true}}}` adds to the
//!   generation config golem sends.

use std::borrow::Cow;
use std::fmt;

use reqwest::header::{HeaderMap, HeaderName};

use super::http::{ApiKey, HttpBuilder, HttpModel, Wire};
use super::provider::header_value;
use super::tool_forms::ToolForms;
use super::{Message, ModelError, ModelResponse, ModelSettings, ProviderError, RequestParams};

mod read;
mod stream;
mod wire;

/// Where the API key is read from.
pub const API_KEY_ENV: &str = "GEMINI_API_KEY";
/// Where the API key is read from first: when both are set, this one wins, as in Google's
/// SDKs.
pub const GOOGLE_API_KEY_ENV: &str = "GOOGLE_API_KEY";
/// Where a base URL other than Google's is read from.
pub const BASE_URL_ENV: &str = "GEMINI_BASE_URL";
/// Google's own Gemini API.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

const PROVIDER: &str = "gemini";

/// A Gemini model: an [`HttpModel`] speaking [`GenerateContent`]. Cheap to clone; clones
/// share one connection pool, however many agents use them.
pub type GeminiModel = HttpModel<GenerateContent>;

/// Configures a [`GeminiModel`]: the setters every provider has ([`HttpBuilder`]).
pub type GeminiBuilder = HttpBuilder<GenerateContent>;

/// The Gemini API's `generateContent` wire format.
#[derive(Default)]
#[non_exhaustive]
pub struct GenerateContent {
    /// Each tool's function declaration in Gemini's dialect, serialized: converted once per
    /// tool definition, not per request.
    declarations: ToolForms,
}

impl fmt::Debug for GenerateContent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GenerateContent").finish_non_exhaustive()
    }
}

/// The model's name as the path takes it: without a leading `models/`.
fn model_id(model: &str) -> &str {
    model.strip_prefix("models/").unwrap_or(model)
}

impl Wire for GenerateContent {
    const PROVIDER: &'static str = PROVIDER;
    const TYPE_NAME: &'static str = "GeminiModel";
    const API_KEY_ENV: &'static str = API_KEY_ENV;
    const API_KEY_ENV_FIRST: &'static [&'static str] = &[GOOGLE_API_KEY_ENV];
    const BASE_URL_ENV: &'static str = BASE_URL_ENV;
    const DEFAULT_BASE_URL: &'static str = DEFAULT_BASE_URL;
    const PATH: &'static str = "/models";

    fn path(model: &str, stream: bool) -> Cow<'static, str> {
        let model = model_id(model);
        Cow::Owned(if stream {
            format!("/models/{model}:streamGenerateContent?alt=sse")
        } else {
            format!("/models/{model}:generateContent")
        })
    }

    fn count_path(model: &str) -> Option<Cow<'static, str>> {
        Some(Cow::Owned(format!(
            "/models/{}:countTokens",
            model_id(model)
        )))
    }

    fn requires_key(base_url: &str) -> bool {
        base_url.contains("googleapis.com")
    }

    fn prepare(
        &mut self,
        key: Option<&ApiKey>,
        _base_url: &str,
        headers: &mut HeaderMap,
    ) -> Result<(), ProviderError> {
        if let Some(key) = key {
            headers.insert(
                HeaderName::from_static("x-goog-api-key"),
                header_value("x-goog-api-key", key.expose())?,
            );
        }
        Ok(())
    }

    type Assembler = stream::Chunks;

    fn body(
        &self,
        model: &str,
        settings: &ModelSettings,
        messages: &[Message],
        params: &RequestParams,
        _stream: bool,
        capacity: usize,
    ) -> Result<Vec<u8>, ModelError> {
        let declarations = self.declarations.for_params(params, |tool| {
            serde_json::value::to_raw_value(&wire::FunctionDeclaration::new(tool))
        })?;
        wire::body(
            model_id(model),
            settings,
            messages,
            params,
            &declarations,
            capacity,
        )
    }

    fn assembler(&self, _params: &RequestParams) -> stream::Chunks {
        stream::Chunks::default()
    }

    fn parse(&self, body: &[u8], _params: &RequestParams) -> Result<ModelResponse, String> {
        read::parse(body)
    }

    fn count_body(
        &self,
        model: &str,
        settings: &ModelSettings,
        messages: &[Message],
        params: &RequestParams,
    ) -> Result<Vec<u8>, ModelError> {
        let declarations = self.declarations.for_params(params, |tool| {
            serde_json::value::to_raw_value(&wire::FunctionDeclaration::new(tool))
        })?;
        wire::count_body(model_id(model), settings, messages, params, &declarations)
    }

    fn parse_count(&self, body: &[u8]) -> Result<u64, String> {
        wire::parse_count(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_and_the_streaming_are_in_the_path() {
        assert_eq!(
            GenerateContent::path("models/gemini-2.5-flash", false),
            "/models/gemini-2.5-flash:generateContent"
        );
        assert_eq!(
            GenerateContent::path("gemini-2.5-flash", true),
            "/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        assert!(GenerateContent::requires_key(DEFAULT_BASE_URL));
        assert!(!GenerateContent::requires_key(
            "http://127.0.0.1:8080/v1beta"
        ));
    }
}
