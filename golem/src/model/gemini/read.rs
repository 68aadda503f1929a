//! Reading a `generateContent` response into golem's parts: its candidate's parts (a kind
//! golem does not read is kept whole), the finish reason (safety blocks kept as a verdict),
//! and the usage metadata.

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::super::provider::{Text, decode, without_position};
use super::super::{
    FinishReason, ModelResponse, ProviderPart, ResponsePart, ThinkingPart, ToolArgs, json_out,
};
use super::PROVIDER;
use super::wire::{STOPPED, VERDICT};
use crate::usage::RequestUsage;

/// Reads a `generateContent` response: in one pass when every part is of a kind golem
/// reads and reads as it should; else again, part by part, so that a part of another kind
/// is kept whole and a part that cannot be read says what is wrong with it.
pub(super) fn parse(body: &[u8]) -> Result<ModelResponse, String> {
    const WHAT: &str = "a generateContent response";
    if let Ok(response) =
        decode::<GenerateContentResponse<'_, PartIn<FunctionCallIn<'_>>>>(body, WHAT)
        && let Ok(response) = respond(response, read_known_part)
    {
        return Ok(response);
    }
    respond(
        decode::<GenerateContentResponse<'_, &RawValue>>(body, WHAT)?,
        read_part,
    )
}

/// The response, its parts read by `read`.
fn respond<P>(
    response: GenerateContentResponse<'_, P>,
    read: impl Fn(P, &mut Vec<ResponsePart>) -> Result<(), String>,
) -> Result<ModelResponse, String> {
    let mut parts = Vec::new();
    let mut finish_reason = None;
    let mut verdict = Map::new();
    if let Some(candidate) = response.candidates.into_iter().next() {
        for part in candidate
            .content
            .map(|content| content.parts)
            .unwrap_or_default()
        {
            read(part, &mut parts)?;
        }
        let calls = parts
            .iter()
            .any(|part| matches!(part, ResponsePart::ToolCall(_)));
        finish_reason = candidate
            .finish_reason
            .as_deref()
            .map(|reason| match reason {
                "STOP" if calls => FinishReason::ToolCall,
                "STOP" => FinishReason::Stop,
                "MAX_TOKENS" => FinishReason::Length,
                "SAFETY"
                | "RECITATION"
                | "BLOCKLIST"
                | "PROHIBITED_CONTENT"
                | "SPII"
                | "IMAGE_SAFETY"
                | "IMAGE_PROHIBITED_CONTENT"
                | "IMAGE_RECITATION"
                | "MODEL_ARMOR" => FinishReason::ContentFilter,
                _ => FinishReason::Error,
            });
        // Why a candidate stopped short, kept for the user: the safety verdict, or the
        // message of another abnormal stop (`MALFORMED_FUNCTION_CALL: …`).
        if let Some(FinishReason::ContentFilter | FinishReason::Error) = finish_reason {
            for (key, value) in [
                ("finishMessage", candidate.finish_message),
                ("safetyRatings", candidate.safety_ratings),
            ] {
                if let Some(value) = value {
                    verdict.insert(key.to_owned(), value);
                }
            }
            if let Some(reason) = candidate.finish_reason {
                verdict.insert(
                    "finishReason".to_owned(),
                    Value::String(reason.0.into_owned()),
                );
            }
        }
    } else if let Some(feedback) = response.prompt_feedback
        && feedback.contains_key("blockReason")
    {
        // The prompt itself was blocked: no candidate at all.
        finish_reason = Some(FinishReason::ContentFilter);
        verdict.insert("promptFeedback".to_owned(), Value::Object(feedback));
    }
    if !verdict.is_empty() {
        let key = match finish_reason {
            Some(FinishReason::Error) => STOPPED,
            _ => VERDICT,
        };
        let mut data = Map::new();
        data.insert(key.to_owned(), Value::Object(verdict));
        parts.push(ResponsePart::Provider(ProviderPart::new(
            PROVIDER,
            Value::Object(data),
        )));
    }
    Ok(ModelResponse {
        parts,
        usage: response
            .usage_metadata
            .map(UsageMetadata::usage)
            .unwrap_or_default(),
        model_name: response.model_version,
        provider_response_id: response.response_id,
        finish_reason,
    })
}

