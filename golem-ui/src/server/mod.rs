//! [`ChatServer`]: axum handlers that stream a run to a chat UI in either protocol, with
//! threads kept in a [`ThreadStore`] and approvals over HTTP.

mod error;

pub use error::ApiError;

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use futures_util::{FutureExt, StreamExt};
use golem::output::Output;
use golem::run::CancellationToken;
use golem::{Agent, AgentRun, RunError, RunEvent, RunState};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;

use crate::thread::{Lease, ThreadStore};
use crate::turn::Turn;
use crate::view::Render;
use crate::{Rejections, Rewind, ag_ui, ai_sdk};

/// The largest request body a server reads unless told otherwise: 1 MiB.
pub const DEFAULT_BODY_LIMIT: usize = 1 << 20;

/// An agent served to chat UIs over HTTP: `POST /ai-sdk` speaks the AI SDK UI message stream
/// (point `useChat`'s transport at it), `POST /ag-ui` speaks AG-UI (point an `HttpAgent` at
/// it). Each thread's [`RunState`] lives in a [`ThreadStore`] between requests.
///
/// A request names its thread (the chat's `id`, AG-UI's `threadId`) and brings a [`Turn`]:
/// a new user message, or answers to the calls the thread waits on. The server locks the
/// thread, goes on from the state it stored (never from the history the client sends),
/// streams the run, and saves the state before the stream's last event, so the client's next
/// request finds the thread free. A run that pauses for approval ends its stream with the
/// approval request (AI SDK) or an interrupt (AG-UI); the next request's answers go on with
/// it.
///
/// When the client disconnects, the run is stopped through its cancellation token: it ends
/// gracefully, every call in its history answered, and that state is saved.
///
/// The AI SDK's `regenerate()` and the edit of a message go back to the turn they name
/// ([`Rewind`]): the stored history is cut before that turn, and the turn is asked again, as
/// it was or with the edited message. The answer streams as a new message.
///
/// Refused requests get a JSON body `{"error": {"code", "message"}}` ([`ApiError`]): 400
/// for a malformed body, an empty turn (a message of files alone among them: files are not
/// read) or an answer to a call the thread does not wait on,
/// 404 for an unknown thread (a first user message without answers makes one), 409 when
/// another request holds the thread, the thread waits for answers the request does not
/// give, or it has no turn for the message a regenerate or an edit names, 413 for a body
/// over the limit.
///
/// ```
/// use golem::model::function::FunctionModel;
/// use golem::model::ModelResponse;
/// use golem::Agent;
/// use golem_ui::server::ChatServer;
/// use golem_ui::thread::SqliteThreadStore;
///
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// # let dir = std::env::temp_dir().join(format!("golem-ui-server-doc-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir)?;
/// let agent = Agent::<(), String>::builder(FunctionModel::new(|_, _| ModelResponse::text("Hi!")))
///     .build()?;
/// let store = SqliteThreadStore::open(dir.join("threads.db")).await?;
/// let app = axum::Router::new().nest("/chat", ChatServer::new(agent, (), store).router());
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// // axum::serve(listener, app).await?;
/// # drop((listener, app));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// ```
pub struct ChatServer<Deps, O: Output, S> {
    agent: Agent<Deps, O>,
    deps: Deps,
    store: S,
    body_limit: usize,
    rejections: Rejections,
    reasoning: bool,
    nested: bool,
    output_tool: Option<String>,
    partial: Option<Render<O::Partial>>,
    output: Option<Render<O>>,
}

impl<Deps, O: Output, S> std::fmt::Debug for ChatServer<Deps, O, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatServer")
            .field("body_limit", &self.body_limit)
            .field("rejections", &self.rejections)
            .finish_non_exhaustive()
    }
}

