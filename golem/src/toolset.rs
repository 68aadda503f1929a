//! Toolsets: groups of tools listed per run.
//!
//! A [`Toolset`] is where tools come from when they are not known when the agent is built:
//! an MCP server, a plugin registry, the tools one user may use. It is asked for its tools
//! ([`Toolset::list`]) with the run's [`RunContext`], possibly asynchronously, and gives
//! `Arc<dyn Tool<Deps>>`s; a `Vec` of tools is a toolset too. The combinators of
//! [`ToolsetExt`] rename, filter and budget what a toolset lists without the toolset
//! knowing:
//!
//! ```
//! use std::sync::Arc;
//! use golem::tool::{RetryLimit, Tool};
//! use golem::toolset::{Toolset, ToolsetExt};
//! use golem::RunContext;
//!
//! /// Open an issue.
//! #[golem::tool]
//! async fn create_issue(title: String) -> String {
//!     title
//! }
//!
//! /// Delete a repository.
//! #[golem::tool]
//! async fn delete_repo(name: String) -> String {
//!     name
//! }
//!
//! let github: Vec<Arc<dyn Tool<()>>> = vec![Arc::new(CreateIssue), Arc::new(DeleteRepo)];
//! let github = github
//!     .named("github")
//!     .deny(["delete_repo"])
//!     .prefixed("gh_")
//!     .max_retries(RetryLimit(2));
//!
//! let ctx = RunContext::new(());
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! let tools = github.list(&ctx).await?;
//! let names: Vec<String> = tools.iter().map(|tool| tool.definition().name).collect();
//! assert_eq!(names, ["gh_create_issue"]);
//! assert_eq!(tools[0].max_retries(), Some(RetryLimit(2)));
//! # Ok::<_, golem::BoxError>(())
//! # })?;
//! # Ok::<_, golem::BoxError>(())
//! ```
//!
//! # How a run uses toolsets
//!
//! This is the contract for the run loop (agents do not hold toolsets yet; until they do,
//! call [`list_all`] or [`Toolset::list`] yourself and pass the tools to
//! [`AgentBuilder::tools`](crate::AgentBuilder::tools)). An agent lists each of its toolsets
//! once, at the start of every run, before the first model request, and the listed tools
//! join the agent's own for that whole run. The run then treats them exactly like tools
//! given to the builder:
//!
//! - **Budgets stay per tool name**, whatever the source: a tool's own
//!   [`Tool::max_retries`] applies, else a toolset default set with
//!   [`ToolsetExt::max_retries`], else the agent's `tool_retries`.
//! - **Names must be unique across all sources.** A listed name that another toolset or one
//!   of the agent's own tools already uses, or that providers would refuse
//!   ([`is_valid_tool_name`](crate::tool::is_valid_tool_name)), fails the run at its start,
//!   and the error names both sources ([`Toolset::name`], or "the agent" for the builder's
//!   tools). Use [`ToolsetExt::prefixed`] to keep two servers' tools apart.
//! - **A listing error fails the run** at its start, with the toolset's name; nothing was
//!   sent to the model yet.
//!
//! [`list_all`] does all of this for one run: it lists every toolset, checks every name
//! against the names already taken and against each other, and says which source offers
//! each tool; the run loop calls it at the start of a run.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::Value;

use crate::context::RunContext;
use crate::error::BoxError;
use crate::tool::{RetryLimit, Tool, ToolDefinition};

/// The tools a [`Toolset`] lists for one run.
pub type ToolList<Deps> = Vec<Arc<dyn Tool<Deps>>>;

