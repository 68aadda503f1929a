//! What a `tools/call` result becomes in the run's history.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use golem::model::{BinaryContent, MediaKind, ToolContent, UserContent};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::Value;

/// The tool's result: the structured content when the server sent one (kept as JSON),
/// else the text blocks as text; images, audio and binary resources of a kind golem's
/// providers take (images, PDFs, audio) become media beside it (a [`ToolContent`]).
pub(crate) fn to_value(result: CallToolResult) -> Value {
    let mut texts = Vec::with_capacity(result.content.len());
    let mut media = Vec::new();
    for block in &result.content {
        match as_media(block) {
            Some(part) => media.push(part),
            None => texts.push(block_text(block)),
        }
    }
    let value = match result.structured_content {
        Some(structured) => structured,
        None => Value::String(texts.join("\n")),
    };
    if media.is_empty() {
        return value;
    }
    let mut content = ToolContent::new(value);
    content.media = media;
    content.into()
}

/// The block as media, when it is an image, audio or a binary resource of a kind a model
/// takes, with valid base64.
fn as_media(block: &ContentBlock) -> Option<UserContent> {
    let (media_type, base64) = match block {
        ContentBlock::Image(image) => (image.mime_type.as_str(), image.data.as_str()),
        ContentBlock::Audio(audio) => (audio.mime_type.as_str(), audio.data.as_str()),
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::BlobResourceContents {
                mime_type: Some(mime_type),
                blob,
                ..
            } => (mime_type.as_str(), blob.as_str()),
            _ => return None,
        },
        _ => return None,
    };
    if MediaKind::of(media_type) == MediaKind::Other {
        return None;
    }
    let data = BASE64.decode(base64).ok()?;
    Some(BinaryContent::new(data, media_type).into())
}

/// The content blocks as text, for an error's message: text as it is, one block a
/// paragraph, and a note in brackets for images, audio and binary resources.
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
                "[resource {uri}: {} not shown]",
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
    format!("[{} not shown]", size(kind, mime_type, base64))
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
    fn images_become_media_beside_the_text() {
        let content = vec![
            ContentBlock::text("first"),
            ContentBlock::Image(ImageContent::new("iVBORw0KGgo=", "image/png")),
            ContentBlock::text("last"),
        ];
        let value = to_value(CallToolResult::success(content.clone()));
        assert_eq!(
            ToolContent::from_value(&value),
            Some(ToolContent::new("first\nlast").with(BinaryContent::new(
                vec![0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A],
                "image/png"
            )))
        );
        assert_eq!(
            text_of(&content),
            "first\n[image (image/png, 8 bytes) not shown]\nlast"
        );
    }

    #[test]
    fn blob_resources_of_a_known_kind_become_media_and_others_a_note() {
        let pdf = ContentBlock::Resource(EmbeddedResource::new(ResourceContents::blob(
            "JVBERi0=",
            "test://static/report.pdf",
        )));
        let ContentBlock::Resource(mut embedded) = pdf else {
            unreachable!()
        };
        let ResourceContents::BlobResourceContents { mime_type, .. } = &mut embedded.resource
        else {
            unreachable!()
        };
        *mime_type = Some("application/pdf".to_owned());
        let zip = ContentBlock::Resource(EmbeddedResource::new(ResourceContents::blob(
            "UEsDBA==",
            "test://static/a.zip",
        )));
        let value = to_value(CallToolResult::success(vec![
            ContentBlock::Resource(embedded),
            zip,
        ]));
        assert_eq!(
            ToolContent::from_value(&value),
            Some(
                ToolContent::new(
                    "[resource test://static/a.zip: binary (application/octet-stream, 4 bytes) not shown]"
                )
                .with(BinaryContent::new(b"%PDF-".to_vec(), "application/pdf"))
            )
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