impl<Deps, O, S> ChatServer<Deps, O, S>
where
    Deps: Clone + Send + Sync + 'static,
    O: Output,
    S: ThreadStore,
{
    /// A server of `agent`, whose runs get a clone of `deps`, keeping threads in `store`.
    pub fn new(agent: Agent<Deps, O>, deps: Deps, store: S) -> Self {
        ChatServer {
            agent,
            deps,
            store,
            body_limit: DEFAULT_BODY_LIMIT,
            rejections: Rejections::Shown,
            reasoning: true,
            nested: true,
            output_tool: None,
            partial: None,
            output: None,
        }
    }

    /// The largest request body read, in bytes; a larger one gets 413.
    #[must_use]
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// Shows or hides rejected rounds; see [`Rejections`].
    #[must_use]
    pub fn rejections(mut self, rejections: Rejections) -> Self {
        self.rejections = rejections;
        self
    }

    /// Leaves the model's reasoning out of both protocols; it is sent by default.
    ///
    /// ```
    /// use golem::Agent;
    /// use golem_ui::server::ChatServer;
    /// use golem_ui::thread::ThreadStore;
    ///
    /// // A server that keeps the model's reasoning to itself.
    /// fn routes<S: ThreadStore>(agent: Agent<(), String>, store: S) -> axum::Router {
    ///     ChatServer::new(agent, (), store).without_reasoning().router()
    /// }
    /// ```
    #[must_use]
    pub fn without_reasoning(mut self) -> Self {
        self.reasoning = false;
        self
    }

    /// Leaves out what delegated agents do while their calls run, in both protocols (see
    /// the encoders' `without_nested_agents`); it is shown by default.
    ///
    /// ```
    /// use golem::Agent;
    /// use golem_ui::server::ChatServer;
    /// use golem_ui::thread::ThreadStore;
    ///
    /// // A server that shows delegated agents' calls and results, not their work.
    /// fn routes<S: ThreadStore>(agent: Agent<(), String>, store: S) -> axum::Router {
    ///     ChatServer::new(agent, (), store).without_nested_agents().router()
    /// }
    /// ```
    #[must_use]
    pub fn without_nested_agents(mut self) -> Self {
        self.nested = false;
        self
    }

    /// The name of the agent's output tool, when it is not
    /// `golem::DEFAULT_OUTPUT_TOOL_NAME`.
    #[must_use]
    pub fn output_tool_name(mut self, name: impl Into<String>) -> Self {
        self.output_tool = Some(name.into());
        self
    }

    /// Streams the structured answer as it fills in (see the encoders'
    /// `with_partial_output`).
    #[must_use]
    pub fn with_partial_output(mut self) -> Self
    where
        O::Partial: Serialize,
    {
        self.partial = Some(|partial| serde_json::to_value(partial).ok());
        self
    }

    /// Sends the run's output (see the encoders' `with_output`).
    #[must_use]
    pub fn with_output(mut self) -> Self
    where
        O: Serialize,
    {
        self.output = Some(|output| serde_json::to_value(output).ok());
        self
    }

    /// The routes: `POST /ai-sdk` and `POST /ag-ui`.
    pub fn router(self) -> Router {
        let limit = self.body_limit;
        Router::new()
            .route("/ai-sdk", post(ai_sdk_chat::<Deps, O, S>))
            .route("/ag-ui", post(ag_ui_run::<Deps, O, S>))
            .layer(DefaultBodyLimit::max(limit))
            .with_state(Arc::new(self))
    }
}

type Shared<Deps, O, S> = State<Arc<ChatServer<Deps, O, S>>>;