/// A named group of tools, listed once per run.
///
/// Implement it for a source whose tools are only known at run time; the list may depend
/// on the run's dependencies (`ctx.deps()`, e.g. the user's permissions) and may take
/// I/O (an MCP client's `tools/list`).
///
/// ```
/// use std::sync::Arc;
/// use golem::tool::{Tool, FunctionTool};
/// use golem::toolset::{ToolList, Toolset};
/// use golem::{BoxError, BoxFuture, RunContext};
///
/// /// Who is asking.
/// struct User {
///     admin: bool,
/// }
///
/// /// The admin tools, for admins only.
/// struct AdminTools;
///
/// impl Toolset<User> for AdminTools {
///     fn name(&self) -> &str {
///         "admin"
///     }
///
///     fn list<'a>(&'a self, ctx: &'a RunContext<User>) -> BoxFuture<'a, Result<ToolList<User>, BoxError>> {
///         Box::pin(async move {
///             if !ctx.deps().admin {
///                 return Ok(Vec::new());
///             }
///             let reset = FunctionTool::new("reset", |_ctx: RunContext<User>, (): ()| async {
///                 Ok::<_, BoxError>("done")
///             });
///             Ok(vec![Arc::new(reset) as Arc<dyn Tool<User>>])
///         })
///     }
/// }
///
/// let ctx = RunContext::new(User { admin: false });
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// assert!(AdminTools.list(&ctx).await?.is_empty());
/// # Ok::<_, BoxError>(())
/// # })?;
/// # Ok::<_, BoxError>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a golem toolset for dependencies `{Deps}`",
    label = "not a `Toolset<{Deps}>`",
    note = "a `Vec<Arc<dyn Tool<{Deps}>>>` is a toolset; so is any type implementing `Toolset<{Deps}>` (`name` and `list`)"
)]
pub trait Toolset<Deps>: Send + Sync + 'static {
    /// The name errors and traces give this source, e.g. `mcp:github`.
    fn name(&self) -> &str;

    /// The tools for one run.
    ///
    /// # Errors
    /// Any error fails the run at its start (e.g. the server cannot be reached).
    fn list<'a>(
        &'a self,
        ctx: &'a RunContext<Deps>,
    ) -> BoxFuture<'a, Result<ToolList<Deps>, BoxError>>;
}

/// The tools as they are; named `tools` (rename it with [`ToolsetExt::named`]).
impl<Deps: 'static> Toolset<Deps> for Vec<Arc<dyn Tool<Deps>>> {
    fn name(&self) -> &str {
        "tools"
    }

    fn list<'a>(
        &'a self,
        _ctx: &'a RunContext<Deps>,
    ) -> BoxFuture<'a, Result<ToolList<Deps>, BoxError>> {
        futures_util::future::ready(Ok(self.clone())).boxed()
    }
}

impl<Deps, S: Toolset<Deps> + ?Sized> Toolset<Deps> for Box<S> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn list<'a>(
        &'a self,
        ctx: &'a RunContext<Deps>,
    ) -> BoxFuture<'a, Result<ToolList<Deps>, BoxError>> {
        (**self).list(ctx)
    }
}

impl<Deps, S: Toolset<Deps> + ?Sized> Toolset<Deps> for Arc<S> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn list<'a>(
        &'a self,
        ctx: &'a RunContext<Deps>,
    ) -> BoxFuture<'a, Result<ToolList<Deps>, BoxError>> {
        (**self).list(ctx)
    }
}

/// A tool listed for one run, and where it came from.
pub struct ListedTool<Deps> {
    /// The [`Toolset::name`] of its source.
    pub source: String,
    /// Its definition, read once at listing.
    pub definition: ToolDefinition,
    /// The tool.
    pub tool: Arc<dyn Tool<Deps>>,
}

impl<Deps> fmt::Debug for ListedTool<Deps> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ListedTool")
            .field("source", &self.source)
            .field("definition", &self.definition)
            .finish_non_exhaustive()
    }
}

/// Why the toolsets of a run could not be listed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolsetError {
    /// A toolset's `list` failed.
    #[error("toolset `{toolset}` could not list its tools")]
    List {
        /// The toolset's name.
        toolset: String,
        /// Its error.
        #[source]
        source: BoxError,
    },
    /// Two sources offer the same tool name.
    #[error(
        "tool `{name}` is offered by both {first} and {second}; tool names must be unique in a run (`ToolsetExt::prefixed` keeps two sources apart)"
    )]
    DuplicateName {
        /// The name.
        name: String,
        /// The source that offered it first.
        first: String,
        /// The source that offered it again.
        second: String,
    },
    /// A toolset lists a name providers would refuse.
    #[error(
        "toolset `{toolset}` lists a tool named `{name}`, which providers refuse; use 1 to 64 ASCII letters, digits, `_` or `-`"
    )]
    InvalidName {
        /// The toolset's name.
        toolset: String,
        /// The tool's name.
        name: String,
    },
}

