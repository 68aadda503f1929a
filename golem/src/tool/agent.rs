//! [`AgentTool`]: an agent called as a tool of another, its usage rolled up into the
//! caller's and bounded by the caller's limits.

use std::fmt;
use std::marker::PhantomData;

use futures_util::future::BoxFuture;
use futures_util::{FutureExt, StreamExt};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{ArgsSchema, RetryLimit, Tool, ToolDefinition};
use crate::agent::{Agent, RunResult};
use crate::context::RunContext;
use crate::error::BoxError;
use crate::model::ModelRetry;
use crate::output::Output;
use crate::run::event::Forward;
use crate::run::{AgentCall, AgentEvent, AgentRun, NestedEvent, NestedJournal, RunError, RunEvent};

/// What an [`AgentTool`] does when the agent it calls fails.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum OnAgentError {
    /// The call fails the calling run at the tool stage, the agent's
    /// [`RunError`](crate::RunError) (its stage, cause, history and usage) as the cause.
    /// The default, as for any tool error.
    #[default]
    Fail,
    /// The call is rejected: the agent's error goes back to the calling model as feedback,
    /// under the budget of this tool, as any [`ModelRetry`](crate::ModelRetry).
    Retry,
}

/// An agent called as a tool of another: each call runs the agent on a prompt (and
/// dependencies) made from the call's arguments and the caller's context, and returns its
/// output. Made by [`Agent::as_tool`].
///
/// What the agent spends, its rejected rounds included, is added to the calling run's usage
/// and shown apart under [`Usage::agents`](crate::Usage::agents) by the tool's name; it
/// runs under its own usage limits and what is left of the caller's
/// ([`RunContext::remaining_limits`]), whichever is tighter, so the caller's limits bound the
/// whole tree.
pub struct AgentTool<Deps, ChildDeps, O, Args, F> {
    agent: Agent<ChildDeps, O>,
    definition: ToolDefinition,
    schema: ArgsSchema,
    prepare: F,
    on_error: OnAgentError,
    max_retries: Option<RetryLimit>,
    _marker: PhantomData<fn(Deps, Args)>,
}

impl<Deps, ChildDeps, O, Args, F> fmt::Debug for AgentTool<Deps, ChildDeps, O, Args, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentTool")
            .field("definition", &self.definition)
            .field("on_error", &self.on_error)
            .field("max_retries", &self.max_retries)
            .finish_non_exhaustive()
    }
}

impl<ChildDeps, O> Agent<ChildDeps, O>
where
    ChildDeps: Send + Sync + 'static,
    O: Output,
{
    /// This agent as a tool named `name` of agents with dependencies `Deps`: `prepare`
    /// makes the prompt and this agent's dependencies from the caller's context and the
    /// call's arguments (`Args`, typed with [`#[golem::args]`](crate::args)); the tool
    /// returns this agent's output.
    ///
    /// ```
    /// use golem::model::function::FunctionModel;
    /// use golem::model::{Message, ModelResponse};
    /// use golem::{Agent, RunContext};
    ///
    /// #[golem::args]
    /// struct Question {
    ///     /// The maths question to answer.
    ///     question: String,
    /// }
    ///
    /// let maths = Agent::<(), String>::builder(FunctionModel::new(|_: &[Message], _| {
    ///     ModelResponse::text("4").with_usage(20, 1)
    /// }))
    /// .build()?;
    /// let router = Agent::<(), String>::builder(FunctionModel::new(|messages: &[Message], _| {
    ///     match messages.len() {
    ///         1 => ModelResponse::tool_call("maths", r#"{"question": "2 + 2?"}"#, "c1"),
    ///         _ => ModelResponse::text("It is 4."),
    ///     }
    ///     .with_usage(10, 5)
    /// }))
    /// .tool(maths.as_tool(
    ///     "maths",
    ///     "Answers a maths question.",
    ///     |_ctx: &RunContext<()>, args: Question| (args.question, ()),
    /// ))
    /// .build()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let result = router.run("What is 2 + 2?", ()).await?;
    /// assert_eq!(result.output, "It is 4.");
    /// assert_eq!(result.usage.requests, 3); // two of the router's, one of the maths agent's
    /// assert_eq!(result.usage.agents["maths"].input_tokens, 20);
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    pub fn as_tool<Deps, Args, F, P>(
        &self,
        name: impl Into<String>,
        description: impl Into<String>,
        prepare: F,
    ) -> AgentTool<Deps, ChildDeps, O, Args, F>
    where
        Deps: Send + Sync + 'static,
        Args: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(&RunContext<Deps>, Args) -> (P, ChildDeps) + Send + Sync + 'static,
        P: Into<crate::model::UserPromptPart>,
    {
        let definition = ToolDefinition::for_args::<Args>(name, description);
        AgentTool {
            schema: ArgsSchema::new(&definition.parameters),
            definition,
            agent: self.clone(),
            prepare,
            on_error: OnAgentError::default(),
            max_retries: None,
            _marker: PhantomData,
        }
    }
}

