//! The cassette file: the exchanges in the order they were recorded, as JSON.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::CassetteError;
use super::secrets::Secrets;

/// The version of the file format this crate writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// What a cassette file holds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Tape {
    /// The file format's version, [`FORMAT_VERSION`].
    pub version: u32,
    /// The exchanges, in the order their requests arrived.
    pub exchanges: Vec<Exchange>,
}

/// One request and the response the server gave it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Exchange {
    /// What was asked.
    pub request: RecordedRequest,
    /// What was answered.
    pub response: RecordedResponse,
}

/// A request as a cassette holds it: no headers (credentials travel there), the body as
/// JSON when it is JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    /// `POST`, `GET`, …
    pub method: String,
    /// The path and query, e.g. `/v1/chat/completions`.
    pub path: String,
    /// The body: its JSON value, or a string when it is not JSON (`null` when empty).
    pub body: Value,
}

/// A response as a cassette holds it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordedResponse {
    /// The HTTP status.
    pub status: u16,
    /// The headers a client reads (content type, retry hints, request ids), by lower-case
    /// name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// The body, whole or as events.
    #[serde(flatten)]
    pub body: RecordedBody,
}

/// A response's body.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordedBody {
    /// A whole body: its JSON value, or a string when it is not JSON.
    Body(Value),
    /// A server-sent event stream, one event a string (without the blank line that ends
    /// it), replayed one event a chunk.
    Events(Vec<String>),
}

impl RecordedBody {
    /// The body as its content type reads it: an event stream is split into its events.
    pub(crate) fn read(content_type: &str, bytes: &[u8]) -> RecordedBody {
        let text = String::from_utf8_lossy(bytes);
        if content_type.starts_with("text/event-stream") {
            return RecordedBody::Events(events(&text));
        }
        RecordedBody::Body(value_of(bytes))
    }
}

/// A body as JSON when it parses, else as text; `null` when empty.
pub(crate) fn value_of(bytes: &[u8]) -> Value {
    if bytes.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()))
}

/// The bytes a recorded body is sent as.
pub(crate) fn bytes_of(value: &Value) -> Vec<u8> {
    match value {
        Value::Null => Vec::new(),
        Value::String(text) => text.as_bytes().to_vec(),
        other => serde_json::to_vec(other).unwrap_or_default(),
    }
}

/// An event stream's events, each without the blank line that ends it (`\n` line ends).
fn events(text: &str) -> Vec<String> {
    text.replace("\r\n", "\n")
        .split("\n\n")
        .filter(|event| !event.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

impl Tape {
    /// Reads a cassette file.
    pub fn load(path: &Path) -> Result<Tape, CassetteError> {
        let text = std::fs::read_to_string(path).map_err(|source| CassetteError::Io {
            path: path.to_owned(),
            source,
        })?;
        let tape: Tape = serde_json::from_str(&text).map_err(|source| CassetteError::Corrupt {
            path: path.to_owned(),
            source,
        })?;
        if tape.version != FORMAT_VERSION {
            return Err(CassetteError::Version {
                path: path.to_owned(),
                found: tape.version,
            });
        }
        Ok(tape)
    }

    /// Writes the cassette to `path` as pretty JSON (a changed cassette reads as a small
    /// diff), whole or not at all — and not at all when an exchange holds a string shaped
    /// like a provider key ([`CassetteError::Secret`]).
    pub fn save(&self, path: &Path) -> Result<(), CassetteError> {
        let secrets = Secrets::default();
        for (index, exchange) in self.exchanges.iter().enumerate() {
            let text = serde_json::to_string(exchange).unwrap_or_default();
            if let Some(what) = secrets.find(&text) {
                return Err(CassetteError::Secret {
                    path: path.to_owned(),
                    exchange: index,
                    what,
                });
            }
        }
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        write(path, &text)
    }
}

/// Writes `text` to `path`, whole or not at all (through a file beside it).
fn write(path: &Path, text: &str) -> Result<(), CassetteError> {
    let io = |source| CassetteError::Io {
        path: path.to_owned(),
        source,
    };
    if let Some(parent) = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
    {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    let partial = path.with_extension("partial");
    std::fs::write(&partial, text).map_err(io)?;
    std::fs::rename(&partial, path).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_stream_is_read_as_its_events() {
        let body = b"event: a\ndata: {\"x\":1}\n\ndata: [DONE]\r\n\r\n";
        assert_eq!(
            RecordedBody::read("text/event-stream; charset=utf-8", body),
            RecordedBody::Events(vec![
                "event: a\ndata: {\"x\":1}".to_owned(),
                "data: [DONE]".to_owned()
            ])
        );
    }

    #[test]
    fn a_body_is_json_when_it_parses_and_text_when_not() {
        assert_eq!(
            RecordedBody::read("application/json", br#"{"ok":true}"#),
            RecordedBody::Body(serde_json::json!({"ok": true}))
        );
        assert_eq!(
            RecordedBody::read("text/plain", b"busy"),
            RecordedBody::Body(Value::String("busy".to_owned()))
        );
        assert_eq!(bytes_of(&Value::String("busy".to_owned())), b"busy");
        assert_eq!(value_of(b""), Value::Null);
    }
}
