//! golem-mcp against a server written with the Python `mcp` package (PyPI, pinned),
//! `tests/mcp/server.py`, started by each test on streamable HTTP at 127.0.0.1. A scripted
//! model plays the model.

use crate::servers;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use golem::model::function::FunctionModel;
use golem::model::{Message, ModelResponse, RequestPart};
use golem::tool::RetryLimit;
use golem::toolset::{Toolset, ToolsetError};
use golem::{Agent, RunContext, RunError, Stage};
use golem_mcp::{McpError, McpToolset};
use serde_json::json;
use servers::PythonServer;

/// The answers the run sent back, as `(kind, tool, content)`.
fn answers(messages: &[Message]) -> Vec<(&'static str, String, serde_json::Value)> {
    messages
        .iter()
        .filter_map(|message| match message {
            Message::Request(request) => Some(&request.parts),
            Message::Response(_) => None,
        })
        .flatten()
        .filter_map(|part| match part {
            RequestPart::ToolReturn(part) => {
                Some(("return", part.tool_name.clone(), part.content.clone()))
            }
            RequestPart::RetryPrompt(part) => Some((
                "retry",
                part.tool_name.clone().unwrap_or_default(),
                json!(part.content),
            )),
            _ => None,
        })
        .collect()
}

fn mcp_error(error: &RunError) -> &McpError {
    error
        .cause()
        .downcast_ref::<McpError>()
        .unwrap_or_else(|| panic!("the cause is an McpError: {error:?}"))
}

async fn connect(server: &PythonServer) -> McpToolset {
    McpToolset::http(server.url.clone())
        .await
        .expect("the Python server answers `initialize`")
}

