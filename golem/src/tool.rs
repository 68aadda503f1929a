//! Tools: functions the model can call.
//!
//! [`Tool`] is the trait `#[golem::tool]` implements; it can be implemented by hand, and
//! [`FunctionTool`] builds one from a closure. A tool rejects arguments it can't use by
//! returning an error that wraps [`ModelRetry`]; the run sends the reason back as that call's
//! result, within the tool's [`RetryLimit`].

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::context::RunContext;
use crate::error::BoxError;
use crate::model::retry::ModelRetry;

/// What the model is told about a tool.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolDefinition {
    /// The name the model calls it by; `^[a-zA-Z0-9_-]{1,64}$`.
    pub name: String,
    /// What it does and when to use it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON schema of its arguments; always an object schema.
    pub parameters: Value,
}

impl ToolDefinition {
    /// A definition with the provider-friendly schema of `Args` as its parameters.
    ///
    /// ```
    /// use golem::tool::ToolDefinition;
    ///
    /// let def = ToolDefinition::for_args::<()>("ping", "Check the service is up.");
    /// assert_eq!(def.parameters["type"], "object");
    /// ```
    pub fn for_args<Args: JsonSchema>(
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        let mut parameters = crate::schema::schema_for::<Args>();
        if !crate::schema::is_object_schema(&parameters) {
            // `()` and other argument-less types: a tool without parameters.
            parameters = serde_json::json!({
                "type": "object",
                "properties": {},
                "additionalProperties": false
            });
        }
        let description = description.into();
        ToolDefinition {
            name: name.into(),
            description: (!description.is_empty()).then_some(description),
            parameters,
        }
    }
}

/// How many times one tool may be rejected in a run before the run fails.
///
/// `RetryLimit(0)` makes every rejection terminal. Budgets are unsigned, so a negative one
/// cannot be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct RetryLimit(pub u32);

/// A function the model can call.
///
/// `#[golem::tool]` implements it for you. By hand: give the [`definition`](Self::definition)
/// (built once, when the agent is built) and [`call`](Self::call), which gets the raw JSON
/// arguments; [`parse_args`] turns them into your type, rejecting bad ones with the path of
/// the bad field.
///
/// ```
/// use futures_util::future::BoxFuture;
/// use golem::tool::{parse_args, RetryLimit, Tool, ToolDefinition};
/// use golem::{BoxError, ModelRetry, RunContext};
///
/// struct Shout;
///
/// impl<Deps: Send + Sync + 'static> Tool<Deps> for Shout {
///     fn definition(&self) -> ToolDefinition {
///         ToolDefinition {
///             name: "shout".into(),
///             description: Some("Upper-cases a word.".into()),
///             parameters: serde_json::json!({
///                 "type": "object",
///                 "properties": {"word": {"type": "string"}},
///                 "required": ["word"],
///                 "additionalProperties": false
///             }),
///         }
///     }
///
///     fn max_retries(&self) -> Option<RetryLimit> {
///         Some(RetryLimit(1))
///     }
///
///     fn call<'a>(
///         &'a self,
///         _ctx: &'a RunContext<Deps>,
///         args: &'a str,
///     ) -> BoxFuture<'a, Result<serde_json::Value, BoxError>> {
///         Box::pin(async move {
///             #[derive(serde::Deserialize)]
///             struct Args {
///                 word: String,
///             }
///             let args: Args = parse_args("shout", args)?;
///             if args.word.is_empty() {
///                 return Err(ModelRetry::new("`word` must not be empty").into());
///             }
///             Ok(args.word.to_uppercase().into())
///         })
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a golem tool for dependencies `{Deps}`",
    label = "not a `Tool<{Deps}>`",
    note = "put `#[golem::tool]` on an `async fn`, and pass the generated struct (`roll_dice` → `RollDice`)",
    note = "a tool whose first parameter is `&RunContext<D>` only works in agents whose `Deps` is `D`"
)]
pub trait Tool<Deps>: Send + Sync + 'static {
    /// The name, description and parameter schema shown to the model.
    fn definition(&self) -> ToolDefinition;

    /// This tool's retry budget, overriding the agent's default (`None`: use the default).
    fn max_retries(&self) -> Option<RetryLimit> {
        None
    }

    /// Whether a call of this tool waits for the caller's approval before it runs.
    ///
    /// When the model calls such a tool, the run pauses before running it and hands the
    /// pending calls to the caller, who approves or denies each. `#[golem::tool(requires_approval)]`
    /// sets it; the default is `false`.
    fn requires_approval(&self) -> bool {
        false
    }

    /// What kind of tool this is, as OpenTelemetry's `gen_ai.tool.type` names it on the
    /// call's `execute_tool` span: `"function"` (the default) for code the agent runs,
    /// `"extension"` for a tool an external service runs (an MCP server's).
    fn tool_type(&self) -> &'static str {
        "function"
    }

    /// Runs one call with the model's raw JSON `args`.
    ///
    /// # Errors
    /// An error wrapping [`ModelRetry`] rejects the call with feedback for the model; any
    /// other error fails the run at the tool stage.
    fn call<'a>(
        &'a self,
        ctx: &'a RunContext<Deps>,
        args: &'a str,
    ) -> BoxFuture<'a, Result<Value, BoxError>>;
}

