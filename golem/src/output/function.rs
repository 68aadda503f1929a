//! Output functions: outputs the model calls like tools, each with its own arguments, that
//! golem runs to make the run's output; [`HandOff`], the one that hands the conversation to
//! another agent.

use std::fmt;
use std::marker::PhantomData;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::agent::Agent;
use crate::context::RunContext;
use crate::error::BoxError;
use crate::model::RequestPart;
use crate::output::Output;
use crate::run::NestedJournal;
use crate::tool::agent::delegated;
use crate::tool::{ArgsSchema, OnAgentError, ToolDefinition};

/// An output the model calls like a tool: its arguments are the model's, and what it
/// returns is the run's output. Add one with
/// [`AgentBuilder::output_fn`](crate::AgentBuilder::output_fn); several make several output
/// tools, and the model picks one.
///
/// `#[golem::output]` on an `async fn` implements it: the parameters are the arguments the
/// model fills in (described by the doc comment's `# Arguments` list, as for a tool), a
/// first parameter `&RunContext<Deps>` gives the run's context, and the function returns
/// the output, `T` or `Result<T, E>`. An error wrapping [`ModelRetry`](crate::ModelRetry) rejects the call:
/// the model reads the feedback and answers again, under the agent's
/// [`output_retries`](crate::AgentBuilder::output_retries) budget; any other error fails
/// the run at the decode stage. The agent's output validators run on what it returns.
///
/// ```
/// use golem::model::function::FunctionModel;
/// use golem::model::{Message, ModelResponse};
/// use golem::{Agent, ModelRetry, RunContext};
///
/// /// Books a table; the booking is the answer.
/// ///
/// /// # Arguments
/// /// * `guests` - How many people.
/// #[golem::output]
/// async fn book_table(ctx: &RunContext<u32>, guests: u32) -> Result<String, ModelRetry> {
///     if guests > *ctx.deps() {
///         return Err(ModelRetry::new(format!("at most {} guests", ctx.deps())));
///     }
///     Ok(format!("table for {guests}"))
/// }
///
/// let model = FunctionModel::new(|messages: &[Message], _| match messages.len() {
///     1 => ModelResponse::tool_call("book_table", r#"{"guests": 12}"#, "c1"),
///     _ => ModelResponse::tool_call("book_table", r#"{"guests": 6}"#, "c2"),
/// });
/// let agent = Agent::<u32, String>::builder(model)
///     .output_fn(BookTable)
///     .output_retries(1)
///     .build()?;
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let result = agent.run("A table for my team, please", 8).await?;
/// assert_eq!(result.output, "table for 6");
/// assert_eq!(result.usage.rejected.output.requests, 1); // the call for 12 guests
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an output function of an agent with dependencies `{Deps}` and output `{O}`",
    label = "not an `OutputFunction<{Deps}, {O}>`",
    note = "an output function returns the agent's output type (`-> {O}` or `-> Result<{O}, ModelRetry>`), and a `&RunContext<D>` parameter needs `D` to be the agent's dependencies type"
)]
pub trait OutputFunction<Deps, O>: Send + Sync + 'static {
    /// The output tool's name, description and parameter schema. Called once, when the
    /// agent is built.
    fn definition(&self) -> ToolDefinition;

    /// Makes the output from the model's JSON arguments `args`, with `ctx`, whose
    /// [`messages`](RunContext::messages) are the conversation so far.
    ///
    /// # Errors
    /// An error wrapping [`ModelRetry`](crate::ModelRetry) rejects the call with feedback for the model; any
    /// other error fails the run at the decode stage.
    fn call<'a>(
        &'a self,
        ctx: &'a RunContext<Deps>,
        args: &'a str,
    ) -> BoxFuture<'a, Result<O, BoxError>>;

    /// Makes the output inside a durable run when making it is itself a run of journaled
    /// steps (a [hand-off](crate::Agent::hand_off)): `journal` records those steps under the
    /// answer's step name (`output:2/model:1`), so a run that stops while the output is made
    /// goes on from its last recorded step, a replay asks no model again, and what the
    /// agent spent is counted however the run ends.
    ///
    /// `None`, the default, runs [`call`](OutputFunction::call) inside the answer's step, as
    /// for every other output function. Outside a durable run golem calls
    /// [`call`](OutputFunction::call).
    fn call_in<'a>(
        &'a self,
        ctx: &'a RunContext<Deps>,
        args: &'a str,
        journal: &'a NestedJournal<'a>,
    ) -> Option<BoxFuture<'a, Result<O, BoxError>>> {
        let _ = (ctx, args, journal);
        None
    }
}

/// A hand-off: an output function that runs another agent on the conversation so far, and
/// whose output is that agent's. Made by [`Agent::hand_off`].
///
/// What the agent spends is added to the run's usage, and shown apart under
/// [`Usage::agents`](crate::Usage::agents) by the hand-off's name, as for an
/// [agent called as a tool](crate::tool::AgentTool); it runs under its own limits and what
/// is left of the run's, stops with the run, and its events reach the run's stream.
pub struct HandOff<Deps, ChildDeps, O, Args, F> {
    agent: Agent<ChildDeps, O>,
    definition: ToolDefinition,
    schema: ArgsSchema,
    prepare: F,
    on_error: OnAgentError,
    _marker: PhantomData<fn(Deps, Args)>,
}

impl<Deps, ChildDeps, O, Args, F> fmt::Debug for HandOff<Deps, ChildDeps, O, Args, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandOff")
            .field("definition", &self.definition)
            .field("on_error", &self.on_error)
            .finish_non_exhaustive()
    }
}

