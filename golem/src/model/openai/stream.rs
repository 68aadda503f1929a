//! Chat Completions chunks: `data: {chat.completion.chunk}` events, ended by
//! `data: [DONE]`, read into deltas and into the chat completion they add up to.
//!
//! Each part gets its number when it begins, in the order parts begin, and keeps it: the
//! final response orders them reasoning, text, calls, which is the same order unless a
//! server sends text after a call has begun.
//!
//! A call begins once its name is complete, since some servers send the name in several
//! fragments (and some send the id first): at its first arguments, when another part
//! begins, or at the end of the stream, whichever comes first.
//!
//! The response is complete at `[DONE]`, or when the body ends after the finish reason and,
//! when it was asked for, the usage: some compatible servers never send `[DONE]`.

use std::borrow::Cow;
use std::ops::Range;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use super::content::Content;
use super::wire::{null_default, text_only};
use crate::model::http::{Assemble, Deltas, Fault};
use crate::model::{ResponseDelta, StreamFault};

/// The state of one streamed chat completion.
#[derive(Debug, Default)]
pub struct Chunks {
    /// Whether the usage was asked for (`stream_options.include_usage`), so a stream
    /// without `[DONE]` is complete only once it arrived.
    usage_asked: bool,
    id: Option<String>,
    model: Option<String>,
    reasoning: String,
    content: String,
    refusal: Option<String>,
    calls: Vec<Call>,
    finish_reason: Option<String>,
    usage: Option<Box<RawValue>>,
    /// The numbers of the reasoning and text parts, once they began.
    reasoning_part: Option<usize>,
    text_part: Option<usize>,
    /// How many parts have begun.
    parts: usize,
}

#[derive(Debug)]
struct Call {
    index: u64,
    id: String,
    name: String,
    arguments: String,
    /// Its part, once its start was reported.
    part: Option<usize>,
}

impl Chunks {
    /// The state of a stream that asked for its usage (`usage_asked`) or not.
    pub(crate) fn new(usage_asked: bool) -> Self {
        Chunks {
            usage_asked,
            ..Chunks::default()
        }
    }

    /// The number of a part other than a call that begins now: the calls whose names
    /// arrived begin before it.
    fn begin(&mut self, deltas: &mut Deltas) -> usize {
        self.start_calls(0..self.calls.len(), false, deltas);
        self.parts += 1;
        self.parts - 1
    }

    /// Starts the calls in `calls` that have not started: those with a name, or all of
    /// them with `nameless`.
    fn start_calls(&mut self, calls: Range<usize>, nameless: bool, deltas: &mut Deltas) {
        for call in &mut self.calls[calls] {
            if call.part.is_some() || (call.name.is_empty() && !nameless) {
                continue;
            }
            let part = self.parts;
            self.parts += 1;
            call.part = Some(part);
            deltas.push(ResponseDelta::ToolCallStart {
                part,
                tool_name: call.name.clone(),
                tool_call_id: call.id.clone(),
            });
        }
    }
}

