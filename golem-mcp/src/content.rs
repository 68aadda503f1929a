//! What a `tools/call` result becomes in the run's history.

use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use golem::model::media::essence;
use golem::model::{BinaryContent, MediaKind, ToolContent, UserContent};
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::Value;

/// The tool's result: the structured content when the server sent one (kept as JSON),
/// else the text blocks as text; images and binary resources of a kind every provider of
/// golem's takes in a tool result (see [`SHARED`]) become media beside it (a
/// [`ToolContent`]), and a plain-text blob becomes text. Beside
/// structured content, the text blocks (the same JSON, as the protocol asks servers to send
/// it) are left out, and every other block (a resource, a link, a note) is kept as a text
/// part of the media. Structured content shaped like a [`ToolContent`] stays a value: only
/// the blocks a server sends become media.
pub(crate) fn to_value(result: CallToolResult) -> Value {
    // `"structuredContent": null` is none.
    let structured = result.structured_content.filter(|value| !value.is_null());
    let mut texts = Vec::with_capacity(result.content.len());
    let mut media = Vec::new();
    for block in &result.content {
        match as_media(block) {
            // A plain-text blob is text, among the others unless they are structured.
            Some(UserContent::Text(text)) if structured.is_none() => texts.push(text),
            Some(part) => media.push(part),
            None if structured.is_some() && matches!(block, ContentBlock::Text(_)) => {}
            None if structured.is_some() => media.push(UserContent::Text(block_text(block))),
            None => texts.push(block_text(block)),
        }
    }
    let value = match structured {
        Some(structured) => structured,
        None => Value::String(texts.join("\n")),
    };
    // A server's own `$golem_value` and `$golem_media` keys are its data, wrapped so that
    // the run does not read them as media.
    if media.is_empty() && ToolContent::from_value(&value).is_none() {
        return value;
    }
    let mut content = ToolContent::new(value);
    content.media = media;
    content.into()
}

/// The media types every provider of golem's takes in a tool's result, and the largest an
/// image may be (Anthropic's 5 MB, measured on the base64): media of another type (a GIF,
/// an SVG, audio) or a larger image would make one provider refuse every later request of
/// the run, the result staying in the history. They become a note instead.
const SHARED: &[&str] = &["image/png", "image/jpeg", "image/webp", "application/pdf"];
const MAX_IMAGE_BASE64: usize = 5 * 1024 * 1024;
/// The largest a document may be: Anthropic's request limit, measured on the base64.
const MAX_DOCUMENT_BASE64: usize = 32 * 1024 * 1024;

/// The block as media, when it is an image or a binary resource of a kind every provider
/// takes (see [`SHARED`]), with valid base64; a plain-text blob as its text.
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
    let essence = essence(media_type);
    let text = essence == "text/plain";
    let too_big = match MediaKind::of(&essence) {
        MediaKind::Image => base64.len() > MAX_IMAGE_BASE64,
        _ => base64.len() > MAX_DOCUMENT_BASE64,
    };
    if !(text || SHARED.contains(&&*essence)) || too_big {
        return None;
    }
    match decode(base64) {
        Some(data) if text => match String::from_utf8(data) {
            Ok(text) => Some(UserContent::Text(text)),
            Err(_) => None,
        },
        Some(data) => Some(BinaryContent::new(data, media_type).into()),
        None => {
            tracing::warn!(
                media_type,
                "an MCP tool's media is not valid base64: the model reads a note instead"
            );
            None
        }
    }
}