/// A boxed tool is a tool: lists of tools chosen at run time (`Vec<Box<dyn Tool<Deps>>>`)
/// go to [`AgentBuilder::tools`](crate::AgentBuilder::tools) as they are.
impl<Deps, T> Tool<Deps> for Box<T>
where
    T: Tool<Deps> + ?Sized,
{
    fn definition(&self) -> ToolDefinition {
        (**self).definition()
    }

    fn max_retries(&self) -> Option<RetryLimit> {
        (**self).max_retries()
    }

    fn requires_approval(&self) -> bool {
        (**self).requires_approval()
    }

    fn tool_type(&self) -> &'static str {
        (**self).tool_type()
    }

    fn call<'a>(
        &'a self,
        ctx: &'a RunContext<Deps>,
        args: &'a str,
    ) -> BoxFuture<'a, Result<Value, BoxError>> {
        (**self).call(ctx, args)
    }
}

/// A shared tool is a tool: one tool in several agents, or the `Arc<dyn Tool<Deps>>`s a
/// [`Toolset`](crate::toolset::Toolset) lists.
///
/// ```
/// use std::sync::Arc;
/// use golem::tool::Tool;
///
/// /// Check that the service is up.
/// #[golem::tool]
/// async fn ping() -> &'static str {
///     "pong"
/// }
///
/// let shared: Arc<dyn Tool<()>> = Arc::new(Ping);
/// let boxed: Vec<Box<dyn Tool<()>>> = vec![Box::new(Arc::clone(&shared))];
/// assert_eq!(boxed[0].definition().name, "ping");
/// ```
impl<Deps, T> Tool<Deps> for std::sync::Arc<T>
where
    T: Tool<Deps> + ?Sized,
{
    fn definition(&self) -> ToolDefinition {
        (**self).definition()
    }

    fn max_retries(&self) -> Option<RetryLimit> {
        (**self).max_retries()
    }

    fn requires_approval(&self) -> bool {
        (**self).requires_approval()
    }

    fn tool_type(&self) -> &'static str {
        (**self).tool_type()
    }

    fn call<'a>(
        &'a self,
        ctx: &'a RunContext<Deps>,
        args: &'a str,
    ) -> BoxFuture<'a, Result<Value, BoxError>> {
        (**self).call(ctx, args)
    }
}