impl<ChildDeps, O> Agent<ChildDeps, O>
where
    ChildDeps: Send + Sync + 'static,
    O: Output,
{
    /// This agent as an output function named `name` of agents with dependencies `Deps`
    /// and the same output type: the model calls it to hand the conversation over, and this
    /// agent goes on with it, its output the run's.
    ///
    /// `prepare` makes, from the caller's context and the call's arguments (`Args`, typed
    /// with [`#[golem::args]`](crate::args)), a prompt added after the conversation (an
    /// empty one adds nothing) and this agent's dependencies. The conversation is
    /// [`RunContext::messages`]: the caller's history, with this call answered; it is sent
    /// with this agent's instructions and tools, not the caller's.
    ///
    /// ```
    /// use golem::model::function::FunctionModel;
    /// use golem::model::{Message, ModelResponse};
    /// use golem::{Agent, RunContext};
    ///
    /// #[golem::args]
    /// struct Transfer {
    ///     /// Why the billing team should take over.
    ///     reason: String,
    /// }
    ///
    /// let billing = Agent::<(), String>::builder(FunctionModel::new(|messages: &[Message], _| {
    ///     // The router's conversation, and the note it was handed with.
    ///     assert_eq!(messages.len(), 3);
    ///     ModelResponse::text("Your refund is on its way.")
    /// }))
    /// .instructions("You handle billing.")
    /// .build()?;
    /// let router = Agent::<(), String>::builder(FunctionModel::new(|_: &[Message], _| {
    ///     ModelResponse::tool_call("to_billing", r#"{"reason": "a refund"}"#, "c1")
    /// }))
    /// .output_fn(billing.hand_off(
    ///     "to_billing",
    ///     "Hands the conversation to the billing team.",
    ///     |_ctx: &RunContext<()>, transfer: Transfer| {
    ///         (format!("Handed over: {}.", transfer.reason), ())
    ///     },
    /// ))
    /// .build()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let result = router.run("Where is my refund?", ()).await?;
    /// assert_eq!(result.output, "Your refund is on its way.");
    /// assert_eq!(result.usage.requests, 2); // the router's and the billing agent's
    /// assert_eq!(result.usage.agents["to_billing"].requests, 1);
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    pub fn hand_off<Deps, Args, F, P>(
        &self,
        name: impl Into<String>,
        description: impl Into<String>,
        prepare: F,
    ) -> HandOff<Deps, ChildDeps, O, Args, F>
    where
        Deps: Send + Sync + 'static,
        Args: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(&RunContext<Deps>, Args) -> (P, ChildDeps) + Send + Sync + 'static,
        P: Into<String>,
    {
        let definition = ToolDefinition::for_args::<Args>(name, description);
        HandOff {
            schema: ArgsSchema::new(&definition.parameters),
            definition,
            agent: self.clone(),
            prepare,
            on_error: OnAgentError::default(),
            _marker: PhantomData,
        }
    }
}

impl<Deps, ChildDeps, O, Args, F> HandOff<Deps, ChildDeps, O, Args, F> {
    /// What a failure of the agent does to the calling run: [`OnAgentError::Fail`] (the
    /// default) fails it at the decode stage with the agent's [`RunError`](crate::RunError) as the cause;
    /// [`OnAgentError::Retry`] rejects the call, under the caller's output budget.
    #[must_use]
    pub fn on_error(mut self, on_error: OnAgentError) -> Self {
        self.on_error = on_error;
        self
    }
}

impl<Deps, ChildDeps, O, Args, F, P> OutputFunction<Deps, O>
    for HandOff<Deps, ChildDeps, O, Args, F>
where
    Deps: Send + Sync + 'static,
    ChildDeps: Send + Sync + 'static,
    O: Output + Serialize,
    Args: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(&RunContext<Deps>, Args) -> (P, ChildDeps) + Send + Sync + 'static,
    P: Into<String>,
{
    fn definition(&self) -> ToolDefinition {
        self.definition.clone()
    }

    fn call<'a>(
        &'a self,
        ctx: &'a RunContext<Deps>,
        args: &'a str,
    ) -> BoxFuture<'a, Result<O, BoxError>> {
        self.hand(ctx, args, None)
    }

    fn call_in<'a>(
        &'a self,
        ctx: &'a RunContext<Deps>,
        args: &'a str,
        journal: &'a NestedJournal<'a>,
    ) -> Option<BoxFuture<'a, Result<O, BoxError>>> {
        Some(self.hand(ctx, args, Some(journal)))
    }
}

impl<Deps, ChildDeps, O, Args, F, P> HandOff<Deps, ChildDeps, O, Args, F>
where
    Deps: Send + Sync + 'static,
    ChildDeps: Send + Sync + 'static,
    O: Output + Serialize,
    Args: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(&RunContext<Deps>, Args) -> (P, ChildDeps) + Send + Sync + 'static,
    P: Into<String>,
{
    /// Hands the conversation to the agent for one answer: in `journal` when the caller's
    /// run is durable, so that the agent's steps are recorded under the answer's.
    fn hand<'a>(
        &'a self,
        ctx: &'a RunContext<Deps>,
        args: &'a str,
        journal: Option<&'a NestedJournal<'a>>,
    ) -> BoxFuture<'a, Result<O, BoxError>> {
        let name = self.definition.name.as_str();
        let args = match self.schema.parse::<Args>(name, args) {
            Ok(args) => args,
            Err(retry) => return futures_util::future::ready(Err(retry.into())).boxed(),
        };
        let (prompt, deps) = (self.prepare)(ctx, args);
        let prompt: String = prompt.into();
        let parts = if prompt.is_empty() {
            Vec::new()
        } else {
            vec![RequestPart::user_prompt(prompt)]
        };
        let run = self
            .agent
            .continue_with(ctx.messages().to_vec(), parts, deps);
        async move { delegated(&self.agent, run, ctx, name, journal, self.on_error).await }.boxed()
    }
}
