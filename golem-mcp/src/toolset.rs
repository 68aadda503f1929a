//! [`McpToolset`]: a connected MCP server whose tools a run lists at its start.

use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use golem::tool::{RetryLimit, Tool};
use golem::toolset::{ToolList, Toolset};
use golem::{BoxError, BoxFuture, RunContext};
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::transport::IntoTransport;
use rmcp::{RoleClient, ServiceExt};

use crate::connection::{Connection, Options, ToolFailures};
use crate::error::McpError;
use crate::tool::McpTool;

/// How long a `tools/call` may take by default before the call fails.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// How long connecting and `tools/list` may take by default.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// An MCP server's tools as a golem [`Toolset`].
///
/// Connect with [`McpToolset::builder`] (or the shortcuts [`stdio`](Self::stdio) and
/// [`http`](Self::http)) and give it to
/// [`AgentBuilder::toolset`](golem::AgentBuilder::toolset). Every run lists the server's
/// tools at its start (`tools/list`, all pages), so a server that changed its tools
/// (`notifications/tools/list_changed`) is seen by the next run. Cheap to clone: clones share
/// the connection, and the server (a child process is killed) goes away when the last clone
/// and the last tool it listed are dropped, or at [`shutdown`](Self::shutdown).
///
/// `Deps` is the agent's dependency type, usually inferred from the agent it is given to;
/// the server's tools work with any, and [`with_deps`](Self::with_deps) shares one
/// connection with an agent of another type.
pub struct McpToolset<Deps = ()> {
    connection: Arc<Connection>,
    _deps: PhantomData<fn(&Deps)>,
}

impl<Deps> Clone for McpToolset<Deps> {
    fn clone(&self) -> Self {
        McpToolset {
            connection: Arc::clone(&self.connection),
            _deps: PhantomData,
        }
    }
}

impl<Deps> fmt::Debug for McpToolset<Deps> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpToolset")
            .field("name", &self.connection.name)
            .field("options", &self.connection.options)
            .field("process_id", &self.connection.process_id)
            .finish_non_exhaustive()
    }
}

impl McpToolset {
    /// A builder with the default timeouts and [`ToolFailures::Retry`].
    pub fn builder() -> McpToolsetBuilder {
        McpToolsetBuilder {
            name: None,
            options: Options {
                call_timeout: Some(DEFAULT_CALL_TIMEOUT),
                request_timeout: DEFAULT_REQUEST_TIMEOUT,
                failures: ToolFailures::Retry,
                max_retries: HashMap::new(),
                rename: None,
            },
            stderr: None,
        }
    }
}

impl<Deps> McpToolset<Deps> {
    /// Starts `command` and connects to it over its stdin and stdout, with the defaults.
    ///
    /// # Errors
    /// See [`McpToolsetBuilder::stdio`].
    #[cfg(feature = "stdio")]
    pub async fn stdio(command: impl Into<tokio::process::Command>) -> Result<Self, McpError> {
        McpToolset::builder().stdio(command).await
    }

    /// Connects to the streamable-HTTP server at `url`, with the defaults.
    ///
    /// # Errors
    /// See [`McpToolsetBuilder::http`].
    #[cfg(feature = "http")]
    pub async fn http(url: impl Into<String>) -> Result<Self, McpError> {
        McpToolset::builder().http(url).await
    }

    /// The same connection, for an agent whose dependencies are `Other`.
    pub fn with_deps<Other>(&self) -> McpToolset<Other> {
        McpToolset {
            connection: Arc::clone(&self.connection),
            _deps: PhantomData,
        }
    }

    /// The server as rmcp sees it, for what golem does not wrap (prompts, resources).
    pub fn peer(&self) -> &rmcp::Peer<RoleClient> {
        self.connection.service.peer()
    }

    /// The id of the server's process, when it was started by [`McpToolsetBuilder::stdio`].
    pub fn process_id(&self) -> Option<u32> {
        self.connection.process_id
    }

    /// Closes the connection now (a child process is killed); later calls of its tools fail
    /// with [`McpError::Transport`].
    pub fn shutdown(&self) {
        self.connection.service.cancellation_token().cancel();
    }

