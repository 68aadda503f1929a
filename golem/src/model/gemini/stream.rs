//! `streamGenerateContent?alt=sse`: each event's data is a `GenerateContentResponse` holding
//! the next parts, read into deltas and into the response they add up to.
//!
//! Text arrives split over chunks: a text part continues the previous one while both are of
//! the same kind (answer or thought), which is how the unstreamed response has them, until a
//! signature arrives alone (in a chunk without text) and closes it. A signature that comes
//! with text (Gemini 2.5 puts it on a text's first chunk) leaves the part open, and an
//! answer's signature becomes a part of its own once the text has ended, where the
//! unstreamed response puts it. A function call arrives whole. The stream has no
//! end event: it is complete when its body ends after a chunk with a `finishReason` (or a
//! blocked prompt's `promptFeedback`).

use serde_json::{Map, Value};

use crate::model::http::{Assemble, Deltas, Fault};
use crate::model::{ResponseDelta, StreamFault};

/// The state of one streamed response.
#[derive(Debug, Default)]
pub struct Chunks {
    /// The latest chunk's fields besides the candidates: ids, model version, usage (which
    /// each chunk carries whole), prompt feedback.
    top: Map<String, Value>,
    /// The candidate's fields besides its content (finish reason, safety ratings), or
    /// `None` before the first candidate.
    candidate: Option<Map<String, Value>>,
    /// The parts so far, text joined as the unstreamed response has it.
    parts: Vec<Map<String, Value>>,
    /// Whether more text may join the last part.
    open: bool,
    /// The number, among golem's parts, of the last part (`None` before the first).
    last: Option<usize>,
    /// The number the next golem part gets: a signature on a text or a call is a part of
    /// its own, after it.
    next: usize,
    /// Whether the response said it is finished.
    finished: bool,
    /// The signature that came with the open answer's text, to follow it as a part of its
    /// own when the text ends.
    pending: Option<String>,
}

impl Chunks {
    /// Starts a golem part, ending the one before (and following it with its signature).
    fn start(&mut self, deltas: &mut Deltas) -> usize {
        self.flush(deltas);
        self.begin(deltas)
    }

    /// The signature of the answer just ended, as a part of its own.
    fn flush(&mut self, deltas: &mut Deltas) {
        if let Some(signature) = self.pending.take() {
            let part = self.begin(deltas);
            deltas.push(ResponseDelta::ThinkingSignature { part, signature });
        }
    }

    /// Starts a golem part, ending the one before.
    fn begin(&mut self, deltas: &mut Deltas) -> usize {
        if let Some(last) = self.last {
            deltas.end(last);
        }
        let part = self.next;
        self.last = Some(part);
        self.next += 1;
        part
    }

    /// A signature on the part just read, which is not a thought: a golem part of its own.
    fn signed(&mut self, signature: &str, deltas: &mut Deltas) {
        let part = self.start(deltas);
        deltas.push(ResponseDelta::ThinkingSignature {
            part,
            signature: signature.to_owned(),
        });
        self.open = false;
    }

    fn read_part(&mut self, mut part: Map<String, Value>, deltas: &mut Deltas) {
        let signature = part
            .get("thoughtSignature")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if let Some(call) = part.get("functionCall") {
            let field = |name| {
                call.get(name)
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            };
            let number = self.start(deltas);
            deltas.push(ResponseDelta::ToolCallStart {
                part: number,
                tool_name: field("name"),
                tool_call_id: field("id"),
            });
            // Missing or null, as the whole response reads them: `{}`.
            let args = call
                .get("args")
                .filter(|args| !args.is_null())
                .cloned()
                .unwrap_or_else(|| Value::Object(Map::new()));
            deltas.push(ResponseDelta::ToolCallArgs {
                part: number,
                args: args.to_string(),
            });
            self.parts.push(part);
            self.open = false;
            if let Some(signature) = signature {
                self.signed(&signature, deltas);
            }
            return;
        }
        let Some(Value::String(text)) = part.get("text") else {
            // A part golem keeps verbatim (its signature, if any, with it).
            self.start(deltas);
            self.parts.push(part);
            self.open = false;
            return;
        };
        let text = text.clone();
        let thought = part.get("thought").and_then(Value::as_bool) == Some(true);
        let joins = self.open
            && self.parts.last().is_some_and(|last| {
                (last.get("thought").and_then(Value::as_bool) == Some(true)) == thought
            });
        let number = if joins {
            let last = self.parts.last_mut().expect("an open part");
            if let Some(Value::String(existing)) = last.get_mut("text") {
                existing.push_str(&text);
            }
            if let Some(signature) = &signature {
                last.insert(
                    "thoughtSignature".to_owned(),
                    Value::from(signature.clone()),
                );
            }
            self.last.expect("an open part")
        } else {
            part.insert("text".to_owned(), Value::String(text.clone()));
            self.parts.push(part);
            self.start(deltas)
        };
        // A signature alone closes the part; one that came with text leaves it open.
        self.open = signature.is_none() || !text.is_empty();
        if !text.is_empty() {
            deltas.push(if thought {
                ResponseDelta::Thinking { part: number, text }
            } else {
                ResponseDelta::Text { part: number, text }
            });
        }
        match signature {
            Some(signature) if thought => deltas.push(ResponseDelta::ThinkingSignature {
                part: number,
                signature,
            }),
            Some(signature) if self.open => self.pending = Some(signature),
            Some(signature) => {
                self.pending = None;
                self.signed(&signature, deltas);
            }
            None => {}
        }
    }
}

