//! [`Agent`] and [`AgentBuilder`]: configuration, checked once at `build()`.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;

use crate::context::RunContext;
use crate::error::BoxError;
use crate::model::{Message, Model, ModelSettings, OutputSchema, RequestParams};
use crate::output::{Output, OutputKind, OutputMode};
use crate::schema;
use crate::tool::{RetryLimit, Tool, ToolDefinition, is_valid_tool_name};
use crate::usage::{Usage, UsageLimits};

mod budget;
mod run;

/// The model-turn limit when none is set.
pub const DEFAULT_MAX_TURNS: u32 = 50;

/// The output tool's name when none is set.
pub const DEFAULT_OUTPUT_TOOL_NAME: &str = "final_result";

type Decoder<O> = Arc<dyn Fn(&str) -> Result<O, BoxError> + Send + Sync>;
type Validator<Deps, O> =
    Box<dyn Fn(RunContext<Deps>, O) -> BoxFuture<'static, Result<O, BoxError>> + Send + Sync>;

/// An agent: a model, tools, an output type and the budgets for self-correction.
///
/// Build one with [`Agent::builder`], then [`run`](Agent::run) it as often as you like,
/// from as many tasks as you like: it is a cheap `Clone` around an `Arc`.
///
/// Self-correction is opt-in: see [`AgentBuilder::output_retries`] and
/// [`AgentBuilder::tool_retries`].
pub struct Agent<Deps = (), O = String> {
    inner: Arc<AgentInner<Deps, O>>,
}

impl<Deps, O> Clone for Agent<Deps, O> {
    fn clone(&self) -> Self {
        Agent {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<Deps, O> fmt::Debug for Agent<Deps, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = &*self.inner;
        f.debug_struct("Agent")
            .field("name", &inner.name)
            .field("model", &inner.model.name())
            .field(
                "tools",
                &inner.tools.iter().map(|t| &t.name).collect::<Vec<_>>(),
            )
            .field("tool_retries", &inner.tool_retries)
            .field("output_retries", &inner.output_retries)
            .field("max_turns", &inner.max_turns)
            .finish_non_exhaustive()
    }
}

pub(crate) struct AgentInner<Deps, O> {
    model: Arc<dyn Model>,
    name: Option<String>,
    instructions: Option<String>,
    tools: Vec<ToolEntry<Deps>>,
    tool_index: HashMap<String, usize>,
    available_tools: String,
    params: RequestParams,
    output: OutputSetup<Deps, O>,
    tool_retries: u32,
    output_retries: u32,
    max_turns: u32,
    usage_limits: UsageLimits,
}

struct ToolEntry<Deps> {
    tool: Box<dyn Tool<Deps>>,
    name: Arc<str>,
    max_retries: u32,
}

struct OutputSetup<Deps, O> {
    /// Whether the answer is structured, and then whether its schema was wrapped as
    /// `{"response": ...}`.
    structured: Option<bool>,
    mode: OutputMode,
    tool_name: Arc<str>,
    decoder: Decoder<O>,
    validators: Vec<Validator<Deps, O>>,
}

impl<Deps, O> Agent<Deps, O>
where
    Deps: Send + Sync + 'static,
    O: Output,
{
    /// Starts configuring an agent that asks `model`.
    pub fn builder(model: impl Model) -> AgentBuilder<Deps, O> {
        AgentBuilder::new(Arc::new(model))
    }

    /// The tool definitions and output mode sent with every request.
    pub fn request_params(&self) -> &RequestParams {
        &self.inner.params
    }
}

/// What a successful run produced.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RunResult<O> {
    /// The decoded, validated output.
    pub output: O,
    /// Every request and response of the run (those of the history it continued included),
    /// rejected ones too.
    pub messages: Vec<Message>,
    /// Requests, tokens and tool calls summed over all rounds of this run.
    pub usage: Usage,
}

