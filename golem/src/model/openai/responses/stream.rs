//! Responses API events — `response.output_item.added` / `.done`,
//! `response.output_text.delta`, `response.function_call_arguments.delta`,
//! `response.reasoning_summary_text.delta`, the terminal `response.completed`,
//! `response.incomplete` and `response.failed`, and `error` — read into deltas and into the
//! response the non-streamed API answers with.
//!
//! Each output item that becomes a part of golem's response gets its part number when its
//! first delta arrives (a call: when it is added; a reasoning item or a provider item: at
//! the latest when it is done), by the rule the decoder orders parts: output order. The
//! terminal event carries the whole response; its output is the items as they were done,
//! for a server that sends the terminal response without them.
//!
//! An event names its item by `output_index`; a server that leaves the index out (llama.cpp's
//! does) names it by its id (`item_id`, or the `id` of the item added or done), and items so
//! named are numbered in the order they first appear.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::model::fallback::FAILED;
use crate::model::http::{Assemble, Deltas, Fault};
use crate::model::{ResponseDelta, StreamFault};

/// How far past the output items seen so far an event's `output_index` may be.
const MAX_GAP: usize = 64;

/// The state of one streamed response.
#[derive(Debug, Default)]
pub struct Events {
    /// The output items, by output index, as they were done.
    items: Vec<Option<Value>>,
    /// What is known of each output item while it streams, by output index.
    streaming: Vec<Option<Streaming>>,
    /// How many parts have begun.
    parts: usize,
    /// The terminal event's response.
    response: Option<Map<String, Value>>,
    /// The ids of items named without an output index, by the index given them.
    ids: Vec<(String, usize)>,
}

#[derive(Debug, Default)]
struct Streaming {
    /// Its part, once it began.
    part: Option<usize>,
    /// The arguments or text passed on so far.
    sent: String,
    /// The reasoning summary the last delta belonged to.
    summary_index: Option<u64>,
}

impl Events {
    /// The output index of the item an event names: its `output_index`, else the index its
    /// id was given (a new one for an id not seen before).
    ///
    /// # Errors
    /// A corrupt stream when `output_index` is far past the items seen so far: items are
    /// numbered densely, and room is not made for a number a server got wrong.
    fn index(&mut self, output_index: Option<usize>, id: Option<&str>) -> Result<usize, Fault> {
        if let Some(index) = output_index {
            let seen = self.streaming.len().max(self.items.len());
            if index >= seen.saturating_add(MAX_GAP) {
                return Err(Fault::corrupt(format!(
                    "an event names output item {index}, more than {MAX_GAP} past the items seen"
                )));
            }
            return Ok(index);
        }
        let id = id.unwrap_or_default();
        if let Some((_, index)) = self.ids.iter().find(|(known, _)| known == id) {
            return Ok(*index);
        }
        let index = self.streaming.len().max(self.items.len());
        self.streaming(index);
        self.ids.push((id.to_owned(), index));
        Ok(index)
    }

    fn streaming(&mut self, index: usize) -> &mut Streaming {
        if self.streaming.len() <= index {
            self.streaming.resize_with(index + 1, || None);
        }
        self.streaming[index].get_or_insert_with(Streaming::default)
    }

    /// The part of output item `index`, begun now if it has not begun.
    fn part(&mut self, index: usize) -> usize {
        let next = self.parts;
        let streaming = self.streaming(index);
        match streaming.part {
            Some(part) => part,
            None => {
                streaming.part = Some(next);
                self.parts += 1;
                next
            }
        }
    }

    /// Passes on `text` of output item `index` as the delta `delta` makes.
    fn text(
        &mut self,
        index: usize,
        text: &str,
        deltas: &mut Deltas,
        delta: fn(usize, String) -> ResponseDelta,
    ) {
        if text.is_empty() {
            return;
        }
        let part = self.part(index);
        self.streaming(index).sent.push_str(text);
        deltas.push(delta(part, text.to_owned()));
    }

