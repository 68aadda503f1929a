//! golem-mcp against the reference MCP server, `@modelcontextprotocol/server-everything`
//! (npm, pinned), started by each test as a child process on stdio. A scripted model plays
//! the model, so what the run sends and keeps can be checked exactly.

use crate::servers;

use std::time::{Duration, Instant};

use golem::model::function::FunctionModel;
use golem::model::{Message, ModelResponse, RequestPart};
use golem::tool::RetryLimit;
use golem::toolset::{Toolset, ToolsetExt};
use golem::{Agent, RunContext, RunError, Stage};
use golem_mcp::{McpError, McpToolset, McpToolsetBuilder, ToolFailures};
use serde_json::json;

/// A builder whose server's logs stay out of the test output.
fn quiet() -> McpToolsetBuilder {
    McpToolset::builder().stderr(std::process::Stdio::null())
}

async fn everything() -> McpToolset {
    quiet()
        .stdio(servers::everything_command())
        .await
        .expect("the reference server starts and answers `initialize`")
}

/// The request parts after the prompt, as `(kind, tool, text)`.
fn answers(messages: &[Message]) -> Vec<(&'static str, String, String)> {
    messages
        .iter()
        .filter_map(|message| match message {
            Message::Request(request) => Some(&request.parts),
            Message::Response(_) => None,
        })
        .flatten()
        .filter_map(|part| match part {
            RequestPart::ToolReturn(part) => Some((
                "return",
                part.tool_name.clone(),
                part.model_text().into_owned(),
            )),
            RequestPart::RetryPrompt(part) => Some((
                "retry",
                part.tool_name.clone().unwrap_or_default(),
                part.content.clone(),
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

#[tokio::test]
async fn lists_the_servers_tools_with_their_schemas() {
    let toolset = everything().await;
    assert_eq!(Toolset::name(&toolset), "mcp:mcp-servers/everything");

    let tools = toolset.list(&RunContext::new(())).await.expect("lists");
    let names: Vec<String> = tools.iter().map(|tool| tool.definition().name).collect();
    for expected in [
        "echo",
        "get-sum",
        "get-structured-content",
        "trigger-long-running-operation",
    ] {
        assert!(
            names.contains(&expected.to_owned()),
            "{expected} in {names:?}"
        );
    }
    let sum = tools
        .iter()
        .map(|tool| tool.definition())
        .find(|definition| definition.name == "get-sum")
        .expect("get-sum");
    assert_eq!(
        sum.description.as_deref(),
        Some("Returns the sum of two numbers")
    );
    // The server's inputSchema, as it gave it.
    assert_eq!(
        sum.parameters,
        json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {
                "a": {"type": "number", "description": "First number"},
                "b": {"type": "number", "description": "Second number"}
            },
            "required": ["a", "b"]
        })
    );
}

#[tokio::test]
async fn a_piped_stderr_is_read_so_a_server_that_logs_keeps_running() {
    let toolset: McpToolset = McpToolset::builder()
        .stderr(std::process::Stdio::piped())
        .stdio(servers::everything_behind_a_logging_launcher())
        .await
        .expect("the server starts behind its launcher");
    let ctx = RunContext::new(());
    // Each request makes the launcher log a line after the handshake: with its stderr
    // dropped, the first of them killed the launcher and the server.
    for _ in 0..3 {
        let tools = toolset
            .list(&ctx)
            .await
            .expect("the server still answers `tools/list`");
        let echo = tools
            .iter()
            .find(|tool| tool.definition().name == "echo")
            .expect("echo is listed");
        let output = echo
            .call(&ctx, r#"{"message": "still here"}"#)
            .await
            .expect("the server still answers `tools/call`");
        assert_eq!(output, "Echo: still here");
    }
}

#[tokio::test]
async fn a_run_calls_a_tool_through_a_prefix_and_gets_its_text() {
    let model = FunctionModel::new(|messages: &[Message], params| match messages.len() {
        1 => {
            let names: Vec<&str> = params
                .function_tools
                .iter()
                .map(|tool| tool.name.as_str())
                .collect();
            assert_eq!(names, ["ev_echo", "ev_get-sum"]);
            ModelResponse::tool_call("ev_echo", r#"{"message": "hi"}"#, "call_1")
        }
        _ => ModelResponse::text("done"),
    });
    let agent = Agent::<(), String>::builder(model)
        .toolset(
            everything()
                .await
                .allow(["echo", "get-sum"])
                .prefixed("ev_"),
        )
        .build()
        .expect("builds");

    let result = agent.run("Echo hi", ()).await.expect("runs");
    assert_eq!(
        answers(&result.messages),
        [("return", "ev_echo".to_owned(), "Echo: hi".to_owned())]
    );
    assert_eq!(result.usage.tool_calls, 1);
}

#[tokio::test]
async fn structured_content_is_the_result_as_json() {
    let model = FunctionModel::new(|messages: &[Message], _| match messages.len() {
        1 => ModelResponse::tool_call(
            "get-structured-content",
            r#"{"location": "Chicago"}"#,
            "call_1",
        ),
        _ => ModelResponse::text("done"),
    });
    let agent = Agent::<(), String>::builder(model)
        .toolset(everything().await)
        .build()
        .expect("builds");

    let result = agent.run("Weather in Chicago?", ()).await.expect("runs");
    let Message::Request(request) = &result.messages[2] else {
        panic!("the tool's answer: {:?}", result.messages[2]);
    };
    let RequestPart::ToolReturn(part) = &request.parts[0] else {
        panic!("a tool return: {:?}", request.parts);
    };
    let content = part.content.as_object().expect("an object, not text");
    assert!(content.contains_key("temperature"), "{content:?}");
    assert!(content.contains_key("conditions"), "{content:?}");
}

#[tokio::test]
async fn an_image_becomes_media_beside_the_text() {
    let model = FunctionModel::new(|messages: &[Message], _| match messages.len() {
        1 => ModelResponse::tool_call("get-tiny-image", "{}", "call_1"),
        _ => ModelResponse::text("done"),
    });
    let agent = Agent::<(), String>::builder(model)
        .toolset(everything().await)
        .build()
        .expect("builds");

    let result = agent.run("Show me the logo", ()).await.expect("runs");
    let Message::Request(request) = &result.messages[2] else {
        panic!("the tool's answer: {:?}", result.messages[2]);
    };
    let RequestPart::ToolReturn(part) = &request.parts[0] else {
        panic!("a tool return: {:?}", request.parts);
    };
    let text = part.model_text();
    assert!(
        text.starts_with("Here's the image you requested:\n") && !text.contains("[image"),
        "{text}"
    );
    let [golem::model::UserContent::Binary(image)] = part.media.as_slice() else {
        panic!("one image: {:?}", part.media);
    };
    assert_eq!(image.media_type, "image/png");
    assert!(image.data.starts_with(b"\x89PNG"), "{image:?}");
}

/// The model sends a string where the server wants a number; the server's `isError`
/// result goes back as feedback, and the model fixes its call on the next turn.
#[tokio::test]
async fn an_is_error_result_is_fixed_by_the_model_on_the_next_turn() {
    let model = FunctionModel::new(|messages: &[Message], _| match messages.len() {
        1 => ModelResponse::tool_call("get-sum", r#"{"a": "two", "b": 3}"#, "call_1")
            .with_usage(50, 10),
        3 => {
            ModelResponse::tool_call("get-sum", r#"{"a": 2, "b": 3}"#, "call_2").with_usage(80, 10)
        }
        _ => ModelResponse::text("5").with_usage(100, 1),
    });
    let agent = Agent::<(), String>::builder(model)
        .toolset(
            quiet()
                .tool_max_retries("get-sum", RetryLimit(1))
                .stdio(servers::everything_command())
                .await
                .expect("connects"),
        )
        .build()
        .expect("builds");

    let result = agent.run("Add two and 3", ()).await.expect("runs");
    assert_eq!(result.output, "5");
    let answers = answers(&result.messages);
    assert_eq!(answers.len(), 2);
    assert_eq!(answers[0].0, "retry");
    assert_eq!(answers[0].1, "get-sum");
    assert!(
        answers[0]
            .2
            .contains("expected number, received string at a"),
        "the server's text is the feedback: {}",
        answers[0].2
    );
    assert_eq!(
        answers[1],
        (
            "return",
            "get-sum".to_owned(),
            "The sum of 2 and 3 is 5.".to_owned()
        )
    );
    // The rejected round's cost is charged to the tool by name.
    assert_eq!(result.usage.rejected.tools["get-sum"].requests, 1);
    assert_eq!(result.usage.rejected.tools["get-sum"].input_tokens, 50);
}

#[tokio::test]
async fn the_budget_runs_out_and_the_run_fails_with_its_history() {
    let model = FunctionModel::new(|messages: &[Message], _| {
        ModelResponse::tool_call(
            "get-sum",
            r#"{"a": "two", "b": 3}"#,
            format!("call_{}", messages.len()),
        )
    });
    let agent = Agent::<(), String>::builder(model)
        .toolset(everything().await.max_retries(RetryLimit(1)))
        .build()
        .expect("builds");

    let error = agent.run("Add two and 3", ()).await.expect_err("fails");
    assert!(error.is_retries_exhausted(), "{error:?}");
    assert_eq!(error.tool_name(), Some("get-sum"));
    let exhausted = error.exhausted().expect("a budget");
    assert_eq!((exhausted.rejections, exhausted.limit), (2, 1));
    let retry = error.model_retry().expect("the last rejection");
    assert!(
        retry.message().contains("expected number"),
        "{}",
        retry.message()
    );
    // prompt, call, feedback, call: the history ends with the model's last response.
    assert_eq!(error.messages().len(), 4);
    assert!(matches!(error.messages()[3], Message::Response(_)));
}

#[tokio::test]
async fn terminal_tool_failures_end_the_run_with_the_servers_text() {
    let model = FunctionModel::new(|_: &[Message], _| {
        ModelResponse::tool_call("get-sum", r#"{"a": "two", "b": 3}"#, "call_1")
    });
    let agent = Agent::<(), String>::builder(model)
        .tool_retries(3)
        .toolset(
            quiet()
                .tool_failures(ToolFailures::Terminal)
                .stdio(servers::everything_command())
                .await
                .expect("connects"),
        )
        .build()
        .expect("builds");

    let error = agent.run("Add two and 3", ()).await.expect_err("fails");
    assert_eq!(error.stage(), Stage::Tool);
    assert_eq!(error.tool_name(), Some("get-sum"));
    let McpError::ToolFailed { tool, message, .. } = mcp_error(&error) else {
        panic!("a tool failure: {error:?}");
    };
    assert_eq!(tool, "get-sum");
    assert!(message.contains("expected number"), "{message}");
    assert_eq!(error.usage().requests, 1);
}

/// `trigger-long-running-operation` takes 10 s; the call timeout ends the call after
/// 300 ms and the run fails, typed, with what it exchanged.
#[tokio::test]
async fn a_slow_tool_hits_the_call_timeout() {
    let model = FunctionModel::new(|_: &[Message], _| {
        ModelResponse::tool_call(
            "trigger-long-running-operation",
            r#"{"duration": 10, "steps": 2}"#,
            "call_1",
        )
    });
    let agent = Agent::<(), String>::builder(model)
        .toolset(
            quiet()
                .call_timeout(Duration::from_millis(300))
                .stdio(servers::everything_command())
                .await
                .expect("connects"),
        )
        .build()
        .expect("builds");

    let started = Instant::now();
    let error = agent
        .run("Take your time", ())
        .await
        .expect_err("times out");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(error.stage(), Stage::Tool);
    assert_eq!(error.tool_name(), Some("trigger-long-running-operation"));
    let McpError::Timeout { request, after, .. } = mcp_error(&error) else {
        panic!("a timeout: {error:?}");
    };
    assert_eq!(request, "`tools/call` of `trigger-long-running-operation`");
    assert_eq!(*after, Duration::from_millis(300));
    assert!(mcp_error(&error).is_timeout());
    assert_eq!(error.usage().requests, 1);
    assert_eq!(
        error.messages().len(),
        2 + 1,
        "the prompt, the call and its answer: {:?}",
        error.messages()
    );
}

/// The server is killed (SIGKILL) between two calls: the second call fails the run with a
/// transport error, and the first call's result is in the history.
#[tokio::test]
async fn the_server_killed_mid_run_fails_the_run_with_its_history() {
    let toolset = everything().await;
    let pid = toolset.process_id().expect("a child process");
    let model = FunctionModel::new(move |messages: &[Message], _| match messages.len() {
        1 => ModelResponse::tool_call("echo", r#"{"message": "one"}"#, "call_1"),
        _ => {
            servers::kill_process(pid);
            let killed = Instant::now();
            while !servers::process_gone(pid) && killed.elapsed() < Duration::from_secs(5) {
                std::thread::sleep(Duration::from_millis(10));
            }
            ModelResponse::tool_call("echo", r#"{"message": "two"}"#, "call_2")
        }
    });
    let agent = Agent::<(), String>::builder(model)
        .toolset(toolset)
        .build()
        .expect("builds");

    let started = Instant::now();
    let error = agent.run("Echo twice", ()).await.expect_err("fails");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(error.stage(), Stage::Tool);
    assert_eq!(error.tool_name(), Some("echo"));
    assert!(mcp_error(&error).is_transport(), "{error:?}");
    assert_eq!(
        answers(error.messages())[0],
        ("return", "echo".to_owned(), "Echo: one".to_owned())
    );
    assert_eq!(error.usage().requests, 2);
}

#[tokio::test]
async fn dropping_the_toolset_kills_the_server() {
    let toolset = everything().await;
    let pid = toolset.process_id().expect("a child process");
    assert!(!servers::process_gone(pid));
    drop(toolset);
    let dropped = Instant::now();
    while !servers::process_gone(pid) {
        assert!(
            dropped.elapsed() < Duration::from_secs(5),
            "the server {pid} still runs"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_program_that_does_not_exist_is_a_spawn_error() {
    let error = McpToolset::<()>::stdio(std::process::Command::new("/nonexistent/mcp-server"))
        .await
        .expect_err("cannot start");
    assert!(
        matches!(error, McpError::Spawn { ref command, .. } if command == "/nonexistent/mcp-server"),
        "{error:?}"
    );
}

#[tokio::test]
async fn shutdown_kills_the_server_and_later_listings_fail() {
    let toolset = everything().await;
    let pid = toolset.process_id().expect("a child process");
    toolset.shutdown();
    let stopped = Instant::now();
    while !servers::process_gone(pid) {
        assert!(
            stopped.elapsed() < Duration::from_secs(5),
            "the server {pid} still runs"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let error = toolset
        .mcp_tools()
        .await
        .expect_err("the connection is closed");
    assert!(error.is_transport(), "{error:?}");
}

/// The server dies while a call is in flight: the call ends at once with a transport
/// error, not at the call timeout.
#[tokio::test]
async fn the_server_killed_during_a_call_ends_the_call_at_once() {
    let toolset = everything().await;
    let pid = toolset.process_id().expect("a child process");
    let model = FunctionModel::new(|_: &[Message], _| {
        ModelResponse::tool_call(
            "trigger-long-running-operation",
            r#"{"duration": 20, "steps": 2}"#,
            "call_1",
        )
    });
    let agent = Agent::<(), String>::builder(model)
        .toolset(toolset)
        .build()
        .expect("builds");

    let killer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        servers::kill_process(pid);
    });
    let started = Instant::now();
    let error = agent.run("Take your time", ()).await.expect_err("fails");
    killer.await.expect("killed");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(error.tool_name(), Some("trigger-long-running-operation"));
    assert!(mcp_error(&error).is_transport(), "{error:?}");
}

/// A program that never speaks MCP: connecting gives up after the request timeout.
#[tokio::test]
async fn a_server_that_never_answers_initialize_times_out() {
    let mut silent = std::process::Command::new("sleep");
    silent.arg("30");
    let started = Instant::now();
    let error = McpToolset::builder()
        .request_timeout(Duration::from_millis(300))
        .stdio::<()>(silent)
        .await
        .expect_err("no handshake");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let McpError::Timeout { request, .. } = &error else {
        panic!("a timeout: {error:?}");
    };
    assert_eq!(request, "`initialize`");
}

/// The model calls `get_sum`; the server gets its own `get-sum`.
#[tokio::test]
async fn renamed_tools_are_called_by_the_servers_names() {
    let model = FunctionModel::new(|messages: &[Message], params| match messages.len() {
        1 => {
            assert!(
                params
                    .function_tools
                    .iter()
                    .any(|tool| tool.name == "get_sum")
            );
            ModelResponse::tool_call("get_sum", r#"{"a": 1, "b": 2}"#, "call_1")
        }
        _ => ModelResponse::text("3"),
    });
    let toolset = quiet()
        .rename_tools(|name| name.replace('-', "_"))
        .stdio(servers::everything_command())
        .await
        .expect("connects");
    let agent = Agent::<(), String>::builder(model)
        .toolset(toolset.allow(["get_sum"]))
        .build()
        .expect("builds");

    let result = agent.run("1 + 2?", ()).await.expect("runs");
    assert_eq!(
        answers(&result.messages),
        [(
            "return",
            "get_sum".to_owned(),
            "The sum of 1 and 2 is 3.".to_owned()
        )]
    );
}