async fn ai_sdk_chat<Deps, O, S>(
    State(server): Shared<Deps, O, S>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response
where
    Deps: Clone + Send + Sync + 'static,
    O: Output,
    S: ThreadStore,
{
    let request: ai_sdk::ChatRequest = match parse(&headers, body) {
        Ok(request) => request,
        Err(error) => return error.into_response(),
    };
    let (started, continued) = match request.rewind() {
        Some(rewind) => (server.begin_again(&request.id, rewind).await, None),
        None => (
            server.begin(&request.id, request.turn()).await,
            request.continued_message_id(),
        ),
    };
    let (lease, run, message_id) = match started {
        Ok(started) => started,
        Err(error) => return error.into_response(),
    };
    let message_id = match continued {
        Some(id) => id.to_owned(),
        None => message_id,
    };
    let mut encoder = ai_sdk::Encoder::new(message_id).rejections(server.rejections);
    server.configure(encoder.view_mut());
    stream(server, lease, run, AiSdkWire(encoder), true)
}

async fn ag_ui_run<Deps, O, S>(
    State(server): Shared<Deps, O, S>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response
where
    Deps: Clone + Send + Sync + 'static,
    O: Output,
    S: ThreadStore,
{
    let input: ag_ui::RunAgentInput = match parse(&headers, body) {
        Ok(input) => input,
        Err(error) => return error.into_response(),
    };
    let turn = input.turn();
    let (lease, run, _) = match server.begin(&input.thread_id, turn).await {
        Ok(started) => started,
        Err(error) => return error.into_response(),
    };
    let mut encoder =
        ag_ui::Encoder::new(&input.thread_id, &input.run_id).rejections(server.rejections);
    server.configure(encoder.view_mut());
    stream(server, lease, run, AgUiWire(encoder), false)
}

/// The JSON body of a request. A body that is not declared JSON is refused, so a page on
/// another site cannot post one with a plain form or `text/plain` (which a browser sends
/// without asking the server first) on a signed-in user's cookies.
fn parse<T: DeserializeOwned>(
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<T, ApiError> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|media| {
            let media = media.trim().to_ascii_lowercase();
            media == "application/json"
                || (media.starts_with("application/") && media.ends_with("+json"))
        });
    if !json {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "not_json",
            "the request body must be sent as `content-type: application/json`",
        ));
    }
    let body = body.map_err(|rejection| match rejection.status() {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            "the request body is over the server's limit",
        ),
        _ => ApiError::malformed(rejection.body_text()),
    })?;
    serde_json::from_slice(&body)
        .map_err(|error| ApiError::malformed(format!("the request body is not valid: {error}")))
}

impl<Deps, O, S> ChatServer<Deps, O, S>
where
    Deps: Clone + Send + Sync + 'static,
    O: Output,
    S: ThreadStore,
{
    /// Locks the thread and makes the run the turn asks for; the lease is given back when
    /// the turn cannot apply.
    async fn begin(
        &self,
        thread_id: &str,
        turn: Turn,
    ) -> Result<(Lease, AgentRun<Deps, O>, String), ApiError> {
        if thread_id.is_empty() {
            return Err(ApiError::malformed("the thread id is empty"));
        }
        if turn.prompt.is_none() && turn.decisions.is_empty() {
            return Err(crate::TurnError::Empty.into());
        }
        // Only a first message makes a thread: answers need one that asked.
        let create = turn.prompt.is_some() && turn.decisions.is_empty();
        let mut lease = self.store.lock(thread_id, create).await?;
        let (run, messages) = match lease.take_state() {
            Some(mut state) => match turn.apply(&mut state) {
                Ok(()) => {
                    let messages = state.messages().len();
                    (self.agent.restore(state, self.deps.clone()), messages)
                }
                Err(error) => {
                    self.store.release(lease).await?;
                    return Err(error.into());
                }
            },
            // A new thread: it waits on no call, so it takes a prompt and no answers.
            None => match (turn.prompt, turn.decisions.first()) {
                (Some(prompt), None) => (self.agent.start(prompt, self.deps.clone()), 0),
                (_, decision) => {
                    self.store.release(lease).await?;
                    return Err(match decision {
                        Some(decision) => crate::TurnError::NotAwaited {
                            tool_call_id: decision.tool_call_id().to_owned(),
                        },
                        None => crate::TurnError::Empty,
                    }
                    .into());
                }
            },
        };
        Ok((lease, run, format!("{thread_id}-{messages}")))
    }

    /// Locks the thread and makes the run that asks one of its turns again ([`Rewind`]);
    /// the lease is given back when the thread has no such turn.
    async fn begin_again(
        &self,
        thread_id: &str,
        rewind: Rewind,
    ) -> Result<(Lease, AgentRun<Deps, O>, String), ApiError> {
        if thread_id.is_empty() {
            return Err(ApiError::malformed("the thread id is empty"));
        }
        let mut lease = self.store.lock(thread_id, false).await?;
        let Some(mut state) = lease.take_state() else {
            self.store.release(lease).await?;
            return Err(crate::TurnError::UnknownTurn.into());
        };
        match rewind.apply(&mut state) {
            Ok(turn) => Ok((
                lease,
                self.agent.restore(state, self.deps.clone()),
                format!("{thread_id}-{turn}"),
            )),
            Err(error) => {
                self.store.release(lease).await?;
                Err(error.into())
            }
        }
    }

    fn configure(&self, view: &mut crate::view::RunView<O>) {
        if !self.reasoning {
            view.hide_reasoning();
        }
        if !self.nested {
            view.hide_nested();
        }
        if let Some(name) = &self.output_tool {
            view.set_output_tool(name.clone());
        }
        if let Some(partial) = self.partial {
            view.set_partial(partial);
        }
        if let Some(output) = self.output {
            view.set_output(output);
        }
    }
}