    /// Output item `index` is done as `item`: what it holds beyond what streamed is passed
    /// on (a server may send a whole call at once), and its part ends.
    fn done(&mut self, index: usize, item: Value, deltas: &mut Deltas) {
        let field = |name: &str| item.get(name).and_then(Value::as_str).unwrap_or_default();
        match field("type") {
            "function_call" => {
                let (name, call_id) = (field("name").to_owned(), field("call_id").to_owned());
                let started = self.streaming(index).part.is_some();
                let part = self.part(index);
                if !started {
                    deltas.push(ResponseDelta::ToolCallStart {
                        part,
                        tool_name: name,
                        tool_call_id: call_id,
                    });
                }
                let arguments = field("arguments");
                let sent = &self.streaming(index).sent;
                if let Some(rest) = arguments.strip_prefix(sent.as_str())
                    && !rest.is_empty()
                {
                    let rest = rest.to_owned();
                    self.text(index, &rest, deltas, args_delta);
                }
                deltas.end(part);
            }
            "message" => {
                let text: String = item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter(|content| content.get("type") == Some(&Value::from("output_text")))
                    .filter_map(|content| content.get("text").and_then(Value::as_str))
                    .collect();
                let sent = &self.streaming(index).sent;
                if let Some(rest) = text.strip_prefix(sent.as_str())
                    && !rest.is_empty()
                {
                    let rest = rest.to_owned();
                    self.text(index, &rest, deltas, text_delta);
                }
                if let Some(part) = self.streaming(index).part {
                    deltas.end(part);
                }
            }
            // A reasoning item is a part even with nothing to show (its encrypted content
            // goes back); so is every item golem keeps as it came.
            _ => {
                let part = self.part(index);
                deltas.end(part);
            }
        }
        if self.items.len() <= index {
            self.items.resize_with(index + 1, || None);
        }
        self.items[index] = Some(item);
    }
}

/// The id of an output item.
fn item_id(item: &Value) -> Option<&str> {
    item.get("id").and_then(Value::as_str)
}

fn text_delta(part: usize, text: String) -> ResponseDelta {
    ResponseDelta::Text { part, text }
}

fn args_delta(part: usize, args: String) -> ResponseDelta {
    ResponseDelta::ToolCallArgs { part, args }
}

fn thinking_delta(part: usize, text: String) -> ResponseDelta {
    ResponseDelta::Thinking { part, text }
}

