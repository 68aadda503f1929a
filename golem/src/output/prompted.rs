//! Prompted output ([`OutputMode::Prompted`](super::OutputMode::Prompted)): the schema goes
//! to the model in the instructions, and the answer is the JSON found in the response's text.

use std::borrow::Cow;

use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag, TagEnd};
use serde::de::IgnoredAny;
use serde_json::Value;

/// What the instructions say of the answer in prompted mode: its schema (which holds the
/// output's description).
pub(crate) fn instructions(schema: &Value) -> String {
    format!(
        "When you give your final answer, write it as one JSON object that matches this JSON \
         schema, with no text before or after it.\n\n{schema}"
    )
}

/// The JSON in a prompted answer's text: the whole text when it is JSON, else the first
/// fenced code block (```` ```json ```` or unlabelled), else the text from its first `{` to
/// its last `}`; the text as it is when none is there, for the decoder to reject.
pub(crate) fn json_in(text: &str) -> Cow<'_, str> {
    let trimmed = text.trim();
    if trimmed.starts_with(['{', '[']) && serde_json::from_str::<IgnoredAny>(trimmed).is_ok() {
        return Cow::Borrowed(trimmed);
    }
    if trimmed.contains("```")
        && let Some(block) = fenced_json(trimmed)
    {
        return Cow::Owned(block);
    }
    match (trimmed.find('{'), trimmed.rfind('}')) {
        (Some(start), Some(end)) if start < end => Cow::Borrowed(&trimmed[start..=end]),
        _ => Cow::Borrowed(trimmed),
    }
}

/// The text of the first fenced code block labelled `json` or not labelled.
fn fenced_json(text: &str) -> Option<String> {
    let mut block: Option<String> = None;
    for event in Parser::new(text) {
        match (event, &mut block) {
            (Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(info))), None) => {
                let label = info.split_whitespace().next().unwrap_or_default();
                if label.is_empty() || label.eq_ignore_ascii_case("json") {
                    block = Some(String::new());
                }
            }
            (Event::Text(content), Some(block)) => block.push_str(&content),
            (Event::End(TagEnd::CodeBlock), Some(_)) => return block,
            _ => {}
        }
    }
    // A block the text ends inside of.
    block
}

/// The part of a prompted answer's text, as far as it has streamed, where its JSON grows:
/// from the first `{` up to a closing fence after it.
pub(crate) fn growing_json(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let json = &text[start..];
    Some(json.find("```").map_or(json, |end| &json[..end]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_is_found_bare_fenced_or_among_prose() {
        let answer = r#"{"winner": "Ann"}"#;
        for text in [
            answer.to_owned(),
            format!("  {answer}\n"),
            format!("```json\n{answer}\n```"),
            format!("Here it is:\n\n```\n{answer}\n```\nGood game!"),
            format!("The verdict is {answer}, as asked."),
        ] {
            assert_eq!(json_in(&text).trim(), answer, "in {text:?}");
        }
        // A fence labelled for another language is not the answer.
        assert_eq!(
            json_in("```python\nprint(1)\n```\nthen {\"a\": 1}"),
            "{\"a\": 1}"
        );
        assert_eq!(json_in("no JSON here"), "no JSON here");
    }

    #[test]
    fn while_streaming_the_json_grows_from_its_first_brace_to_a_closing_fence() {
        assert_eq!(growing_json("```json\n"), None);
        assert_eq!(growing_json("```json\n{\"a\": 1"), Some("{\"a\": 1"));
        assert_eq!(
            growing_json("```json\n{\"a\": 1}\n```\n"),
            Some("{\"a\": 1}\n")
        );
    }

    #[test]
    fn the_instructions_carry_the_schema() {
        let schema = serde_json::json!({"type": "object"});
        assert_eq!(
            instructions(&schema),
            "When you give your final answer, write it as one JSON object that matches this \
             JSON schema, with no text before or after it.\n\n{\"type\":\"object\"}"
        );
    }
}
