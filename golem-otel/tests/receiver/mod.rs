//! The OTLP receiver the tests send to: PyPI `oteltap` (pinned in requirements.txt,
//! installed by install.sh under the target directory), started on a free loopback port,
//! read through the line of JSON it prints for every span it decodes.
//!
//! A receiver that cannot be installed or started fails the test: it is never skipped.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

/// How long the receiver may take to start, or to print what it got, before the test
/// gives up on it (a guard against a hung process, not a measurement).
const PATIENCE: Duration = Duration::from_secs(120);

/// A span as the receiver decoded it.
#[derive(Debug, Clone)]
pub(crate) struct Span {
    pub(crate) trace: String,
    pub(crate) id: String,
    /// The parent's id; empty for a root.
    pub(crate) parent: String,
    pub(crate) name: String,
    /// `internal`, `client`, `server`, `producer`, `consumer`.
    pub(crate) kind: String,
    /// `unset`, `ok`, `error`.
    pub(crate) status: String,
    pub(crate) start: u64,
    /// Attributes as text, whatever their OTLP type.
    pub(crate) attrs: BTreeMap<String, String>,
    /// The integer attributes' values.
    pub(crate) ints: BTreeMap<String, i64>,
    pub(crate) events: Vec<Event>,
}

#[derive(Debug, Clone)]
pub(crate) struct Event {
    pub(crate) name: String,
    pub(crate) attrs: BTreeMap<String, String>,
    pub(crate) ints: BTreeMap<String, i64>,
}

impl Span {
    /// The only span named `name`.
    pub(crate) fn named<'a>(spans: &'a [Span], name: &str) -> &'a Span {
        let found: Vec<&Span> = spans.iter().filter(|span| span.name == name).collect();
        assert_eq!(found.len(), 1, "one span named {name}: {spans:#?}");
        found[0]
    }

    pub(crate) fn attr(&self, key: &str) -> &str {
        match self.attrs.get(key) {
            Some(value) => value,
            None => panic!(
                "span {} has no attribute {key}: {:#?}",
                self.name, self.attrs
            ),
        }
    }

    /// An attribute that arrived as an OTLP integer.
    pub(crate) fn int(&self, key: &str) -> i64 {
        match self.ints.get(key) {
            Some(value) => *value,
            None => panic!("span {} has no integer {key}: {:#?}", self.name, self.attrs),
        }
    }

    pub(crate) fn has(&self, key: &str) -> bool {
        self.attrs.contains_key(key)
    }
}

/// A running `oteltap`, killed on drop.
pub(crate) struct Receiver {
    child: Child,
    port: u16,
    lines: mpsc::Receiver<String>,
}

impl Receiver {
    /// Installs `oteltap` if need be and starts it on a free loopback port.
    pub(crate) fn start() -> Receiver {
        let python = install();
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free loopback port")
            .port();
        let mut child = Command::new(&python)
            .args(["-u", "-m", "oteltap", "--port", &port.to_string()])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|error| panic!("{} cannot start oteltap: {error}", python.display()));
        let stdout = child.stdout.take().expect("piped");
        let (send, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let receiver = Receiver { child, port, lines };
        loop {
            let line = receiver.next_line("oteltap to listen");
            if line.starts_with("Listening for OTLP/HTTP telemetry") {
                return receiver;
            }
        }
    }