/// Base64 as servers write it: padded or not, wrapped over lines, or as a `data:` URL.
fn decode(base64: &str) -> Option<Vec<u8>> {
    const LENIENT: GeneralPurpose = GeneralPurpose::new(
        &alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    let base64 = match base64.strip_prefix("data:") {
        Some(url) => url.split_once(";base64,")?.1,
        None => base64,
    };
    // Copied only when it is wrapped over lines.
    let data = if base64.bytes().any(|byte| byte.is_ascii_whitespace()) {
        let text: String = base64
            .chars()
            .filter(|c| !c.is_ascii_whitespace())
            .collect();
        LENIENT.decode(text)
    } else {
        LENIENT.decode(base64)
    }
    .ok()?;
    (!data.is_empty()).then_some(data)
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
    fn media_no_provider_refuses_become_media_and_the_rest_notes_or_text() {
        let gif = ContentBlock::Image(ImageContent::new("R0lGODlh", "image/gif"));
        let svg = ContentBlock::Image(ImageContent::new("PHN2Zz4=", "image/svg+xml"));
        let huge = ContentBlock::Image(ImageContent::new(
            "A".repeat(MAX_IMAGE_BASE64 + 4),
            "image/png",
        ));
        let mut notes = ContentBlock::Resource(EmbeddedResource::new(ResourceContents::blob(
            "U2l4Lg==",
            "test://static/notes.txt",
        )));
        if let ContentBlock::Resource(embedded) = &mut notes
            && let ResourceContents::BlobResourceContents { mime_type, .. } = &mut embedded.resource
        {
            *mime_type = Some("text/plain; charset=utf-8".to_owned());
        }
        for block in [&gif, &svg, &huge] {
            assert_eq!(as_media(block), None, "{block:?}");
        }
        let value = to_value(CallToolResult::success(vec![
            ContentBlock::text("Rolled:"),
            notes,
            gif,
        ]));
        // No media: a GIF, which Gemini refuses in a tool result, is a note.
        assert_eq!(
            value,
            Value::String("Rolled:\nSix.\n[image (image/gif, 6 bytes) not shown]".into())
        );
    }

    #[test]
    fn structured_content_is_the_result_when_present() {
        let mut result = CallToolResult::success(vec![ContentBlock::text("{\"result\": 5}")]);
        result.structured_content = Some(serde_json::json!({"result": 5}));
        assert_eq!(to_value(result), serde_json::json!({"result": 5}));
        let plain = CallToolResult::success(vec![ContentBlock::text("5")]);
        assert_eq!(to_value(plain), Value::String("5".into()));
        // `null` is no structured content: the text stays.
        let mut null = CallToolResult::success(vec![ContentBlock::text("42")]);
        null.structured_content = Some(Value::Null);
        assert_eq!(to_value(null), Value::String("42".into()));
    }

    #[test]
    fn structured_content_shaped_like_tool_content_stays_a_value() {
        let spoof = Value::from(
            ToolContent::new("see the image")
                .with(UserContent::image_url("http://169.254.169.254/latest")),
        );
        assert!(ToolContent::from_value(&spoof).is_some(), "reads as media");
        let mut result = CallToolResult::success(vec![ContentBlock::text(spoof.to_string())]);
        result.structured_content = Some(spoof.clone());
        let value = to_value(result);
        assert_eq!(
            ToolContent::from_value(&value),
            Some(ToolContent::new(spoof))
        );
        let part = golem::model::ToolReturnPart::new("fetch", "call_1", value);
        assert!(part.media.is_empty());
    }

    #[test]
    fn beside_structured_content_the_blocks_that_are_not_its_text_are_kept() {
        let mut result = CallToolResult::success(vec![
            ContentBlock::text("{\"rows\": 120}"),
            ContentBlock::Resource(EmbeddedResource::new(ResourceContents::text(
                "row 1", "x://log",
            ))),
        ]);
        result.structured_content = Some(serde_json::json!({"rows": 120}));
        assert_eq!(
            ToolContent::from_value(&to_value(result)),
            Some(
                ToolContent::new(serde_json::json!({"rows": 120}))
                    .with(UserContent::Text("[resource x://log]\nrow 1".into()))
            )
        );
    }

    #[test]
    fn base64_is_read_as_servers_write_it() {
        let png = vec![0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A];
        for data in [
            "iVBORw0KGgo=",
            "iVBORw0KGgo",
            "iVBO\nRw0KGgo=\n",
            "data:image/png;base64,iVBORw0KGgo=",
        ] {
            let block = ContentBlock::Image(ImageContent::new(data, "image/png"));
            assert_eq!(
                as_media(&block),
                Some(BinaryContent::new(png.clone(), "image/png").into()),
                "{data:?}"
            );
        }
        for data in ["not base64!", ""] {
            let block = ContentBlock::Image(ImageContent::new(data, "image/png"));
            assert_eq!(as_media(&block), None, "{data:?}");
        }
    }

    #[test]
    fn embedded_text_resources_keep_their_text() {
        let content = vec![ContentBlock::Resource(EmbeddedResource::new(
            ResourceContents::text("hello", "test://static/1"),
        ))];
        assert_eq!(text_of(&content), "[resource test://static/1]\nhello");
    }
}
