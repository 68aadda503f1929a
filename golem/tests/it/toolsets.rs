//! Toolsets in the run (DESIGN §7): listed once per run, budgets per tool name, clear errors
//! at the run's start.

use crate::common;

use std::error::Error as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use golem::tool::{FunctionTool, RetryLimit, Tool};
use golem::toolset::ToolsetError;
use golem::toolset::{ToolList, Toolset, ToolsetExt};
use golem::{Agent, BoxError, BoxFuture, ModelRetry, RunContext, RunState, Stage};
use serde_json::json;

#[golem::args]
struct Query {
    q: String,
}

/// A search tool that rejects empty queries.
fn search(name: &str) -> Arc<dyn Tool<()>> {
    Arc::new(FunctionTool::new(
        name,
        |_ctx: RunContext<()>, query: Query| async move {
            if query.q.is_empty() {
                return Err(ModelRetry::new("the query is empty"));
            }
            Ok(format!("results for {}", query.q))
        },
    ))
}

/// A toolset that counts how often it was listed, and lists one more tool each time.
struct Growing {
    listed: Arc<AtomicUsize>,
}

impl Toolset<()> for Growing {
    fn name(&self) -> &str {
        "growing"
    }

    fn list<'a>(
        &'a self,
        _ctx: &'a RunContext<()>,
    ) -> BoxFuture<'a, Result<ToolList<()>, BoxError>> {
        Box::pin(async move {
            let n = self.listed.fetch_add(1, Ordering::SeqCst) + 1;
            Ok((1..=n).map(|i| search(&format!("search_{i}"))).collect())
        })
    }
}

