//! [`Agent`] and [`AgentBuilder`]: configuration, checked once at `build()`.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;

use crate::context::RunContext;
use crate::error::BoxError;
use crate::history::{HistoryProcessor, Summarize};
use crate::model::{Message, Model, ModelSettings, OutputSchema, RequestParams};
use crate::output::{Output, OutputFunction, OutputKind, OutputMode, prompted};
use crate::schema;
use crate::tool::{Tool, ToolDefinition, is_valid_tool_name};
use crate::toolbox::{NameClash, Toolbox};
use crate::toolset::Toolset;
use crate::usage::{Usage, UsageLimits};

/// The model-turn limit when none is set.
pub const DEFAULT_MAX_TURNS: u32 = 50;

/// The output tool's name when none is set.
pub const DEFAULT_OUTPUT_TOOL_NAME: &str = "final_result";

type Decoder<O> = Arc<dyn Fn(&str) -> Result<O, BoxError> + Send + Sync>;
/// Instructions made for each request from the run's context.
pub(crate) type InstructionsFn<Deps> =
    Box<dyn Fn(RunContext<Deps>) -> BoxFuture<'static, String> + Send + Sync>;
/// An output function, shared by the agent's runs.
pub(crate) type OutputFn<Deps, O> = Arc<dyn OutputFunction<Deps, O>>;
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
    pub(crate) inner: Arc<AgentInner<Deps, O>>,
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
                &inner
                    .toolbox
                    .entries
                    .iter()
                    .map(|t| &t.name)
                    .collect::<Vec<_>>(),
            )
            .field("toolsets", &inner.toolsets.len())
            .field("tool_retries", &inner.tool_retries)
            .field("output_retries", &inner.output_retries)
            .field("max_turns", &inner.max_turns)
            .finish_non_exhaustive()
    }
}

pub(crate) struct AgentInner<Deps, O> {
    pub(crate) model: Arc<dyn Model>,
    pub(crate) name: Option<String>,
    /// The system prompt that opens a new conversation and stays in its history.
    pub(crate) system_prompt: Option<String>,
    /// Instructions made for each request (the static ones are in the toolbox's params).
    pub(crate) instructions_fns: Vec<InstructionsFn<Deps>>,
    /// What rewrites the history each request sends, in order.
    pub(crate) history_processors: Vec<Arc<dyn HistoryProcessor<Deps>>>,
    /// What summarises older turns, if anything does.
    pub(crate) summarize: Option<Summarize>,
    /// The agent's own tools; a run adds its toolsets' to a copy.
    pub(crate) toolbox: Arc<Toolbox<Deps>>,
    pub(crate) toolsets: Vec<Arc<dyn Toolset<Deps>>>,
    pub(crate) output: OutputSetup<Deps, O>,
    pub(crate) tool_retries: u32,
    /// How many equal returned calls in a row make the next one refused; 0: none is.
    pub(crate) repeated_calls: u32,
    pub(crate) output_retries: u32,
    pub(crate) max_turns: u32,
    pub(crate) usage_limits: UsageLimits,
    pub(crate) run_timeout: Option<Duration>,
    /// Whether the spans carry the messages, instructions, tool arguments and results.
    pub(crate) capture_content: bool,
}

pub(crate) struct OutputSetup<Deps, O> {
    /// Whether the answer is structured, and then whether its schema was wrapped as
    /// `{"response": ...}`.
    pub(crate) structured: Option<bool>,
    pub(crate) mode: OutputMode,
    pub(crate) tool_name: Arc<str>,
    pub(crate) decoder: Decoder<O>,
    pub(crate) validators: Vec<Validator<Deps, O>>,
    /// The output functions, by the name of their output tool.
    pub(crate) functions: Vec<(Arc<str>, OutputFn<Deps, O>)>,
    /// How often a streaming structured answer is read for its partial form.
    pub(crate) partial_cadence: crate::output::PartialCadence,
    /// The output's schema as sent with the instructions, in [`OutputMode::Prompted`].
    pub(crate) prompted_schema: Option<String>,
}

impl<Deps, O> OutputSetup<Deps, O> {
    /// `instructions`, followed by the output's schema when the output is prompted.
    pub(crate) fn with_prompted_schema(&self, instructions: String) -> Option<String> {
        match &self.prompted_schema {
            Some(schema) if instructions.is_empty() => Some(schema.clone()),
            Some(schema) => Some(format!("{instructions}\n\n{schema}")),
            None => (!instructions.is_empty()).then_some(instructions),
        }
    }

