//! What a `tools/call` result becomes in the run's history.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::Value;

/// The tool's result: the structured content when the server sent one (kept as JSON),
/// else the content blocks as text.
pub(crate) fn to_value(result: CallToolResult) -> Value {
    match result.structured_content {
        Some(structured) => structured,
        None => Value::String(text_of(&result.content)),
    }
}

/// The content blocks as the model reads them: text as it is, one block a paragraph, and a
/// note in brackets for what golem's providers cannot take in a tool result (images,
/// audio, binary resources).
pub(crate) fn text_of(content: &[ContentBlock]) -> String {
    content
        .iter()
        .map(block_text)
        .collect::<Vec<_>>()
        .join("\n")
}

fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text(text) => text.text.clone(),
        ContentBlock::Image(image) => not_shown("image", &image.mime_type, &image.data),
        ContentBlock::Audio(audio) => not_shown("audio", &audio.mime_type, &audio.data),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents {
                uri,
                mime_type,
                blob,
                ..
            } => format!(
                "[resource {uri}: {} not shown: tool results reach the model as text]",
                size(
                    "binary",
                    mime_type.as_deref().unwrap_or("application/octet-stream"),
                    blob
                )
            ),
            other => format!("[a resource golem does not know: {other:?}]"),
        },
        ContentBlock::ResourceLink(link) => match &link.description {
            Some(description) => format!(
                "[resource link {} ({}): {description}]",
                link.uri, link.name
            ),
            None => format!("[resource link {} ({})]", link.uri, link.name),
        },
        other => format!("[content golem does not know: {other:?}]"),
    }
}

fn not_shown(kind: &str, mime_type: &str, base64: &str) -> String {
    format!(
        "[{} not shown: tool results reach the model as text]",
        size(kind, mime_type, base64)
    )
}

/// `an image/png image of 1.2 KB`, from the base64 text's length.
fn size(kind: &str, mime_type: &str, base64: &str) -> String {
    let bytes = base64.trim_end_matches('=').len() * 3 / 4;
    let size = if bytes < 1024 {
        format!("{bytes} bytes")
    } else {
        format!("{:.1} KB", bytes as f64 / 1024.0)
    };
    format!("{kind} ({mime_type}, {size})")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{EmbeddedResource, ImageContent};

    #[test]
    fn text_blocks_are_joined_and_images_become_a_note() {
        let content = vec![
            ContentBlock::text("first"),
            ContentBlock::Image(ImageContent::new("iVBORw0KGgo=", "image/png")),
            ContentBlock::text("last"),
        ];
        assert_eq!(
            text_of(&content),
            "first\n[image (image/png, 8 bytes) not shown: tool results reach the model as text]\nlast"
        );
    }

    #[test]
    fn structured_content_is_the_result_when_present() {
        let mut result = CallToolResult::success(vec![ContentBlock::text("{\"result\": 5}")]);
        result.structured_content = Some(serde_json::json!({"result": 5}));
        assert_eq!(to_value(result), serde_json::json!({"result": 5}));
        let plain = CallToolResult::success(vec![ContentBlock::text("5")]);
        assert_eq!(to_value(plain), Value::String("5".into()));
    }

    #[test]
    fn embedded_text_resources_keep_their_text() {
        let content = vec![ContentBlock::Resource(EmbeddedResource::new(
            ResourceContents::text("hello", "test://static/1"),
        ))];
        assert_eq!(text_of(&content), "[resource test://static/1]\nhello");
    }
}
