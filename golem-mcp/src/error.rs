//! [`McpError`]: what can go wrong between a run and an MCP server.

use std::time::Duration;

use golem::BoxError;
use rmcp::ServiceError;

/// An MCP server could not be reached, did not answer in time, or failed a call in a way
/// the model cannot fix.
///
/// Returned by the connecting functions of [`McpToolsetBuilder`](crate::McpToolsetBuilder);
/// during a run it is the cause ([`RunError::cause`](golem::RunError::cause)) of a run that
/// failed at the tool stage, so `error.cause().downcast_ref::<McpError>()` finds it. What the
/// model can fix (`isError: true`, invalid params) is not an `McpError` but a
/// [`ModelRetry`](golem::ModelRetry), unless the toolset makes those terminal
/// ([`ToolFailures::Terminal`](crate::ToolFailures::Terminal)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The server's process could not be started.
    #[error("could not start the MCP server `{command}`")]
    Spawn {
        /// The program that was started.
        command: String,
        /// Why not.
        #[source]
        source: std::io::Error,
    },
    /// The transport is up but the MCP handshake failed.
    #[error("could not connect to the MCP server `{server}`")]
    Connect {
        /// The server: the program or the URL.
        server: String,
        /// rmcp's error.
        #[source]
        source: BoxError,
    },
    /// The server did not answer in time; the request was cancelled.
    #[error("MCP server `{server}` did not answer {request} within {after:?}")]
    Timeout {
        /// The toolset's name.
        server: String,
        /// What was asked: `` `tools/call` of `echo` ``, `` `tools/list` ``, `` `initialize` ``.
        request: String,
        /// The timeout that ran out.
        after: Duration,
    },
    /// The connection is gone: the server exited, its pipe broke, an HTTP request failed.
    #[error("the connection to MCP server `{server}` failed during {request}")]
    Transport {
        /// The toolset's name.
        server: String,
        /// What was asked.
        request: String,
        /// rmcp's error.
        #[source]
        source: Box<ServiceError>,
    },
    /// The server answered with a JSON-RPC error other than invalid params.
    #[error("MCP server `{server}` answered {request} with error {code}: {message}")]
    Server {
        /// The toolset's name.
        server: String,
        /// What was asked.
        request: String,
        /// The JSON-RPC error code.
        code: i32,
        /// The server's message.
        message: String,
    },
    /// A tool failed (`isError: true` or invalid params) and the toolset makes such
    /// failures terminal ([`ToolFailures::Terminal`](crate::ToolFailures::Terminal)).
    #[error("MCP tool `{tool}` of server `{server}` failed: {message}")]
    ToolFailed {
        /// The toolset's name.
        server: String,
        /// The tool's name on the server.
        tool: String,
        /// The server's text.
        message: String,
    },
    /// The server's listing repeats: it sent a `nextCursor` it had sent before, so following
    /// its pages would never end.
    #[error(
        "MCP server `{server}` sent the cursor `{cursor}` of {request} twice: its pages repeat"
    )]
    Paging {
        /// The toolset's name.
        server: String,
        /// What was asked: `` `tools/list` ``.
        request: String,
        /// The cursor sent twice.
        cursor: String,
    },
    /// Anything else rmcp reported (an unexpected response type, a cancelled request).
    #[error("MCP server `{server}`: {request} failed")]
    Protocol {
        /// The toolset's name.
        server: String,
        /// What was asked.
        request: String,
        /// rmcp's error.
        #[source]
        source: Box<ServiceError>,
    },
}

impl McpError {
    /// Whether the server did not answer in time.
    pub fn is_timeout(&self) -> bool {
        matches!(self, McpError::Timeout { .. })
    }

    /// Whether the connection failed (the server exited, a pipe broke, HTTP failed).
    pub fn is_transport(&self) -> bool {
        matches!(self, McpError::Transport { .. })
    }

    /// Whether a tool failed and the toolset makes tool failures terminal.
    pub fn is_tool_failure(&self) -> bool {
        matches!(self, McpError::ToolFailed { .. })
    }

    /// The error of an rmcp request that did not succeed; `Ok` for the JSON-RPC errors the
    /// caller decides about (model-fixable or not).
    pub(crate) fn from_service(
        server: &str,
        request: String,
        error: ServiceError,
    ) -> Result<rmcp::ErrorData, McpError> {
        let server = server.to_owned();
        match error {
            ServiceError::McpError(data) => Ok(data),
            ServiceError::Timeout { timeout } => Err(McpError::Timeout {
                server,
                request,
                after: timeout,
            }),
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                Err(McpError::Transport {
                    server,
                    request,
                    source: Box::new(error),
                })
            }
            other => Err(McpError::Protocol {
                server,
                request,
                source: Box::new(other),
            }),
        }
    }

    pub(crate) fn server_error(server: &str, request: String, data: rmcp::ErrorData) -> Self {
        McpError::Server {
            server: server.to_owned(),
            request,
            code: data.code.0,
            message: data.message.into_owned(),
        }
    }
}
