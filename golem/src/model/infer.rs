//! Building a provider from a model string such as `openai:gpt-4o-mini`.

use super::Model;
#[cfg(feature = "anthropic")]
use super::anthropic::AnthropicModel;
#[cfg(feature = "gemini")]
use super::gemini::GeminiModel;
#[cfg(feature = "openai")]
use super::openai::OpenAiModel;
#[cfg(feature = "openai")]
use super::openai::hosts;
#[cfg(feature = "openai")]
use super::openai::responses::OpenAiResponsesModel;
use super::test::TestModel;

/// Why a provider could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// No API key was given or found in the environment.
    #[error("no {provider} API key: set {env_var}, or pass one to the builder")]
    MissingApiKey {
        /// The provider.
        provider: &'static str,
        /// Where the key is looked for.
        env_var: &'static str,
    },
    /// The model string names no known provider.
    #[error(
        "`{model}` names no provider golem knows; write `openai:<model>`, `openai-responses:<model>`, `anthropic:<model>`, `gemini:<model>`, a compatible host such as `groq:<model>` or `ollama:<model>` (see `golem::model::openai::hosts`), or `test`"
    )]
    UnknownProvider {
        /// The model string.
        model: String,
    },
    /// The model string names a provider but no model (`openai:`).
    #[error("`{model}` names no model: write it after the colon, as in `openai:gpt-4o-mini`")]
    MissingModel {
        /// The model string.
        model: String,
    },
    /// The base URL is not a usable URL.
    #[error("`{url}` is not a usable base URL: {reason}")]
    InvalidBaseUrl {
        /// The URL.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A custom header's name or value cannot be sent in HTTP.
    #[error(
        "the header `{name}` cannot be sent: its name or value holds characters HTTP headers cannot carry"
    )]
    InvalidHeader {
        /// The header's name.
        name: String,
    },
    /// The provider the model string names was left out of this build.
    #[error("golem was built without the `{feature}` feature, which `{model}` needs")]
    FeatureDisabled {
        /// The model string.
        model: String,
        /// The cargo feature to turn on.
        feature: &'static str,
    },
    /// The HTTP client could not be built.
    #[cfg(feature = "http")]
    #[error("the HTTP client could not be built")]
    Client(#[source] reqwest::Error),
}

/// The model a model string names, configured from the environment.
///
/// - `openai:<model>`: [`OpenAiModel::from_env`] (`OPENAI_API_KEY`, `OPENAI_BASE_URL`);
/// - `anthropic:<model>`: [`AnthropicModel::from_env`] (`ANTHROPIC_API_KEY`,
///   `ANTHROPIC_BASE_URL`);
/// - `gemini:<model>` or `google:<model>`: [`GeminiModel::from_env`] (`GOOGLE_API_KEY`, else
///   `GEMINI_API_KEY`; `GEMINI_BASE_URL`);
/// - `openai-responses:<model>`: OpenAI's Responses API,
///   [`OpenAiResponsesModel::from_env`](super::openai::responses::OpenAiResponsesModel)
///   (`OPENAI_API_KEY`, `OPENAI_BASE_URL`);
/// - `groq:`, `deepseek:`, `openrouter:`, `together:`, `mistral:`, `ollama:`, `llamacpp:`
///   followed by the model: Chat Completions on that OpenAI-compatible host, its base URL
///   and key variable from [`openai::hosts`](super::openai::hosts);
/// - `test`: a [`TestModel`].
///
/// ```
/// let model = golem::model::infer("test")?;
/// assert_eq!(model.name(), "test");
/// let error = golem::model::infer("gpt-4o").err().unwrap();
/// assert!(error.to_string().contains("openai:<model>"));
/// let error = golem::model::infer("ollama:").err().unwrap();
/// assert_eq!(
///     error.to_string(),
///     "`ollama:` names no model: write it after the colon, as in `openai:gpt-4o-mini`"
/// );
/// # Ok::<_, golem::model::ProviderError>(())
/// ```
///
/// # Errors
/// [`ProviderError::UnknownProvider`] for an unknown prefix,
/// [`ProviderError::MissingModel`] for a prefix with nothing after it,
/// [`ProviderError::FeatureDisabled`] for a provider this build left out (cargo features
/// `openai`, `anthropic`, `gemini`), and the provider's own errors (a missing key, say).
pub fn infer(model: &str) -> Result<Box<dyn Model>, ProviderError> {
    match model.split_once(':') {
        Some((_, name)) if name.trim().is_empty() => Err(ProviderError::MissingModel {
            model: model.to_owned(),
        }),
        #[cfg(feature = "openai")]
        Some(("openai", name)) => Ok(Box::new(OpenAiModel::from_env(name)?)),
        #[cfg(feature = "anthropic")]
        Some(("anthropic", name)) => Ok(Box::new(AnthropicModel::from_env(name)?)),
        #[cfg(feature = "gemini")]
        Some(("gemini" | "google", name)) => Ok(Box::new(GeminiModel::from_env(name)?)),
        #[cfg(not(feature = "gemini"))]
        Some(("gemini" | "google", _)) => Err(ProviderError::FeatureDisabled {
            model: model.to_owned(),
            feature: "gemini",
        }),
        #[cfg(feature = "openai")]
        Some(("openai-responses", name)) => Ok(Box::new(OpenAiResponsesModel::from_env(name)?)),
        #[cfg(feature = "openai")]
        Some((host, name)) if hosts::find(host).is_some() => compatible_host(model, host, name),
        #[cfg(not(feature = "openai"))]
        Some((
            "openai-responses" | "groq" | "deepseek" | "openrouter" | "together" | "mistral"
            | "ollama" | "llamacpp",
            _,
        )) => Err(ProviderError::FeatureDisabled {
            model: model.to_owned(),
            feature: "openai",
        }),
        #[cfg(not(feature = "openai"))]
        Some(("openai", _)) => Err(ProviderError::FeatureDisabled {
            model: model.to_owned(),
            feature: "openai",
        }),
        #[cfg(not(feature = "anthropic"))]
        Some(("anthropic", _)) => Err(ProviderError::FeatureDisabled {
            model: model.to_owned(),
            feature: "anthropic",
        }),
        None if model == "test" => Ok(Box::new(TestModel::new())),
        _ => Err(ProviderError::UnknownProvider {
            model: model.to_owned(),
        }),
    }
}

/// `name` on the OpenAI-compatible host `host`.
#[cfg(feature = "openai")]
fn compatible_host(model: &str, host: &str, name: &str) -> Result<Box<dyn Model>, ProviderError> {
    match hosts::find(host) {
        Some(host) => Ok(Box::new(host.model(name)?)),
        None => Err(ProviderError::UnknownProvider {
            model: model.to_owned(),
        }),
    }
}
