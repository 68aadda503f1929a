//! Building a provider from a model string such as `openai:gpt-4o-mini`.

use super::anthropic::AnthropicModel;
use super::openai::OpenAiModel;
use super::test::TestModel;
use super::{Model, ProviderError};

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