impl<Deps, ChildDeps, O, Args, F> AgentTool<Deps, ChildDeps, O, Args, F> {
    /// What a failure of the agent does to the calling run; [`OnAgentError::Fail`] by
    /// default.
    #[must_use]
    pub fn on_error(mut self, on_error: OnAgentError) -> Self {
        self.on_error = on_error;
        self
    }

    /// This tool's retry budget in the calling run, overriding the caller's default.
    #[must_use]
    pub fn max_retries(mut self, limit: RetryLimit) -> Self {
        self.max_retries = Some(limit);
        self
    }
}

impl<Deps, ChildDeps, O, Args, F, P> Tool<Deps> for AgentTool<Deps, ChildDeps, O, Args, F>
where
    Deps: Send + Sync + 'static,
    ChildDeps: Send + Sync + 'static,
    O: Output + Serialize,
    Args: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(&RunContext<Deps>, Args) -> (P, ChildDeps) + Send + Sync + 'static,
    P: Into<crate::model::UserPromptPart>,
{
    fn definition(&self) -> ToolDefinition {
        self.definition.clone()
    }

    fn max_retries(&self) -> Option<RetryLimit> {
        self.max_retries
    }

    fn call<'a>(
        &'a self,
        ctx: &'a RunContext<Deps>,
        args: &'a str,
    ) -> BoxFuture<'a, Result<Value, BoxError>> {
        self.delegate(ctx, args, None)
    }

    fn call_in<'a>(
        &'a self,
        ctx: &'a RunContext<Deps>,
        args: &'a str,
        journal: &'a NestedJournal<'a>,
    ) -> Option<BoxFuture<'a, Result<Value, BoxError>>> {
        Some(self.delegate(ctx, args, Some(journal)))
    }
}

impl<Deps, ChildDeps, O, Args, F, P> AgentTool<Deps, ChildDeps, O, Args, F>
where
    Deps: Send + Sync + 'static,
    ChildDeps: Send + Sync + 'static,
    O: Output + Serialize,
    Args: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(&RunContext<Deps>, Args) -> (P, ChildDeps) + Send + Sync + 'static,
    P: Into<crate::model::UserPromptPart>,
{
    /// Runs the agent for one call: in `journal` when the caller's run is durable, so that
    /// the child's steps are recorded under the call's.
    fn delegate<'a>(
        &'a self,
        ctx: &'a RunContext<Deps>,
        args: &'a str,
        journal: Option<&'a NestedJournal<'a>>,
    ) -> BoxFuture<'a, Result<Value, BoxError>> {
        let name = self.definition.name.as_str();
        let args = match self.schema.parse::<Args>(name, args) {
            Ok(args) => args,
            Err(retry) => return futures_util::future::ready(Err(retry.into())).boxed(),
        };
        let (prompt, deps) = (self.prepare)(ctx, args);
        let prompt: crate::model::UserPromptPart = prompt.into();
        async move {
            // Started when the call is first polled, in the call's `execute_tool` span: the
            // run's `invoke_agent` span is that span's child.
            let run = self.agent.start(prompt, deps);
            let output = delegated(&self.agent, run, ctx, name, journal, self.on_error).await?;
            Ok(serde_json::to_value(output)?)
        }
        .boxed()
    }
}

