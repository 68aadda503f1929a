//! [`ModelSettings`]: sampling and tool-use settings the providers send with each request.

use serde_json::{Map, Value};

/// Sampling and tool-use settings; unset fields are left out, so the server's defaults
/// apply.
///
/// They come in three layers, each merged over the one before with
/// [`merged`](Self::merged): the provider's (its builder's `settings`), the agent's
/// ([`AgentBuilder::model_settings`](crate::AgentBuilder::model_settings)) and a run's.
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
    /// The most tokens to generate. OpenAI's own API gets it as `max_completion_tokens`,
    /// compatible servers as `max_tokens`. golem sets no limit of its own for OpenAI and
    /// compatible servers (Anthropic requires one: 4096 by default), so a model that never
    /// stops may write until its context is full; setting one is recommended, large enough
    /// for the longest structured answer expected.
    pub max_tokens: Option<u32>,
    /// Sequences where the model stops writing (`stop` for OpenAI, `stop_sequences` for
    /// Anthropic).
    pub stop_sequences: Option<Vec<String>>,
    /// A seed for reproducible sampling (OpenAI-compatible servers).
    pub seed: Option<i64>,
    /// Whether the model may call several tools in one response.
    pub parallel_tool_calls: Option<bool>,
    /// Whether and which tools the model must call. By default golem requires a tool call
    /// when the answer must come through the output tool, and leaves it to the model
    /// otherwise (text and native structured output). A forced function-tool call
    /// (`Required`, `Tool(name)`) applies to the first turn after a user prompt, so the
    /// model can still answer afterwards; see ADR 0012.
    pub tool_choice: Option<ToolChoice>,
    /// Extra top-level fields for the request body, for servers with their own options.
    /// One that names a field golem writes is merged into it (objects key by key, anything
    /// else replacing): `extra("text", json!({"verbosity": "low"}))` beside native output's
    /// `text.format`.
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

    /// Sets the stop sequences.
    #[must_use]
    pub fn stop_sequences<S: Into<String>>(mut self, stop: impl IntoIterator<Item = S>) -> Self {
        self.stop_sequences = Some(stop.into_iter().map(Into::into).collect());
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

    /// Adds a top-level field to the request body (merged into golem's own field of that
    /// name, if it writes one; see [`extra_body`](Self::extra_body)).
    #[must_use]
    pub fn extra(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.extra_body.insert(key.into(), value.into());
        self
    }

    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == ModelSettings::default()
    }

    /// These settings with `over`'s on top: each field `over` sets replaces this one's, and
    /// `over`'s extra body fields are added, replacing those of the same key.
    ///
    /// ```
    /// use golem::model::ModelSettings;
    ///
    /// let model = ModelSettings::default().temperature(0.7).max_tokens(512).extra("top_k", 40);
    /// let agent = ModelSettings::default().temperature(0.0).extra("min_p", 0.1);
    /// let merged = model.merged(&agent);
    /// assert_eq!(merged.temperature, Some(0.0));
    /// assert_eq!(merged.max_tokens, Some(512));
    /// assert_eq!(merged.extra_body.len(), 2);
    /// ```
    #[must_use]
    pub fn merged(&self, over: &ModelSettings) -> ModelSettings {
        let mut extra_body = self.extra_body.clone();
        extra_body.extend(over.extra_body.iter().map(|(k, v)| (k.clone(), v.clone())));
        ModelSettings {
            temperature: over.temperature.or(self.temperature),
            top_p: over.top_p.or(self.top_p),
            max_tokens: over.max_tokens.or(self.max_tokens),
            stop_sequences: over
                .stop_sequences
                .clone()
                .or_else(|| self.stop_sequences.clone()),
            seed: over.seed.or(self.seed),
            parallel_tool_calls: over.parallel_tool_calls.or(self.parallel_tool_calls),
            tool_choice: over
                .tool_choice
                .clone()
                .or_else(|| self.tool_choice.clone()),
            extra_body,
        }
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