/// One protocol's encoder, writing SSE text.
trait Wire<O: Output>: Send + 'static {
    fn start(&mut self, out: &mut String);
    fn event(&mut self, event: &RunEvent<O>, out: &mut String);
    /// The stream ends in a failure; its last event.
    fn error(&mut self, message: &str, out: &mut String);
    /// The stream ends; its last event.
    fn finish(&mut self, out: &mut String);
}

struct AiSdkWire<O: Output>(ai_sdk::Encoder<O>);

impl<O: Output> Wire<O> for AiSdkWire<O> {
    fn start(&mut self, out: &mut String) {
        let mut chunks = Vec::new();
        self.0.start(&mut chunks);
        out.extend(chunks.iter().map(ai_sdk::sse));
    }
    fn event(&mut self, event: &RunEvent<O>, out: &mut String) {
        let mut chunks = Vec::new();
        self.0.event(event, &mut chunks);
        out.extend(chunks.iter().map(ai_sdk::sse));
    }
    fn error(&mut self, message: &str, out: &mut String) {
        let mut chunks = Vec::new();
        self.0.error(message, &mut chunks);
        out.extend(chunks.iter().map(ai_sdk::sse));
        out.push_str(ai_sdk::DONE);
    }
    fn finish(&mut self, out: &mut String) {
        let mut chunks = Vec::new();
        self.0.finish(&mut chunks);
        out.extend(chunks.iter().map(ai_sdk::sse));
        out.push_str(ai_sdk::DONE);
    }
}

struct AgUiWire<O: Output>(ag_ui::Encoder<O>);

impl<O: Output> Wire<O> for AgUiWire<O> {
    fn start(&mut self, out: &mut String) {
        let mut events = Vec::new();
        self.0.start(&mut events);
        out.extend(events.iter().map(ag_ui::sse));
    }
    fn event(&mut self, event: &RunEvent<O>, out: &mut String) {
        let mut events = Vec::new();
        self.0.event(event, &mut events);
        out.extend(events.iter().map(ag_ui::sse));
    }
    fn error(&mut self, message: &str, out: &mut String) {
        let mut events = Vec::new();
        self.0.error(message, &mut events);
        out.extend(events.iter().map(ag_ui::sse));
    }
    fn finish(&mut self, out: &mut String) {
        let mut events = Vec::new();
        self.0.finish(&mut events);
        out.extend(events.iter().map(ag_ui::sse));
    }
}

/// How many SSE writes wait for a slow client before the run waits for it.
const BUFFERED_WRITES: usize = 64;

