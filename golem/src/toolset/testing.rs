//! Tools and listings the toolset tests share.

use std::sync::Arc;

use futures_util::FutureExt;

use super::{ToolList, Toolset};
use crate::context::RunContext;
use crate::error::BoxError;
use crate::tool::{FunctionTool, RetryLimit, Tool};

pub(super) fn echo(name: &str, retries: Option<u32>) -> Arc<dyn Tool<()>> {
    let tool = FunctionTool::new(name.to_owned(), |_ctx: RunContext<()>, (): ()| async {
        Ok::<_, BoxError>("echo")
    })
    .requires_approval(name == "b");
    Arc::new(match retries {
        Some(limit) => tool.max_retries(RetryLimit(limit)),
        None => tool,
    })
}

pub(super) fn list<S: Toolset<()>>(toolset: &S) -> ToolList<()> {
    let ctx = RunContext::new(());
    toolset
        .list(&ctx)
        .now_or_never()
        .expect("ready")
        .expect("lists")
}

pub(super) fn names(tools: &ToolList<()>) -> Vec<String> {
    tools.iter().map(|tool| tool.definition().name).collect()
}

pub(super) fn abc() -> ToolList<()> {
    vec![echo("a", None), echo("b", Some(5)), echo("c", None)]
}
