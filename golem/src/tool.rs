//! Tools: functions the model can call.
//!
//! [`Tool`] is the trait `#[golem::tool]` implements; it can be implemented by hand, and
//! [`FunctionTool`] builds one from a closure. A tool rejects arguments it can't use by
//! returning an error that wraps [`ModelRetry`]; the run sends the reason back as that call's
//! result, within the tool's [`RetryLimit`]. [`parse_args`] and [`ArgsSchema`] turn a call's
//! raw JSON arguments into a Rust type, rejecting bad ones with the path of the bad field.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::context::RunContext;
use crate::error::BoxError;
use crate::model::retry::ModelRetry;
use crate::run::NestedJournal;

pub(crate) mod agent;
mod args_schema;
mod function;

pub use agent::{AgentTool, OnAgentError};
pub use args_schema::ArgsSchema;
pub use function::FunctionTool;

/// A tool as the model is told about it: the name it calls the tool by, what the tool does,
/// and the JSON schema of its arguments.
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

/// A tool's retry budget: how many times one tool may be rejected in a run before the run
/// fails.
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

    /// Whether calling this tool again with the same arguments can give a new result (a
    /// clock, a random draw, a search of changing data), so an agent that refuses repeated
    /// calls ([`AgentBuilder::refuse_repeated_calls`](crate::AgentBuilder::refuse_repeated_calls))
    /// runs every call of it. `#[golem::tool(repeatable)]` sets it; the default is `false`.
    fn repeatable(&self) -> bool {
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

    /// Runs one call inside a durable run when the call is itself a run of journaled steps
    /// (an [agent as a tool](crate::Agent::as_tool)): `journal` records those steps under the
    /// call's step name (`tool:3:c7/model:1`), so a run that stops during the call goes on
    /// from its last recorded step instead of doing the whole call again.
    ///
    /// `None`, the default, runs [`call`](Tool::call) as one step, as for every other tool.
    /// Outside a durable run golem calls [`call`](Tool::call).
    fn call_in<'a>(
        &'a self,
        ctx: &'a RunContext<Deps>,
        args: &'a str,
        journal: &'a NestedJournal<'a>,
    ) -> Option<BoxFuture<'a, Result<Value, BoxError>>> {
        let _ = (ctx, args, journal);
        None
    }
}

/// Implements [`Tool`] for a smart pointer to a tool by forwarding every method, the
/// provided ones too, to the tool it points to.
macro_rules! forward_tool {
    ($(#[$attr:meta])* $pointer:ident) => {
        $(#[$attr])*
        impl<Deps, T> Tool<Deps> for $pointer<T>
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

            fn repeatable(&self) -> bool {
                (**self).repeatable()
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

            fn call_in<'a>(
                &'a self,
                ctx: &'a RunContext<Deps>,
                args: &'a str,
                journal: &'a NestedJournal<'a>,
            ) -> Option<BoxFuture<'a, Result<Value, BoxError>>> {
                (**self).call_in(ctx, args, journal)
            }
        }
    };
}

forward_tool! {
    /// A boxed tool is a tool: lists of tools chosen at run time (`Vec<Box<dyn Tool<Deps>>>`)
    /// go to [`AgentBuilder::tools`](crate::AgentBuilder::tools) as they are.
    Box
}

forward_tool! {
    /// A shared tool is a tool: one tool in several agents, or the `Arc<dyn Tool<Deps>>`s a
    /// toolset lists.
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
    Arc
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
    use futures_util::FutureExt;

    use super::*;

    /// A tool that overrides every provided method with a value other than the default, so
    /// a pointer that forgot to forward one answers differently.
    struct EveryMethod;

    impl Tool<u8> for EveryMethod {
        fn definition(&self) -> ToolDefinition {
            ToolDefinition::for_args::<()>("every_method", "Overrides everything.")
        }

        fn max_retries(&self) -> Option<RetryLimit> {
            Some(RetryLimit(7))
        }

        fn requires_approval(&self) -> bool {
            true
        }

        fn repeatable(&self) -> bool {
            true
        }

        fn tool_type(&self) -> &'static str {
            "extension"
        }

        fn call<'a>(
            &'a self,
            ctx: &'a RunContext<u8>,
            args: &'a str,
        ) -> BoxFuture<'a, Result<Value, BoxError>> {
            let answer = serde_json::json!({"deps": *ctx.deps(), "args": args});
            futures_util::future::ready(Ok(answer)).boxed()
        }
    }

    fn assert_forwards(tool: &dyn Tool<u8>) {
        assert_eq!(tool.definition(), EveryMethod.definition());
        assert_eq!(tool.max_retries(), Some(RetryLimit(7)));
        assert!(tool.requires_approval());
        assert!(tool.repeatable());
        assert_eq!(tool.tool_type(), "extension");
        let ctx = RunContext::new(3);
        let answer = tool
            .call(&ctx, "{}")
            .now_or_never()
            .expect("ready")
            .expect("answers");
        assert_eq!(answer, serde_json::json!({"deps": 3, "args": "{}"}));
    }

    #[test]
    fn boxed_and_shared_tools_forward_every_method() {
        assert_forwards(&Box::new(EveryMethod));
        assert_forwards(&Arc::new(EveryMethod));
        let boxed: Box<dyn Tool<u8>> = Box::new(EveryMethod);
        assert_forwards(&boxed);
        let shared: Arc<dyn Tool<u8>> = Arc::new(EveryMethod);
        assert_forwards(&shared);
        assert_forwards(&Box::new(Arc::clone(&shared)));
    }
}