impl Assemble for Chunks {
    fn event(&mut self, _name: &str, data: &str, deltas: &mut Deltas) -> Result<bool, Fault> {
        if data.trim() == "[DONE]" {
            self.start_calls(0..self.calls.len(), true, deltas);
            return Ok(true);
        }
        let chunk: Chunk<'_> = serde_json::from_str(data).map_err(|error| {
            Fault::corrupt(format!("a chunk is not a chat completion chunk: {error}"))
        })?;
        if let Some(error) = chunk.error {
            return Err(provider_error(&error));
        }
        if chunk.object.as_deref() == Some("error") {
            return Err(provider_error(&serde_json::json!({
                "message": chunk.message.unwrap_or_default(),
            })));
        }
        if self.id.is_none() {
            self.id = chunk.id.map(Cow::into_owned);
        }
        if self.model.is_none() {
            self.model = chunk.model.map(Cow::into_owned);
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage.to_owned());
        }
        // Only the first choice is read, as for a whole completion.
        for choice in chunk.choices.into_iter().filter(|choice| choice.index == 0) {
            let delta = choice.delta;
            let content = delta.content.unwrap_or_default();
            let written =
                |text: &Option<Cow<'_, str>>| text.as_ref().is_some_and(|t| !t.is_empty());
            if let Some(reasoning) = [
                delta.reasoning_content,
                delta.reasoning.map(Cow::Owned),
                content.thinking.map(Cow::Owned),
            ]
            .into_iter()
            .find(written)
            .flatten()
            {
                self.reasoning.push_str(&reasoning);
                let part = match self.reasoning_part {
                    Some(part) => part,
                    None => {
                        let part = self.begin(deltas);
                        *self.reasoning_part.insert(part)
                    }
                };
                deltas.push(ResponseDelta::Thinking {
                    part,
                    text: reasoning.into_owned(),
                });
            }
            if let Some(content) = content.text.filter(|text| !text.is_empty()) {
                self.content.push_str(&content);
                let part = match self.text_part {
                    Some(part) => part,
                    None => {
                        let part = self.begin(deltas);
                        *self.text_part.insert(part)
                    }
                };
                deltas.push(ResponseDelta::Text {
                    part,
                    text: content.into_owned(),
                });
            }
            if let Some(refusal) = delta.refusal {
                self.refusal
                    .get_or_insert_with(String::new)
                    .push_str(&refusal);
            }
            for call in delta.tool_calls {
                self.call(call, deltas);
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason);
            }
        }
        Ok(false)
    }

    fn body_ended(&mut self, deltas: &mut Deltas) -> bool {
        let complete = self.finish_reason.is_some() && (self.usage.is_some() || !self.usage_asked);
        if complete {
            self.start_calls(0..self.calls.len(), true, deltas);
        }
        complete
    }

    fn finish(self) -> Result<Vec<u8>, Fault> {
        let Some(finish_reason) = self.finish_reason else {
            return Err(Fault::new(
                StreamFault::EndedEarly,
                "the stream ended with [DONE] but no choice had a finish_reason",
            ));
        };
        let completion = Completion {
            id: self.id.as_deref(),
            model: self.model.as_deref(),
            choices: [CompletionChoice {
                index: 0,
                message: CompletionMessage {
                    role: "assistant",
                    content: (!self.content.is_empty()).then_some(self.content.as_str()),
                    reasoning_content: (!self.reasoning.is_empty())
                        .then_some(self.reasoning.as_str()),
                    refusal: self.refusal.as_deref(),
                    tool_calls: self
                        .calls
                        .iter()
                        .map(|call| CompletionCall {
                            id: &call.id,
                            kind: "function",
                            function: CompletionFunction {
                                name: &call.name,
                                arguments: &call.arguments,
                            },
                        })
                        .collect(),
                },
                finish_reason: &finish_reason,
            }],
            usage: self.usage.as_deref(),
        };
        // Sized for the texts up front: a large answer is copied once, not at each doubling.
        let texts = self.content.len()
            + self.reasoning.len()
            + self
                .calls
                .iter()
                .map(|call| call.arguments.len())
                .sum::<usize>();
        let mut body = Vec::with_capacity(texts + texts / 8 + 1024);
        serde_json::to_writer(&mut body, &completion)
            .map_err(|error| Fault::corrupt(error.to_string()))?;
        Ok(body)
    }
}

impl Chunks {
    fn call(&mut self, call: ChunkCall<'_>, deltas: &mut Deltas) {
        let id = call.id.filter(|id| !id.is_empty());
        // A call is known by its index; a new id at a known index (servers that number
        // every call 0) is a new call.
        let position = self.calls.iter().rposition(|known| {
            known.index == call.index
                && id
                    .as_deref()
                    .is_none_or(|id| known.id.is_empty() || known.id == id)
        });
        let (name, arguments) = match call.function {
            Some(function) => (function.name, function.arguments),
            None => (None, None),
        };
        let position = match position {
            Some(position) => {
                let known = &mut self.calls[position];
                if known.id.is_empty()
                    && let Some(id) = id
                {
                    known.id = id.into_owned();
                }
                if let Some(name) = name.filter(|name| !name.is_empty()) {
                    known.name.push_str(&name);
                }
                position
            }
            None => {
                self.calls.push(Call {
                    index: call.index,
                    id: id.map(Cow::into_owned).unwrap_or_default(),
                    name: name.map(Cow::into_owned).unwrap_or_default(),
                    arguments: String::new(),
                    part: None,
                });
                self.calls.len() - 1
            }
        };
        // The name may go on in the next fragment: the call starts with its first
        // arguments (after the calls before it), or when another part begins.
        let Some(arguments) = arguments.filter(|a| !a.is_empty()) else {
            return;
        };
        let part = match self.calls[position].part {
            Some(part) => part,
            None => {
                self.start_calls(0..position, false, deltas);
                self.start_calls(position..position + 1, true, deltas);
                self.calls[position].part.unwrap_or_default()
            }
        };
        let known = &mut self.calls[position];
        known.arguments.push_str(&arguments);
        deltas.push(ResponseDelta::ToolCallArgs {
            part,
            args: arguments.into_owned(),
        });
    }
}

