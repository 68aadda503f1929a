//! The real npm clients against the server on loopback: the `ai` package's UI message stream
//! reader rebuilds the messages (text, tool calls with outputs and a rejection, an approval
//! round trip), and `@ag-ui/client`'s `HttpAgent` runs threads through its event verifier.
//! The clients are installed, pinned, by `tests/node/install.sh` under the target directory;
//! these tests fail (never skip) when node or the install fails.
#![cfg(all(feature = "server", feature = "sqlite"))]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use golem::Agent;
use golem::output::Output;
use golem_ui::server::ChatServer;
use golem_ui::thread::SqliteThreadStore;
use serde_json::{Value, json};

/// The installed clients' directory, installed once per test binary.
fn clients() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .parent()
            .expect("CARGO_TARGET_TMPDIR is inside the target directory")
            .to_owned();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/node/install.sh");
        let status = Command::new(&script)
            .arg(&target)
            .status()
            .unwrap_or_else(|error| panic!("{} could not run: {error}", script.display()));
        assert!(status.success(), "{} failed: {status}", script.display());
        target.join("ui-node")
    })
}

/// Serves `agent` on loopback with threads in a temp dir; the base URL and the dir.
async fn serve<O: Output>(agent: Agent<(), O>) -> (String, tempfile::TempDir) {
    serve_with(agent, |server| server).await
}