/// Lists every toolset once with the run's context, in order, and checks the names: each
/// must be valid ([`is_valid_tool_name`](crate::tool::is_valid_tool_name)) and unique
/// among the listed tools and the names already `taken`, given as (name, source), e.g.
/// the agent's own tools as `("roll_dice", "the agent's tools")` and the output tool.
///
/// ```
/// use std::sync::Arc;
/// use golem::tool::Tool;
/// use golem::toolset::{list_all, Toolset, ToolsetExt};
/// use golem::RunContext;
///
/// /// Open an issue.
/// #[golem::tool]
/// async fn create_issue(title: String) -> String {
///     title
/// }
///
/// let github = vec![Arc::new(CreateIssue) as Arc<dyn Tool<()>>].named("github");
/// let gitlab = vec![Arc::new(CreateIssue) as Arc<dyn Tool<()>>].named("gitlab");
/// let ctx = RunContext::new(());
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let taken = [("final_result", "the output tool")];
/// let error = list_all(&[&github, &gitlab], taken, &ctx).await.unwrap_err();
/// assert_eq!(
///     error.to_string(),
///     "tool `create_issue` is offered by both toolset `github` and toolset `gitlab`; tool names must be unique in a run (`ToolsetExt::prefixed` keeps two sources apart)"
/// );
/// let gitlab = gitlab.prefixed("gl_");
/// let toolsets: [&dyn Toolset<()>; 2] = [&github, &gitlab];
/// let tools = list_all(&toolsets, taken, &ctx).await?;
/// assert_eq!(tools[1].definition.name, "gl_create_issue");
/// assert_eq!(tools[1].source, "gitlab");
/// # Ok::<_, golem::BoxError>(())
/// # })?;
/// # Ok::<_, golem::BoxError>(())
/// ```
///
/// # Errors
/// The first listing error, duplicate name or invalid name, as a [`ToolsetError`].
pub async fn list_all<Deps, I, S>(
    toolsets: &[&dyn Toolset<Deps>],
    taken: I,
    ctx: &RunContext<Deps>,
) -> Result<Vec<ListedTool<Deps>>, ToolsetError>
where
    Deps: 'static,
    I: IntoIterator<Item = (S, S)>,
    S: Into<String>,
{
    let mut sources: std::collections::HashMap<String, String> = taken
        .into_iter()
        .map(|(name, source)| (name.into(), source.into()))
        .collect();
    let mut listed = Vec::new();
    for toolset in toolsets {
        let name = toolset.name().to_owned();
        let tools = toolset
            .list(ctx)
            .await
            .map_err(|source| ToolsetError::List {
                toolset: name.clone(),
                source,
            })?;
        for tool in tools {
            let definition = tool.definition();
            if !crate::tool::is_valid_tool_name(&definition.name) {
                return Err(ToolsetError::InvalidName {
                    toolset: name,
                    name: definition.name,
                });
            }
            let source = format!("toolset `{name}`");
            if let Some(first) = sources.get(&definition.name) {
                return Err(ToolsetError::DuplicateName {
                    name: definition.name,
                    first: first.clone(),
                    second: source,
                });
            }
            sources.insert(definition.name.clone(), source);
            listed.push(ListedTool {
                source: name.clone(),
                definition,
                tool,
            });
        }
    }
    Ok(listed)
}

/// Combinators on every [`Toolset`]: each wraps it and changes what it lists.
pub trait ToolsetExt<Deps>: Toolset<Deps> + Sized {
    /// The same tools under another [`name`](Toolset::name).
    fn named(self, name: impl Into<Cow<'static, str>>) -> Named<Self> {
        Named {
            inner: self,
            name: name.into(),
        }
    }

    /// Every tool's name with `prefix` in front (`create_issue` → `gh_create_issue`), so
    /// two sources with the same names can serve one agent. Filters applied before this
    /// see the original names, filters applied after it the prefixed ones.
    fn prefixed(self, prefix: impl Into<String>) -> Prefixed<Self> {
        Prefixed {
            inner: self,
            prefix: prefix.into(),
        }
    }

    /// Only the tools for which `keep` is true.
    fn filter<F>(self, keep: F) -> Filtered<Self, F>
    where
        F: Fn(&RunContext<Deps>, &ToolDefinition) -> bool + Send + Sync + 'static,
    {
        Filtered { inner: self, keep }
    }

    /// Only the tools with these names.
    fn allow<I>(self, names: I) -> Filtered<Self, NameFilter>
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        Filtered {
            inner: self,
            keep: NameFilter::new(names, true),
        }
    }

    /// All tools but those with these names.
    fn deny<I>(self, names: I) -> Filtered<Self, NameFilter>
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        Filtered {
            inner: self,
            keep: NameFilter::new(names, false),
        }
    }

    /// The retry budget of every tool listed that sets none of its own; the tool's own
    /// [`Tool::max_retries`] still wins, and this wins over the agent's `tool_retries`.
    fn max_retries(self, limit: RetryLimit) -> WithRetries<Self> {
        WithRetries { inner: self, limit }
    }
}