/// Deserializes a tool's raw JSON arguments, rejecting bad ones with a [`ModelRetry`] that
/// names the tool and the path of the bad field.
///
/// Empty arguments count as `{}`, as some models send nothing for argument-less tools, and
/// `{}` is accepted for `()` so a closure tool can take no arguments.
///
/// ```
/// #[derive(serde::Deserialize, Debug)]
/// struct Args {
///     n: i64,
/// }
///
/// let error = golem::tool::parse_args::<Args>("roll_dice", r#"{"n": "three"}"#).unwrap_err();
/// assert_eq!(
///     error.message(),
///     "invalid arguments for tool `roll_dice`: at `n`: invalid type: string \"three\", expected i64 at line 1 column 13"
/// );
/// ```
///
/// # Errors
/// A [`ModelRetry`] when `args` is not valid JSON or does not match `T`.
pub fn parse_args<T: DeserializeOwned>(tool_name: &str, args: &str) -> Result<T, ModelRetry> {
    let args = if args.trim().is_empty() { "{}" } else { args };
    crate::output::decode_json_at(args).or_else(|(message, source)| {
        if let Ok(unit) = serde_json::from_str::<T>("null")
            && serde_json::from_str::<serde_json::Map<String, Value>>(args)
                .is_ok_and(|map| map.is_empty())
        {
            return Ok(unit);
        }
        Err(ModelRetry::new(format!(
            "invalid arguments for tool `{tool_name}`: {message}"
        ))
        .with_source(source))
    })
}

/// A tool's parameter schema, compiled once, that checks arguments before they are parsed.
///
/// With the cargo feature `schema-validation` (off by default, it adds the `jsonschema`
/// crate), [`check`](Self::check) enforces every assertion of the schema that serde does
/// not: ranges (`minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`,
/// `multipleOf`), lengths (`minLength`, `maxLength`, `minItems`, `maxItems`,
/// `minProperties`, `maxProperties`), `pattern`, `enum`, `const`, `uniqueItems`,
/// `required`, types and the combinators (`oneOf`, `anyOf`, `allOf`, `not`) — so
/// `#[schemars(range(min = 1, max = 10))]`, `length(...)` and `regex(...)` on a parameter
/// hold before the tool runs. A violation is a [`ModelRetry`] with each failing path and
/// constraint, charged to the tool's budget like any rejection. Two things are not
/// checked: `additionalProperties` (extra fields are ignored, as serde does, rather than
/// spending a retry on them) and `format` (an annotation in draft 2020-12). Without the
/// feature, `check` accepts everything and serde's own checks (types, required fields,
/// integer ranges of the Rust type) remain.
///
/// `#[golem::tool]` and [`FunctionTool`] use it; a hand-written tool can too:
///
/// ```
/// use golem::tool::{ArgsSchema, ToolDefinition};
///
/// #[golem::args]
/// struct Args {
///     #[schemars(range(min = 1, max = 10))]
///     n: u8,
/// }
///
/// let definition = ToolDefinition::for_args::<Args>("roll_dice", "Roll dice.");
/// let schema = ArgsSchema::new(&definition.parameters);
/// assert!(schema.check("roll_dice", r#"{"n": 3}"#).is_ok());
/// # #[cfg(feature = "schema-validation")]
/// assert_eq!(
///     schema.check("roll_dice", r#"{"n": 11}"#).unwrap_err().message(),
///     "invalid arguments for tool `roll_dice`: at `n`: 11 is greater than the maximum of 10"
/// );
/// ```
pub struct ArgsSchema {
    #[cfg(feature = "schema-validation")]
    validator: Option<jsonschema::Validator>,
}

impl fmt::Debug for ArgsSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArgsSchema")
            .field("enforced", &self.is_enforced())
            .finish()
    }
}

impl ArgsSchema {
    /// Compiles `parameters`, a tool's parameter schema. A schema the validator cannot
    /// compile is not enforced (serde still checks the arguments).
    pub fn new(parameters: &Value) -> Self {
        #[cfg(feature = "schema-validation")]
        {
            let validator = jsonschema::options()
                .with_draft(jsonschema::Draft::Draft202012)
                .build(parameters)
                .map_err(|error| {
                    tracing::warn!(%error, "a tool's parameter schema does not compile; it is not enforced");
                })
                .ok();
            ArgsSchema { validator }
        }
        #[cfg(not(feature = "schema-validation"))]
        {
            let _ = parameters;
            ArgsSchema {}
        }
    }

