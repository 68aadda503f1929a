//! An MCP server's tools under golem's budgets: the reference server
//! `@modelcontextprotocol/server-everything`, started on stdio. The model first adds
//! `"two"` and 3; the server answers with an `isError` result, which goes back as
//! feedback under `get-sum`'s budget of one retry, and the model fixes its call.
//!
//! ```text
//! bash tests/mcp/install.sh                # once: the pinned server, under target/
//! cargo run --example mcp                  # offline, a scripted model
//! OPENAI_API_KEY=sk-... cargo run --example mcp
//! ```
//!
//! Without the install, the example starts the server with
//! `npx -y @modelcontextprotocol/server-everything@2026.8.31` (from the npm registry).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use golem::Agent;
use golem::model::function::FunctionModel;
use golem::model::{Message, Model, ModelResponse};
use golem::tool::RetryLimit;
use golem::toolset::ToolsetExt;
use golem_examples::{Transcript, openai_from_env, usage_line};
use golem_mcp::McpToolset;

/// The version the repository pins (tests/mcp/package.json).
const EVERYTHING: &str = "@modelcontextprotocol/server-everything@2026.8.31";

/// Plays the model offline: a sum with a word for a number, the fixed sum once the
/// server's error comes back, then the answer.
pub(crate) fn scripted_model() -> FunctionModel {
    FunctionModel::new(|messages: &[Message], _| match messages.len() {
        1 => ModelResponse::tool_call("get-sum", r#"{"a": "two", "b": 3}"#, "call_1")
            .with_usage(210, 22),
        3 => {
            ModelResponse::tool_call("get-sum", r#"{"a": 2, "b": 3}"#, "call_2").with_usage(285, 22)
        }
        _ => ModelResponse::text("2 + 3 = 5.").with_usage(330, 8),
    })
    .with_name("scripted")
}

/// The command that starts the server on stdio: the copy `tests/mcp/install.sh` put under
/// `target_dir`, else `npx`.
pub(crate) fn server_command(target_dir: &Path) -> Command {
    let installed = target_dir
        .join("mcp-node/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let mut command = if installed.is_file() {
        let mut node = Command::new("node");
        node.arg(installed);
        node
    } else {
        let mut npx = Command::new("npx");
        npx.args(["-y", EVERYTHING]);
        npx
    };
    command.arg("stdio");
    command
}

/// Runs the agent against the server `command` starts and returns what the example prints.
pub(crate) async fn run(
    model: impl Model,
    command: Command,
) -> Result<String, Box<dyn std::error::Error>> {
    let everything = McpToolset::builder()
        .call_timeout(Duration::from_secs(10)) // a server that hangs ends the call
        .tool_max_retries("get-sum", RetryLimit(1)) // one rejected sum is fine
        .stderr(Stdio::null()) // the server's own logs
        .stdio(command)
        .await?;

    let agent = Agent::<(), String>::builder(model)
        .instructions("You do arithmetic with the get-sum tool, then answer in one line.")
        .toolset(everything.allow(["echo", "get-sum"]))
        .build()?;

    let result = agent.run("What is two plus 3?", ()).await?;

    let transcript = Transcript::new(0, 0).tool_budget("get-sum", 1);
    Ok(format!(
        "{}{}\nanswer: {}\n",
        transcript.render(&result.messages),
        usage_line(&result.usage),
        result.output
    ))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let target = std::env::var_os("CARGO_TARGET_DIR").unwrap_or_else(|| "target".into());
    let command = server_command(Path::new(&target));
    let output = match openai_from_env() {
        Some(model) => run(model, command).await?,
        None => {
            println!("OPENAI_API_KEY is not set: a scripted model plays the part.\n");
            run(scripted_model(), command).await?
        }
    };
    print!("{output}");
    Ok(())
}