/// The streamed response: the run is driven in its own task, which saves the thread when
/// the run ends, also when the client went away.
fn stream<Deps, O, S>(
    server: Arc<ChatServer<Deps, O, S>>,
    lease: Lease,
    run: AgentRun<Deps, O>,
    wire: impl Wire<O>,
    ai_sdk_header: bool,
) -> Response
where
    Deps: Clone + Send + Sync + 'static,
    O: Output,
    S: ThreadStore,
{
    let (tx, rx) = mpsc::channel::<String>(BUFFERED_WRITES);
    tokio::spawn(drive(server, lease, run, wire, tx));
    let body = futures_util::stream::unfold(rx, |mut rx| async move {
        let text = rx.recv().await?;
        Some((Ok::<_, std::convert::Infallible>(text), rx))
    });
    let mut response = Body::from_stream(body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    if ai_sdk_header {
        headers.insert(ai_sdk::HEADER.0, HeaderValue::from_static(ai_sdk::HEADER.1));
    }
    response
}

async fn drive<Deps, O, S>(
    server: Arc<ChatServer<Deps, O, S>>,
    lease: Lease,
    run: AgentRun<Deps, O>,
    mut wire: impl Wire<O>,
    tx: mpsc::Sender<String>,
) where
    Deps: Clone + Send + Sync + 'static,
    O: Output,
    S: ThreadStore,
{
    // The client going away stops the run gracefully, so its state is whole.
    let token = CancellationToken::new();
    let watcher = tokio::spawn({
        let (tx, token) = (tx.clone(), token.clone());
        async move {
            tx.closed().await;
            token.cancel();
        }
    });
    let mut out = String::new();
    wire.start(&mut out);
    let streamed = AssertUnwindSafe(stream_run(
        run.with_cancellation(token),
        &mut wire,
        &mut out,
        &tx,
    ))
    .catch_unwind()
    .await;
    // A panic in the model's code (a tool's is caught by the run) loses the run's state: the
    // thread stays as it was, and is given back at once.
    let (state, failure) = streamed.unwrap_or_else(|_| (None, Some("the run failed".to_owned())));
    let saved = match state {
        Some(state) => server.store.save(lease, &state).await,
        None => server.store.release(lease).await,
    };
    match (saved, failure) {
        (Err(_), _) => wire.error("the thread could not be saved", &mut out),
        (Ok(()), Some(failure)) => wire.error(&failure, &mut out),
        (Ok(()), None) => wire.finish(&mut out),
    }
    let _ = tx.send(out).await;
    watcher.abort();
}

/// Streams `run` through `wire` to `tx`: the state to save (a paused run's own, taken back
/// from the stream) and what the UI is told of the run's failure, if it failed.
async fn stream_run<Deps, O>(
    run: AgentRun<Deps, O>,
    wire: &mut impl Wire<O>,
    out: &mut String,
    tx: &mpsc::Sender<String>,
) -> (Option<RunState>, Option<String>)
where
    Deps: Send + Sync + 'static,
    O: Output,
{
    let mut events = run.into_events();
    let mut state = None;
    let mut failure = None;
    while let Some(item) = events.next().await {
        match item {
            Ok(event) => {
                wire.event(&event, out);
                if let RunEvent::Finished(result) = event {
                    state = Some(RunState::from_history(result.messages));
                }
            }
            Err(error) => {
                failure = Some(describe(&error));
                state = Some(error.into_state());
            }
        }
        if !out.is_empty() {
            // A send fails only when the client went away: the run is being stopped.
            let _ = tx.send(std::mem::take(out)).await;
        }
    }
    // The stream ended without a result or an error: the run paused for approval.
    let state = state.or_else(|| events.into_run().map(AgentRun::into_state));
    (state, failure)
}

/// What the UI is told of a failed run: the stage, not the error's text, which may carry
/// what only the server should see (a provider's message, a tool's error).
fn describe(error: &RunError) -> String {
    if error.is_stopped() {
        "the run was stopped".into()
    } else {
        format!("the run failed at the {} stage", error.stage())
    }
}