    /// The server's tools now (`tools/list`, every page), as golem tools.
    ///
    /// # Errors
    /// [`McpError`] when the server does not answer in time (every page within the request
    /// timeout), the connection failed, or its pages repeat ([`McpError::Paging`]).
    pub async fn mcp_tools(&self) -> Result<Vec<McpTool>, McpError> {
        let connection = &self.connection;
        let after = connection.options.request_timeout;
        let tools = tokio::time::timeout(after, self.every_page())
            .await
            .map_err(|_elapsed| McpError::Timeout {
                server: connection.name.clone(),
                request: LIST.to_owned(),
                after,
            })??;
        Ok(tools
            .into_iter()
            .map(|tool| {
                let max_retries = connection
                    .options
                    .max_retries
                    .get(tool.name.as_ref())
                    .copied();
                let name = connection
                    .options
                    .rename
                    .as_ref()
                    .map(|rename| rename(&tool.name));
                McpTool::new(Arc::clone(&self.connection), tool, name, max_retries)
            })
            .collect())
    }
}

/// What [`McpToolset::mcp_tools`] asks, as errors name it.
const LIST: &str = "`tools/list`";

impl<Deps> McpToolset<Deps> {
    /// Every page of `tools/list`, following `nextCursor` until a page has none. A cursor
    /// sent twice ends the listing with [`McpError::Paging`]: followed, it would page until
    /// the timeout, gathering the same tools again.
    async fn every_page(&self) -> Result<Vec<rmcp::model::Tool>, McpError> {
        let connection = &self.connection;
        let mut tools = Vec::new();
        let mut cursors = std::collections::HashSet::new();
        let mut cursor = None;
        loop {
            let params = rmcp::model::PaginatedRequestParams::default().with_cursor(cursor);
            let page = match connection.service.list_tools(Some(params)).await {
                Ok(page) => page,
                Err(error) => {
                    let data = McpError::from_service(&connection.name, LIST.to_owned(), error)?;
                    return Err(McpError::server_error(
                        &connection.name,
                        LIST.to_owned(),
                        data,
                    ));
                }
            };
            tools.extend(page.tools);
            match next_page(page.next_cursor, &mut cursors) {
                Ok(None) => return Ok(tools),
                Ok(next) => cursor = next,
                Err(repeated) => {
                    return Err(McpError::Paging {
                        server: connection.name.clone(),
                        request: LIST.to_owned(),
                        cursor: repeated,
                    });
                }
            }
        }
    }
}

/// The cursor of the next page after a page that gave `next`: `None` at the end (no cursor,
/// or an empty one, as the reference clients read it); the cursor as an error when it was
/// given before (`seen`).
fn next_page(
    next: Option<String>,
    seen: &mut std::collections::HashSet<String>,
) -> Result<Option<String>, String> {
    match next {
        None => Ok(None),
        Some(next) if next.is_empty() => Ok(None),
        Some(next) if !seen.insert(next.clone()) => Err(next),
        Some(next) => Ok(Some(next)),
    }
}

impl<Deps: 'static> Toolset<Deps> for McpToolset<Deps> {
    fn name(&self) -> &str {
        &self.connection.name
    }

    fn list<'a>(
        &'a self,
        _ctx: &'a RunContext<Deps>,
    ) -> BoxFuture<'a, Result<ToolList<Deps>, BoxError>> {
        async move {
            let tools = self.mcp_tools().await?;
            Ok(tools
                .into_iter()
                .map(|tool| Arc::new(tool) as Arc<dyn Tool<Deps>>)
                .collect())
        }
        .boxed()
    }
}

/// `url` as errors and traces name the server: without its query, fragment and user info,
/// where services put keys (`?api_key=`, `user:token@`).
#[cfg(feature = "http")]
fn shown_url(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or(url);
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority.rsplit('@').next().unwrap_or(authority);
            format!("{scheme}://{host}{path}")
        }
        None => url.to_owned(),
    }
}

/// A builder of an [`McpToolset`]: how it connects to its server, how long requests may
/// take and what its tools' failures become. [`McpToolset::builder`] makes one.
#[derive(Debug)]
#[must_use]
pub struct McpToolsetBuilder {
    name: Option<String>,
    options: Options,
    stderr: Option<std::process::Stdio>,
}

