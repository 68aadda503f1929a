//! What has arrived of a response while it streams: read for the output's partial form
//! after each delta, and kept as an incomplete response when the run stops mid-stream.

use std::any::TypeId;
use std::sync::Arc;

use serde_json::Value;

use crate::agent::OutputSetup;
use crate::model::{
    FinishReason, ModelResponse, ResponseDelta, ResponsePart, TextPart, ThinkingPart, ToolCallPart,
};
use crate::output::{NoPartial, Output, OutputMode, PartialCadence, partial, prompted};

/// How far past the parts received so far a delta's part may be.
const MAX_GAP: usize = 64;

/// Where a structured answer arrives, for its partial form.
#[derive(Debug, Clone)]
pub(crate) enum AnswerChannel {
    /// The arguments of the first call of this output tool.
    Tool(Arc<str>),
    /// The response's text (native structured output).
    Text,
    /// The JSON in the response's text (prompted output).
    Prompted,
}

/// The answer's channel, whether golem wrapped its schema as `{"response": ...}`, and how
/// often it is read.
#[derive(Debug, Clone)]
pub(crate) struct PartialAnswer {
    pub(crate) channel: AnswerChannel,
    pub(crate) wrapped: bool,
    pub(crate) cadence: PartialCadence,
}

impl<Deps, O> OutputSetup<Deps, O> {
    /// Where the structured answer arrives; `None` for text output.
    pub(crate) fn partial_answer(&self) -> Option<PartialAnswer> {
        let wrapped = self.structured?;
        let channel = match self.mode {
            OutputMode::Tool => AnswerChannel::Tool(Arc::clone(&self.tool_name)),
            OutputMode::Native => AnswerChannel::Text,
            OutputMode::Prompted => AnswerChannel::Prompted,
        };
        Some(PartialAnswer {
            channel,
            wrapped,
            cadence: self.partial_cadence,
        })
    }
}

/// The parts received so far, by their index in the final response, and the answer's
/// reading.
#[derive(Debug, Default)]
pub(crate) struct Received {
    parts: Vec<Option<ResponsePart>>,
    answer: AnswerReading,
}

/// The answer as it is read while it grows.
#[derive(Debug, Default)]
struct AnswerReading {
    /// The part last added to the answer.
    part: Option<usize>,
    /// The response's text, for native output (an output call's arguments are read where
    /// they are received).
    text: String,
    reader: partial::Reader,
}

impl Received {
    /// Adds `delta` to the part it belongs to.
    pub(crate) fn apply(&mut self, delta: &ResponseDelta) {
        let index = delta.part();
        // Parts are numbered densely as they begin; a number far past them is ignored, not
        // made room for.
        if index >= self.parts.len() + MAX_GAP {
            return;
        }
        if self.parts.len() <= index {
            self.parts.resize_with(index + 1, || None);
        }
        let slot = &mut self.parts[index];
        match delta {
            ResponseDelta::Text { text, .. } => match slot {
                Some(ResponsePart::Text(part)) => part.content.push_str(text),
                _ => {
                    *slot = Some(ResponsePart::Text(TextPart::new(text.clone())));
                }
            },
            ResponseDelta::ToolCallStart {
                tool_name,
                tool_call_id,
                ..
            } => {
                *slot = Some(ResponsePart::ToolCall(ToolCallPart::new(
                    tool_name.clone(),
                    String::new(),
                    tool_call_id.clone(),
                )));
            }
            ResponseDelta::ToolCallArgs { args, .. } => {
                if let Some(ResponsePart::ToolCall(call)) = slot {
                    call.args.push_str(args);
                }
            }
            ResponseDelta::ThinkingSignature { signature, .. } => {
                if let Some(ResponsePart::Thinking(part)) = slot {
                    part.signature = Some(signature.clone());
                }
            }
            ResponseDelta::Thinking { text, .. } => match slot {
                Some(ResponsePart::Thinking(part)) => part.content.push_str(text),
                _ => {
                    *slot = Some(ResponsePart::Thinking(ThinkingPart {
                        content: text.clone(),
                        signature: None,
                        provider: None,
                        id: None,
                    }));
                }
            },
        }
    }

    /// Whether nothing has arrived.
    pub(crate) fn is_empty(&self) -> bool {
        self.parts.iter().all(Option::is_none)
    }

    /// What arrived, as a response marked [`FinishReason::Incomplete`]. Its usage has no
    /// tokens (the provider reports them only at the end of a stream); the run counts its
    /// request.
    pub(crate) fn into_incomplete(self) -> ModelResponse {
        let mut response = ModelResponse::new(self.parts.into_iter().flatten().collect::<Vec<_>>());
        response.finish_reason = Some(FinishReason::Incomplete);
        response
    }

