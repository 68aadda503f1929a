//! [`FunctionTool`]: a tool built from a closure.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{ArgsSchema, RetryLimit, Tool, ToolDefinition};
use crate::context::RunContext;
use crate::error::BoxError;

/// A tool built from a closure.
///
/// The closure gets a clone of the [`RunContext`] and the deserialized arguments; its
/// `Args` type gives the parameter schema. Derive what `Args` needs with
/// [`#[golem::args]`](crate::args), which goes through golem's own `serde` and `schemars`.
///
/// ```
/// use golem::tool::{FunctionTool, RetryLimit};
/// use golem::{ModelRetry, RunContext};
///
/// #[golem::args] // derives `Deserialize` and `JsonSchema`, no serde/schemars dependency
/// struct Args {
///     /// The city to look up.
///     city: String,
/// }
///
/// let weather = FunctionTool::new("weather", |_ctx: RunContext<()>, args: Args| async move {
///     if args.city.is_empty() {
///         return Err(ModelRetry::new("`city` must not be empty"));
///     }
///     Ok(format!("sunny in {}", args.city))
/// })
/// .description("Today's weather in a city.")
/// .max_retries(RetryLimit(2));
/// # let _ = weather;
/// ```
pub struct FunctionTool<Deps, Args, F> {
    definition: ToolDefinition,
    schema: ArgsSchema,
    max_retries: Option<RetryLimit>,
    requires_approval: bool,
    repeatable: bool,
    function: F,
    _marker: PhantomData<fn(Deps, Args)>,
}

impl<Deps, Args, F> fmt::Debug for FunctionTool<Deps, Args, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FunctionTool")
            .field("definition", &self.definition)
            .field("max_retries", &self.max_retries)
            .field("requires_approval", &self.requires_approval)
            .field("repeatable", &self.repeatable)
            .finish_non_exhaustive()
    }
}

impl<Deps, Args, F, Fut, T, E> FunctionTool<Deps, Args, F>
where
    Deps: Send + Sync + 'static,
    Args: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(RunContext<Deps>, Args) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, E>> + Send + 'static,
    T: Serialize,
    E: Into<BoxError>,
{
    /// A tool named `name` that runs `function`.
    pub fn new(name: impl Into<String>, function: F) -> Self {
        let definition = ToolDefinition::for_args::<Args>(name, "");
        FunctionTool {
            schema: ArgsSchema::new(&definition.parameters),
            definition,
            max_retries: None,
            requires_approval: false,
            repeatable: false,
            function,
            _marker: PhantomData,
        }
    }

    /// Sets the description shown to the model.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.definition.description = Some(description.into());
        self
    }

    /// Sets this tool's retry budget, overriding the agent's default.
    #[must_use]
    pub fn max_retries(mut self, limit: RetryLimit) -> Self {
        self.max_retries = Some(limit);
        self
    }

    /// Makes every call of this tool wait for the caller's approval before it runs.
    #[must_use]
    pub fn requires_approval(mut self, requires_approval: bool) -> Self {
        self.requires_approval = requires_approval;
        self
    }

    /// Runs every call of this tool, even one with the same arguments as an earlier call,
    /// in an agent that refuses repeated calls: for a tool whose result changes between
    /// calls (see [`Tool::repeatable`]).
    #[must_use]
    pub fn repeatable(mut self, repeatable: bool) -> Self {
        self.repeatable = repeatable;
        self
    }
}

impl<Deps, Args, F, Fut, T, E> Tool<Deps> for FunctionTool<Deps, Args, F>
where
    Deps: Send + Sync + 'static,
    Args: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(RunContext<Deps>, Args) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, E>> + Send + 'static,
    T: Serialize,
    E: Into<BoxError>,
{
    fn definition(&self) -> ToolDefinition {
        self.definition.clone()
    }

    fn max_retries(&self) -> Option<RetryLimit> {
        self.max_retries
    }

    fn requires_approval(&self) -> bool {
        self.requires_approval
    }

    fn repeatable(&self) -> bool {
        self.repeatable
    }

    fn call<'a>(
        &'a self,
        ctx: &'a RunContext<Deps>,
        args: &'a str,
    ) -> BoxFuture<'a, Result<Value, BoxError>> {
        let args = match self.schema.parse::<Args>(&self.definition.name, args) {
            Ok(args) => args,
            Err(retry) => return futures_util::future::ready(Err(retry.into())).boxed(),
        };
        let future = (self.function)(ctx.clone(), args);
        async move {
            let value = future.await.map_err(Into::into)?;
            Ok(serde_json::to_value(value)?)
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::retry::ModelRetry;

    /// Look up a city.
    #[crate::args(crate = crate)]
    struct CityArgs {
        #[schemars(length(min = 1))]
        city: String,
    }

    fn weather() -> impl Tool<()> {
        FunctionTool::new(
            "weather",
            |_ctx: RunContext<()>, args: CityArgs| async move {
                Ok::<_, BoxError>(format!("sunny in {}", args.city))
            },
        )
        .description("Today's weather.")
        .max_retries(RetryLimit(2))
        .requires_approval(true)
    }

    #[test]
    fn the_builder_sets_what_the_run_reads() {
        let tool = weather();
        let definition = tool.definition();
        assert_eq!(definition.name, "weather");
        assert_eq!(definition.description.as_deref(), Some("Today's weather."));
        assert_eq!(
            definition.parameters["required"],
            serde_json::json!(["city"])
        );
        assert_eq!(tool.max_retries(), Some(RetryLimit(2)));
        assert!(tool.requires_approval());
        assert_eq!(tool.tool_type(), "function");
    }

    #[test]
    fn a_call_deserializes_the_arguments_and_serializes_the_result() {
        let ctx = RunContext::new(());
        let tool = weather();
        let output = tool
            .call(&ctx, r#"{"city": "Oslo"}"#)
            .now_or_never()
            .expect("ready")
            .expect("runs");
        assert_eq!(output, "sunny in Oslo");
        let error = tool
            .call(&ctx, r#"{"town": "Oslo"}"#)
            .now_or_never()
            .expect("ready")
            .unwrap_err();
        let retry = error.downcast_ref::<ModelRetry>().expect("a rejection");
        assert!(
            retry
                .message()
                .starts_with("invalid arguments for tool `weather`: ")
        );
    }

    #[cfg(feature = "schema-validation")]
    #[test]
    fn function_tools_check_their_arguments_before_the_closure_runs() {
        let ctx = RunContext::new(());
        let error = weather()
            .call(&ctx, r#"{"city": ""}"#)
            .now_or_never()
            .expect("ready")
            .unwrap_err();
        let retry = error.downcast_ref::<ModelRetry>().expect("a rejection");
        assert_eq!(
            retry.message(),
            "invalid arguments for tool `weather`: at `city`: \"\" is shorter than 1 character"
        );
    }
}