impl McpToolsetBuilder {
    /// The toolset's name in errors and traces; by default `mcp:` and the name the server
    /// gives itself (`mcp:everything`).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// How long one `tools/call` may take ([`DEFAULT_CALL_TIMEOUT`] by default). A call
    /// that takes longer is cancelled (`notifications/cancelled`) and fails the run with
    /// [`McpError::Timeout`].
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.options.call_timeout = Some(timeout);
        self
    }

    /// Lets calls take as long as the server takes. A server that never answers then
    /// hangs the run until the run's own deadline, if it has one.
    pub fn no_call_timeout(mut self) -> Self {
        self.options.call_timeout = None;
        self
    }

    /// How long connecting and each `tools/list` may take ([`DEFAULT_REQUEST_TIMEOUT`] by
    /// default).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.options.request_timeout = timeout;
        self
    }

    /// What a tool failure the model could fix becomes ([`ToolFailures::Retry`] by
    /// default).
    pub fn tool_failures(mut self, failures: ToolFailures) -> Self {
        self.options.failures = failures;
        self
    }

    /// The retry budget of the server's tool `name` (its name on the server), over the
    /// toolset's default ([`ToolsetExt::max_retries`](golem::toolset::ToolsetExt::max_retries))
    /// and the agent's `tool_retries`.
    pub fn tool_max_retries(mut self, name: impl Into<String>, limit: RetryLimit) -> Self {
        self.options.max_retries.insert(name.into(), limit);
        self
    }

    /// The name the model calls each tool by, made from the server's: for servers whose
    /// names providers refuse (they take `^[a-zA-Z0-9_-]{1,64}$`; the protocol allows
    /// `files.read`). Calls still go to the server's name. [`tool_max_retries`](Self::tool_max_retries)
    /// takes the server's name; the run (budget counters, `ToolsetExt` filters and
    /// prefixes) sees the new one.
    pub fn rename_tools(mut self, rename: impl Fn(&str) -> String + Send + Sync + 'static) -> Self {
        self.options.rename = Some(Arc::new(rename));
        self
    }

    /// Where a [`stdio`](Self::stdio) server's stderr (its log) goes: by default to this
    /// process's stderr, as [`Stdio::inherit`](std::process::Stdio::inherit) says.
    ///
    /// [`Stdio::null`](std::process::Stdio::null) discards the log, and a file sends it
    /// there. [`Stdio::piped`](std::process::Stdio::piped) brings it into `tracing`: golem-mcp
    /// reads the pipe in a task and emits each line as a debug event with the target
    /// `golem_mcp::stderr` and the server's command in the `command` field, until the server
    /// closes its stderr. The pipe is always read, so a server that logs a lot never blocks
    /// on a full pipe, nor dies of a closed one.
    ///
    /// ```no_run
    /// use std::process::Stdio;
    /// use golem_mcp::McpToolset;
    ///
    /// # async fn example() -> Result<(), golem_mcp::McpError> {
    /// let mut command = tokio::process::Command::new("npx");
    /// command.args(["-y", "@modelcontextprotocol/server-everything"]);
    /// // The server's log lines become `tracing` debug events.
    /// let everything = McpToolset::builder()
    ///     .stderr(Stdio::piped())
    ///     .stdio(command)
    ///     .await?;
    /// # let _: McpToolset = everything;
    /// # Ok(())
    /// # }
    /// ```
    pub fn stderr(mut self, stderr: impl Into<std::process::Stdio>) -> Self {
        self.stderr = Some(stderr.into());
        self
    }

    /// Starts `command` as a child process and speaks MCP over its stdin and stdout; its
    /// stderr goes to this process's unless [`stderr`](Self::stderr) says otherwise. The
    /// child runs in its own process group, which is killed when the connection closes (so
    /// `npx`-style launchers take their server with them).
    ///
    /// # Errors
    /// [`McpError::Spawn`] when the program cannot be started, [`McpError::Connect`] when
    /// it does not complete the MCP handshake, [`McpError::Timeout`] when that takes longer
    /// than the request timeout.
    #[cfg(feature = "stdio")]
    pub async fn stdio<Deps>(
        mut self,
        command: impl Into<tokio::process::Command>,
    ) -> Result<McpToolset<Deps>, McpError> {
        use process_wrap::tokio::{CommandWrap, KillOnDrop};

        let mut command: tokio::process::Command = command.into();
        let program = command
            .as_std()
            .get_program()
            .to_string_lossy()
            .into_owned();
        command.kill_on_drop(true);
        let mut command = CommandWrap::from(command);
        // Process groups are Unix's; elsewhere the child alone is killed.
        #[cfg(unix)]
        command.wrap(process_wrap::tokio::ProcessGroup::leader());
        command.wrap(KillOnDrop);
        let mut transport = rmcp::transport::TokioChildProcess::builder(command);
        if let Some(stderr) = self.stderr.take() {
            transport = transport.stderr(stderr);
        }
        let (transport, stderr) = transport.spawn().map_err(|source| McpError::Spawn {
            command: program.clone(),
            source,
        })?;
        if let Some(stderr) = stderr {
            log_stderr(program.clone(), stderr);
        }
        let process_id = transport.id();
        self.connect(program, transport, process_id).await
    }

    /// Connects to the streamable-HTTP MCP server at `url` (e.g.
    /// `http://127.0.0.1:8000/mcp`).
    ///
    /// # Errors
    /// [`McpError::Connect`] when the handshake fails (nothing listens, HTTP errors),
    /// [`McpError::Timeout`] when it takes longer than the request timeout.
    #[cfg(feature = "http")]
    pub async fn http<Deps>(self, url: impl Into<String>) -> Result<McpToolset<Deps>, McpError> {
        let url: String = url.into();
        let transport = rmcp::transport::StreamableHttpClientTransport::from_uri(url.as_str());
        self.connect(shown_url(&url), transport, None).await
    }

    /// Connects over any rmcp transport (`golem_mcp::rmcp::transport`); `server` names it
    /// in errors.
    ///
    /// # Errors
    /// [`McpError::Connect`] when the handshake fails, [`McpError::Timeout`] when it takes
    /// longer than the request timeout.
    pub async fn serve<Deps, T, E, A>(
        self,
        server: impl Into<String>,
        transport: T,
    ) -> Result<McpToolset<Deps>, McpError>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        self.connect(server.into(), transport, None).await
    }

    async fn connect<Deps, T, E, A>(
        self,
        server: String,
        transport: T,
        process_id: Option<u32>,
    ) -> Result<McpToolset<Deps>, McpError>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let client = ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("golem", env!("CARGO_PKG_VERSION")),
        );
        let after = self.options.request_timeout;
        let service = tokio::time::timeout(after, client.serve(transport))
            .await
            .map_err(|_elapsed| McpError::Timeout {
                server: server.clone(),
                request: "`initialize`".to_owned(),
                after,
            })?
            .map_err(|error| McpError::Connect {
                server: server.clone(),
                source: Box::new(error),
            })?;
        // Each run lists the tools afresh: rmcp's cache would answer for a server that
        // went away (it serves a stale listing on an error) or changed its tools.
        service
            .peer()
            .set_response_cache_config(rmcp::ClientCacheConfig::disabled())
            .await;
        let name = self.name.unwrap_or_else(|| {
            let own = service
                .peer_info()
                .and_then(|info| info.server_info.as_ref().map(|info| info.name.clone()));
            format!("mcp:{}", own.unwrap_or(server))
        });
        Ok(McpToolset {
            connection: Arc::new(Connection {
                service,
                name,
                options: self.options,
                process_id,
            }),
            _deps: PhantomData,
        })
    }
}

