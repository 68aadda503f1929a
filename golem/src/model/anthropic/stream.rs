//! Messages API events: `message_start`, `content_block_start` / `_delta` / `_stop`,
//! `message_delta`, `message_stop`, `ping` and `error`, read into deltas and into the
//! message they add up to.
//!
//! Each content block is one part of the response, so a delta's part is its block's index.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::model::http::{Assemble, Deltas, Fault};
use crate::model::{ResponseDelta, StreamFault};

/// The state of one streamed message.
#[derive(Debug, Default)]
pub struct Events {
    /// `message_start`'s message, its content still empty.
    message: Option<Map<String, Value>>,
    blocks: Vec<Option<Block>>,
}

#[derive(Debug)]
struct Block {
    /// `content_block_start`'s block.
    value: Map<String, Value>,
    /// `input_json_delta` fragments, for a tool use.
    json: String,
    /// Whether the block is a client tool call (its fragments are passed on as arguments).
    tool_use: bool,
}

impl Events {
    fn block(&mut self, index: usize) -> Result<&mut Block, Fault> {
        self.blocks
            .get_mut(index)
            .and_then(Option::as_mut)
            .ok_or_else(|| Fault::corrupt(format!("a delta for block {index}, never started")))
    }

    fn message(&mut self, event: &str) -> Result<&mut Map<String, Value>, Fault> {
        self.message
            .as_mut()
            .ok_or_else(|| Fault::corrupt(format!("`{event}` before `message_start`")))
    }
}

/// Appends `text` to the string field `field` of `block`.
fn append(block: &mut Map<String, Value>, field: &str, text: &str) {
    match block.get_mut(field) {
        Some(Value::String(existing)) => existing.push_str(text),
        _ => {
            block.insert(field.to_owned(), Value::String(text.to_owned()));
        }
    }
}

