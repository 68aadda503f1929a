//! The adapters that rename a toolset, prefix its tools' names or give its tools a default
//! budget, and the wrapped tool they list.

use std::borrow::Cow;
use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::Value;

use super::{ToolList, Toolset};
use crate::context::RunContext;
use crate::error::BoxError;
use crate::tool::{RetryLimit, Tool, ToolDefinition};

/// A toolset under another name, made by [`ToolsetExt::named`](super::ToolsetExt::named).
///
/// It lists the inner toolset's tools unchanged; only [`Toolset::name`], which errors and
/// traces show, is its own.
#[derive(Debug, Clone)]
pub struct Named<S> {
    inner: S,
    name: Cow<'static, str>,
}

impl<S> Named<S> {
    pub(super) fn new(inner: S, name: Cow<'static, str>) -> Self {
        Named { inner, name }
    }
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

/// A toolset whose tools' names have a prefix, made by
/// [`ToolsetExt::prefixed`](super::ToolsetExt::prefixed).
///
/// Each listed tool is the inner one under the prefixed name; calls, budgets and approvals
/// are the inner tool's.
#[derive(Debug, Clone)]
pub struct Prefixed<S> {
    inner: S,
    prefix: String,
}

impl<S> Prefixed<S> {
    pub(super) fn new(inner: S, prefix: String) -> Self {
        Prefixed { inner, prefix }
    }
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

/// A toolset with a default retry budget for its tools, made by
/// [`ToolsetExt::max_retries`](super::ToolsetExt::max_retries).
///
/// A listed tool that has a budget of its own keeps it; the others get this one.
#[derive(Debug, Clone)]
pub struct WithRetries<S> {
    inner: S,
    limit: RetryLimit,
}

impl<S> WithRetries<S> {
    pub(super) fn new(inner: S, limit: RetryLimit) -> Self {
        WithRetries { inner, limit }
    }
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

    fn repeatable(&self) -> bool {
        self.inner.repeatable()
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

    fn call_in<'a>(
        &'a self,
        ctx: &'a RunContext<Deps>,
        args: &'a str,
        journal: &'a crate::run::NestedJournal<'a>,
    ) -> Option<BoxFuture<'a, Result<Value, BoxError>>> {
        self.inner.call_in(ctx, args, journal)
    }
}

#[cfg(test)]
mod tests {
    use super::super::ToolsetExt;
    use super::super::testing::{abc, echo, list, names};
    use super::*;

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
}
