//! A collector for the example: an OTLP/HTTP endpoint on loopback that decodes the spans
//! sent to its `/v1/traces` and keeps them, so the example can show what it exported
//! without a collector of your own. Point the exporter at a real one (Jaeger, an
//! OpenTelemetry Collector, Logfire...) in your program.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;

/// The loopback collector and the spans it received.
#[derive(Debug, Clone)]
pub(crate) struct Collector {
    port: u16,
    spans: Arc<Mutex<Vec<Span>>>,
}

impl Collector {
    /// Listens on a free loopback port, answering every request from a thread of its own.
    pub(crate) fn start() -> std::io::Result<Collector> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let spans = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&spans);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let kept = Arc::clone(&kept);
                std::thread::spawn(move || serve(stream, &kept));
            }
        });
        Ok(Collector { port, spans })
    }

    /// The OTLP/HTTP base URL to export to.
    pub(crate) fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The spans received so far, as a tree: one line per span, indented under its parent,
    /// with its rejection events.
    pub(crate) fn tree(&self) -> String {
        let spans = self.spans.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut out = String::new();
        walk(&spans, &[], 0, &mut out);
        out
    }
}

/// Answers the requests of one connection: each body is an OTLP export, decoded and kept.
fn serve(stream: TcpStream, kept: &Mutex<Vec<Span>>) {
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    loop {
        let mut length = 0;
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        if let Ok(request) = ExportTraceServiceRequest::decode(body.as_slice()) {
            let mut spans = kept.lock().unwrap_or_else(|e| e.into_inner());
            for resource in request.resource_spans {
                for scope in resource.scope_spans {
                    spans.extend(scope.spans);
                }
            }
        }
        let answer =
            "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

fn walk(spans: &[Span], parent: &[u8], depth: usize, out: &mut String) {
    let mut children: Vec<&Span> = spans
        .iter()
        .filter(|span| span.parent_span_id == parent)
        .collect();
    children.sort_by_key(|span| span.start_time_unix_nano);
    for span in children {
        let indent = "  ".repeat(depth);
        out.push_str(&format!(
            "span     │ {indent}{}{}\n",
            span.name,
            summary(span)
        ));
        for event in &span.events {
            let attr = |key: &str| attribute(&event.attributes, key).unwrap_or_default();
            if let Some(stage) = attribute(&event.attributes, "golem.retry.stage") {
                // The reason may quote the model or the user: exported only with
                // `capture_content`, which this example leaves off.
                let reason = attribute(&event.attributes, "golem.retry.reason")
                    .map(|reason| format!(": {reason}"))
                    .unwrap_or_default();
                out.push_str(&format!(
                    "span     │ {indent}  event: {} ({stage}, retry {} of {}{reason})\n",
                    event.name,
                    attr("golem.retry.attempt"),
                    attr("golem.retry.max"),
                ));
            }
        }
        walk(spans, &span.span_id, depth + 1, out);
    }
}

/// The attributes worth a glance: tokens, finish reason, error type.
fn summary(span: &Span) -> String {
    let attr = |key: &str| attribute(&span.attributes, key);
    let mut parts = Vec::new();
    if let (Some(input), Some(output)) = (
        attr("gen_ai.usage.input_tokens"),
        attr("gen_ai.usage.output_tokens"),
    ) {
        parts.push(format!("{input} + {output} tokens"));
    }
    if let Some(reason) = attr("gen_ai.response.finish_reasons") {
        parts.push(format!("finish {reason}"));
    }
    if let Some(requests) = attr("golem.usage.rejected.requests") {
        parts.push(format!("{requests} rejected rounds"));
    }
    if let Some(error) = attr("error.type") {
        parts.push(format!("error {error}"));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(": {}", parts.join(", "))
    }
}

fn attribute(
    attributes: &[opentelemetry_proto::tonic::common::v1::KeyValue],
    key: &str,
) -> Option<String> {
    let value = attributes.iter().find(|kv| kv.key == key)?.value.as_ref()?;
    Some(match value.value.as_ref()? {
        Value::StringValue(text) => text.clone(),
        Value::IntValue(number) => number.to_string(),
        Value::BoolValue(flag) => flag.to_string(),
        Value::DoubleValue(number) => number.to_string(),
        other => format!("{other:?}"),
    })
}
