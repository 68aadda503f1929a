//! The agent of the toolset tests: no tools of its own, one [`Toolset`] that lists its tools
//! from a loopback HTTP server ([`crate::toolset_server`]) and whose tools call that server,
//! then append a line to the side-effect file.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

use golem::model::openai::OpenAiModel;
use golem::tool::{Tool, ToolDefinition};
use golem::toolset::{ToolList, Toolset};
use golem::{Agent, BoxError, BoxFuture, RunContext};
use serde_json::{Value, json};

use crate::agent::Effects;

/// The prompt the toolset tests send.
pub const REMOTE_PROMPT: &str = "Save a note on the remote server.";

/// The run's final output, with the scripted model.
pub const REMOTE_OUTPUT: &str = "The note is saved.";

/// How long a run of the toolset agent may take: a journaled run records the deadline.
pub const REMOTE_TIMEOUT: Duration = Duration::from_secs(600);

/// The tools the server at `url` lists (`GET {url}/tools`), as the toolset `remote`.
#[derive(Debug, Clone)]
pub struct RemoteToolset {
    url: String,
    client: reqwest::Client,
}

impl RemoteToolset {
    /// The toolset of the server at `url` (`http://127.0.0.1:PORT`).
    pub fn new(url: &str) -> Self {
        RemoteToolset {
            url: url.to_owned(),
            client: reqwest::Client::new(),
        }
    }
}

impl Toolset<Effects> for RemoteToolset {
    fn name(&self) -> &str {
        "remote"
    }

    fn list<'a>(
        &'a self,
        _ctx: &'a RunContext<Effects>,
    ) -> BoxFuture<'a, Result<ToolList<Effects>, BoxError>> {
        Box::pin(async move {
            let definitions: Vec<ToolDefinition> = self
                .client
                .get(format!("{}/tools", self.url))
                .send()
                .await?
                .error_for_status()?
                .json()
                .await?;
            Ok(definitions
                .into_iter()
                .map(|definition| {
                    Arc::new(RemoteTool {
                        definition,
                        toolset: self.clone(),
                    }) as Arc<dyn Tool<Effects>>
                })
                .collect())
        })
    }
}

/// One listed tool: a call is `POST {url}/calls`, then the line `{call_id} {text}` appended
/// to the side-effect file.
#[derive(Debug)]
struct RemoteTool {
    definition: ToolDefinition,
    toolset: RemoteToolset,
}

impl Tool<Effects> for RemoteTool {
    fn definition(&self) -> ToolDefinition {
        self.definition.clone()
    }

    fn call<'a>(
        &'a self,
        ctx: &'a RunContext<Effects>,
        args: &'a str,
    ) -> BoxFuture<'a, Result<Value, BoxError>> {
        Box::pin(async move {
            let args: Value = serde_json::from_str(args)?;
            let call = ctx.tool_call_id().unwrap_or("?");
            let answer: Value = self
                .toolset
                .client
                .post(format!("{}/calls", self.toolset.url))
                .json(&json!({"tool": self.definition.name, "call": call, "args": args}))
                .send()
                .await?
                .error_for_status()?
                .json()
                .await?;
            let mut file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&ctx.deps().path)?;
            let text = args["text"].as_str().unwrap_or_default();
            writeln!(file, "{call} {} {text}", self.definition.name)?;
            Ok(answer)
        })
    }
}

/// The agent, on an OpenAI-compatible server at `model_url` (`http://127.0.0.1:PORT/v1`),
/// its tools from the toolset server at `toolset_url`, with a [`REMOTE_TIMEOUT`].
///
/// # Panics
/// If the model or the agent cannot be built.
pub fn remote_agent(model_url: &str, toolset_url: &str) -> Agent<Effects, String> {
    let model = OpenAiModel::builder("scripted")
        .base_url(model_url)
        .api_key("test-key")
        .build()
        .expect("a valid model");
    Agent::builder(model)
        .instructions("Use the remote tools.")
        .toolset(RemoteToolset::new(toolset_url))
        .run_timeout(REMOTE_TIMEOUT)
        .build()
        .expect("a valid agent")
}