/// Why an agent could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// Two tools share a name.
    #[error("two tools are named `{0}`; tool names must be unique")]
    DuplicateToolName(String),
    /// A tool name providers would refuse.
    #[error("tool name `{0}` is invalid; use 1 to 64 ASCII letters, digits, `_` or `-`")]
    InvalidToolName(String),
    /// A tool is named like the output tool.
    #[error(
        "tool `{0}` has the output tool's name; rename the tool or call `output_tool_name` with another name"
    )]
    OutputToolNameTaken(String),
    /// `max_turns(0)`.
    #[error("max_turns must be at least 1")]
    ZeroMaxTurns,
}

/// Configures an [`Agent`]; checks everything at [`build`](AgentBuilder::build).
#[must_use = "an AgentBuilder does nothing until `build()`"]
pub struct AgentBuilder<Deps, O> {
    model: Arc<dyn Model>,
    name: Option<String>,
    instructions: Option<String>,
    tools: Vec<Box<dyn Tool<Deps>>>,
    tool_retries: u32,
    output_retries: u32,
    max_turns: u32,
    usage_limits: UsageLimits,
    output_mode: OutputMode,
    output_tool_name: String,
    decoder: Option<Decoder<O>>,
    validators: Vec<Validator<Deps, O>>,
    model_settings: ModelSettings,
}

impl<Deps, O> fmt::Debug for AgentBuilder<Deps, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentBuilder")
            .field("name", &self.name)
            .field("model", &self.model.name())
            .field("tools", &self.tools.len())
            .field("tool_retries", &self.tool_retries)
            .field("output_retries", &self.output_retries)
            .field("max_turns", &self.max_turns)
            .finish_non_exhaustive()
    }
}

