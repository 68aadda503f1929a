//! Building a provider from a model string such as `openai:gpt-4o-mini`.

use super::Model;
use super::anthropic::AnthropicModel;
use super::openai::OpenAiModel;
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
        "`{model}` names no provider golem knows; write `openai:<model>`, `anthropic:<model>` or `test`"
    )]
    UnknownProvider {
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
    /// The HTTP client could not be built.
    #[error("the HTTP client could not be built")]
    Client(#[source] reqwest::Error),
}

/// The model a model string names, configured from the environment.
///
/// - `openai:<model>`: [`OpenAiModel::from_env`] (`OPENAI_API_KEY`, `OPENAI_BASE_URL`);
/// - `anthropic:<model>`: [`AnthropicModel::from_env`] (`ANTHROPIC_API_KEY`);
/// - `test`: a [`TestModel`].
///
/// ```
/// let model = golem::model::infer("test")?;
/// assert_eq!(model.name(), "test");
/// let error = golem::model::infer("gpt-4o").err().unwrap();
/// assert!(error.to_string().contains("openai:<model>"));
/// # Ok::<_, golem::model::ProviderError>(())
/// ```
///
/// # Errors
/// [`ProviderError::UnknownProvider`] for an unknown prefix, and the provider's own errors
/// (a missing key, say).
pub fn infer(model: &str) -> Result<Box<dyn Model>, ProviderError> {
    match model.split_once(':') {
        Some(("openai", name)) => Ok(Box::new(OpenAiModel::from_env(name)?)),
        Some(("anthropic", name)) => Ok(Box::new(AnthropicModel::from_env(name)?)),
        None if model == "test" => Ok(Box::new(TestModel::new())),
        _ => Err(ProviderError::UnknownProvider {
            model: model.to_owned(),
        }),
    }
}

/// Checks a base URL and drops its trailing `/`.
pub(crate) fn normalize_base_url(url: &str) -> Result<String, ProviderError> {
    let parsed = reqwest::Url::parse(url).map_err(|error| ProviderError::InvalidBaseUrl {
        url: url.to_owned(),
        reason: error.to_string(),
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(ProviderError::InvalidBaseUrl {
            url: url.to_owned(),
            reason: "the scheme must be http or https".to_owned(),
        });
    }
    Ok(url.trim_end_matches('/').to_owned())
}

/// An environment variable's value, if set and not empty.
pub(crate) fn env_var(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .filter(|value| !value.trim().is_empty())
}