    /// Whether [`check`](Self::check) enforces the schema (the feature is on and the
    /// schema compiled).
    pub fn is_enforced(&self) -> bool {
        #[cfg(feature = "schema-validation")]
        {
            self.validator.is_some()
        }
        #[cfg(not(feature = "schema-validation"))]
        {
            false
        }
    }

    /// Checks the raw JSON `args` of a call of `tool_name` against the schema. Text that
    /// is not JSON passes, for [`parse_args`] to report.
    ///
    /// # Errors
    /// A [`ModelRetry`] listing each violation as `` at `path`: constraint ``.
    pub fn check(&self, tool_name: &str, args: &str) -> Result<(), ModelRetry> {
        #[cfg(feature = "schema-validation")]
        if let Some(validator) = &self.validator {
            let args = if args.trim().is_empty() { "{}" } else { args };
            let Ok(instance) = serde_json::from_str::<Value>(args) else {
                return Ok(());
            };
            let problems: Vec<String> = validator
                .iter_errors(&instance)
                .filter(|error| {
                    !matches!(
                        error.kind(),
                        jsonschema::error::ValidationErrorKind::AdditionalProperties { .. }
                    )
                })
                .map(|error| {
                    let path = instance_path(error.instance_path());
                    if path.is_empty() {
                        error.to_string()
                    } else {
                        format!("at `{path}`: {error}")
                    }
                })
                .collect();
            if !problems.is_empty() {
                return Err(ModelRetry::new(format!(
                    "invalid arguments for tool `{tool_name}`: {}",
                    problems.join("; ")
                )));
            }
        }
        #[cfg(not(feature = "schema-validation"))]
        let _ = (tool_name, args);
        Ok(())
    }

    /// [`check`](Self::check), then [`parse_args`].
    ///
    /// # Errors
    /// A [`ModelRetry`] for arguments that break the schema or do not deserialize.
    pub fn parse<T: DeserializeOwned>(&self, tool_name: &str, args: &str) -> Result<T, ModelRetry> {
        self.check(tool_name, args)?;
        parse_args(tool_name, args)
    }
}

/// `filters.since`, `tags[0]`: the path notation of [`parse_args`]'s messages.
#[cfg(feature = "schema-validation")]
fn instance_path(location: &jsonschema::paths::Location) -> String {
    let mut path = String::new();
    for segment in location {
        match segment {
            jsonschema::paths::LocationSegment::Property(name) => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&name);
            }
            jsonschema::paths::LocationSegment::Index(index) => {
                path.push_str(&format!("[{index}]"));
            }
        }
    }
    path
}

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
    function: F,
    _marker: PhantomData<fn(Deps, Args)>,
}

impl<Deps, Args, F> fmt::Debug for FunctionTool<Deps, Args, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FunctionTool")
            .field("definition", &self.definition)
            .field("max_retries", &self.max_retries)
            .field("requires_approval", &self.requires_approval)
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

