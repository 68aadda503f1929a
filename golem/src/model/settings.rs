//! [`ModelSettings`]: sampling and tool-use settings the providers send with each request.

use serde_json::{Map, Value};

/// Settings sent with every request of a provider; unset fields are left out, so the
/// provider's defaults apply.
///
/// ```
/// use golem::model::{ModelSettings, ToolChoice};
///
/// let settings = ModelSettings::default()
///     .temperature(0.2)
///     .max_tokens(1024)
///     .tool_choice(ToolChoice::Required)
///     .extra("top_k", 40);
/// assert_eq!(settings.max_tokens, Some(1024));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ModelSettings {
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Nucleus sampling.
    pub top_p: Option<f64>,
    /// The most tokens to generate.
    pub max_tokens: Option<u32>,
    /// A seed for reproducible sampling (OpenAI-compatible servers).
    pub seed: Option<i64>,
    /// Whether the model may call several tools in one response.
    pub parallel_tool_calls: Option<bool>,
    /// Whether and which tools the model must call. By default golem requires a tool call
    /// when only structured output is acceptable, and leaves it to the model otherwise.
    pub tool_choice: Option<ToolChoice>,
    /// Extra top-level fields for the request body, for servers with their own options.
    pub extra_body: Map<String, Value>,
}

impl ModelSettings {
    /// Sets the temperature.
    #[must_use]
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Sets nucleus sampling.
    #[must_use]
    pub fn top_p(mut self, top_p: f64) -> Self {
        self.top_p = Some(top_p);
        self
    }

    /// Sets the most tokens to generate.
    #[must_use]
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Sets the seed.
    #[must_use]
    pub fn seed(mut self, seed: i64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Allows or forbids several tool calls in one response.
    #[must_use]
    pub fn parallel_tool_calls(mut self, parallel: bool) -> Self {
        self.parallel_tool_calls = Some(parallel);
        self
    }

    /// Sets the tool choice.
    #[must_use]
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// Adds a top-level field to the request body.
    #[must_use]
    pub fn extra(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.extra_body.insert(key.into(), value.into());
        self
    }
}

/// Whether and which tools the model must call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// The model must call some tool.
    Required,
    /// The model must not call tools.
    None,
    /// The model must call this tool.
    Tool(String),
}