impl Assemble for Events {
    fn event(&mut self, _name: &str, data: &str, deltas: &mut Deltas) -> Result<bool, Fault> {
        let event: Event<'_> = serde_json::from_str(data)
            .map_err(|error| Fault::corrupt(format!("an event cannot be read: {error}")))?;
        match event {
            Event::OutputItemAdded { output_index, item } => {
                let output_index = self.index(output_index, item_id(&item))?;
                let field = |name: &str| {
                    item.get(name)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                if field("type") == "function_call" {
                    let part = self.part(output_index);
                    deltas.push(ResponseDelta::ToolCallStart {
                        part,
                        tool_name: field("name"),
                        tool_call_id: field("call_id"),
                    });
                    let arguments = field("arguments");
                    self.text(output_index, &arguments, deltas, args_delta);
                }
            }
            Event::OutputTextDelta {
                output_index,
                item_id,
                delta,
            } => {
                let index = self.index(output_index, item_id.as_deref())?;
                self.text(index, &delta, deltas, text_delta);
            }
            Event::FunctionCallArgumentsDelta {
                output_index,
                item_id,
                delta,
            } => {
                let index = self.index(output_index, item_id.as_deref())?;
                self.text(index, &delta, deltas, args_delta);
            }
            Event::ReasoningSummaryTextDelta {
                output_index,
                item_id,
                summary_index,
                delta,
            } => {
                let output_index = self.index(output_index, item_id.as_deref())?;
                // Summaries are joined by a blank line, as the decoder joins them.
                let streaming = self.streaming(output_index);
                let new_summary = streaming
                    .summary_index
                    .is_some_and(|last| last != summary_index);
                streaming.summary_index = Some(summary_index);
                if new_summary {
                    self.text(output_index, "\n\n", deltas, thinking_delta);
                }
                self.text(output_index, &delta, deltas, thinking_delta);
            }
            Event::OutputItemDone { output_index, item } => {
                let index = self.index(output_index, item_id(&item))?;
                self.done(index, item, deltas);
            }
            Event::Completed { response } | Event::Incomplete { response } => {
                self.response = Some(response);
                return Ok(true);
            }
            Event::Failed { response } => {
                let error = response.get("error");
                let text = |name: &str| {
                    error
                        .and_then(|error| error.get(name))
                        .and_then(Value::as_str)
                };
                return Err(Fault::new(
                    StreamFault::Provider,
                    format!(
                        "{}{}: {}",
                        FAILED,
                        text("code").unwrap_or("error"),
                        text("message").unwrap_or("no message")
                    ),
                ));
            }
            Event::Error {
                code,
                message,
                error,
            } => {
                // Its code and message at the top, as documented, or in an `error` object,
                // as servers also send them.
                let error = error.unwrap_or_default();
                return Err(Fault::new(
                    StreamFault::Provider,
                    format!(
                        "{}: {}",
                        code.or(error.code).as_deref().unwrap_or("error"),
                        message.or(error.message).as_deref().unwrap_or("no message")
                    ),
                ));
            }
            Event::Other => {}
        }
        Ok(false)
    }

    fn finish(self) -> Result<Vec<u8>, Fault> {
        let Some(mut response) = self.response else {
            return Err(Fault::new(
                StreamFault::EndedEarly,
                "the stream ended without `response.completed`",
            ));
        };
        let has_output = response
            .get("output")
            .and_then(Value::as_array)
            .is_some_and(|output| !output.is_empty());
        if !has_output {
            let items: Vec<Value> = self.items.into_iter().flatten().collect();
            response.insert("output".to_owned(), Value::Array(items));
        }
        serde_json::to_vec(&response).map_err(|error| Fault::corrupt(error.to_string()))
    }
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum Event<'a> {
    #[serde(rename = "response.output_item.added")]
    OutputItemAdded {
        #[serde(default)]
        output_index: Option<usize>,
        item: Value,
    },
    #[serde(rename = "response.output_text.delta")]
    OutputTextDelta {
        #[serde(default)]
        output_index: Option<usize>,
        #[serde(default, borrow)]
        item_id: Option<Cow<'a, str>>,
        #[serde(borrow)]
        delta: Cow<'a, str>,
    },
    #[serde(rename = "response.function_call_arguments.delta")]
    FunctionCallArgumentsDelta {
        #[serde(default)]
        output_index: Option<usize>,
        #[serde(default, borrow)]
        item_id: Option<Cow<'a, str>>,
        #[serde(borrow)]
        delta: Cow<'a, str>,
    },
    #[serde(rename = "response.reasoning_summary_text.delta")]
    ReasoningSummaryTextDelta {
        #[serde(default)]
        output_index: Option<usize>,
        #[serde(default, borrow)]
        item_id: Option<Cow<'a, str>>,
        #[serde(default)]
        summary_index: u64,
        #[serde(borrow)]
        delta: Cow<'a, str>,
    },
    #[serde(rename = "response.output_item.done")]
    OutputItemDone {
        #[serde(default)]
        output_index: Option<usize>,
        item: Value,
    },
    #[serde(rename = "response.completed")]
    Completed { response: Map<String, Value> },
    #[serde(rename = "response.incomplete")]
    Incomplete { response: Map<String, Value> },
    #[serde(rename = "response.failed")]
    Failed { response: Map<String, Value> },
    #[serde(rename = "error")]
    Error {
        #[serde(default)]
        code: Option<String>,
        #[serde(default)]
        message: Option<String>,
        #[serde(default)]
        error: Option<ErrorBody>,
    },
    #[serde(other)]
    Other,
}

/// An `error` event's `error` object.
#[derive(Deserialize, Default)]
struct ErrorBody {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    message: Option<String>,
}