#[tokio::test]
async fn lists_the_tools_and_calls_one_for_its_structured_result() {
    let server = PythonServer::start();
    let toolset = connect(&server).await;
    assert_eq!(Toolset::name(&toolset), "mcp:golem-test-py");

    let tools = toolset.list(&RunContext::new(())).await.expect("lists");
    let definitions: Vec<_> = tools.iter().map(|tool| tool.definition()).collect();
    let names: Vec<&str> = definitions.iter().map(|d| d.name.as_str()).collect();
    // Seven tools, two a page: four pages, and every one of them listed.
    assert_eq!(
        names,
        [
            "add",
            "divide",
            "weekday",
            "inventory",
            "slow",
            "pages_served",
            "unlock"
        ]
    );
    assert_eq!(
        definitions[0].description.as_deref(),
        Some("Add two integers.")
    );
    assert_eq!(
        definitions[0].parameters,
        json!({
            "properties": {
                "a": {"title": "A", "type": "integer"},
                "b": {"title": "B", "type": "integer"}
            },
            "required": ["a", "b"],
            "type": "object",
            "title": "addArguments"
        })
    );

    let model = FunctionModel::new(|messages: &[Message], _| match messages.len() {
        1 => ModelResponse::tool_call("add", r#"{"a": 2, "b": 3}"#, "call_1"),
        3 => ModelResponse::tool_call("pages_served", "{}", "call_2"),
        _ => ModelResponse::text("5"),
    });
    let agent = Agent::<(), String>::builder(model)
        .toolset(toolset)
        .build()
        .expect("builds");
    let result = agent.run("Add 2 and 3", ()).await.expect("runs");
    assert_eq!(
        answers(&result.messages),
        [
            ("return", "add".to_owned(), json!({"result": 5})),
            // Four pages for the listing above, four for the run's own at its start.
            ("return", "pages_served".to_owned(), json!({"result": 8})),
        ]
    );
}

/// A server whose last page points back to its first would be paged until the timeout,
/// its tools gathered again and again: the cursor sent twice ends the listing with a typed
/// error, and the run fails at its start, the prompt and nothing else in its history.
#[tokio::test]
async fn a_listing_whose_pages_repeat_is_an_error_not_a_loop() {
    let server = PythonServer::start_with(&["--looping-pages"]);
    let toolset = connect(&server).await;
    let started = Instant::now();
    let error = toolset.mcp_tools().await.expect_err("the pages repeat");
    assert!(
        matches!(&error, McpError::Paging { cursor, .. } if cursor == "2"),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "MCP server `mcp:golem-test-py` sent the cursor `2` of `tools/list` twice: its pages repeat"
    );
    // Five pages (the last pointing back to the first, which points to the second again),
    // answered well inside the request timeout.
    assert!(started.elapsed() < Duration::from_secs(10));

    let agent = Agent::<(), String>::builder(FunctionModel::new(|_, _| ModelResponse::text("-")))
        .toolset(toolset)
        .build()
        .expect("builds");
    let error = agent.run("Add 2 and 3", ()).await.expect_err("cannot list");
    assert_eq!(error.stage(), Stage::Tool);
    let listing = error
        .cause()
        .downcast_ref::<ToolsetError>()
        .expect("a toolset's error");
    assert!(
        matches!(listing, ToolsetError::List { source, .. }
            if matches!(source.downcast_ref::<McpError>(), Some(McpError::Paging { .. }))),
        "{listing:?}"
    );
    // Nothing was exchanged: the tools are listed before the first request.
    assert!(error.messages().is_empty());
    assert_eq!(error.usage().requests, 0);
}

/// `unlock` adds a tool and announces `tools/list_changed`: the run that called it keeps
/// the tools it listed at its start, the next run lists the new one and can call it.
#[tokio::test]
async fn a_tool_the_server_adds_is_listed_by_the_next_run() {
    let server = PythonServer::start();
    let model = FunctionModel::new(|messages: &[Message], params| {
        let names: Vec<&str> = params
            .function_tools
            .iter()
            .map(|tool| tool.name.as_str())
            .collect();
        match (messages.len(), names.contains(&"secret")) {
            (1, false) => ModelResponse::tool_call("unlock", "{}", "call_1"),
            (1, true) => ModelResponse::tool_call("secret", "{}", "call_2"),
            (_, unlocked) => ModelResponse::text(format!("unlocked: {unlocked}")),
        }
    });
    let agent = Agent::<(), String>::builder(model)
        .toolset(connect(&server).await)
        .build()
        .expect("builds");

    let first = agent.run("Unlock it", ()).await.expect("runs");
    assert_eq!(first.output, "unlocked: false");
    let second = agent.run("Now the secret", ()).await.expect("runs");
    assert_eq!(second.output, "unlocked: true");
    assert_eq!(
        answers(&second.messages),
        [(
            "return",
            "secret".to_owned(),
            json!({"result": "open sesame"})
        )]
    );
}

/// `divide` raises `ToolError` for a zero divisor: an `isError` result, whose text the
/// model reads before it calls again.
#[tokio::test]
async fn an_is_error_result_over_http_is_fixed_on_the_next_turn() {
    let server = PythonServer::start();
    let model = FunctionModel::new(|messages: &[Message], _| match messages.len() {
        1 => ModelResponse::tool_call("divide", r#"{"a": 1, "b": 0}"#, "call_1"),
        3 => ModelResponse::tool_call("divide", r#"{"a": 1, "b": 4}"#, "call_2"),
        _ => ModelResponse::text("0.25"),
    });
    let agent = Agent::<(), String>::builder(model)
        .tool_retries(1)
        .toolset(connect(&server).await)
        .build()
        .expect("builds");

    let result = agent.run("1 / 0?", ()).await.expect("runs");
    assert_eq!(
        answers(&result.messages),
        [
            (
                "retry",
                "divide".to_owned(),
                json!("Error executing tool divide: b must not be zero; pick another divisor")
            ),
            ("return", "divide".to_owned(), json!({"result": 0.25})),
        ]
    );
    assert_eq!(result.usage.rejected.tools["divide"].requests, 1);
}

/// `weekday` answers a badly written date with JSON-RPC error -32602 (invalid params): a
/// rejection too, with the server's message as the feedback, under the tool's budget.
#[tokio::test]
async fn an_invalid_params_error_is_a_rejection_under_the_tools_budget() {
    let server = PythonServer::start();
    let model = FunctionModel::new(|messages: &[Message], _| match messages.len() {
        1 => ModelResponse::tool_call("weekday", r#"{"date": "1 Dec 2026"}"#, "call_1"),
        3 => ModelResponse::tool_call("weekday", r#"{"date": "2026-12-01"}"#, "call_2"),
        _ => ModelResponse::text("Tuesday"),
    });
    let toolset = McpToolset::builder()
        .tool_max_retries("weekday", RetryLimit(1))
        .http(server.url.clone())
        .await
        .expect("connects");
    let agent = Agent::<(), String>::builder(model)
        .toolset(toolset)
        .build()
        .expect("builds");

    let result = agent
        .run("Which day is 1 Dec 2026?", ())
        .await
        .expect("runs");
    assert_eq!(
        answers(&result.messages),
        [
            (
                "retry",
                "weekday".to_owned(),
                json!("date must be written YYYY-MM-DD, got '1 Dec 2026'")
            ),
            ("return", "weekday".to_owned(), json!({"result": "Tuesday"})),
        ]
    );
}

#[tokio::test]
async fn other_json_rpc_errors_are_terminal() {
    let server = PythonServer::start();
    let model = FunctionModel::new(|_: &[Message], _| {
        ModelResponse::tool_call("inventory", "{}", "call_1")
    });
    let agent = Agent::<(), String>::builder(model)
        .tool_retries(5)
        .toolset(connect(&server).await)
        .build()
        .expect("builds");

    let error = agent.run("What is in stock?", ()).await.expect_err("fails");
    assert_eq!(error.stage(), Stage::Tool);
    let McpError::Server { code, message, .. } = mcp_error(&error) else {
        panic!("a server error: {error:?}");
    };
    assert_eq!(
        (*code, message.as_str()),
        (-32000, "the inventory database is down")
    );
}

#[tokio::test]
async fn a_slow_tool_over_http_hits_the_call_timeout() {
    let server = PythonServer::start();
    let model = FunctionModel::new(|_: &[Message], _| {
        ModelResponse::tool_call("slow", r#"{"seconds": 30}"#, "call_1")
    });
    let toolset = McpToolset::builder()
        .call_timeout(Duration::from_millis(500))
        .http(server.url.clone())
        .await
        .expect("connects");
    let agent = Agent::<(), String>::builder(model)
        .toolset(toolset)
        .build()
        .expect("builds");

    let started = Instant::now();
    let error = agent.run("Wait", ()).await.expect_err("times out");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(error.tool_name(), Some("slow"));
    assert!(mcp_error(&error).is_timeout(), "{error:?}");
    assert_eq!(error.usage().requests, 1);
}

/// The server process is killed between two calls: the second call is a transport error,
/// and the run keeps the first call's result.
#[tokio::test]
async fn the_http_server_killed_mid_run_fails_the_run_with_its_history() {
    let server = Arc::new(Mutex::new(PythonServer::start()));
    let url = server.lock().expect("not poisoned").url.clone();
    let killer = Arc::clone(&server);
    let model = FunctionModel::new(move |messages: &[Message], _| match messages.len() {
        1 => ModelResponse::tool_call("add", r#"{"a": 1, "b": 1}"#, "call_1"),
        _ => {
            killer.lock().expect("not poisoned").kill();
            ModelResponse::tool_call("add", r#"{"a": 2, "b": 2}"#, "call_2")
        }
    });
    let agent = Agent::<(), String>::builder(model)
        .toolset(McpToolset::http(url).await.expect("connects"))
        .build()
        .expect("builds");

    let started = Instant::now();
    let error = agent.run("Add twice", ()).await.expect_err("fails");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(error.tool_name(), Some("add"));
    assert!(mcp_error(&error).is_transport(), "{error:?}");
    assert_eq!(
        answers(error.messages())[0],
        ("return", "add".to_owned(), json!({"result": 2}))
    );
}

#[tokio::test]
async fn nothing_listening_is_a_connect_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port();
    let error = McpToolset::<()>::http(format!("http://127.0.0.1:{port}/mcp"))
        .await
        .expect_err("nothing listens");
    assert!(matches!(error, McpError::Connect { .. }), "{error:?}");
}