impl Assemble for Events {
    fn event(&mut self, _name: &str, data: &str, deltas: &mut Deltas) -> Result<bool, Fault> {
        let event: Event<'_> = serde_json::from_str(data)
            .map_err(|error| Fault::corrupt(format!("an event cannot be read: {error}")))?;
        match event {
            Event::MessageStart { message } => self.message = Some(message),
            Event::ContentBlockStart {
                index,
                content_block,
            } => {
                self.message("content_block_start")?;
                // Blocks are numbered from 0 as they start.
                if index > self.blocks.len() {
                    return Err(Fault::corrupt(format!(
                        "block {index} started after {} block(s)",
                        self.blocks.len()
                    )));
                }
                let kind = content_block.get("type").and_then(Value::as_str);
                let tool_use = kind == Some("tool_use");
                if tool_use {
                    let field = |name| {
                        content_block
                            .get(name)
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned()
                    };
                    deltas.push(ResponseDelta::ToolCallStart {
                        part: index,
                        tool_name: field("name"),
                        tool_call_id: field("id"),
                    });
                }
                if self.blocks.len() <= index {
                    self.blocks.resize_with(index + 1, || None);
                }
                self.blocks[index] = Some(Block {
                    value: content_block,
                    json: String::new(),
                    tool_use,
                });
            }
            Event::ContentBlockDelta { index, delta } => {
                let block = self.block(index)?;
                match delta {
                    BlockDelta::TextDelta { text } => {
                        append(&mut block.value, "text", &text);
                        deltas.push(ResponseDelta::Text {
                            part: index,
                            text: text.into_owned(),
                        });
                    }
                    BlockDelta::InputJsonDelta { partial_json } => {
                        block.json.push_str(&partial_json);
                        if block.tool_use && !partial_json.is_empty() {
                            deltas.push(ResponseDelta::ToolCallArgs {
                                part: index,
                                args: partial_json.into_owned(),
                            });
                        }
                    }
                    BlockDelta::ThinkingDelta { thinking } => {
                        append(&mut block.value, "thinking", &thinking);
                        deltas.push(ResponseDelta::Thinking {
                            part: index,
                            text: thinking.into_owned(),
                        });
                    }
                    BlockDelta::SignatureDelta { signature } => {
                        append(&mut block.value, "signature", &signature);
                        deltas.push(ResponseDelta::ThinkingSignature {
                            part: index,
                            signature: signature.into_owned(),
                        });
                    }
                    BlockDelta::CitationsDelta { citation } => {
                        match block.value.get_mut("citations") {
                            Some(Value::Array(citations)) => citations.push(citation),
                            _ => {
                                block
                                    .value
                                    .insert("citations".to_owned(), Value::Array(vec![citation]));
                            }
                        }
                    }
                    BlockDelta::Unknown => {}
                }
            }
            Event::ContentBlockStop { index } => {
                deltas.end(index);
                let block = self.block(index)?;
                if !block.json.is_empty() {
                    // A call cut off mid-arguments (at `max_tokens`) keeps its text, so
                    // the run sees what arrived and the finish reason says why.
                    let input = serde_json::from_str(&block.json)
                        .unwrap_or_else(|_| Value::String(std::mem::take(&mut block.json)));
                    block.value.insert("input".to_owned(), input);
                    block.json.clear();
                }
            }
            Event::MessageDelta { delta, usage } => {
                let message = self.message("message_delta")?;
                for (key, value) in delta {
                    message.insert(key, value);
                }
                if let Some(usage) = usage {
                    // Counts in `message_delta` are cumulative: they replace the start's.
                    match message.get_mut("usage") {
                        Some(Value::Object(known)) => {
                            for (key, value) in usage {
                                if !value.is_null() {
                                    known.insert(key, value);
                                }
                            }
                        }
                        _ => {
                            message.insert("usage".to_owned(), Value::Object(usage));
                        }
                    }
                }
            }
            Event::MessageStop => {
                self.message("message_stop")?;
                return Ok(true);
            }
            Event::Ping | Event::Unknown => {}
            Event::Error { error } => {
                let message = error
                    .get("message")
                    .and_then(Value::as_str)
                    .map_or_else(|| error.to_string(), str::to_owned);
                let message = match error.get("type").and_then(Value::as_str) {
                    Some(kind) => format!("{kind}: {message}"),
                    None => message,
                };
                return Err(Fault::new(StreamFault::Provider, message));
            }
        }
        Ok(false)
    }

    fn finish(self) -> Result<Vec<u8>, Fault> {
        let Some(mut message) = self.message else {
            return Err(Fault::new(
                StreamFault::EndedEarly,
                "the stream ended without `message_start`",
            ));
        };
        let mut content = Vec::with_capacity(self.blocks.len());
        for (index, block) in self.blocks.into_iter().enumerate() {
            let Some(block) = block else {
                return Err(Fault::corrupt(format!("block {index} never started")));
            };
            content.push(Value::Object(block.value));
        }
        message.insert("content".to_owned(), Value::Array(content));
        serde_json::to_vec(&message).map_err(|error| Fault::corrupt(error.to_string()))
    }
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event<'a> {
    MessageStart {
        message: Map<String, Value>,
    },
    ContentBlockStart {
        index: usize,
        content_block: Map<String, Value>,
    },
    ContentBlockDelta {
        index: usize,
        #[serde(borrow)]
        delta: BlockDelta<'a>,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        #[serde(default)]
        delta: Map<String, Value>,
        #[serde(default)]
        usage: Option<Map<String, Value>>,
    },
    MessageStop,
    Ping,
    Error {
        error: Value,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum BlockDelta<'a> {
    TextDelta {
        #[serde(borrow)]
        text: Cow<'a, str>,
    },
    InputJsonDelta {
        #[serde(borrow)]
        partial_json: Cow<'a, str>,
    },
    ThinkingDelta {
        #[serde(borrow)]
        thinking: Cow<'a, str>,
    },
    SignatureDelta {
        #[serde(borrow)]
        signature: Cow<'a, str>,
    },
    CitationsDelta {
        citation: Value,
    },
    #[serde(other)]
    Unknown,
}
