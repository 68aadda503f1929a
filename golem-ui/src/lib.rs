//! Serve golem runs to web frontends.
//!
//! A chat UI talks to an agent through one of two protocols: the AI SDK's UI message stream
//! ([`ai_sdk`], the `ai` package's `useChat`) or AG-UI ([`ag_ui`], `@ag-ui/client`,
//! CopilotKit). Each module has an `Encoder` that turns a run's
//! [`RunEvent`](golem::RunEvent)s into that protocol's events, and the request type its
//! client posts, read as a [`Turn`]: a new prompt and answers to the calls that wait for
//! approval. Nothing else the client sends is trusted; the thread's history is the
//! [`RunState`](golem::RunState) the server stored.
//!
//! The mappings are pure: they do no I/O and fit any server. The [web guide](guide) shows
//! the whole path.
//!
//! # Features
//!
//! - `server` (default): [`ChatServer`](server::ChatServer), axum handlers that stream a run
//!   in either protocol, with threads and approvals over HTTP.
//! - `sqlite` (default): [`SqliteThreadStore`](thread::SqliteThreadStore), threads in an
//!   embedded SQLite database file (sqlx), for a server in one process.
//! - `postgres` (default): [`PostgresThreadStore`](thread::PostgresThreadStore), threads in a
//!   Postgres database (sqlx) that several server processes behind a load balancer share;
//!   the database decides which request holds a thread.
//!
//! With `default-features = false` the crate is the mappings and the request types alone.
#![deny(missing_docs)]

pub mod ag_ui;
pub mod ai_sdk;
mod rewind;
#[cfg(feature = "server")]
pub mod server;
pub mod thread;
mod turn;
mod view;

pub use rewind::{Rewind, TurnAt};
pub use turn::{DEFAULT_DENIAL, Decision, Turn, TurnError};
pub use view::Rejections;

use golem::run::Rejection;
use serde::Serialize;
use serde_json::{Value, json};

/// The guide: serving runs to web frontends, and what the server trusts.
#[doc = include_str!("../../docs/web.md")]
pub mod guide {}

/// What a UI is told of a rejection: `{"turn", "stage", "toolName", "toolCallId", "retry",
/// "maxRetries", "feedback"}`.
pub(crate) fn rejection_json(rejection: &Rejection) -> Value {
    json!({
        "turn": rejection.turn,
        "stage": rejection.stage.to_string(),
        "toolName": rejection.tool_name(),
        "toolCallId": rejection.tool_call_id(),
        "retry": rejection.retry,
        "maxRetries": rejection.max_retries,
        "feedback": rejection.feedback,
    })
}

/// `value` as one SSE event, serialized straight after its `data: ` prefix.
pub(crate) fn sse_line(value: &impl Serialize) -> String {
    let mut line = Vec::with_capacity(128);
    line.extend_from_slice(b"data: ");
    if serde_json::to_writer(&mut line, value).is_err() {
        line.truncate(6);
        line.extend_from_slice(b"null");
    }
    line.extend_from_slice(b"\n\n");
    // serde_json writes UTF-8 only.
    String::from_utf8(line).unwrap_or_default()
}