/// Reads one part into golem's parts: a signature on a text or a call follows it as an
/// empty [`ThinkingPart`].
fn read_part(raw: &RawValue, parts: &mut Vec<ResponsePart>) -> Result<(), String> {
    let part: PartIn<&RawValue> = serde_json::from_str(raw.get())
        .map_err(|error| format!("a part cannot be read: {}", without_position(&error)))?;
    if !part.is_known() {
        // Code execution, inline data, whatever comes next: kept whole, to be echoed.
        let whole: Map<String, Value> = serde_json::from_str(raw.get())
            .map_err(|error| format!("a part cannot be read: {}", without_position(&error)))?;
        parts.push(ResponsePart::Provider(ProviderPart::new(
            PROVIDER,
            Value::Object(whole),
        )));
        return Ok(());
    }
    read_known_part(part, parts)
}

/// Reads a part of a kind golem reads (see [`PartIn::is_known`]); refuses any other. Its
/// call is read last, so that what is wrong with the rest of the part is said first.
fn read_known_part<'a, C: Call<'a>>(
    part: PartIn<C>,
    parts: &mut Vec<ResponsePart>,
) -> Result<(), String> {
    if !part.is_known() {
        return Err("a part of a kind golem does not read".to_owned());
    }
    let signature = match part.thought_signature {
        Some(Value::String(signature)) => Some(signature),
        Some(_) => return Err("a `thoughtSignature` is not a string".to_owned()),
        None => None,
    };
    if let Some(call) = part.function_call {
        let call = call.read()?;
        let args = match call.args {
            None => ToolArgs::from("{}"),
            Some(args) => json_out::args_text(args).map_err(|error| {
                format!(
                    "a `functionCall` part cannot be read: {}",
                    without_position(&error)
                )
            })?,
        };
        parts.push(ResponsePart::tool_call(
            call.name,
            args,
            call.id.unwrap_or_default(),
        ));
    } else {
        let Some(Value::String(text)) = part.text else {
            return Err("a `text` part's text is not a string".to_owned());
        };
        if part.thought.as_ref().and_then(Value::as_bool) == Some(true) {
            let mut thinking = ThinkingPart::new(text).with_provider(PROVIDER);
            thinking.signature = signature;
            parts.push(ResponsePart::Thinking(thinking));
            return Ok(());
        }
        parts.push(ResponsePart::text(text));
    }
    if let Some(signature) = signature {
        parts.push(ResponsePart::Thinking(
            ThinkingPart::new("")
                .with_signature(signature)
                .with_provider(PROVIDER),
        ));
    }
    Ok(())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GenerateContentResponse<'a, P> {
    #[serde(default = "Vec::new", borrow)]
    candidates: Vec<Candidate<'a, P>>,
    prompt_feedback: Option<Map<String, Value>>,
    usage_metadata: Option<UsageMetadata>,
    model_version: Option<String>,
    response_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate<'a, P> {
    content: Option<CandidateContent<P>>,
    /// Borrowed from the body: only a safety verdict keeps it.
    #[serde(borrow)]
    finish_reason: Option<Text<'a>>,
    /// Kept for a safety verdict, with the safety ratings.
    finish_message: Option<Value>,
    safety_ratings: Option<Value>,
}

#[derive(Deserialize)]
struct CandidateContent<P> {
    /// Each part read as [`PartIn`], or as raw JSON borrowed from the body (so that a part
    /// of a kind golem does not read is kept whole).
    #[serde(default = "Vec::new")]
    parts: Vec<P>,
}

/// The kinds of part golem reads; any other is kept whole.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PartIn<C> {
    text: Option<Value>,
    thought: Option<Value>,
    thought_signature: Option<Value>,
    function_call: Option<C>,
}

impl<C> PartIn<C> {
    /// Whether the part is of a kind golem reads: text (a thought, maybe) or a call.
    fn is_known(&self) -> bool {
        self.function_call.is_some() || self.text.is_some()
    }
}