    /// The OTLP/HTTP base URL to export to.
    pub(crate) fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The spans that arrived, up to and with the one named `root` (a run's span ends,
    /// and so arrives, after those inside it), and every line the receiver printed.
    pub(crate) fn spans_until(&self, root: &str) -> (Vec<Span>, Vec<String>) {
        let mut spans = Vec::new();
        let mut lines = Vec::new();
        while !spans.iter().any(|span: &Span| span.name == root) {
            let line = self.next_line(root);
            if let Ok(value) = serde_json::from_str::<Value>(&line) {
                collect(&value, &mut spans);
            }
            lines.push(line);
        }
        (spans, lines)
    }

    fn next_line(&self, waiting_for: &str) -> String {
        match self.lines.recv_timeout(PATIENCE) {
            Ok(line) => line,
            Err(error) => {
                panic!("oteltap printed nothing more while waiting for {waiting_for}: {error}")
            }
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The venv's python, after running install.sh (which fails loudly, and so does this).
fn install() -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/install.sh");
    let output = Command::new("bash")
        .arg(&script)
        .stderr(Stdio::inherit())
        .output()
        .unwrap_or_else(|error| panic!("{} cannot run: {error}", script.display()));
    assert!(
        output.status.success(),
        "{} failed ({}): oteltap is needed for this test",
        script.display(),
        output.status
    );
    let stdout = String::from_utf8(output.stdout).expect("a path");
    PathBuf::from(stdout.lines().last().expect("the python path").trim())
}

/// Every span in `value` (oteltap prints one per line, in OTLP's JSON form).
fn collect(value: &Value, spans: &mut Vec<Span>) {
    match value {
        Value::Array(items) => {
            for item in items {
                collect(item, spans);
            }
        }
        Value::Object(object) => {
            if let Some(id) = field(object, "spanId", "span_id") {
                spans.push(span(object, id));
                return;
            }
            for (_, child) in object {
                collect(child, spans);
            }
        }
        _ => {}
    }
}

fn field<'a>(
    object: &'a serde_json::Map<String, Value>,
    camel: &str,
    snake: &str,
) -> Option<&'a Value> {
    object.get(camel).or_else(|| object.get(snake))
}

fn span(object: &serde_json::Map<String, Value>, id: &Value) -> Span {
    let text =
        |camel: &str, snake: &str| field(object, camel, snake).map(scalar).unwrap_or_default();
    let kind = match text("kind", "kind").as_str() {
        "1" | "SPAN_KIND_INTERNAL" => "internal",
        "2" | "SPAN_KIND_SERVER" => "server",
        "3" | "SPAN_KIND_CLIENT" => "client",
        "4" | "SPAN_KIND_PRODUCER" => "producer",
        "5" | "SPAN_KIND_CONSUMER" => "consumer",
        _ => "unspecified",
    };
    let status = match object
        .get("status")
        .and_then(|s| s.get("code"))
        .map(scalar)
        .as_deref()
    {
        Some("1" | "STATUS_CODE_OK") => "ok",
        Some("2" | "STATUS_CODE_ERROR") => "error",
        _ => "unset",
    };
    let events = object
        .get("events")
        .and_then(Value::as_array)
        .map(|events| {
            events
                .iter()
                .map(|event| {
                    let (attrs, ints) = event.get("attributes").map(attributes).unwrap_or_default();
                    Event {
                        name: event.get("name").map(scalar).unwrap_or_default(),
                        attrs,
                        ints,
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let (attrs, ints) = object.get("attributes").map(attributes).unwrap_or_default();
    Span {
        trace: text("traceId", "trace_id"),
        id: scalar(id),
        parent: text("parentSpanId", "parent_span_id"),
        name: text("name", "name"),
        kind: kind.to_owned(),
        status: status.to_owned(),
        start: text("startTimeUnixNano", "start_time_unix_nano")
            .parse()
            .unwrap_or(0),
        attrs,
        ints,
        events,
    }
}

/// OTLP key-value attributes as text, and the integers among them.
fn attributes(attrs: &Value) -> (BTreeMap<String, String>, BTreeMap<String, i64>) {
    let mut out = BTreeMap::new();
    let mut ints = BTreeMap::new();
    for attr in attrs.as_array().into_iter().flatten() {
        let Some(key) = attr.get("key").and_then(Value::as_str) else {
            continue;
        };
        if let Some(int) = attr.get("value").and_then(|value| value.get("intValue")) {
            let int = scalar(int).parse().expect("an OTLP integer");
            ints.insert(key.to_owned(), int);
        }
        let value = match attr.get("value") {
            Some(Value::Object(value)) => value.values().next().map(scalar).unwrap_or_default(),
            Some(other) => scalar(other),
            None => String::new(),
        };
        out.insert(key.to_owned(), value);
    }
    (out, ints)
}

fn scalar(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}