impl Assemble for Chunks {
    fn event(&mut self, _name: &str, data: &str, deltas: &mut Deltas) -> Result<bool, Fault> {
        let mut chunk: Map<String, Value> = serde_json::from_str(data)
            .map_err(|error| Fault::corrupt(format!("a chunk cannot be read: {error}")))?;
        if let Some(error) = chunk.get("error") {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| error.to_string(), str::to_owned);
            let message = match error.get("status").and_then(Value::as_str) {
                Some(status) => format!("{status}: {message}"),
                None => message,
            };
            return Err(Fault::new(StreamFault::Provider, message));
        }
        let candidates = chunk.remove("candidates");
        if chunk
            .get("promptFeedback")
            .is_some_and(|feedback| feedback.get("blockReason").is_some())
        {
            self.finished = true;
        }
        self.top.extend(chunk);
        let Some(candidates) = candidates else {
            return Ok(false);
        };
        let Value::Array(candidates) = candidates else {
            return Err(Fault::corrupt("`candidates` is not an array"));
        };
        let Some(Value::Object(mut candidate)) = candidates.into_iter().next() else {
            return Ok(false);
        };
        let content = candidate.remove("content");
        if candidate.contains_key("finishReason") {
            self.finished = true;
        }
        self.candidate.get_or_insert_default().extend(candidate);
        let parts = match content {
            Some(Value::Object(mut content)) => content.remove("parts"),
            Some(Value::Null) | None => None,
            Some(_) => return Err(Fault::corrupt("a candidate's `content` is not an object")),
        };
        match parts {
            Some(Value::Array(parts)) => {
                for part in parts {
                    let Value::Object(part) = part else {
                        return Err(Fault::corrupt("a part is not an object"));
                    };
                    self.read_part(part, deltas);
                }
            }
            Some(Value::Null) | None => {}
            Some(_) => return Err(Fault::corrupt("`parts` is not an array")),
        }
        Ok(false)
    }

    fn body_ended(&mut self, deltas: &mut Deltas) -> bool {
        if self.finished {
            self.flush(deltas);
            if let Some(last) = self.last {
                deltas.end(last);
            }
        }
        self.finished
    }

    fn finish(self) -> Result<Vec<u8>, Fault> {
        let mut response = self.top;
        if let Some(mut candidate) = self.candidate {
            let parts = self.parts.into_iter().map(Value::Object).collect();
            candidate.insert(
                "content".to_owned(),
                serde_json::json!({"role": "model", "parts": Value::Array(parts)}),
            );
            response.insert(
                "candidates".to_owned(),
                Value::Array(vec![Value::Object(candidate)]),
            );
        }
        serde_json::to_vec(&response).map_err(|error| Fault::corrupt(error.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::model::gemini::read;
    use crate::model::{ModelResponse, ResponsePart};

    /// `text` cut at the character positions `cuts`.
    fn pieces(text: &str, cuts: &[usize]) -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        let mut cuts: Vec<usize> = cuts.iter().map(|cut| cut % (chars.len() + 1)).collect();
        cuts.sort_unstable();
        cuts.dedup();
        let mut out = Vec::new();
        let mut start = 0;
        for cut in cuts.into_iter().chain([chars.len()]) {
            out.push(chars[start..cut].iter().collect());
            start = cut;
        }
        out
    }

    #[test]
    fn a_calls_missing_or_null_args_stream_as_the_whole_response_reads_them() {
        for call in [
            json!({"name": "roll"}),
            json!({"name": "roll", "args": null}),
        ] {
            let chunk = json!({"candidates": [{
                "content": {"role": "model", "parts": [{"functionCall": call}]},
                "finishReason": "STOP"
            }]});
            let mut assembler = Chunks::default();
            let mut deltas = Deltas::default();
            assert!(
                !assembler
                    .event("", &chunk.to_string(), &mut deltas)
                    .unwrap()
            );
            let streamed: Vec<String> = deltas
                .into_deltas()
                .into_iter()
                .filter_map(|delta| match delta {
                    ResponseDelta::ToolCallArgs { args, .. } => Some(args),
                    _ => None,
                })
                .collect();
            assert_eq!(streamed, ["{}"]);
            let whole = read::parse(chunk.to_string().as_bytes()).unwrap();
            assert_eq!(whole.tool_calls().next().unwrap().args, "{}");
        }
    }

    proptest! {
        /// However Gemini cuts a thought and an answer into chunks, with the signatures
        /// where they came, the chunks add up to the unstreamed response.
        #[test]
        fn chunks_add_up_to_the_unstreamed_response(
            thought in "[a-zé ]{1,24}",
            answer in "[a-zé ]{1,24}",
            thought_cuts in proptest::collection::vec(0usize..30, 0..4),
            answer_cuts in proptest::collection::vec(0usize..30, 0..4),
            answer_signature in prop_oneof![Just(Signed::Alone), Just(Signed::OnCall), Just(Signed::FirstChunk)],
        ) {
            let mut chunks = Vec::new();
            let thoughts = pieces(&thought, &thought_cuts);
            let last = thoughts.len() - 1;
            for (index, piece) in thoughts.into_iter().enumerate() {
                let mut part = json!({"text": piece, "thought": true});
                if index == last {
                    part["thoughtSignature"] = json!("c2lnLTE=");
                }
                chunks.push(json!({"candidates": [{"content": {"role": "model", "parts": [part]}}]}));
            }
            let mut unsigned = answer_signature == Signed::FirstChunk;
            for piece in pieces(&answer, &answer_cuts) {
                let mut part = json!({"text": piece});
                if unsigned && !piece.is_empty() {
                    part["thoughtSignature"] = json!("c2lnLTI=");
                    unsigned = false;
                }
                chunks.push(json!({"candidates": [{"content": {"role": "model", "parts": [part]}}]}));
            }
            let last_part = match answer_signature {
                Signed::Alone => json!({"text": "", "thoughtSignature": "c2lnLTI="}),
                Signed::OnCall => json!({"functionCall": {"name": "roll", "args": {"n": 2}}, "thoughtSignature": "c2lnLTI="}),
                Signed::FirstChunk => json!({"functionCall": {"name": "roll", "args": {"n": 2}}}),
            };
            chunks.push(json!({
                "candidates": [{"content": {"role": "model", "parts": [last_part.clone()]}, "finishReason": "STOP"}],
                "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 5}
            }));
            let mut parts = vec![
                json!({"text": thought, "thought": true, "thoughtSignature": "c2lnLTE="}),
            ];
            match answer_signature {
                Signed::Alone => parts.push(json!({"text": answer, "thoughtSignature": "c2lnLTI="})),
                Signed::OnCall => {
                    parts.push(json!({"text": answer}));
                    parts.push(last_part);
                }
                Signed::FirstChunk => {
                    parts.push(json!({"text": answer, "thoughtSignature": "c2lnLTI="}));
                    parts.push(last_part);
                }
            }
            let whole = json!({
                "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
                "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 5}
            });

            let mut assembler = Chunks::default();
            let mut deltas = Deltas::default();
            for chunk in &chunks {
                prop_assert!(!assembler.event("", &chunk.to_string(), &mut deltas).unwrap());
            }
            prop_assert!(assembler.body_ended(&mut deltas));
            let assembled = assembler.finish().unwrap();
            let response = read::parse(&assembled).unwrap();
            prop_assert_eq!(&response, &read::parse(whole.to_string().as_bytes()).unwrap());
            prop_assert_eq!(by_part(deltas.into_deltas()), by_part_of(&response));
        }
    }

    /// Where the answer's signature came.
    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Signed {
        /// In a last chunk of its own, without text.
        Alone,
        /// On the function call that follows the answer.
        OnCall,
        /// On the answer's first chunk, as Gemini 2.5 sends it.
        FirstChunk,
    }

    /// What the deltas say of each part, by number: its text (or arguments), and its
    /// signature.
    fn by_part(deltas: Vec<ResponseDelta>) -> Vec<(String, Option<String>)> {
        let mut parts: Vec<(String, Option<String>)> = Vec::new();
        for delta in deltas {
            let index = delta.part();
            if parts.len() <= index {
                parts.resize(index + 1, (String::new(), None));
            }
            match delta {
                ResponseDelta::Text { text, .. } | ResponseDelta::Thinking { text, .. } => {
                    parts[index].0.push_str(&text);
                }
                ResponseDelta::ToolCallArgs { args, .. } => parts[index].0.push_str(&args),
                ResponseDelta::ThinkingSignature { signature, .. } => {
                    parts[index].1 = Some(signature);
                }
                _ => {}
            }
        }
        parts
    }

    /// The same of a response's parts.
    fn by_part_of(response: &ModelResponse) -> Vec<(String, Option<String>)> {
        response
            .parts
            .iter()
            .map(|part| match part {
                ResponsePart::Text(text) => (text.content.clone(), None),
                ResponsePart::ToolCall(call) => (call.args.clone(), None),
                ResponsePart::Thinking(thinking) => {
                    (thinking.content.clone(), thinking.signature.clone())
                }
                _ => (String::new(), None),
            })
            .collect()
    }
}