/// Reads a server's piped stderr in a task and emits each line as a `tracing` debug event,
/// until the server closes it. Dropping the pipe instead would make the server's next log
/// line fail (EPIPE), which kills most servers.
#[cfg(feature = "stdio")]
fn log_stderr(command: String, stderr: tokio::process::ChildStderr) {
    use tokio::io::{AsyncBufReadExt, BufReader};

    tokio::spawn(async move {
        let mut stderr = BufReader::new(stderr);
        let mut line = Vec::new();
        loop {
            line.clear();
            match stderr.read_until(b'\n', &mut line).await {
                Ok(0) => break,
                Ok(_) => {
                    // Not `lines()`: a line that is not UTF-8 must not stop the reading.
                    let text = String::from_utf8_lossy(&line);
                    let text = text.trim_end_matches(['\n', '\r']);
                    tracing::debug!(target: "golem_mcp::stderr", %command, "{text}");
                }
                Err(error) => {
                    tracing::debug!(
                        target: "golem_mcp::stderr",
                        %command,
                        %error,
                        "cannot read the MCP server's stderr any more"
                    );
                    break;
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_empty_cursor_ends_the_listing_and_a_repeated_one_is_an_error() {
        let mut seen = std::collections::HashSet::new();
        assert_eq!(super::next_page(None, &mut seen), Ok(None));
        assert_eq!(super::next_page(Some(String::new()), &mut seen), Ok(None));
        assert_eq!(
            super::next_page(Some("2".into()), &mut seen),
            Ok(Some("2".to_owned()))
        );
        assert_eq!(
            super::next_page(Some("2".into()), &mut seen),
            Err("2".to_owned())
        );
    }

    #[cfg(feature = "http")]
    #[test]
    fn a_servers_url_is_named_without_its_keys() {
        use super::shown_url;
        assert_eq!(
            shown_url("https://user:token@mcp.example.com/s/abc/mcp?api_key=k#x"),
            "https://mcp.example.com/s/abc/mcp"
        );
        assert_eq!(shown_url("http://127.0.0.1:8080"), "http://127.0.0.1:8080");
    }
}
