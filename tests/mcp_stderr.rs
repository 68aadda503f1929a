//! A stdio MCP server's piped stderr, read by golem-mcp and emitted as `tracing` events.
//!
//! Alone in its test binary: tracing caches whether a callsite is enabled process-wide, and
//! tests running beside this one without a subscriber could race it.

#[path = "mcp/servers.rs"]
mod servers;

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use golem::RunContext;
use golem::toolset::Toolset;
use golem_mcp::McpToolset;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

/// One event: its target, level, `command` field and message.
#[derive(Debug, Clone, PartialEq)]
struct Logged {
    target: String,
    level: Level,
    command: String,
    message: String,
}

/// A layer that keeps every event.
struct Capture(Arc<Mutex<Vec<Logged>>>);

#[derive(Default)]
struct Fields {
    command: String,
    message: String,
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let value = format!("{value:?}");
        match field.name() {
            "command" => self.command = value,
            "message" => self.message = value,
            _ => {}
        }
    }
}

impl<S: Subscriber> Layer<S> for Capture {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        event.record(&mut fields);
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Logged {
                target: event.metadata().target().to_owned(),
                level: *event.metadata().level(),
                command: fields.command,
                message: fields.message,
            });
    }
}

#[tokio::test]
async fn each_line_of_a_piped_stderr_is_a_debug_event_naming_the_command() {
    let logged = Arc::new(Mutex::new(Vec::new()));
    let subscriber = tracing_subscriber::registry().with(Capture(Arc::clone(&logged)));
    // The test's runtime has one thread, so the task reading the pipe logs here too.
    let _default = tracing::subscriber::set_default(subscriber);

    let toolset: McpToolset = McpToolset::builder()
        .stderr(std::process::Stdio::piped())
        .stdio(servers::everything_command())
        .await
        .expect("the reference server starts");
    toolset
        .list(&RunContext::new(()))
        .await
        .expect("the server answers `tools/list`");

    // The reference server logs this line at its start (`transports/stdio.js`).
    let expected = Logged {
        target: "golem_mcp::stderr".to_owned(),
        level: Level::DEBUG,
        command: "node".to_owned(),
        message: "Starting default (STDIO) server...".to_owned(),
    };
    let started = Instant::now();
    loop {
        let events = logged
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if events.contains(&expected) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no event {expected:?} among {events:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
