//! Filters: a toolset that lists only the tools a predicate keeps.

use std::collections::HashSet;
use std::fmt;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;

use super::{ToolList, Toolset};
use crate::context::RunContext;
use crate::error::BoxError;
use crate::tool::ToolDefinition;

/// A toolset that lists only some of its tools, made by
/// [`ToolsetExt::filter`](super::ToolsetExt::filter),
/// [`ToolsetExt::allow`](super::ToolsetExt::allow) and
/// [`ToolsetExt::deny`](super::ToolsetExt::deny).
///
/// It asks its [`KeepTool`] about each tool the inner toolset lists, with the run's context
/// and the tool's definition as it is at this place in the chain.
#[derive(Clone)]
pub struct Filtered<S, F> {
    inner: S,
    keep: F,
}

impl<S, F> Filtered<S, F> {
    pub(super) fn new(inner: S, keep: F) -> Self {
        Filtered { inner, keep }
    }
}

impl<S: fmt::Debug, F> fmt::Debug for Filtered<S, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Filtered")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
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

/// A set of tool names, and whether a [`Filtered`] toolset keeps those tools or all the
/// others: what [`ToolsetExt::allow`](super::ToolsetExt::allow) and
/// [`ToolsetExt::deny`](super::ToolsetExt::deny) filter by.
#[derive(Debug, Clone)]
pub struct NameFilter {
    names: HashSet<String>,
    allow: bool,
}

impl NameFilter {
    pub(super) fn new<I>(names: I, allow: bool) -> Self
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

/// The predicate of a [`Filtered`] toolset, which decides whether a tool is listed.
///
/// It is implemented for closures `Fn(&RunContext<Deps>, &ToolDefinition) -> bool` and for
/// [`NameFilter`].
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

#[cfg(test)]
mod tests {
    use super::super::ToolsetExt;
    use super::super::testing::{abc, list, names};
    use super::*;

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
}