    /// Whether the output has its own output tool.
    pub(crate) fn has_output_tool(&self) -> bool {
        self.structured.is_some() && self.mode == OutputMode::Tool
    }

    /// The output function whose output tool is `name`.
    pub(crate) fn function(&self, name: &str) -> Option<&OutputFn<Deps, O>> {
        self.functions
            .iter()
            .find(|(function, _)| **function == *name)
            .map(|(_, function)| function)
    }

    /// The output tools' names for feedback: `` `a`, `b` ``.
    pub(crate) fn tool_names(&self) -> String {
        let own = self.has_output_tool().then_some(&self.tool_name);
        own.into_iter()
            .chain(self.functions.iter().map(|(name, _)| name))
            .map(|name| format!("`{name}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
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
        &self.inner.toolbox.params
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
    /// The index in `messages` of the first message this run added.
    new_from: usize,
}

impl<O> RunResult<O> {
    pub(crate) fn new(output: O, messages: Vec<Message>, usage: Usage, new_from: usize) -> Self {
        RunResult {
            output,
            messages,
            usage,
            new_from,
        }
    }

    /// The messages this run added to the history it continued: all of them for a run
    /// started from a prompt, and from the new prompt on for one started from a history.
    ///
    /// ```
    /// use golem::model::function::FunctionModel;
    /// use golem::model::ModelResponse;
    /// use golem::Agent;
    ///
    /// let agent = Agent::<(), String>::builder(FunctionModel::new(|_, _| ModelResponse::text("hi")))
    ///     .build()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let first = agent.run("Hello", ()).await?;
    /// let second = agent.run_with_history(first.messages, "Again", ()).await?;
    /// assert_eq!(second.messages.len(), 4);
    /// assert_eq!(second.new_messages().len(), 2); // the new prompt and its answer
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    pub fn new_messages(&self) -> &[Message] {
        &self.messages[self.new_from.min(self.messages.len())..]
    }
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
    /// Output functions with a structured output in a mode other than
    /// [`OutputMode::Tool`]: the model calls output functions as tools.
    #[error(
        "output functions are output tools; use `OutputMode::Tool` (the default) with them, not `{0:?}`"
    )]
    OutputFunctionsNeedToolMode(OutputMode),
}

/// Configures an [`Agent`]; checks everything at [`build`](AgentBuilder::build).
#[must_use = "an AgentBuilder does nothing until `build()`"]
pub struct AgentBuilder<Deps, O> {
    model: Arc<dyn Model>,
    name: Option<String>,
    system_prompt: Option<String>,
    instructions: Option<String>,
    instructions_fns: Vec<InstructionsFn<Deps>>,
    history_processors: Vec<Arc<dyn HistoryProcessor<Deps>>>,
    summarize: Option<Summarize>,
    tools: Vec<Box<dyn Tool<Deps>>>,
    toolsets: Vec<Arc<dyn Toolset<Deps>>>,
    tool_retries: u32,
    repeated_calls: u32,
    output_retries: u32,
    max_turns: u32,
    usage_limits: UsageLimits,
    run_timeout: Option<Duration>,
    capture_content: bool,
    output_mode: OutputMode,
    partial_cadence: crate::output::PartialCadence,
    output_tool_name: String,
    decoder: Option<Decoder<O>>,
    validators: Vec<Validator<Deps, O>>,
    output_fns: Vec<OutputFn<Deps, O>>,
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
            system_prompt: None,
            instructions: None,
            instructions_fns: Vec::new(),
            history_processors: Vec::new(),
            summarize: None,
            tools: Vec::new(),
            toolsets: Vec::new(),
            tool_retries: 0,
            repeated_calls: 0,
            output_retries: 0,
            max_turns: DEFAULT_MAX_TURNS,
            usage_limits: UsageLimits::default(),
            run_timeout: None,
            capture_content: false,
            output_mode: OutputMode::default(),
            partial_cadence: crate::output::PartialCadence::default(),
            output_tool_name: DEFAULT_OUTPUT_TOOL_NAME.to_owned(),
            decoder: None,
            validators: Vec::new(),
            output_fns: Vec::new(),
            model_settings: ModelSettings::default(),
        }
    }

    /// A name for the agent, used in traces.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Whether the run's spans carry what was said (off by default): the messages each
    /// request sends and the response (`gen_ai.input.messages`, `gen_ai.output.messages`),
    /// the instructions (`gen_ai.system_instructions`), and each tool call's arguments and
    /// result (`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`), in the JSON forms
    /// of the OpenTelemetry GenAI conventions. Provider-specific parts are named by kind,
    /// their data never exported. Turn it on only where traces may hold prompts and
    /// answers (see docs/observability.md).
    ///
    /// ```
    /// use golem::model::function::FunctionModel;
    /// use golem::model::ModelResponse;
    /// use golem::Agent;
    ///
    /// let model = FunctionModel::new(|_, _| ModelResponse::text("hello"));
    /// let agent = Agent::<(), String>::builder(model)
    ///     .capture_content(true)
    ///     .build()?;
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    pub fn capture_content(mut self, capture: bool) -> Self {
        self.capture_content = capture;
        self
    }

    /// The instructions sent with every request, before the history, as its system message.
    ///
    /// They are not stored in the history: a continued conversation, or one handed over from
    /// another agent, is sent with the instructions of the agent that sends it, as they are
    /// now. For text that should open the conversation and stay in its history, use
    /// [`system_prompt`](Self::system_prompt). Instructions made per request from the run's
    /// context come from [`instructions_fn`](Self::instructions_fn), after these.
    ///
    /// ```
    /// use golem::model::function::FunctionModel;
    /// use golem::model::{Message, ModelResponse, RequestPart};
    /// use golem::Agent;
    ///
    /// let model = FunctionModel::new(|_: &[Message], params| {
    ///     ModelResponse::text(params.instructions.clone().unwrap_or_default())
    /// });
    /// let agent = Agent::<(), String>::builder(model)
    ///     .system_prompt("You are talking to Ann.") // stays in the history
    ///     .instructions("Answer in one line.") // sent with every request, never stored
    ///     .build()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let result = agent.run("Hi", ()).await?;
    /// assert_eq!(result.output, "Answer in one line.");
    /// let Message::Request(first) = &result.messages[0] else { unreachable!() };
    /// assert_eq!(
    ///     first.parts,
    ///     [RequestPart::system_prompt("You are talking to Ann."), RequestPart::user_prompt("Hi")]
    /// );
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Adds instructions made for each request from the run's context (its dependencies,
    /// usage and turn), sent after the static [`instructions`](Self::instructions) and, like
    /// them, never stored in the history. An empty string adds nothing.
    ///
    /// ```
    /// use golem::model::function::FunctionModel;
    /// use golem::model::{Message, ModelResponse};
    /// use golem::{Agent, RunContext};
    ///
    /// let model = FunctionModel::new(|_: &[Message], params| {
    ///     ModelResponse::text(params.instructions.clone().unwrap_or_default())
    /// });
    /// let agent = Agent::<String, String>::builder(model)
    ///     .instructions("Be brief.")
    ///     .instructions_fn(|ctx: &RunContext<String>| format!("The user is {}.", ctx.deps()))
    ///     .build()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let result = agent.run("Hi", "Ann".to_owned()).await?;
    /// assert_eq!(result.output, "Be brief.\n\nThe user is Ann.");
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    pub fn instructions_fn<F, S>(mut self, instructions: F) -> Self
    where
        F: Fn(&RunContext<Deps>) -> S + Send + Sync + 'static,
        S: Into<String>,
    {
        self.instructions_fns.push(Box::new(move |ctx| {
            futures_util::future::ready(instructions(&ctx).into()).boxed()
        }));
        self
    }

    /// Adds instructions made for each request by an async function of the run's context
    /// (a lookup in a database, say); otherwise as [`instructions_fn`](Self::instructions_fn).
    pub fn instructions_fn_async<F, Fut, S>(mut self, instructions: F) -> Self
    where
        F: Fn(RunContext<Deps>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = S> + Send + 'static,
        S: Into<String>,
    {
        self.instructions_fns.push(Box::new(move |ctx| {
            let future = instructions(ctx);
            async move { future.await.into() }.boxed()
        }));
        self
    }

    /// Adds a processor that rewrites what each request sends of the history, after those
    /// added before it; the run keeps the whole history. See [`history`](crate::history)
    /// for the built-in ones and the checks on what a processor returns.
    ///
    /// ```
    /// use golem::history::{KeepLastTurns, TrimToolOutputs};
    /// use golem::model::function::FunctionModel;
    /// use golem::model::{Message, ModelResponse};
    /// use golem::Agent;
    ///
    /// # let model = FunctionModel::new(|_: &[Message], _| ModelResponse::text("ok"));
    /// let agent = Agent::<(), String>::builder(model)
    ///     .history_processor(KeepLastTurns::new(10))
    ///     .history_processor(TrimToolOutputs::new(2_000))
    ///     .build()?;
    /// # let _ = agent;
    /// # Ok::<_, golem::BuildError>(())
    /// ```
    pub fn history_processor(mut self, processor: impl HistoryProcessor<Deps>) -> Self {
        self.history_processors.push(Arc::new(processor));
        self
    }

    /// Summarises the older turns of a long conversation with a model, before each request
    /// and before the history processors, once the history it would send is over a token
    /// budget; see [`Summarize`] for what is counted, journaled and recorded.
    pub fn summarize_history(mut self, summarize: Summarize) -> Self {
        self.summarize = Some(summarize);
        self
    }

    /// A system prompt that opens every new conversation and stays in its history, as the
    /// first part of its first request: a run that continues a history keeps the system
    /// prompt that history has. Most agents want [`instructions`](Self::instructions)
    /// instead, which are sent with every request and never go stale.
    pub fn system_prompt(mut self, system_prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(system_prompt.into());
        self
    }

    /// Adds a tool the model may call.
    pub fn tool(mut self, tool: impl Tool<Deps>) -> Self {
        self.tools.push(Box::new(tool));
        self
    }

    /// Adds every tool of `tools`: tools chosen at run time, as `Box<dyn Tool<Deps>>` or
    /// `Arc<dyn Tool<Deps>>`, or many of one type. Names are checked at
    /// [`build`](Self::build), as for [`tool`](Self::tool).
    ///
    /// ```
    /// use golem::model::function::FunctionModel;
    /// use golem::model::{Message, ModelResponse};
    /// use golem::tool::Tool;
    /// use golem::Agent;
    ///
    /// /// Check that the service is up.
    /// #[golem::tool]
    /// async fn ping() -> &'static str {
    ///     "pong"
    /// }
    ///
    /// /// The time of day.
    /// #[golem::tool]
    /// async fn now() -> &'static str {
    ///     "noon"
    /// }
    ///
    /// let chosen: Vec<Box<dyn Tool<()>>> = vec![Box::new(Ping), Box::new(Now)];
    /// let model = FunctionModel::new(|_: &[Message], _| ModelResponse::text("ok"));
    /// let agent = Agent::<(), String>::builder(model).tools(chosen).build()?;
    /// assert_eq!(agent.request_params().function_tools.len(), 2);
    /// # Ok::<_, golem::BuildError>(())
    /// ```
    pub fn tools<I>(mut self, tools: I) -> Self
    where
        I: IntoIterator,
        I::Item: Tool<Deps>,
    {
        for tool in tools {
            self.tools.push(Box::new(tool));
        }
        self
    }

    /// Adds a [`Toolset`]: a group of tools listed at the start of every run (an MCP server,
    /// a registry, the tools one user may use). Its tools join the agent's own for that run,
    /// under the same budgets; see [`toolset`](crate::toolset) for the rules.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use golem::model::function::FunctionModel;
    /// use golem::model::{Message, ModelResponse};
    /// use golem::tool::Tool;
    /// use golem::toolset::ToolsetExt;
    /// use golem::Agent;
    ///
    /// /// Say hello.
    /// #[golem::tool]
    /// async fn hello() -> String {
    ///     "hello".into()
    /// }
    ///
    /// let greetings: Vec<Arc<dyn Tool<()>>> = vec![Arc::new(Hello)];
    /// let model = FunctionModel::new(|messages: &[Message], _| match messages.len() {
    ///     1 => ModelResponse::tool_call("greet_hello", "{}", "c1"),
    ///     _ => ModelResponse::text("done"),
    /// });
    /// let agent = Agent::<(), String>::builder(model)
    ///     .toolset(greetings.named("greetings").prefixed("greet_"))
    ///     .build()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let result = agent.run("Greet me", ()).await?;
    /// assert_eq!(result.usage.tool_calls, 1);
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    pub fn toolset(mut self, toolset: impl Toolset<Deps>) -> Self {
        self.toolsets.push(Arc::new(toolset));
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
    /// #[golem::args]
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

    /// Refuses a call the model already has the result of: once a tool has returned for
    /// equal arguments `after` times in a row since the user's last prompt, a call with those
    /// arguments does not run. Its answer is feedback that names the earlier result and asks
    /// for the final answer, and it is a rejection like any other: charged to that tool's
    /// budget, shown in the events and in `usage.rejected`, and the run fails typed when the
    /// budget is spent. Off (0) by default.
    ///
    /// Arguments are equal as JSON values (key order and spacing do not count). A call of
    /// the tool with other arguments ends the streak; calls of other tools and calls that did
    /// not return do not. Calls in one response never count against each other, and a tool
    /// whose result changes between calls opts out with `#[golem::tool(repeatable)]` (or
    /// [`Tool::repeatable`]).
    ///
    /// A small model that rolls the dice again instead of answering is told so:
    ///
    /// ```
    /// use golem::model::function::FunctionModel;
    /// use golem::model::{Message, ModelResponse};
    /// use golem::tool::FunctionTool;
    /// use golem::{Agent, RunContext};
    ///
    /// #[golem::args]
    /// struct Dice {
    ///     n: i64,
    /// }
    ///
    /// let roll = FunctionTool::new("roll_dice", |_ctx: RunContext<()>, dice: Dice| async move {
    ///     Ok::<_, golem::ModelRetry>(dice.n * 3)
    /// });
    /// let model = FunctionModel::new(|messages: &[Message], _| match messages.len() {
    ///     1 => ModelResponse::tool_call("roll_dice", r#"{"n": 2}"#, "c1"),
    ///     3 => ModelResponse::tool_call("roll_dice", r#"{ "n":2 }"#, "c2"), // the same call
    ///     _ => ModelResponse::text("You rolled 6."),
    /// });
    /// let agent = Agent::<(), String>::builder(model)
    ///     .tool(roll)
    ///     .tool_retries(1)
    ///     .refuse_repeated_calls(1)
    ///     .build()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let result = agent.run("Roll two dice", ()).await?;
    /// assert_eq!(result.output, "You rolled 6.");
    /// assert_eq!(result.usage.tool_calls, 1); // the repeated call did not run
    /// assert_eq!(result.usage.rejected.tools["roll_dice"].requests, 1);
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    pub fn refuse_repeated_calls(mut self, after: u32) -> Self {
        self.repeated_calls = after;
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

    /// A deadline for every run: a run still going `timeout` after it started stops
    /// gracefully, failing at the [`Stage::Stopped`](crate::Stage::Stopped) stage with its
    /// messages and usage. Off by default; [`AgentRun::with_timeout`](crate::AgentRun::with_timeout)
    /// sets one per run.
    pub fn run_timeout(mut self, timeout: Duration) -> Self {
        self.run_timeout = Some(timeout);
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

    /// How often a structured answer that streams is read for its partial form
    /// ([`RunEvent::PartialOutput`](crate::RunEvent::PartialOutput));
    /// [`PartialCadence::proportional(16)`](crate::output::PartialCadence::proportional) by
    /// default, which keeps the cost per delta the same however long the answer grows.
    ///
    /// ```
    /// use golem::model::function::FunctionModel;
    /// use golem::model::ModelResponse;
    /// use golem::output::PartialCadence;
    /// use golem::Agent;
    ///
    /// let model = FunctionModel::new(|_, _| ModelResponse::text("{}"));
    /// let agent = Agent::<(), golem::output::Json<serde_json::Value>>::builder(model)
    ///     .partial_cadence(PartialCadence::every_delta()) // a short answer, every update
    ///     .build()?;
    /// # Ok::<_, golem::BuildError>(())
    /// ```
    pub fn partial_cadence(mut self, cadence: crate::output::PartialCadence) -> Self {
        self.partial_cadence = cadence;
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

    /// Adds an output function: an output tool the model may call to end the run, whose
    /// result is the output (see [`OutputFunction`], and [`Agent::hand_off`] for one that
    /// hands the conversation to another agent). Several make several output tools, and the
    /// model picks one; they come beside the output's own channel: a text output still
    /// accepts a text answer, a structured one its output tool.
    ///
    /// A [`ModelRetry`](crate::ModelRetry) from the function rejects the call under the
    /// [`output_retries`](Self::output_retries) budget, as a rejected answer; the output
    /// validators run on what it returns.
    pub fn output_fn(mut self, function: impl OutputFunction<Deps, O>) -> Self {
        self.output_fns.push(Arc::new(function));
        self
    }

    /// Checks the configuration and builds the agent. Tool schemas are built here, once.
    ///
    /// # Errors
    /// A [`BuildError`] for an invalid or duplicate tool name (output functions' included),
    /// a tool named like an output tool, output functions with structured output in a mode
    /// other than [`OutputMode::Tool`], or `max_turns(0)`.
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
        if !self.output_fns.is_empty()
            && structured.is_some()
            && self.output_mode != OutputMode::Tool
        {
            return Err(BuildError::OutputFunctionsNeedToolMode(self.output_mode));
        }
        let mut output_names: Vec<Arc<str>> = Vec::with_capacity(1 + self.output_fns.len());
        if has_output_tool {
            output_names.push(Arc::from(self.output_tool_name.as_str()));
        }
        let mut function_definitions = Vec::with_capacity(self.output_fns.len());
        let mut functions = Vec::with_capacity(self.output_fns.len());
        for function in self.output_fns {
            let definition = function.definition();
            if !is_valid_tool_name(&definition.name) {
                return Err(BuildError::InvalidToolName(definition.name));
            }
            if output_names.iter().any(|name| **name == *definition.name) {
                return Err(
                    if has_output_tool && definition.name == self.output_tool_name {
                        BuildError::OutputToolNameTaken(definition.name)
                    } else {
                        BuildError::DuplicateToolName(definition.name)
                    },
                );
            }
            let name: Arc<str> = Arc::from(definition.name.as_str());
            output_names.push(Arc::clone(&name));
            functions.push((name, function));
            function_definitions.push(definition);
        }

        let mut params = RequestParams::text(Vec::with_capacity(self.tools.len()));
        params.output_mode = self.output_mode;
        params.settings = self.model_settings;
        let mut prompted_schema = None;
        let wrapped = structured.map(|structured| {
            let wrapped = !schema::is_object_schema(&structured.schema);
            let object_schema = if wrapped {
                schema::wrap_in_object(structured.schema)
            } else {
                structured.schema
            };
            params.allow_text_output = self.output_mode == OutputMode::Prompted;
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
                OutputMode::Prompted => {
                    prompted_schema = Some(prompted::instructions(&object_schema));
                }
            }
            wrapped
        });
        if !function_definitions.is_empty() {
            // Text output keeps its channel beside the output functions.
            params.allow_text_output |= wrapped.is_none();
            params.output_tools.extend(function_definitions);
        }
        let output = OutputSetup {
            structured: wrapped,
            mode: self.output_mode,
            tool_name: Arc::from(self.output_tool_name.as_str()),
            decoder: self.decoder.unwrap_or_else(|| Arc::new(O::decode)),
            validators: self.validators,
            functions,
            partial_cadence: self.partial_cadence,
            prompted_schema,
        };
        params.instructions = match self.instructions {
            Some(instructions) => output.with_prompted_schema(instructions),
            None => output.prompted_schema.clone(),
        };

        let mut toolbox = Toolbox::new(params, output_names, self.tool_retries);
        for tool in self.tools {
            toolbox.add(Arc::from(tool)).map_err(|clash| match clash {
                NameClash::Invalid(name) => BuildError::InvalidToolName(name),
                NameClash::Duplicate(name) => BuildError::DuplicateToolName(name),
                NameClash::OutputTool(name) => BuildError::OutputToolNameTaken(name),
            })?;
        }
        toolbox.seal();

        Ok(Agent {
            inner: Arc::new(AgentInner {
                model: self.model,
                name: self.name,
                system_prompt: self.system_prompt,
                instructions_fns: self.instructions_fns,
                history_processors: self.history_processors,
                summarize: self.summarize,
                toolbox: Arc::new(toolbox),
                toolsets: self.toolsets,
                output,
                tool_retries: self.tool_retries,
                repeated_calls: self.repeated_calls,
                output_retries: self.output_retries,
                max_turns: self.max_turns,
                usage_limits: self.usage_limits,
                run_timeout: self.run_timeout,
                capture_content: self.capture_content,
            }),
        })
    }
}
