//! A message's `content` as Chat Completions servers send it: text, or (Mistral's reasoning
//! models) a list of chunks, whose `text` chunks are the answer and whose `thinking`
//! chunks the reasoning.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde_json::Value;

/// The answer's text and the reasoning a message's `content` holds.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Content<'a> {
    /// The text, borrowed from the body when it has no escapes.
    pub(super) text: Option<Cow<'a, str>>,
    /// The reasoning of `thinking` chunks.
    pub(super) thinking: Option<String>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ContentVisitor)
    }
}

struct ContentVisitor;

impl<'de> Visitor<'de> for ContentVisitor {
    type Value = Content<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("text, or a list of content chunks")
    }

    fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
        Ok(Content {
            text: Some(Cow::Borrowed(text)),
            thinking: None,
        })
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        self.visit_string(text.to_owned())
    }

    fn visit_string<E: de::Error>(self, text: String) -> Result<Self::Value, E> {
        Ok(Content {
            text: Some(Cow::Owned(text)),
            thinking: None,
        })
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Content::default())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut chunks: A) -> Result<Self::Value, A::Error> {
        let mut content = Content::default();
        while let Some(chunk) = chunks.next_element::<Chunk>()? {
            match (chunk.kind.as_deref(), chunk.text, chunk.thinking) {
                (Some("text") | None, Some(text), _) => {
                    content
                        .text
                        .get_or_insert_default()
                        .to_mut()
                        .push_str(&text);
                }
                (Some("thinking"), _, Some(thinking)) => {
                    push_thinking(content.thinking.get_or_insert_default(), &thinking);
                }
                // Chunks of other kinds (references, images) hold no text to read.
                _ => {}
            }
        }
        Ok(content)
    }
}

/// A chunk of a list `content`.
#[derive(Deserialize)]
struct Chunk {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    text: Option<String>,
    /// Text chunks, as Mistral sends them, or text.
    #[serde(default)]
    thinking: Option<Value>,
}

/// Appends a `thinking` chunk's text: its own text chunks' text, or its text.
fn push_thinking(out: &mut String, thinking: &Value) {
    match thinking {
        Value::String(text) => out.push_str(text),
        Value::Array(chunks) => chunks
            .iter()
            .filter_map(|chunk| chunk.get("text").and_then(Value::as_str))
            .for_each(|text| out.push_str(text)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> Option<Content<'_>> {
        #[derive(Deserialize)]
        struct Message<'a> {
            #[serde(borrow, default)]
            content: Option<Content<'a>>,
        }
        serde_json::from_str::<Message<'_>>(json)
            .expect("readable")
            .content
    }

    #[test]
    fn text_and_chunks_read_alike() {
        assert_eq!(read(r#"{"content": null}"#), None);
        assert_eq!(read("{}"), None);
        let text = read(r#"{"content": "Six."}"#).expect("content");
        assert!(matches!(text.text, Some(Cow::Borrowed("Six."))));
        assert_eq!(
            read(r#"{"content": "Six.\n"}"#)
                .expect("content")
                .text
                .as_deref(),
            Some("Six.\n")
        );
        let chunks = read(
            r#"{"content": [
                {"type": "thinking", "thinking": [{"type": "text", "text": "Two dice"}, {"type": "text", "text": ", then sum."}]},
                {"type": "text", "text": "Six"},
                {"type": "reference", "reference_ids": [1]},
                {"type": "text", "text": "."}
            ]}"#,
        )
        .expect("content");
        assert_eq!(chunks.text.as_deref(), Some("Six."));
        assert_eq!(chunks.thinking.as_deref(), Some("Two dice, then sum."));
    }
}