/// Runs `run`, a run of `agent` on behalf of the call in `ctx` under the name `name`, to its
/// output: bounded by the agent's own limits and by what the caller has left of its own,
/// stopped with the caller (gracefully: its error, with its state, is the call's), in
/// `journal` when the caller's run is durable, its events passed on when the caller's are
/// read; what it spent is booked into the caller's usage however it ends, and its failure
/// is the call's as `on_error` says.
pub(crate) async fn delegated<Deps, ChildDeps, O>(
    agent: &Agent<ChildDeps, O>,
    run: AgentRun<ChildDeps, O>,
    ctx: &RunContext<Deps>,
    name: &str,
    journal: Option<&NestedJournal<'_>>,
    on_error: OnAgentError,
) -> Result<O, BoxError>
where
    ChildDeps: Send + Sync + 'static,
    O: Output + Serialize,
{
    let limits = agent.inner.usage_limits.within(&ctx.remaining_limits());
    let mut run = run.with_usage_limits(limits);
    if let Some(token) = ctx.cancellation() {
        run = run.with_cancellation(token.child_token());
    }
    let finished = match (journal, ctx.events()) {
        (Some(journal), _) => run.finish_in(journal).await,
        (None, None) => run.finish().await,
        (None, Some(forward)) => {
            let here = AgentCall {
                agent: name.to_owned(),
                tool_call_id: ctx.tool_call_id().unwrap_or_default().to_owned(),
            };
            forwarded(run, forward, &here).await
        }
    };
    match finished {
        Ok(result) => {
            ctx.add_delegated_usage(name, &result.usage);
            Ok(result.output)
        }
        Err(error) => {
            ctx.add_delegated_usage(name, error.usage());
            Err(failed(name, error, on_error))
        }
    }
}

/// The error of a call whose agent failed, as `on_error` says.
fn failed(name: &str, error: RunError, on_error: OnAgentError) -> BoxError {
    match on_error {
        OnAgentError::Fail => error.into(),
        OnAgentError::Retry => ModelRetry::new(format!(
            "The `{name}` agent failed: {error}. Change the request, or do without it."
        ))
        .with_source(error)
        .into(),
    }
}

/// Runs `run` as a stream, sending each of its events to `forward` under `here` (and its
/// own delegated agents' events under `here`, then their path), and returns how it ended.
pub(crate) async fn forwarded<ChildDeps, O>(
    run: AgentRun<ChildDeps, O>,
    forward: &Forward,
    here: &AgentCall,
) -> Result<RunResult<O>, RunError>
where
    ChildDeps: Send + Sync + 'static,
    O: Output + Serialize,
{
    let mut events = run.into_events();
    while let Some(event) = events.next().await {
        match event {
            Ok(RunEvent::Finished(result)) => {
                let output = serde_json::to_value(&result.output).unwrap_or(Value::Null);
                forward.forward(Box::new(AgentEvent {
                    path: vec![here.clone()],
                    event: NestedEvent::Finished { output },
                }));
                return Ok(*result);
            }
            Ok(RunEvent::Agent(mut nested)) => {
                nested.path.insert(0, here.clone());
                forward.forward(nested);
            }
            Ok(event) => {
                if let Some(event) = NestedEvent::of(event) {
                    forward.forward(Box::new(AgentEvent {
                        path: vec![here.clone()],
                        event,
                    }));
                }
            }
            Err(error) => return Err(error),
        }
    }
    // The stream ended without an output: the child paused for approval, which it cannot
    // wait for here; finishing it says so, typed.
    match events.into_run() {
        Some(run) => run.finish().await,
        None => unreachable!("a stream that owns its run gives it back once it ends"),
    }
}