/// Whether `name` is a tool name providers accept: `^[a-zA-Z0-9_-]{1,64}$`.
///
/// ```
/// assert!(golem::tool::is_valid_tool_name("roll_dice"));
/// assert!(!golem::tool::is_valid_tool_name("roll dice"));
/// ```
pub fn is_valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Search the catalogue.
    #[crate::args(crate = crate)]
    #[derive(Debug)]
    struct SearchArgs {
        #[schemars(length(min = 1, max = 20))]
        query: String,
        #[schemars(range(min = 1, max = 10))]
        limit: u8,
        #[schemars(inner(regex(pattern = r"^[a-z]+$")))]
        tags: Vec<String>,
        sort: Option<Sort>,
    }

    #[crate::args(crate = crate)]
    #[derive(Debug)]
    #[serde(rename_all = "snake_case")]
    enum Sort {
        Newest,
        Oldest,
    }

    fn schema() -> ArgsSchema {
        ArgsSchema::new(&ToolDefinition::for_args::<SearchArgs>("search", "").parameters)
    }

    #[test]
    fn valid_arguments_pass_and_parse() {
        let args: SearchArgs = schema()
            .parse(
                "search",
                r#"{"query": "rust", "limit": 3, "tags": ["a"], "sort": "newest", "extra": 1}"#,
            )
            .expect("valid");
        assert_eq!(
            (args.query.as_str(), args.limit, args.tags.len()),
            ("rust", 3, 1)
        );
        assert!(matches!(args.sort, Some(Sort::Newest)));
        assert!(!matches!(args.sort, Some(Sort::Oldest)));
    }

    #[test]
    fn text_that_is_not_json_is_left_to_parse_args() {
        let error = schema().parse::<SearchArgs>("search", "{").unwrap_err();
        assert!(
            error
                .message()
                .starts_with("invalid arguments for tool `search`: ")
        );
        assert!(schema().check("search", "{").is_ok());
    }

    #[cfg(not(feature = "schema-validation"))]
    #[test]
    fn without_the_feature_only_serde_checks() {
        assert!(!schema().is_enforced());
        let args: SearchArgs = schema()
            .parse("search", r#"{"query": "", "limit": 11, "tags": ["A"]}"#)
            .expect("serde accepts it");
        assert_eq!(args.limit, 11);
    }

    #[cfg(feature = "schema-validation")]
    #[test]
    fn constraints_are_enforced_with_each_failing_path() {
        assert!(schema().is_enforced());
        let error = schema()
            .parse::<SearchArgs>(
                "search",
                r#"{"query": "", "limit": 11, "tags": ["ok", "NO"], "sort": "best"}"#,
            )
            .unwrap_err();
        assert_eq!(
            error.message(),
            "invalid arguments for tool `search`: at `query`: \"\" is shorter than 1 character; \
             at `limit`: 11 is greater than the maximum of 10; \
             at `tags[1]`: \"NO\" does not match \"^[a-z]+$\"; \
             at `sort`: \"best\" is not one of \"newest\", \"oldest\" or null"
        );
    }

    #[cfg(feature = "schema-validation")]
    #[test]
    fn a_missing_field_is_reported_at_the_root() {
        let error = schema()
            .check("search", r#"{"limit": 1, "tags": []}"#)
            .unwrap_err();
        assert_eq!(
            error.message(),
            "invalid arguments for tool `search`: \"query\" is a required property"
        );
    }

    #[cfg(feature = "schema-validation")]
    #[test]
    fn function_tools_check_their_arguments_before_the_closure_runs() {
        use futures_util::FutureExt;
        let tool = FunctionTool::new("search", |_ctx: RunContext<()>, _args: SearchArgs| async {
            Ok::<_, BoxError>("ran")
        });
        let ctx = RunContext::new(());
        let error = tool
            .call(&ctx, r#"{"query": "q", "limit": 0, "tags": []}"#)
            .now_or_never()
            .expect("ready")
            .unwrap_err();
        let retry = error.downcast_ref::<ModelRetry>().expect("a rejection");
        assert_eq!(
            retry.message(),
            "invalid arguments for tool `search`: at `limit`: 0 is less than the minimum of 1"
        );
    }

    /// Roll dice.
    #[crate::tool(crate = crate)]
    async fn roll(#[schemars(range(min = 1, max = 10))] n: u8) -> u8 {
        n
    }

    #[cfg(feature = "schema-validation")]
    #[test]
    fn generated_tools_check_their_arguments_too() {
        use futures_util::FutureExt;
        let ctx = RunContext::new(());
        let error = Tool::<()>::call(&Roll, &ctx, r#"{"n": 11}"#)
            .now_or_never()
            .expect("ready")
            .unwrap_err();
        let retry = error.downcast_ref::<ModelRetry>().expect("a rejection");
        assert_eq!(
            retry.message(),
            "invalid arguments for tool `roll`: at `n`: 11 is greater than the maximum of 10"
        );
    }

    #[test]
    fn generated_tools_accept_valid_arguments() {
        use futures_util::FutureExt;
        let ctx = RunContext::new(());
        let output = Tool::<()>::call(&Roll, &ctx, r#"{"n": 10}"#)
            .now_or_never()
            .expect("ready")
            .expect("valid");
        assert_eq!(output, 10);
    }
}
