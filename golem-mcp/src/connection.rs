//! The connection to an MCP server that a toolset and every tool it listed share, and the
//! options they read from it.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use golem::tool::RetryLimit;
use rmcp::RoleClient;
use rmcp::model::ClientConfig;
use rmcp::service::RunningService;

/// What a tool failure the model could fix becomes: a result with `isError: true`, or a
/// JSON-RPC invalid-params error (-32602).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ToolFailures {
    /// A [`ModelRetry`](golem::ModelRetry) with the server's text as the feedback, charged
    /// to that tool's budget (by its name, as the model calls it).
    #[default]
    Retry,
    /// A terminal [`McpError::ToolFailed`](crate::McpError::ToolFailed): the run fails at
    /// the tool stage.
    Terminal,
}

/// How the model names a server's tool.
type Rename = dyn Fn(&str) -> String + Send + Sync;

/// The settings of a connection, chosen on the builder and read by its tools at each call.
#[derive(Clone)]
pub(crate) struct Options {
    pub(crate) call_timeout: Option<Duration>,
    pub(crate) request_timeout: Duration,
    pub(crate) failures: ToolFailures,
    pub(crate) max_retries: HashMap<String, RetryLimit>,
    pub(crate) rename: Option<Arc<Rename>>,
}

impl fmt::Debug for Options {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("call_timeout", &self.call_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("failures", &self.failures)
            .field("max_retries", &self.max_retries)
            .field("rename", &self.rename.is_some())
            .finish()
    }
}

/// The live connection to one server, shared by the toolset and every tool it listed; the
/// server lives as long as any of them.
pub(crate) struct Connection {
    pub(crate) service: RunningService<RoleClient, ClientConfig>,
    pub(crate) name: String,
    pub(crate) options: Options,
    pub(crate) process_id: Option<u32>,
}
