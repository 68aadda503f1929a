//! [`list_all`]: the listing of a run's toolsets at its start, with every name checked.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use super::Toolset;
use crate::context::RunContext;
use crate::error::BoxError;
use crate::tool::{Tool, ToolDefinition, is_valid_tool_name};

/// A tool a toolset listed for one run, with its definition and the name of its source.
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

/// The error of [`list_all`]: a toolset could not list its tools, two sources offer one
/// name, or a toolset lists a name providers refuse.
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
    let mut sources: HashMap<String, String> = taken
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
            if !is_valid_tool_name(&definition.name) {
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

#[cfg(test)]
mod tests {
    use futures_util::FutureExt;

    use super::super::testing::{abc, echo};
    use super::super::{ToolList, ToolsetExt};
    use super::*;
    use crate::tool::RetryLimit;
    use futures_util::future::BoxFuture;

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