    /// The answer's partial form after `delta`, if `delta` added to the answer, the
    /// answer's cadence allows a read, and what has arrived of it reads as anything yet.
    ///
    /// Each delta costs a scan of its own bytes; a read parses the answer so far, as
    /// often as [`PartialAnswer::cadence`] allows (by default, at a cost per delta that
    /// does not grow with the answer).
    pub(crate) fn partial<O: Output>(
        &mut self,
        answer: &PartialAnswer,
        delta: &ResponseDelta,
    ) -> Option<O::Partial> {
        if TypeId::of::<O::Partial>() == TypeId::of::<NoPartial>() {
            return None;
        }
        let Received {
            parts,
            answer: reading,
        } = self;
        let raw: &str = match (&answer.channel, delta) {
            (AnswerChannel::Tool(name), ResponseDelta::ToolCallArgs { part, .. }) => {
                // Only the first call of the output tool is the answer.
                let first = parts.iter().position(|part| {
                    matches!(part, Some(ResponsePart::ToolCall(call)) if *call.tool_name == **name)
                })?;
                let Some(ResponsePart::ToolCall(call)) = &parts[first] else {
                    return None;
                };
                if first != *part {
                    return None;
                }
                if reading.part != Some(first) {
                    reading.reader = partial::Reader::default();
                    reading.part = Some(first);
                }
                &call.args
            }
            (
                channel @ (AnswerChannel::Text | AnswerChannel::Prompted),
                ResponseDelta::Text { part, text },
            ) => {
                if reading.part.is_some_and(|last| *part < last) {
                    // Text of an earlier part: the answer is all the text, in part order.
                    reading.text = parts
                        .iter()
                        .flatten()
                        .filter_map(|part| match part {
                            ResponsePart::Text(text) => Some(text.content.as_str()),
                            _ => None,
                        })
                        .collect();
                    reading.reader = partial::Reader::default();
                } else {
                    reading.text.push_str(text);
                    reading.part = Some(*part);
                }
                match channel {
                    AnswerChannel::Prompted => prompted::growing_json(&reading.text)?,
                    _ => &reading.text,
                }
            }
            _ => return None,
        };
        let mut json = reading.reader.read(raw, answer.cadence)?;
        if answer.wrapped {
            json = match json {
                Value::Object(mut fields) => fields.remove("response")?,
                _ => return None,
            };
        }
        O::decode_partial(json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(part: usize, text: &str) -> ResponseDelta {
        ResponseDelta::Text {
            part,
            text: text.to_owned(),
        }
    }

    #[test]
    fn deltas_add_up_to_an_incomplete_response() {
        let mut received = Received::default();
        assert!(received.is_empty());
        for delta in [
            text(0, "Let me "),
            text(0, "look."),
            ResponseDelta::ToolCallStart {
                part: 1,
                tool_name: "search".to_owned(),
                tool_call_id: "c1".to_owned(),
            },
            ResponseDelta::ToolCallArgs {
                part: 1,
                args: r#"{"q": "ru"#.to_owned(),
            },
        ] {
            received.apply(&delta);
        }
        let response = received.into_incomplete();
        let mut expected = ModelResponse::new(vec![
            ResponsePart::text("Let me look."),
            ResponsePart::tool_call("search", r#"{"q": "ru"#, "c1"),
        ]);
        expected.finish_reason = Some(FinishReason::Incomplete);
        assert_eq!(response, expected);
    }

    #[test]
    fn native_text_is_read_as_it_grows_in_part_order() {
        let answer = PartialAnswer {
            channel: AnswerChannel::Text,
            wrapped: false,
            cadence: PartialCadence::default(),
        };
        let mut received = Received::default();
        let mut read = |delta: ResponseDelta| {
            received.apply(&delta);
            received.partial::<crate::output::Json<Value>>(&answer, &delta)
        };
        assert_eq!(
            read(text(0, r#"{"a": "x"#)),
            Some(serde_json::json!({"a": "x"}))
        );
        assert_eq!(
            read(text(1, r#"yz", "n": 1"#)),
            Some(serde_json::json!({"a": "xyz"}))
        );
        // More of an earlier part: the answer is the text in part order.
        assert_eq!(read(text(0, "w")), Some(serde_json::json!({"a": "xwyz"})));
        assert_eq!(
            read(text(1, "2}")),
            Some(serde_json::json!({"a": "xwyz", "n": 12}))
        );
        // A delta that adds nothing readable is not read.
        assert_eq!(read(text(1, " ")), None);
    }
}