impl<Deps, S: Toolset<Deps>> ToolsetExt<Deps> for S {}

/// A toolset under another name; see [`ToolsetExt::named`].
#[derive(Debug, Clone)]
pub struct Named<S> {
    inner: S,
    name: Cow<'static, str>,
}

impl<Deps, S: Toolset<Deps>> Toolset<Deps> for Named<S> {
    fn name(&self) -> &str {
        &self.name
    }

    fn list<'a>(
        &'a self,
        ctx: &'a RunContext<Deps>,
    ) -> BoxFuture<'a, Result<ToolList<Deps>, BoxError>> {
        self.inner.list(ctx)
    }
}

/// A toolset whose tools' names have a prefix; see [`ToolsetExt::prefixed`].
#[derive(Debug, Clone)]
pub struct Prefixed<S> {
    inner: S,
    prefix: String,
}

impl<Deps: Send + Sync + 'static, S: Toolset<Deps>> Toolset<Deps> for Prefixed<S> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn list<'a>(
        &'a self,
        ctx: &'a RunContext<Deps>,
    ) -> BoxFuture<'a, Result<ToolList<Deps>, BoxError>> {
        async move {
            let tools = self.inner.list(ctx).await?;
            Ok(tools
                .into_iter()
                .map(|tool| {
                    let mut definition = tool.definition();
                    definition.name = format!("{}{}", self.prefix, definition.name);
                    Arc::new(Wrapped {
                        inner: tool,
                        definition: Some(definition),
                        max_retries: None,
                    }) as Arc<dyn Tool<Deps>>
                })
                .collect())
        }
        .boxed()
    }
}

/// A toolset that lists only some of its tools; see [`ToolsetExt::filter`],
/// [`ToolsetExt::allow`] and [`ToolsetExt::deny`].
#[derive(Clone)]
pub struct Filtered<S, F> {
    inner: S,
    keep: F,
}

impl<S: fmt::Debug, F> fmt::Debug for Filtered<S, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Filtered")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

/// What [`ToolsetExt::allow`] and [`ToolsetExt::deny`] keep: the names listed, or all
/// others.
#[derive(Debug, Clone)]
pub struct NameFilter {
    names: HashSet<String>,
    allow: bool,
}

impl NameFilter {
    fn new<I>(names: I, allow: bool) -> Self
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        NameFilter {
            names: names.into_iter().map(Into::into).collect(),
            allow,
        }
    }
}

/// How [`Filtered`] decides; implemented for closures and [`NameFilter`].
pub trait KeepTool<Deps>: Send + Sync + 'static {
    /// Whether the tool with `definition` is listed.
    fn keep(&self, ctx: &RunContext<Deps>, definition: &ToolDefinition) -> bool;
}

impl<Deps, F> KeepTool<Deps> for F
where
    F: Fn(&RunContext<Deps>, &ToolDefinition) -> bool + Send + Sync + 'static,
{
    fn keep(&self, ctx: &RunContext<Deps>, definition: &ToolDefinition) -> bool {
        self(ctx, definition)
    }
}

impl<Deps> KeepTool<Deps> for NameFilter {
    fn keep(&self, _ctx: &RunContext<Deps>, definition: &ToolDefinition) -> bool {
        self.names.contains(&definition.name) == self.allow
    }
}

impl<Deps, S, F> Toolset<Deps> for Filtered<S, F>
where
    Deps: Send + Sync + 'static,
    S: Toolset<Deps>,
    F: KeepTool<Deps>,
{
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn list<'a>(
        &'a self,
        ctx: &'a RunContext<Deps>,
    ) -> BoxFuture<'a, Result<ToolList<Deps>, BoxError>> {
        async move {
            let mut tools = self.inner.list(ctx).await?;
            tools.retain(|tool| self.keep.keep(ctx, &tool.definition()));
            Ok(tools)
        }
        .boxed()
    }
}

/// A toolset with a default retry budget for its tools; see [`ToolsetExt::max_retries`].
#[derive(Debug, Clone)]
pub struct WithRetries<S> {
    inner: S,
    limit: RetryLimit,
}