/// [`serve`], with the server configured by `configure`.
async fn serve_with<O: Output>(
    agent: Agent<(), O>,
    configure: impl FnOnce(Server<O>) -> Server<O>,
) -> (String, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let store = SqliteThreadStore::open(dir.path().join("threads.db"))
        .await
        .expect("the store opens");
    let app = configure(ChatServer::new(agent, (), store)).router();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let url = format!("http://{}", listener.local_addr().expect("an address"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, dir)
}

type Server<O> = ChatServer<(), O, SqliteThreadStore>;

/// Runs `script` on `scenario` against `url`; its JSON output.
async fn node(script: &str, url: &str, scenario: &str) -> Value {
    let dir = clients();
    let output = tokio::process::Command::new("node")
        .arg(dir.join(script))
        .args([url, scenario])
        .current_dir(dir)
        .output()
        .await
        .expect("node runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{script} {scenario} failed:\n{stderr}"
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "{script} printed no JSON ({error}):\n{}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

#[tokio::test]
async fn ai_sdk_reader_rebuilds_tools_and_a_rejection() {
    let (url, _dir) = serve(common::adder()).await;
    let messages = node("ai_sdk.mjs", &url, "tools").await;
    assert_eq!(
        messages,
        json!([{
            "id": "tools-0",
            "role": "assistant",
            "parts": [
                {"type": "step-start"},
                {"type": "tool-add", "toolCallId": "c1", "state": "output-error",
                 "input": {"a": -1, "b": 3}, "errorText": "a must not be negative"},
                {"type": "data-rejection", "data": {"turn": 1, "stage": "tool",
                 "toolName": "add", "toolCallId": "c1", "retry": 1, "maxRetries": 1,
                 "feedback": "a must not be negative"}},
                {"type": "step-start"},
                {"type": "tool-add", "toolCallId": "c2", "state": "output-available",
                 "input": {"a": 2, "b": 3}, "output": 5},
                {"type": "step-start"},
                {"type": "text", "text": "5", "state": "done"},
            ],
        }])
    );
}

#[tokio::test]
async fn ai_sdk_reader_goes_through_an_approval() {
    let (url, _dir) = serve(common::deleter()).await;
    let messages = node("ai_sdk.mjs", &url, "approval").await;
    assert_eq!(
        messages,
        json!([
            {
                "id": "approval-0",
                "role": "assistant",
                "parts": [
                    {"type": "step-start"},
                    {"type": "tool-delete", "toolCallId": "d1", "state": "approval-requested",
                     "input": {"path": "a.txt"}, "approval": {"id": "d1"}},
                ],
            },
            {
                "id": "approval-0",
                "role": "assistant",
                "parts": [
                    {"type": "step-start"},
                    {"type": "tool-delete", "toolCallId": "d1", "state": "output-available",
                     "input": {"path": "a.txt"}, "output": "deleted a.txt",
                     "approval": {"id": "d1", "approved": true}},
                    {"type": "step-start"},
                    {"type": "text", "text": "Deleted.", "state": "done"},
                ],
            },
        ])
    );
}

/// The `ai` package's own chat: `regenerate()` answers the last message again,
/// `regenerate({ messageId })` of the first answer drops the turns after it, and an edit of
/// the first message asks its turn again with the new text; the chat's messages and the
/// stored thread agree after each.
#[tokio::test]
async fn the_ai_sdk_chat_regenerates_and_edits() {
    let (url, dir) = serve(common::echo()).await;
    let seen = node("chat.mjs", &url, "thread").await;
    assert_eq!(
        seen,
        json!({
            "first": [[null, "user", "Hi"], ["thread-0", "assistant", "Hi #1"]],
            "second": [[null, "user", "Hi"], ["thread-0", "assistant", "Hi #1"],
                       [null, "user", "A joke?"], ["thread-2", "assistant", "A joke? #2"]],
            "regenerated": [[null, "user", "Hi"], ["thread-0", "assistant", "Hi #1"],
                            [null, "user", "A joke?"], ["thread-2", "assistant", "A joke? #3"]],
            "first regenerated": [[null, "user", "Hi"], ["thread-0", "assistant", "Hi #4"]],
            "third": [[null, "user", "Hi"], ["thread-0", "assistant", "Hi #4"],
                      [null, "user", "More?"], ["thread-2", "assistant", "More? #5"]],
            "first edited": [[null, "user", "Hello"], ["thread-0", "assistant", "Hello #6"]],
        })
    );
    let store = SqliteThreadStore::open(dir.path().join("threads.db"))
        .await
        .expect("the store opens");
    let state = golem_ui::thread::ThreadStore::load(&store, "thread")
        .await
        .expect("loads")
        .expect("saved");
    assert_eq!(state.messages().len(), 2);
    assert_eq!(common::last_prompt(state.messages()), "Hello");
}

#[tokio::test]
async fn ag_ui_http_agent_runs_tools_and_a_rejection() {
    let (url, _dir) = serve(common::adder()).await;
    let messages = node("ag_ui.mjs", &url, "tools").await;
    let call = |id: &str, args: &str| json!([{"id": id, "type": "function", "function": {"name": "add", "arguments": args}}]);
    assert_eq!(
        messages,
        json!({"messages": [
            {"id": "u1", "role": "user", "content": "2 + 3?"},
            {"id": "r1-1", "role": "assistant", "toolCalls": call("c1", r#"{"a":-1,"b":3}"#)},
            {"id": "r1-result-c1", "toolCallId": "c1", "role": "tool",
             "content": "a must not be negative"},
            {"id": "r1-2", "role": "assistant", "toolCalls": call("c2", r#"{"a":2,"b":3}"#)},
            {"id": "r1-result-c2", "toolCallId": "c2", "role": "tool", "content": "5"},
            {"id": "r1-3-0", "role": "assistant", "content": "5"},
        ]})
    );
}

#[tokio::test]
async fn ag_ui_http_agent_goes_through_an_interrupt() {
    let (url, _dir) = serve(common::deleter()).await;
    let messages = node("ag_ui.mjs", &url, "approval").await;
    assert_eq!(
        messages,
        json!({
            "outcome": {"type": "interrupt", "interrupts": [{
                "id": "d1", "reason": "tool_call", "toolCallId": "d1",
                "metadata": {"toolName": "delete", "input": {"path": "a.txt"}},
            }]},
            "done": {"type": "success"},
            "messages": [
                {"id": "u1", "role": "user", "content": "Delete a.txt"},
                {"id": "r1-1", "role": "assistant", "toolCalls": [{"id": "d1", "type": "function",
                 "function": {"name": "delete", "arguments": r#"{"path":"a.txt"}"#}}]},
                {"id": "r2-result-d1", "toolCallId": "d1", "role": "tool", "content": "deleted a.txt"},
                {"id": "r2-2-0", "role": "assistant", "content": "Deleted."},
            ],
        })
    );
}

#[tokio::test]
async fn partial_output_fills_in_for_both_clients() {
    let (url, _dir) = serve_with(common::forecaster(), |server| server.with_partial_output()).await;
    let messages = node("ai_sdk.mjs", &url, "partial").await;
    assert_eq!(
        messages,
        json!([{
            "id": "partial-0",
            "role": "assistant",
            "parts": [
                {"type": "step-start"},
                {"type": "data-partial-output", "id": "output-1",
                 "data": {"city": "Paris", "temp": 21}},
            ],
        }])
    );
    let (url, _dir) = serve_with(common::forecaster(), |server| server.with_partial_output()).await;
    let run = node("ag_ui.mjs", &url, "partial").await;
    assert_eq!(
        run,
        json!({
            "state": {"output": {"city": "Paris", "temp": 21}},
            "messages": [{"id": "u1", "role": "user", "content": "Weather in Paris?"}],
        })
    );
}

#[tokio::test]
async fn ag_ui_http_agent_reads_reasoning() {
    let (url, _dir) = serve(common::thinker()).await;
    let messages = node("ag_ui.mjs", &url, "reasoning").await;
    assert_eq!(
        messages,
        json!({"messages": [
            {"id": "u1", "role": "user", "content": "Roll?"},
            {"id": "r1-1-0", "role": "reasoning", "content": "Two dice."},
            {"id": "r1-1-1", "role": "assistant", "content": "Six."},
            {"id": "u2", "role": "user", "content": "Again?"},
            {"id": "r2-1-0", "role": "reasoning", "content": "Again."},
            {"id": "r2-1-1", "role": "assistant", "content": "Five."},
        ]})
    );
}

#[tokio::test]
async fn both_clients_read_a_delegated_agent() {
    let (url, _dir) = serve(common::delegator()).await;
    let run = node("ai_sdk.mjs", &url, "agent").await;
    let research = |state: &str, output: Value| {
        json!({"type": "tool-research", "toolCallId": "p1", "state": state,
               "input": {"task": "2 + 3"}, "output": output})
    };
    assert_eq!(
        run["message"],
        json!({"id": "agent-0", "role": "assistant", "parts": [
            {"type": "step-start"},
            research("output-available", json!("Sum: 5.")),
            {"type": "step-start"},
            {"type": "text", "text": "It is 5.", "state": "done"},
        ]})
    );
    // Six preliminary outputs: the agent started, its call of `add` and its result, its
    // text as it streams, then done.
    let preliminary = run["preliminary"].as_array().expect("a list");
    assert_eq!(preliminary.len(), 6, "{preliminary:#?}");
    let mut last = research(
        "output-available",
        json!({"role": "assistant", "parts": [
            {"type": "step-start"},
            {"type": "tool-add", "toolCallId": "k1", "state": "output-available",
             "input": {"a": 2, "b": 3}, "output": 5},
            {"type": "step-start"},
            {"type": "text", "text": "Sum: 5.", "state": "done"},
        ]}),
    );
    last["preliminary"] = json!(true);
    assert_eq!(preliminary[5], last);

    let (url, _dir) = serve(common::delegator()).await;
    let run = node("ag_ui.mjs", &url, "agent").await;
    let call = |id: &str, name: &str, args: &str| json!([{"id": id, "type": "function", "function": {"name": name, "arguments": args}}]);
    let child = "r1-agent-p1";
    assert_eq!(
        run,
        json!({
            "subagents": [
                {"type": "SUBAGENT_STARTED", "subagentRunId": child, "name": "research",
                 "parentToolCallId": "p1"},
                {"type": "SUBAGENT_FINISHED", "subagentRunId": child, "result": "Sum: 5."},
            ],
            "messages": [
                {"id": "u1", "role": "user", "content": "2 + 3?"},
                {"id": "r1-1", "role": "assistant",
                 "toolCalls": call("p1", "research", r#"{"task":"2 + 3"}"#)},
                {"id": "r1-result-p1", "toolCallId": "p1", "role": "tool", "content": "Sum: 5."},
                {"id": "r1-agent-p1-1", "role": "assistant",
                 "toolCalls": call("k1", "add", r#"{"a":2,"b":3}"#), "subagentRunId": child},
                {"id": "r1-agent-p1-result-k1", "toolCallId": "k1", "role": "tool",
                 "content": "5", "subagentRunId": child},
                {"id": "r1-agent-p1-2-0", "role": "assistant", "content": "Sum: 5.",
                 "subagentRunId": child},
                {"id": "r1-2-0", "role": "assistant", "content": "It is 5."},
            ],
        })
    );
}