#[tokio::test]
async fn a_toolset_is_listed_once_at_the_start_of_every_run() {
    let listed = Arc::new(AtomicUsize::new(0));
    let script = script(vec![
        reply(vec![call("search_1", r#"{"q": "rust"}"#, "c1")], 1, 1),
        reply(vec![text("found it")], 1, 1),
        reply(vec![text("again")], 1, 1),
    ]);
    let agent = Agent::<(), String>::builder(script.model.clone())
        .tool(search("own"))
        .toolset(Growing {
            listed: Arc::clone(&listed),
        })
        .build()
        .unwrap();
    assert_eq!(
        listed.load(Ordering::SeqCst),
        0,
        "nothing is listed at build"
    );

    let first = agent.run("Search", ()).await.unwrap();
    assert_eq!(
        listed.load(Ordering::SeqCst),
        1,
        "one listing for a two-turn run"
    );
    assert_eq!(
        first.messages[2],
        request(vec![tool_return(
            "search_1",
            "c1",
            json!("results for rust")
        )])
    );
    agent.run("Again", ()).await.unwrap();
    assert_eq!(listed.load(Ordering::SeqCst), 2);

    let params = script.params.lock().unwrap();
    let names = |i: usize| -> Vec<String> {
        params[i]
            .function_tools
            .iter()
            .map(|tool| tool.name.clone())
            .collect()
    };
    assert_eq!(names(0), ["own", "search_1"]);
    assert_eq!(names(1), ["own", "search_1"]);
    assert_eq!(names(2), ["own", "search_1", "search_2"]);
}

#[tokio::test]
async fn a_toolsets_default_budget_applies_per_tool_name() {
    let tools: Vec<Arc<dyn Tool<()>>> = vec![search("search")];
    let script = script(vec![
        reply(vec![call("web_search", r#"{"q": ""}"#, "c1")], 1, 1),
        reply(vec![call("web_search", r#"{"q": ""}"#, "c2")], 1, 1),
        reply(vec![call("web_search", r#"{"q": ""}"#, "c3")], 1, 1),
    ]);
    let agent = Agent::<(), String>::builder(script.model.clone())
        .toolset(
            tools
                .named("web")
                .prefixed("web_")
                .max_retries(RetryLimit(2)),
        )
        .build()
        .unwrap();

    let error = agent.run("Search", ()).await.unwrap_err();

    assert_eq!(error.tool_name(), Some("web_search"));
    assert_eq!(
        error.exhausted(),
        Some(golem::Exhausted {
            rejections: 3,
            limit: 2
        })
    );
    assert_eq!(error.state().retries().tool("web_search"), 3);
    assert_eq!(error.usage().rejected.tools["web_search"].requests, 3);
    assert_eq!(script.requests(), 3);
}

#[tokio::test]
async fn two_sources_with_one_tool_name_fail_the_run_at_its_start_naming_both() {
    let script = script(vec![reply(vec![text("unreachable")], 1, 1)]);
    let a: Vec<Arc<dyn Tool<()>>> = vec![search("search")];
    let b: Vec<Arc<dyn Tool<()>>> = vec![search("search")];
    let agent = Agent::<(), String>::builder(script.model.clone())
        .toolset(a.named("docs"))
        .toolset(b.named("web"))
        .build()
        .unwrap();

    let error = agent.run("Search", ()).await.unwrap_err();

    assert_eq!(error.stage(), Stage::Input);
    assert_eq!(
        error.source().unwrap().to_string(),
        "tool `search` is offered by both toolset `docs` and toolset `web`; tool names must be \
         unique in a run (`ToolsetExt::prefixed` keeps two sources apart)"
    );
    assert!(matches!(
        error.source().unwrap().downcast_ref::<ToolsetError>(),
        Some(ToolsetError::DuplicateName { .. })
    ));
    assert_eq!(script.requests(), 0, "nothing was sent");
    assert!(error.messages().is_empty());
    assert_eq!(
        error.pending().unwrap().parts,
        vec![user("Search")],
        "the prompt is kept for a resume"
    );
}

#[tokio::test]
async fn a_listed_tool_named_like_an_agent_tool_names_the_agent() {
    let script = script(vec![]);
    let listed: Vec<Arc<dyn Tool<()>>> = vec![search("search")];
    let agent = Agent::<(), String>::builder(script.model.clone())
        .tool(search("search"))
        .toolset(listed.named("web"))
        .build()
        .unwrap();

    let error = agent.run("Search", ()).await.unwrap_err();

    assert_eq!(
        error.source().unwrap().to_string(),
        "tool `search` is offered by both the agent and toolset `web`; tool names must be \
         unique in a run (`ToolsetExt::prefixed` keeps two sources apart)"
    );
}

#[tokio::test]
async fn a_listed_tool_with_an_invalid_name_fails_the_run() {
    let script = script(vec![]);
    let listed: Vec<Arc<dyn Tool<()>>> = vec![search("web search")];
    let agent = Agent::<(), String>::builder(script.model.clone())
        .toolset(listed.named("web"))
        .build()
        .unwrap();

    let error = agent.run("Search", ()).await.unwrap_err();

    assert_eq!(error.stage(), Stage::Input);
    assert_eq!(
        error.source().unwrap().to_string(),
        "toolset `web` lists a tool named `web search`, which providers refuse; use 1 to 64 \
         ASCII letters, digits, `_` or `-`"
    );
}

/// A toolset whose server is down.
struct Unreachable;

impl Toolset<()> for Unreachable {
    fn name(&self) -> &str {
        "mcp:github"
    }

    fn list<'a>(
        &'a self,
        _ctx: &'a RunContext<()>,
    ) -> BoxFuture<'a, Result<ToolList<()>, BoxError>> {
        Box::pin(async { Err("connection refused".into()) })
    }
}

#[tokio::test]
async fn a_toolset_that_cannot_list_fails_the_run_at_the_tool_stage() {
    let script = script(vec![]);
    let agent = Agent::<(), String>::builder(script.model.clone())
        .toolset(Unreachable)
        .build()
        .unwrap();

    let error = agent.run("Hi", ()).await.unwrap_err();

    assert_eq!(error.stage(), Stage::Tool);
    let cause = error.source().unwrap();
    assert_eq!(
        cause.to_string(),
        "toolset `mcp:github` could not list its tools"
    );
    assert_eq!(cause.source().unwrap().to_string(), "connection refused");
    assert_eq!(script.requests(), 0);
}

#[tokio::test]
async fn a_restored_run_lists_again_and_keeps_the_counters_of_listed_tools() {
    let tools: Vec<Arc<dyn Tool<()>>> = vec![search("search")];
    let script = script(vec![
        reply(vec![call("search", r#"{"q": ""}"#, "c1")], 1, 1),
        reply(vec![call("search", r#"{"q": ""}"#, "c2")], 1, 1),
    ]);
    let agent = Agent::<(), String>::builder(script.model.clone())
        .toolset(tools.max_retries(RetryLimit(1)))
        .build()
        .unwrap();
    let mut run = agent.start("Search", ());
    run.step().await.unwrap();
    run.step().await.unwrap();
    let state: RunState =
        serde_json::from_str(&serde_json::to_string(run.state()).unwrap()).unwrap();

    let error = agent.resume(state, ()).await.unwrap_err();

    assert_eq!(
        error.exhausted(),
        Some(golem::Exhausted {
            rejections: 2,
            limit: 1
        })
    );
}