impl<Deps: Send + Sync + 'static, S: Toolset<Deps>> Toolset<Deps> for WithRetries<S> {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn list<'a>(
        &'a self,
        ctx: &'a RunContext<Deps>,
    ) -> BoxFuture<'a, Result<ToolList<Deps>, BoxError>> {
        async move {
            let tools = self.inner.list(ctx).await?;
            Ok(tools
                .into_iter()
                .map(|tool| {
                    if tool.max_retries().is_some() {
                        return tool;
                    }
                    Arc::new(Wrapped {
                        inner: tool,
                        definition: None,
                        max_retries: Some(self.limit),
                    }) as Arc<dyn Tool<Deps>>
                })
                .collect())
        }
        .boxed()
    }
}

/// A listed tool with another definition (a prefixed name) or a default budget.
struct Wrapped<Deps> {
    inner: Arc<dyn Tool<Deps>>,
    definition: Option<ToolDefinition>,
    max_retries: Option<RetryLimit>,
}

impl<Deps: 'static> Tool<Deps> for Wrapped<Deps> {
    fn definition(&self) -> ToolDefinition {
        match &self.definition {
            Some(definition) => definition.clone(),
            None => self.inner.definition(),
        }
    }

    fn max_retries(&self) -> Option<RetryLimit> {
        self.inner.max_retries().or(self.max_retries)
    }

    fn requires_approval(&self) -> bool {
        self.inner.requires_approval()
    }

    fn tool_type(&self) -> &'static str {
        self.inner.tool_type()
    }

    fn call<'a>(
        &'a self,
        ctx: &'a RunContext<Deps>,
        args: &'a str,
    ) -> BoxFuture<'a, Result<Value, BoxError>> {
        self.inner.call(ctx, args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::FunctionTool;

    fn echo(name: &str, retries: Option<u32>) -> Arc<dyn Tool<()>> {
        let tool = FunctionTool::new(name.to_owned(), |_ctx: RunContext<()>, (): ()| async {
            Ok::<_, BoxError>("echo")
        })
        .requires_approval(name == "b");
        Arc::new(match retries {
            Some(limit) => tool.max_retries(RetryLimit(limit)),
            None => tool,
        })
    }

    fn list<S: Toolset<()>>(toolset: &S) -> ToolList<()> {
        let ctx = RunContext::new(());
        toolset
            .list(&ctx)
            .now_or_never()
            .expect("ready")
            .expect("lists")
    }

    fn names(tools: &ToolList<()>) -> Vec<String> {
        tools.iter().map(|tool| tool.definition().name).collect()
    }

    fn abc() -> ToolList<()> {
        vec![echo("a", None), echo("b", Some(5)), echo("c", None)]
    }

    #[test]
    fn a_vec_lists_its_tools_under_the_name_tools() {
        let tools = abc();
        assert_eq!(Toolset::name(&tools), "tools");
        assert_eq!(names(&list(&tools)), ["a", "b", "c"]);
        assert_eq!(abc().named("local").name(), "local");
    }

    #[test]
    fn prefixing_renames_and_keeps_everything_else() {
        let toolset = abc().prefixed("x_");
        let tools = list(&toolset);
        assert_eq!(names(&tools), ["x_a", "x_b", "x_c"]);
        assert_eq!(tools[1].max_retries(), Some(RetryLimit(5)));
        assert!(tools[1].requires_approval());
        assert!(!tools[0].requires_approval());
        let ctx = RunContext::new(());
        let output = tools[0]
            .call(&ctx, "{}")
            .now_or_never()
            .expect("ready")
            .expect("calls the inner tool");
        assert_eq!(output, "echo");
        assert_eq!(
            tools[0].definition().parameters,
            echo("a", None).definition().parameters
        );
    }

    #[test]
    fn allow_and_deny_filter_by_name_before_or_after_a_prefix() {
        assert_eq!(names(&list(&abc().allow(["a", "c", "z"]))), ["a", "c"]);
        assert_eq!(names(&list(&abc().deny(["a"]))), ["b", "c"]);
        assert_eq!(
            names(&list(&abc().deny(["a"]).prefixed("x_"))),
            ["x_b", "x_c"]
        );
        assert_eq!(names(&list(&abc().prefixed("x_").allow(["x_c"]))), ["x_c"]);
        assert!(list(&abc().prefixed("x_").allow(["c"])).is_empty());
    }

    #[test]
    fn filter_sees_the_context_and_the_definition() {
        let toolset = abc()
            .filter(|_ctx: &RunContext<()>, definition: &ToolDefinition| definition.name != "b");
        assert_eq!(names(&list(&toolset)), ["a", "c"]);
    }

    #[test]
    fn a_default_budget_applies_to_tools_without_their_own() {
        let tools = list(&abc().max_retries(RetryLimit(1)));
        let budgets: Vec<_> = tools.iter().map(|tool| tool.max_retries()).collect();
        assert_eq!(
            budgets,
            [
                Some(RetryLimit(1)),
                Some(RetryLimit(5)),
                Some(RetryLimit(1))
            ]
        );
    }

    #[test]
    fn boxed_and_shared_toolsets_are_toolsets() {
        let boxed: Box<dyn Toolset<()>> = Box::new(abc().named("boxed").prefixed("b_"));
        assert_eq!(boxed.name(), "boxed");
        assert_eq!(names(&list(&boxed)), ["b_a", "b_b", "b_c"]);
        let shared: Arc<dyn Toolset<()>> = Arc::new(abc());
        assert_eq!(names(&list(&shared)).len(), 3);
    }

    fn list_all_now(
        toolsets: &[&dyn Toolset<()>],
        taken: Vec<(&str, &str)>,
    ) -> Result<Vec<ListedTool<()>>, ToolsetError> {
        let ctx = RunContext::new(());
        list_all(toolsets, taken, &ctx)
            .now_or_never()
            .expect("ready")
    }

    #[test]
    fn list_all_names_both_sources_of_a_duplicate() {
        let one = abc().named("one");
        let two = vec![echo("c", None)].named("two");
        let error = list_all_now(&[&one, &two], vec![]).unwrap_err();
        assert!(matches!(
            &error,
            ToolsetError::DuplicateName { name, first, second }
                if name == "c" && first == "toolset `one`" && second == "toolset `two`"
        ));
        let error = list_all_now(&[&one], vec![("b", "the agent's tools")]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "tool `b` is offered by both the agent's tools and toolset `one`; tool names must be unique in a run (`ToolsetExt::prefixed` keeps two sources apart)"
        );
    }

    #[test]
    fn list_all_is_send_so_a_run_can_await_it() {
        fn assert_send<T: Send>(_: &T) {}
        let ctx = RunContext::new(());
        let one = abc();
        let toolsets: [&dyn Toolset<()>; 1] = [&one];
        let future = list_all(&toolsets, Vec::<(String, String)>::new(), &ctx);
        assert_send(&future);
    }

    #[test]
    fn list_all_keeps_the_order_and_the_sources() {
        let one = abc().named("one");
        let two = abc().named("two").prefixed("t_");
        let listed = list_all_now(&[&one, &two], vec![("final_result", "the output tool")])
            .expect("unique names");
        let seen: Vec<(String, String)> = listed
            .iter()
            .map(|tool| (tool.source.clone(), tool.definition.name.clone()))
            .collect();
        assert_eq!(
            seen,
            [
                ("one", "a"),
                ("one", "b"),
                ("one", "c"),
                ("two", "t_a"),
                ("two", "t_b"),
                ("two", "t_c")
            ]
            .map(|(source, name)| (source.to_owned(), name.to_owned()))
        );
    }

    #[test]
    fn list_all_rejects_invalid_names_and_reports_listing_errors() {
        let spaced = abc().named("spaced").prefixed("has space ");
        let error = list_all_now(&[&spaced], vec![]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "toolset `spaced` lists a tool named `has space a`, which providers refuse; use 1 to 64 ASCII letters, digits, `_` or `-`"
        );
    }

    #[test]
    fn a_listing_error_comes_through_every_combinator() {
        struct Down;
        impl Toolset<()> for Down {
            fn name(&self) -> &str {
                "down"
            }
            fn list<'a>(
                &'a self,
                _ctx: &'a RunContext<()>,
            ) -> BoxFuture<'a, Result<ToolList<()>, BoxError>> {
                futures_util::future::ready(Err("server unreachable".into())).boxed()
            }
        }
        let toolset = Down.prefixed("d_").deny(["x"]).max_retries(RetryLimit(1));
        assert_eq!(toolset.name(), "down");
        let ctx = RunContext::new(());
        let error = toolset
            .list(&ctx)
            .now_or_never()
            .expect("ready")
            .err()
            .expect("fails");
        assert_eq!(error.to_string(), "server unreachable");
        let error = list_all_now(&[&toolset], vec![]).unwrap_err();
        assert_eq!(error.to_string(), "toolset `down` could not list its tools");
        assert!(std::error::Error::source(&error).is_some());
    }
}
