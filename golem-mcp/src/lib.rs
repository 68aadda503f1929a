//! MCP servers' tools as golem toolsets, under golem's retry budgets and timeouts.
//!
//! An [`McpToolset`] is a connection to one MCP server, made with the official Rust SDK
//! ([`rmcp`], re-exported so your code names the same version): a child process spoken
//! to over stdio, or a streamable-HTTP URL. Given to an agent, it lists the server's tools
//! at the start of every run, and the run treats them like its own:
//!
//! - **Schemas as the server gives them**: the tool's `inputSchema` is its parameters,
//!   its description the tool's description.
//! - **Failures the model can fix go back to it, under budgets.** A result with
//!   `isError: true` and a JSON-RPC invalid-params error (-32602) become a
//!   [`ModelRetry`](golem::ModelRetry) whose feedback is the server's text, charged to
//!   that tool's budget by name ([`McpToolsetBuilder::tool_max_retries`], the toolset's
//!   [`ToolsetExt::max_retries`](golem::toolset::ToolsetExt::max_retries) or the agent's
//!   `tool_retries`). [`ToolFailures::Terminal`] makes them terminal instead.
//! - **Everything else ends the run**, with its messages and usage: the server exited or
//!   the connection broke ([`McpError::Transport`]), a call took longer than the call
//!   timeout, on by default ([`McpError::Timeout`], [`DEFAULT_CALL_TIMEOUT`]), other JSON-RPC
//!   errors ([`McpError::Server`]).
//! - **Results**: the structured content when the server sends one (as JSON), else the
//!   text of the content blocks; images (PNG, JPEG, WebP) and PDFs, which every provider
//!   takes in a tool result, become the result's media ([`golem::model::ToolContent`]),
//!   sent to the model as each provider takes them; other binary content (audio among it)
//!   becomes a note in brackets.
//! - Prefixes, allow and deny lists come from [`golem::toolset::ToolsetExt`].
//!
//! ```no_run
//! use golem::model::function::FunctionModel;
//! use golem::model::ModelResponse;
//! use golem::tool::RetryLimit;
//! use golem::toolset::ToolsetExt;
//! use golem::Agent;
//! use golem_mcp::McpToolset;
//! use std::time::Duration;
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let mut command = tokio::process::Command::new("npx");
//! command.args(["-y", "@modelcontextprotocol/server-everything"]);
//! let everything = McpToolset::builder()
//!     .call_timeout(Duration::from_secs(10))
//!     .tool_max_retries("get-sum", RetryLimit(2))
//!     .stdio(command)
//!     .await?;
//!
//! # let model = FunctionModel::new(|_, _| ModelResponse::text("done"));
//! let agent = Agent::<(), String>::builder(model)
//!     .toolset(everything.allow(["echo", "get-sum"]).prefixed("everything_"))
//!     .build()?;
//! let result = agent.run("Add 2 and 3", ()).await?;
//! # let _ = result;
//! # Ok(())
//! # }
//! ```
//!
//! # Versions
//!
//! golem-mcp is built on rmcp 3.x (`rmcp = "3.11"`), re-exported as `golem_mcp::rmcp`: use
//! that path for transports or raw results ([`McpToolset::peer`]) so the types match. An
//! rmcp release that breaks its API is a new golem-mcp release, not a new golem one.
//!
//! # Features
//!
//! - `stdio` (default): servers started as child processes.
//! - `http` (default): streamable-HTTP servers at `http://` URLs, with rmcp's reqwest 0.13
//!   client and no TLS.
//! - `rustls`: `https://` URLs too (reqwest 0.13's rustls, which brings the aws-lc-rs crypto
//!   provider and so a C toolchain at build time).

#![deny(missing_docs)]

#[doc = include_str!("../../docs/mcp.md")]
pub mod guide {}

mod connection;
mod content;
mod error;
mod tool;
mod toolset;

pub use connection::ToolFailures;
pub use error::McpError;
pub use rmcp;
pub use tool::McpTool;
pub use toolset::{DEFAULT_CALL_TIMEOUT, DEFAULT_REQUEST_TIMEOUT, McpToolset, McpToolsetBuilder};