impl<Deps, O> AgentBuilder<Deps, O>
where
    Deps: Send + Sync + 'static,
    O: Output,
{
    fn new(model: Arc<dyn Model>) -> Self {
        AgentBuilder {
            model,
            name: None,
            instructions: None,
            tools: Vec::new(),
            tool_retries: 0,
            output_retries: 0,
            max_turns: DEFAULT_MAX_TURNS,
            usage_limits: UsageLimits::default(),
            output_mode: OutputMode::default(),
            output_tool_name: DEFAULT_OUTPUT_TOOL_NAME.to_owned(),
            decoder: None,
            validators: Vec::new(),
            model_settings: ModelSettings::default(),
        }
    }

    /// A name for the agent, used in traces.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The instructions (system prompt) at the start of every new conversation.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Adds a tool the model may call.
    pub fn tool(mut self, tool: impl Tool<Deps>) -> Self {
        self.tools.push(Box::new(tool));
        self
    }

    /// The default retry budget of every tool: how many rejections of one tool a run
    /// tolerates. Off (0) by default; a tool's own [`Tool::max_retries`] overrides it. Calls
    /// to unknown tool names share one counter with this budget.
    ///
    /// With a budget, a tool's rejection goes back as that call's result, and the model calls
    /// again:
    ///
    /// ```
    /// use golem::model::function::FunctionModel;
    /// use golem::model::{Message, ModelResponse};
    /// use golem::tool::FunctionTool;
    /// use golem::{Agent, ModelRetry, RunContext};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// # #[schemars(crate = "golem::__private::schemars")]
    /// struct Dice {
    ///     n: i64,
    /// }
    ///
    /// let roll = FunctionTool::new("roll_dice", |_ctx: RunContext<()>, dice: Dice| async move {
    ///     if dice.n <= 0 {
    ///         return Err(ModelRetry::new(format!("n must be positive, got {}", dice.n)));
    ///     }
    ///     Ok(dice.n * 3)
    /// });
    /// // A model that first asks for -1 dice, then 2, then reports.
    /// let model = FunctionModel::new(|messages: &[Message], _| match messages.len() {
    ///     1 => ModelResponse::tool_call("roll_dice", r#"{"n": -1}"#, "c1"),
    ///     3 => ModelResponse::tool_call("roll_dice", r#"{"n": 2}"#, "c2"),
    ///     _ => ModelResponse::text("You rolled 6."),
    /// });
    /// let agent = Agent::<(), String>::builder(model).tool(roll).tool_retries(1).build()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let result = agent.run("Roll for me", ()).await?;
    /// assert_eq!(result.output, "You rolled 6.");
    /// assert_eq!(result.usage.requests, 3);
    /// assert_eq!(result.usage.tool_calls, 2);
    /// assert_eq!(result.usage.rejected.tools["roll_dice"].requests, 1);
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    pub fn tool_retries(mut self, retries: u32) -> Self {
        self.tool_retries = retries;
        self
    }

    /// The output's retry budget: how many rejected outputs a run tolerates. Off (0) by
    /// default.
    ///
    /// With a budget, a rejected output goes back to the model as feedback:
    ///
    /// ```
    /// use golem::model::function::FunctionModel;
    /// use golem::model::{Message, ModelResponse};
    /// use golem::{Agent, ModelRetry};
    ///
    /// // The model answers "maybe" first; once told, it answers "yes".
    /// let model = FunctionModel::new(|messages: &[Message], _| {
    ///     if messages.len() == 1 { ModelResponse::text("maybe") } else { ModelResponse::text("yes") }
    /// });
    /// let agent = Agent::<(), String>::builder(model)
    ///     .output_retries(1)
    ///     .output_validator(|_ctx, answer: String| async move {
    ///         match answer.as_str() {
    ///             "yes" | "no" => Ok(answer),
    ///             _ => Err(ModelRetry::new("answer yes or no")),
    ///         }
    ///     })
    ///     .build()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let result = agent.run("Is water wet?", ()).await?;
    /// assert_eq!(result.output, "yes");
    /// assert_eq!(result.usage.requests, 2);
    /// assert_eq!(result.usage.rejected.output.requests, 1);
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    ///
    pub fn output_retries(mut self, retries: u32) -> Self {
        self.output_retries = retries;
        self
    }

    /// The most model turns (requests) one run may take; [`DEFAULT_MAX_TURNS`] by default.
    pub fn max_turns(mut self, turns: u32) -> Self {
        self.max_turns = turns;
        self
    }

    /// Limits on requests, tokens and tool calls per run.
    pub fn usage_limits(mut self, limits: UsageLimits) -> Self {
        self.usage_limits = limits;
        self
    }

    /// Model settings for this agent's requests, merged over the model's own: each field
    /// set here replaces the model's, and `extra_body` entries are added (model < agent <
    /// run). They travel in [`RequestParams::settings`].
    ///
    /// ```
    /// use golem::model::function::FunctionModel;
    /// use golem::model::{ModelResponse, ModelSettings};
    /// use golem::Agent;
    ///
    /// let model = FunctionModel::new(|_, _| ModelResponse::text("ok"));
    /// let agent = Agent::<(), String>::builder(model)
    ///     .model_settings(ModelSettings::default().temperature(0.0).max_tokens(1024))
    ///     .build()?;
    /// assert_eq!(agent.request_params().settings.max_tokens, Some(1024));
    /// # Ok::<_, golem::BuildError>(())
    /// ```
    pub fn model_settings(mut self, settings: ModelSettings) -> Self {
        self.model_settings = settings;
        self
    }

    /// How structured output reaches the model; [`OutputMode::Tool`] by default.
    pub fn output_mode(mut self, mode: OutputMode) -> Self {
        self.output_mode = mode;
        self
    }

    /// The output tool's name; [`DEFAULT_OUTPUT_TOOL_NAME`] by default.
    pub fn output_tool_name(mut self, name: impl Into<String>) -> Self {
        self.output_tool_name = name.into();
        self
    }

    /// Replaces [`Output::decode`] with `decoder`.
    ///
    /// An error wrapping [`ModelRetry`](crate::ModelRetry) rejects the answer; any other
    /// fails the run at the decode stage.
    pub fn output_decoder<F, E>(mut self, decoder: F) -> Self
    where
        F: Fn(&str) -> Result<O, E> + Send + Sync + 'static,
        E: Into<BoxError>,
    {
        self.decoder = Some(Arc::new(move |raw| decoder(raw).map_err(Into::into)));
        self
    }

    /// Adds an async validator that sees the decoded output and the [`RunContext`], and
    /// returns the output (possibly changed) or an error. Validators run in the order added.
    ///
    /// An error wrapping [`ModelRetry`](crate::ModelRetry) rejects the answer; any other
    /// fails the run at the decode stage.
    pub fn output_validator<F, Fut, E>(mut self, validator: F) -> Self
    where
        F: Fn(RunContext<Deps>, O) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, E>> + Send + 'static,
        E: Into<BoxError>,
    {
        self.validators.push(Box::new(move |ctx, output| {
            let future = validator(ctx, output);
            async move { future.await.map_err(Into::into) }.boxed()
        }));
        self
    }

    /// Checks the configuration and builds the agent. Tool schemas are built here, once.
    ///
    /// # Errors
    /// A [`BuildError`] for an invalid or duplicate tool name, a tool named like the output
    /// tool, or `max_turns(0)`.
    pub fn build(self) -> Result<Agent<Deps, O>, BuildError> {
        if self.max_turns == 0 {
            return Err(BuildError::ZeroMaxTurns);
        }
        let structured = match O::kind() {
            OutputKind::Text => None,
            OutputKind::Structured(structured) => Some(structured),
        };
        let has_output_tool = structured.is_some() && self.output_mode == OutputMode::Tool;
        if has_output_tool && !is_valid_tool_name(&self.output_tool_name) {
            return Err(BuildError::InvalidToolName(self.output_tool_name));
        }

        let mut tools = Vec::with_capacity(self.tools.len());
        let mut definitions = Vec::with_capacity(self.tools.len());
        let mut tool_index = HashMap::with_capacity(self.tools.len());
        for tool in self.tools {
            let definition = tool.definition();
            if !is_valid_tool_name(&definition.name) {
                return Err(BuildError::InvalidToolName(definition.name));
            }
            if has_output_tool && definition.name == self.output_tool_name {
                return Err(BuildError::OutputToolNameTaken(definition.name));
            }
            if tool_index
                .insert(definition.name.clone(), tools.len())
                .is_some()
            {
                return Err(BuildError::DuplicateToolName(definition.name));
            }
            let max_retries = tool
                .max_retries()
                .map_or(self.tool_retries, |RetryLimit(limit)| limit);
            tools.push(ToolEntry {
                name: Arc::from(definition.name.as_str()),
                tool,
                max_retries,
            });
            definitions.push(definition);
        }

        let mut params = RequestParams::text(definitions);
        params.output_mode = self.output_mode;
        params.settings = self.model_settings;
        let wrapped = structured.map(|structured| {
            let wrapped = !schema::is_object_schema(&structured.schema);
            let object_schema = if wrapped {
                schema::wrap_in_object(structured.schema)
            } else {
                structured.schema
            };
            params.allow_text_output = false;
            match self.output_mode {
                OutputMode::Tool => params.output_tools.push(ToolDefinition {
                    name: self.output_tool_name.clone(),
                    description: Some(structured.description.unwrap_or_else(|| {
                        "The final response which ends this conversation".to_owned()
                    })),
                    parameters: object_schema,
                }),
                OutputMode::Native => {
                    params.output_schema = Some(OutputSchema {
                        name: self.output_tool_name.clone(),
                        description: structured.description,
                        schema: object_schema,
                    });
                }
            }
            wrapped
        });

        let available_tools = params
            .all_tools()
            .map(|definition| format!("`{}`", definition.name))
            .collect::<Vec<_>>()
            .join(", ");

        Ok(Agent {
            inner: Arc::new(AgentInner {
                model: self.model,
                name: self.name,
                instructions: self.instructions,
                tools,
                tool_index,
                available_tools,
                params,
                output: OutputSetup {
                    structured: wrapped,
                    mode: self.output_mode,
                    tool_name: Arc::from(self.output_tool_name.as_str()),
                    decoder: self.decoder.unwrap_or_else(|| Arc::new(O::decode)),
                    validators: self.validators,
                },
                tool_retries: self.tool_retries,
                output_retries: self.output_retries,
                max_turns: self.max_turns,
                usage_limits: self.usage_limits,
            }),
        })
    }
}
