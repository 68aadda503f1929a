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
//! An agent lists each of its toolsets ([`AgentBuilder::toolset`](crate::AgentBuilder::toolset))
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
use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;

use crate::context::RunContext;
use crate::error::BoxError;
use crate::tool::{RetryLimit, Tool, ToolDefinition};

mod adapters;
mod filter;
mod list_all;
#[cfg(test)]
mod testing;

pub use adapters::{Named, Prefixed, WithRetries};
pub use filter::{Filtered, KeepTool, NameFilter};
pub use list_all::{ListedTool, ToolsetError, list_all};

/// The tools a [`Toolset`] lists for one run, as shared tools a toolset can keep and list
/// again.
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

/// A list of tools is a toolset named `tools` (rename it with [`ToolsetExt::named`]) that
/// lists its tools as they are.
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

/// Implements [`Toolset`] for a smart pointer to a toolset by forwarding every method to the
/// toolset it points to.
macro_rules! forward_toolset {
    ($(#[$attr:meta])* $pointer:ident) => {
        $(#[$attr])*
        impl<Deps, S> Toolset<Deps> for $pointer<S>
        where
            S: Toolset<Deps> + ?Sized,
        {
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
    };
}

forward_toolset! {
    /// A boxed toolset is a toolset: an agent holds its toolsets as
    /// `Box<dyn Toolset<Deps>>`.
    Box
}

forward_toolset! {
    /// A shared toolset is a toolset: one connection (an MCP server's) in several agents.
    Arc
}

/// The combinators every [`Toolset`] has; each wraps the toolset and changes what it lists.
///
/// They chain in any order, and each sees the tools as the step before it left them: a
/// filter before [`prefixed`](Self::prefixed) sees the original names, one after it the
/// prefixed ones.
pub trait ToolsetExt<Deps>: Toolset<Deps> + Sized {
    /// The same tools under another [`name`](Toolset::name).
    fn named(self, name: impl Into<Cow<'static, str>>) -> Named<Self> {
        Named::new(self, name.into())
    }

    /// Every tool's name with `prefix` in front (`create_issue` → `gh_create_issue`), so
    /// two sources with the same names can serve one agent. Filters applied before this
    /// see the original names, filters applied after it the prefixed ones.
    fn prefixed(self, prefix: impl Into<String>) -> Prefixed<Self> {
        Prefixed::new(self, prefix.into())
    }

    /// Only the tools for which `keep` is true.
    fn filter<F>(self, keep: F) -> Filtered<Self, F>
    where
        F: Fn(&RunContext<Deps>, &ToolDefinition) -> bool + Send + Sync + 'static,
    {
        Filtered::new(self, keep)
    }

    /// Only the tools with these names.
    fn allow<I>(self, names: I) -> Filtered<Self, NameFilter>
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        Filtered::new(self, NameFilter::new(names, true))
    }

    /// All tools but those with these names.
    fn deny<I>(self, names: I) -> Filtered<Self, NameFilter>
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        Filtered::new(self, NameFilter::new(names, false))
    }

    /// The retry budget of every tool listed that sets none of its own; the tool's own
    /// [`Tool::max_retries`] still wins, and this wins over the agent's `tool_retries`.
    fn max_retries(self, limit: RetryLimit) -> WithRetries<Self> {
        WithRetries::new(self, limit)
    }
}

impl<Deps, S: Toolset<Deps>> ToolsetExt<Deps> for S {}

#[cfg(test)]
mod tests {
    use super::testing::{abc, list, names};
    use super::*;
    use crate::tool::FunctionTool;

    #[test]
    fn a_vec_lists_its_tools_under_the_name_tools() {
        let tools = abc();
        assert_eq!(Toolset::name(&tools), "tools");
        assert_eq!(names(&list(&tools)), ["a", "b", "c"]);
        assert_eq!(abc().named("local").name(), "local");
    }

    #[test]
    fn boxed_and_shared_toolsets_are_toolsets() {
        let boxed: Box<dyn Toolset<()>> = Box::new(abc().named("boxed").prefixed("b_"));
        assert_eq!(boxed.name(), "boxed");
        assert_eq!(names(&list(&boxed)), ["b_a", "b_b", "b_c"]);
        let shared: Arc<dyn Toolset<()>> = Arc::new(abc());
        assert_eq!(names(&list(&shared)).len(), 3);
    }

    /// A toolset whose name and list differ from any other's, so a pointer that forgot to
    /// forward a method answers differently.
    struct EveryMethod;

    impl Toolset<u8> for EveryMethod {
        fn name(&self) -> &str {
            "every_method"
        }

        fn list<'a>(
            &'a self,
            ctx: &'a RunContext<u8>,
        ) -> BoxFuture<'a, Result<ToolList<u8>, BoxError>> {
            let count = usize::from(*ctx.deps());
            let tool = FunctionTool::new("t", |_ctx: RunContext<u8>, (): ()| async {
                Ok::<_, BoxError>("t")
            });
            let tool: Arc<dyn Tool<u8>> = Arc::new(tool);
            futures_util::future::ready(Ok(vec![tool; count])).boxed()
        }
    }

    fn assert_forwards(toolset: &dyn Toolset<u8>) {
        assert_eq!(toolset.name(), "every_method");
        let ctx = RunContext::new(3);
        let tools = toolset
            .list(&ctx)
            .now_or_never()
            .expect("ready")
            .expect("lists");
        assert_eq!(tools.len(), 3);
    }

    #[test]
    fn boxed_and_shared_toolsets_forward_every_method() {
        assert_forwards(&Box::new(EveryMethod));
        assert_forwards(&Arc::new(EveryMethod));
        let boxed: Box<dyn Toolset<u8>> = Box::new(EveryMethod);
        assert_forwards(&boxed);
        let shared: Arc<dyn Toolset<u8>> = Arc::new(EveryMethod);
        assert_forwards(&shared);
        assert_forwards(&Box::new(Arc::clone(&shared)));
    }
}
