//! golem's cross-crate tests, one module per subject, in one test binary: each binary links
//! golem, its providers and MCP, so one binary instead of one per file keeps a build after a
//! change short. `mcp_stderr` has a binary of its own, because it installs a tracing
//! subscriber that tests running beside it without one could race.

/// The real MCP servers, installed and started once for the modules that use them.
#[path = "mcp/servers.rs"]
mod servers;

/// llama.cpp's server with a small real model, started once for the binary.
#[path = "llama/server.rs"]
mod llama;

mod diagnostics_doc;
mod e2e_openai;
mod llama_server;
mod macros_agent;
mod macros_schema;
mod macros_tools;
mod mcp_http;
mod mcp_stdio;