/// A part's `functionCall`: read with the part (the one-pass read), or kept as raw JSON to
/// be read once the rest of the part is (the part-by-part read).
trait Call<'a> {
    fn read(self) -> Result<FunctionCallIn<'a>, String>;
}

impl<'a> Call<'a> for FunctionCallIn<'a> {
    fn read(self) -> Result<FunctionCallIn<'a>, String> {
        Ok(self)
    }
}

impl<'a> Call<'a> for &'a RawValue {
    fn read(self) -> Result<FunctionCallIn<'a>, String> {
        serde_json::from_str(self.get()).map_err(|error| {
            format!(
                "a `functionCall` part cannot be read: {}",
                without_position(&error)
            )
        })
    }
}

#[derive(Deserialize)]
struct FunctionCallIn<'a> {
    name: String,
    /// Borrowed from the body: kept as it came when it is as golem writes it.
    #[serde(borrow)]
    args: Option<&'a RawValue>,
    id: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct UsageMetadata {
    prompt_token_count: u64,
    candidates_token_count: u64,
    thoughts_token_count: u64,
    tool_use_prompt_token_count: u64,
    cached_content_token_count: u64,
    prompt_tokens_details: Vec<ModalityCount>,
    candidates_tokens_details: Vec<ModalityCount>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct ModalityCount {
    modality: String,
    token_count: u64,
}

impl UsageMetadata {
    fn usage(self) -> RequestUsage {
        let audio = |details: &[ModalityCount]| {
            details
                .iter()
                .filter(|detail| detail.modality == "AUDIO")
                .fold(0u64, |sum, detail| sum.saturating_add(detail.token_count))
        };
        RequestUsage {
            cache_read_tokens: self.cached_content_token_count,
            reasoning_tokens: self.thoughts_token_count,
            audio_input_tokens: audio(&self.prompt_tokens_details),
            audio_output_tokens: audio(&self.candidates_tokens_details),
            ..RequestUsage::new(
                self.prompt_token_count
                    .saturating_add(self.tool_use_prompt_token_count),
                self.candidates_token_count
                    .saturating_add(self.thoughts_token_count),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(parts: Value) -> Result<ModelResponse, String> {
        let body = json!({
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}]
        });
        parse(body.to_string().as_bytes())
    }

    #[test]
    fn parts_read_in_one_pass_or_part_by_part_read_alike() {
        let known = json!({"text": "Six.", "thoughtSignature": "c2ln"});
        let other = json!({"executableCode": {"language": "PYTHON", "code": "print(1)"}});
        let one_pass = read(json!([known])).expect("readable");
        let by_part = read(json!([known, other])).expect("readable");
        assert_eq!(one_pass.parts[..], by_part.parts[..2]);
        assert_eq!(
            by_part.parts[2],
            ResponsePart::Provider(ProviderPart::new(PROVIDER, other))
        );
    }

    #[test]
    fn a_part_that_is_not_as_its_kind_should_be_is_refused_with_what_is_wrong() {
        for (part, error) in [
            (
                json!({"text": "Six.", "thoughtSignature": 7}),
                "a `thoughtSignature` is not a string",
            ),
            (json!({"text": 6}), "a `text` part's text is not a string"),
            (
                json!({"functionCall": {"args": {}}}),
                "a `functionCall` part cannot be read: missing field `name`",
            ),
            // The call is read last: what is wrong with the rest of the part is said first.
            (
                json!({"functionCall": {"args": {}}, "thoughtSignature": 7}),
                "a `thoughtSignature` is not a string",
            ),
        ] {
            assert_eq!(read(json!([part])).unwrap_err(), error);
        }
        let duplicate = r#"{"candidates": [{"content": {"parts": [
            {"text": "a", "text": "b", "functionCall": {}}
        ]}}]}"#;
        assert_eq!(
            parse(duplicate.as_bytes()).unwrap_err(),
            "a part cannot be read: duplicate field `text`"
        );
    }
}