/// An error the provider sent in the stream: `{"error": {"message": ...}}`.
fn provider_error(error: &Value) -> Fault {
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .or_else(|| error.as_str())
        .map_or_else(|| error.to_string(), str::to_owned);
    // The code, which names the failure (`rate_limit_exceeded`), else the type (`tokens`,
    // `server_error`).
    let kind = error
        .get("code")
        .and_then(Value::as_str)
        .or_else(|| error.get("type").and_then(Value::as_str));
    Fault::new(
        StreamFault::Provider,
        match kind {
            Some(kind) => format!("{kind}: {message}"),
            None => message,
        },
    )
}

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    object: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "null_default")]
    choices: Vec<ChunkChoice<'a>>,
    #[serde(borrow, default)]
    usage: Option<&'a RawValue>,
    #[serde(default)]
    error: Option<Value>,
    /// vLLM's error chunks: `{"object": "error", "message": ...}`.
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize)]
struct ChunkChoice<'a> {
    #[serde(default)]
    index: u64,
    #[serde(borrow, default)]
    delta: ChunkDelta<'a>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct ChunkDelta<'a> {
    #[serde(borrow, default)]
    content: Option<Content<'a>>,
    #[serde(borrow, default)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "text_only")]
    reasoning: Option<String>,
    #[serde(borrow, default)]
    refusal: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "null_default")]
    tool_calls: Vec<ChunkCall<'a>>,
}

#[derive(Deserialize)]
struct ChunkCall<'a> {
    #[serde(default)]
    index: u64,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    function: Option<ChunkFunction<'a>>,
}

#[derive(Deserialize)]
struct ChunkFunction<'a> {
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    arguments: Option<Cow<'a, str>>,
}

/// The chat completion the chunks add up to, as the non-streamed API sends it.
#[derive(Serialize)]
struct Completion<'a> {
    id: Option<&'a str>,
    model: Option<&'a str>,
    choices: [CompletionChoice<'a>; 1],
    usage: Option<&'a RawValue>,
}

#[derive(Serialize)]
struct CompletionChoice<'a> {
    index: u32,
    message: CompletionMessage<'a>,
    finish_reason: &'a str,
}

#[derive(Serialize)]
struct CompletionMessage<'a> {
    role: &'static str,
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<&'a str>,
    refusal: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<CompletionCall<'a>>,
}

#[derive(Serialize)]
struct CompletionCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: CompletionFunction<'a>,
}

#[derive(Serialize)]
struct CompletionFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(chunks: &mut Chunks, data: &str) -> (bool, Vec<ResponseDelta>) {
        let mut deltas = Deltas::default();
        let done = chunks.event("message", data, &mut deltas).expect("a chunk");
        (done, deltas.into_deltas())
    }

    #[test]
    fn a_stream_error_is_named_by_its_code_else_its_type() {
        let limited = provider_error(&serde_json::json!({
            "message": "Slow down.", "type": "tokens", "code": "rate_limit_exceeded"
        }));
        assert_eq!(limited.message, "rate_limit_exceeded: Slow down.");
        let failed = provider_error(&serde_json::json!({
            "message": "Oops.", "type": "server_error", "code": null
        }));
        assert_eq!(failed.message, "server_error: Oops.");
    }

    #[test]
    fn tool_call_fragments_are_joined_by_index() {
        let mut chunks = Chunks::default();
        feed(
            &mut chunks,
            r#"{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"f","arguments":""}},{"index":1,"id":"call_b","type":"function","function":{"name":"g","arguments":"{\"x\""}}]}}]}"#,
        );
        let (_, deltas) = feed(
            &mut chunks,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":":1}"}},{"index":0,"function":{"arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#,
        );
        assert_eq!(
            deltas,
            [
                ResponseDelta::ToolCallArgs {
                    part: 1,
                    args: ":1}".into()
                },
                ResponseDelta::ToolCallArgs {
                    part: 0,
                    args: "{}".into()
                },
            ]
        );
        assert!(feed(&mut chunks, "[DONE]").0);
        let body: Value =
            serde_json::from_slice(&chunks.finish().expect("complete")).expect("JSON");
        assert_eq!(
            body["choices"][0]["message"]["tool_calls"],
            serde_json::json!([
                {"id": "call_a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "call_b", "type": "function", "function": {"name": "g", "arguments": "{\"x\":1}"}},
            ])
        );
    }

    #[test]
    fn done_without_a_finish_reason_is_early() {
        let mut chunks = Chunks::default();
        feed(
            &mut chunks,
            r#"{"choices":[{"index":0,"delta":{"content":"Hi"}}]}"#,
        );
        assert!(feed(&mut chunks, "[DONE]").0);
        assert_eq!(
            chunks.finish().map(|_| ()).expect_err("early").fault,
            StreamFault::EndedEarly
        );
    }
}
