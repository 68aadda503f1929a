//! Images, documents and audio in a conversation: the content parts of a user prompt, and
//! the media a tool returns.
//!
//! A [`UserPromptPart`](super::UserPromptPart) holds [`UserContent`] parts: text, an image
//! or a document by URL, or bytes with their media type ([`BinaryContent`]: an image, a PDF,
//! audio). Each provider's wire maps what its API takes and refuses the rest with
//! [`ModelError::UnsupportedContent`](super::ModelError::UnsupportedContent) before sending
//! anything; docs/providers.md has each provider's table.
//!
//! Bytes are serialized as base64, and never printed: the `Debug` form of
//! [`BinaryContent`] shows its media type and length only.

use std::fmt;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// One part of a user prompt: text, an image or a document by URL, or bytes with their
/// media type.
///
/// ```
/// use golem::model::{BinaryContent, UserContent, UserPromptPart};
///
/// let prompt = UserPromptPart::from_parts([
///     UserContent::text("What is in this picture?"),
///     UserContent::image_url("https://example.com/dice.png"),
///     BinaryContent::new(vec![0x89, b'P', b'N', b'G'], "image/png").into(),
/// ]);
/// assert_eq!(prompt.text(), "What is in this picture?");
/// assert_eq!(prompt.media().count(), 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum UserContent {
    /// Text.
    Text(String),
    /// An image the provider fetches from a URL.
    ImageUrl(ImageUrl),
    /// A document (a PDF) the provider fetches from a URL.
    DocumentUrl(DocumentUrl),
    /// Bytes with their media type: an image (`image/*`), a document (`application/pdf`,
    /// `text/plain`) or audio (`audio/*`).
    Binary(BinaryContent),
}

impl UserContent {
    /// Text.
    pub fn text(text: impl Into<String>) -> Self {
        UserContent::Text(text.into())
    }

    /// An image at `url`.
    pub fn image_url(url: impl Into<String>) -> Self {
        UserContent::ImageUrl(ImageUrl::new(url))
    }

    /// A document (a PDF) at `url`.
    pub fn document_url(url: impl Into<String>) -> Self {
        UserContent::DocumentUrl(DocumentUrl::new(url))
    }

    /// `data` of the media type `media_type` (`image/png`, `application/pdf`, `audio/wav`).
    pub fn binary(data: impl Into<Arc<[u8]>>, media_type: impl Into<String>) -> Self {
        UserContent::Binary(BinaryContent::new(data, media_type))
    }

    /// The text, if this is text.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            UserContent::Text(text) => Some(text),
            _ => None,
        }
    }

    /// What kind of media this is; `None` for text.
    pub fn kind(&self) -> Option<MediaKind> {
        match self {
            UserContent::Text(_) => None,
            UserContent::ImageUrl(_) => Some(MediaKind::Image),
            UserContent::DocumentUrl(_) => Some(MediaKind::Document),
            UserContent::Binary(binary) => Some(binary.kind()),
        }
    }

    /// The media type, when it is known (`None` for text, and for a URL without one).
    pub fn media_type(&self) -> Option<&str> {
        match self {
            UserContent::Text(_) => None,
            UserContent::ImageUrl(image) => image.media_type.as_deref(),
            UserContent::DocumentUrl(document) => document.media_type.as_deref(),
            UserContent::Binary(binary) => Some(&binary.media_type),
        }
    }

    /// A short description for error messages and logs, without the bytes:
    /// `image/png bytes (1.2 KB)`, `an image URL (https://…)`.
    pub fn describe(&self) -> String {
        match self {
            UserContent::Text(text) => format!("text ({} chars)", text.chars().count()),
            UserContent::ImageUrl(image) => format!("an image URL ({})", short_url(&image.url)),
            UserContent::DocumentUrl(document) => {
                format!("a document URL ({})", short_url(&document.url))
            }
            UserContent::Binary(binary) => format!(
                "{} bytes ({})",
                binary.media_type,
                size_text(binary.data.len())
            ),
        }
    }
}

impl From<&str> for UserContent {
    fn from(text: &str) -> Self {
        UserContent::Text(text.to_owned())
    }
}

impl From<String> for UserContent {
    fn from(text: String) -> Self {
        UserContent::Text(text)
    }
}

impl From<ImageUrl> for UserContent {
    fn from(image: ImageUrl) -> Self {
        UserContent::ImageUrl(image)
    }
}

impl From<DocumentUrl> for UserContent {
    fn from(document: DocumentUrl) -> Self {
        UserContent::DocumentUrl(document)
    }
}

impl From<BinaryContent> for UserContent {
    fn from(binary: BinaryContent) -> Self {
        UserContent::Binary(binary)
    }
}

/// The kind of a media part, which decides how each provider takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MediaKind {
    /// An image (`image/*`).
    Image,
    /// A document: a PDF, or plain text sent as a document.
    Document,
    /// Audio (`audio/*`).
    Audio,
    /// Anything else (video, archives): no provider of golem's takes it.
    Other,
}

impl MediaKind {
    /// The kind of the media type `media_type`.
    pub fn of(media_type: &str) -> MediaKind {
        let essence = essence(media_type);
        if essence.starts_with("image/") {
            MediaKind::Image
        } else if essence.starts_with("audio/") {
            MediaKind::Audio
        } else if matches!(&*essence, "application/pdf" | "text/plain") {
            MediaKind::Document
        } else {
            MediaKind::Other
        }
    }

    /// `image`, `document`, `audio` or `media`.
    pub fn name(self) -> &'static str {
        match self {
            MediaKind::Image => "image",
            MediaKind::Document => "document",
            MediaKind::Audio => "audio",
            MediaKind::Other => "media",
        }
    }
}

/// An image the provider fetches from a URL (`https://…`, or a `data:` URL).
///
/// Its `Debug` shows a `data:` URL's header and size, never its data.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ImageUrl {
    /// The URL.
    pub url: String,
    /// The image's media type, for providers that need it (Gemini); guessed from the URL's
    /// extension when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
}

impl ImageUrl {
    /// The image at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        ImageUrl {
            url: url.into(),
            media_type: None,
        }
    }

    /// Sets the image's media type.
    #[must_use]
    pub fn with_media_type(mut self, media_type: impl Into<String>) -> Self {
        self.media_type = Some(media_type.into());
        self
    }

    /// The media type: the one set, else the one the URL's extension names.
    pub fn media_type(&self) -> Option<String> {
        self.media_type
            .clone()
            .or_else(|| guess_media_type(&self.url).map(str::to_owned))
    }
}

/// A document (a PDF) the provider fetches from a URL.
///
/// Its `Debug` shows a `data:` URL's header and size, never its data.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct DocumentUrl {
    /// The URL.
    pub url: String,
    /// The document's media type; `application/pdf` when `None` and the URL names no other.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
}

impl DocumentUrl {
    /// The document at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        DocumentUrl {
            url: url.into(),
            media_type: None,
        }
    }

    /// Sets the document's media type.
    #[must_use]
    pub fn with_media_type(mut self, media_type: impl Into<String>) -> Self {
        self.media_type = Some(media_type.into());
        self
    }

    /// The media type: the one set, else the one the URL's extension names, else
    /// `application/pdf`.
    pub fn media_type(&self) -> String {
        self.media_type
            .clone()
            .or_else(|| guess_media_type(&self.url).map(str::to_owned))
            .unwrap_or_else(|| "application/pdf".to_owned())
    }
}

/// Bytes with their media type: an image, a document or audio, sent inline.
///
/// Serialized with the bytes as base64; its `Debug` form never shows the bytes.
///
/// ```
/// use golem::model::{BinaryContent, MediaKind};
///
/// let png = BinaryContent::new(vec![0x89, b'P', b'N', b'G'], "image/png");
/// assert_eq!(png.kind(), MediaKind::Image);
/// assert_eq!(format!("{png:?}"), r#"BinaryContent { media_type: "image/png", len: 4 }"#);
/// assert_eq!(
///     serde_json::to_value(&png)?,
///     serde_json::json!({"data": "iVBORw==", "media_type": "image/png"})
/// );
/// # Ok::<_, serde_json::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BinaryContent {
    /// The bytes.
    #[serde(serialize_with = "base64_out", deserialize_with = "base64_in")]
    pub data: Arc<[u8]>,
    /// Their media type (`image/png`, `application/pdf`, `audio/wav`).
    pub media_type: String,
}

impl BinaryContent {
    /// `data` of the media type `media_type`.
    pub fn new(data: impl Into<Arc<[u8]>>, media_type: impl Into<String>) -> Self {
        BinaryContent {
            data: data.into(),
            media_type: media_type.into(),
        }
    }

    /// What kind of media the media type names.
    pub fn kind(&self) -> MediaKind {
        MediaKind::of(&self.media_type)
    }

    /// The bytes as base64 text.
    pub fn base64(&self) -> String {
        BASE64.encode(&self.data)
    }

    /// The bytes as a `data:` URL (`data:image/png;base64,…`), named by their media type
    /// without its parameters, in lower case.
    pub fn data_url(&self) -> String {
        format!(
            "data:{};base64,{}",
            essence(&self.media_type),
            self.base64()
        )
    }
}

impl fmt::Debug for ImageUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ImageUrl")
            .field("url", &DebugUrl(&self.url))
            .field("media_type", &self.media_type)
            .finish()
    }
}

impl fmt::Debug for DocumentUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DocumentUrl")
            .field("url", &DebugUrl(&self.url))
            .field("media_type", &self.media_type)
            .finish()
    }
}

/// A URL as `Debug` shows it: as it is, or a `data:` URL as its header and the size of
/// what it holds (bytes are never logged).
struct DebugUrl<'a>(&'a str);

impl fmt::Debug for DebugUrl<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match data_url_summary(self.0) {
            Some((media_type, size)) => {
                write!(f, "\"data:{media_type},…\" ({})", size_text(size))
            }
            None => fmt::Debug::fmt(self.0, f),
        }
    }
}

impl fmt::Debug for BinaryContent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BinaryContent")
            .field("media_type", &self.media_type)
            .field("len", &self.data.len())
            .finish()
    }
}

fn base64_out<S: Serializer>(data: &Arc<[u8]>, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&BASE64.encode(data))
}

fn base64_in<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Arc<[u8]>, D::Error> {
    let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
    BASE64
        .decode(text.as_bytes())
        .map(Arc::from)
        .map_err(serde::de::Error::custom)
}

/// The result of a tool that returns images or documents beside (or instead of) its value.
///
/// A tool returns it as its value (it is `Serialize`, so a `#[golem::tool]` function can
/// return it); the run splits it into the tool return's
/// [`content`](super::ToolReturnPart::content) and [`media`](super::ToolReturnPart::media),
/// and each provider's wire sends the media the way its API takes it (inside the tool
/// result, or in a user message right after, for OpenAI Chat Completions).
///
/// ```
/// use golem::model::{BinaryContent, RequestPart, ToolContent, ToolReturnPart};
///
/// let chart = ToolContent::new("the chart of March")
///     .with(BinaryContent::new(vec![0x89, b'P', b'N', b'G'], "image/png"));
/// let part = ToolReturnPart::new("chart", "call_1", chart);
/// assert_eq!(part.content, "the chart of March");
/// assert_eq!(part.media.len(), 1);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolContent {
    /// The value the model reads as text (a string as it is, anything else as JSON).
    #[serde(rename = "$golem_value")]
    pub value: Value,
    /// The images and documents the tool returned.
    #[serde(rename = "$golem_media")]
    pub media: Vec<UserContent>,
}

impl ToolContent {
    /// A result with the value `value` and no media yet.
    pub fn new(value: impl Into<Value>) -> Self {
        ToolContent {
            value: value.into(),
            media: Vec::new(),
        }
    }

    /// Adds a media part (an image, a document).
    #[must_use]
    pub fn with(mut self, media: impl Into<UserContent>) -> Self {
        self.media.push(media.into());
        self
    }

    /// The tool content a tool's value encodes, if it is one (what
    /// [`ToolReturnPart::new`](super::ToolReturnPart::new) splits).
    pub fn from_value(value: &Value) -> Option<ToolContent> {
        let object = value.as_object()?;
        if object.len() != 2
            || !object.contains_key("$golem_value")
            || !object.contains_key("$golem_media")
        {
            return None;
        }
        serde_json::from_value(value.clone()).ok()
    }
}

/// `value` as traces may show it: a [`ToolContent`]'s media as their descriptions, never
/// their bytes; any other value as it is.
pub(crate) fn loggable(value: &Value) -> String {
    match ToolContent::from_value(value) {
        Some(content) => described(&content),
        None => value.to_string(),
    }
}

/// `content` as traces show it: its value, and its media as their descriptions.
fn described(content: &ToolContent) -> String {
    serde_json::json!({
        "value": content.value,
        "media": content.media.iter().map(UserContent::describe).collect::<Vec<_>>(),
    })
    .to_string()
}

/// A tool's value as `Debug` shows it: a [`ToolContent`]'s media as their descriptions (see
/// [`loggable`]), never their bytes; any other value as its own `Debug` does.
pub(crate) struct DebugValue<'a>(pub(crate) &'a Value);

impl fmt::Debug for DebugValue<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match ToolContent::from_value(self.0) {
            Some(content) => f.write_str(&described(&content)),
            None => fmt::Debug::fmt(self.0, f),
        }
    }
}

impl From<ToolContent> for Value {
    fn from(content: ToolContent) -> Self {
        serde_json::to_value(content).unwrap_or(Value::Null)
    }
}

/// What a provider takes of one kind of media: its media types and largest size.
#[cfg(feature = "http")]
pub(crate) struct Accepts {
    pub(crate) kind: MediaKind,
    pub(crate) types: &'static [&'static str],
    pub(crate) max_bytes: usize,
    /// Whether `max_bytes` is measured on the base64 text the bytes are sent as (Anthropic's
    /// images) rather than on the bytes.
    pub(crate) encoded: bool,
}

/// Where a part is in the history sent: the message's index and the part's.
#[cfg(feature = "http")]
#[derive(Clone, Copy)]
pub(crate) struct At {
    pub(crate) provider: &'static str,
    pub(crate) message: usize,
    pub(crate) part: usize,
}

#[cfg(feature = "http")]
impl At {
    /// The refusal of `content` at this place, for `reason`.
    pub(crate) fn refuse(
        self,
        content: &UserContent,
        reason: impl Into<String>,
    ) -> super::ModelError {
        super::ModelError::UnsupportedContent {
            provider: self.provider.to_owned(),
            message: self.message,
            part: self.part,
            content: content.describe(),
            reason: reason.into(),
        }
    }

    /// Checks `content`'s media type (a binary's, a `data:` URL's, or the one a URL is
    /// given or names by its extension) and size against what the provider `accepts` in
    /// this place (`where_` names it: "in a user prompt"). A `data:` URL must be base64.
    pub(crate) fn check(
        self,
        content: &UserContent,
        accepts: &[Accepts],
        where_: &str,
    ) -> Result<(), super::ModelError> {
        let Some(kind) = content.kind() else {
            return Ok(());
        };
        let Some(rule) = accepts.iter().find(|rule| rule.kind == kind) else {
            return Err(self.refuse(
                content,
                format!("{} takes no {} {where_}", self.provider, kind.name()),
            ));
        };
        // The media type, and the size of the bytes and of their base64 text.
        let (media_type, len, encoded_len) = match content {
            UserContent::Binary(binary) => {
                let len = binary.data.len();
                (Some(binary.media_type.clone()), len, len.div_ceil(3) * 4)
            }
            UserContent::ImageUrl(ImageUrl { url, .. })
            | UserContent::DocumentUrl(DocumentUrl { url, .. })
                if url.starts_with("data:") =>
            {
                let Some((_, data)) = split_data_url(url) else {
                    return Err(self.refuse(
                        content,
                        "a `data:` URL must hold base64 (`data:<type>;base64,…`); \
                         give other bytes as `BinaryContent`",
                    ));
                };
                let (media_type, len) = data_url_summary(url).unwrap_or_default();
                (Some(media_type.to_owned()), len, data.len())
            }
            UserContent::ImageUrl(image) => (image.media_type(), 0, 0),
            UserContent::DocumentUrl(document) => (Some(document.media_type()), 0, 0),
            _ => (None, 0, 0),
        };
        if let Some(media_type) = media_type {
            let essence = essence(&media_type);
            if !rule.types.contains(&&*essence) {
                return Err(self.refuse(
                    content,
                    format!(
                        "{} takes {} of the types {} {where_}",
                        self.provider,
                        plural(kind),
                        rule.types.join(", ")
                    ),
                ));
            }
            let (len, as_sent) = if rule.encoded {
                (encoded_len, " as base64")
            } else {
                (len, "")
            };
            if len > rule.max_bytes {
                return Err(self.refuse(
                    content,
                    format!(
                        "{} takes {} of up to {}{as_sent} {where_}",
                        self.provider,
                        plural(kind),
                        size_text(rule.max_bytes)
                    ),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(feature = "http")]
fn plural(kind: MediaKind) -> &'static str {
    match kind {
        MediaKind::Image => "images",
        MediaKind::Document => "documents",
        MediaKind::Audio => "audio",
        MediaKind::Other => "media",
    }
}

/// A base64 `data:` URL's media type and base64 text.
#[cfg(feature = "http")]
pub(crate) fn split_data_url(url: &str) -> Option<(&str, &str)> {
    let (header, data) = url.strip_prefix("data:")?.split_once(',')?;
    let media_type = header.strip_suffix(";base64")?;
    Some((media_type, data))
}

/// A `data:` URL's media type and the size of what it holds (decoded, when it is base64):
/// what logs and spans show of it instead of its data. `None` for any other URL.
pub(crate) fn data_url_summary(url: &str) -> Option<(&str, usize)> {
    let rest = url.strip_prefix("data:")?;
    let (header, data) = rest.split_once(',').unwrap_or((rest, ""));
    let media_type = header.split(';').next().unwrap_or("");
    let size = if header.ends_with(";base64") {
        let padding = data.bytes().rev().take_while(|&byte| byte == b'=').count();
        (data.len() / 4 * 3).saturating_sub(padding)
    } else {
        data.len()
    };
    Some((media_type, size))
}

/// A media type without its parameters, in lower case (`text/plain` of
/// `Text/Plain; charset=utf-8`; media types are case-insensitive): what the providers that
/// name a part's type take, and what golem compares.
///
/// ```
/// use golem::model::media::essence;
///
/// assert_eq!(essence("Text/Plain; charset=utf-8"), "text/plain");
/// ```
pub fn essence(media_type: &str) -> std::borrow::Cow<'_, str> {
    let essence = media_type.split(';').next().unwrap_or("").trim();
    if essence.bytes().any(|byte| byte.is_ascii_uppercase()) {
        std::borrow::Cow::Owned(essence.to_ascii_lowercase())
    } else {
        std::borrow::Cow::Borrowed(essence)
    }
}

/// The text that goes before a tool's media where a wire sends them outside the tool's
/// result (after the results, as OpenAI Chat and Gemini must): whose they are.
#[cfg(any(feature = "openai", feature = "gemini"))]
pub(crate) fn media_preface(tool_name: &str, tool_call_id: &str) -> String {
    format!("The tool `{tool_name}` returned this for the call {tool_call_id}:")
}

/// A megabyte, for the providers' limits.
#[cfg(feature = "http")]
pub(crate) const MB: usize = 1024 * 1024;

/// `1.2 KB`, `300 bytes`, `4.5 MB`.
pub(crate) fn size_text(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes} bytes")
    } else if bytes < 1024 * 1024 {
        format!("{:.1} KB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

/// A URL cut to 80 characters, a `data:` URL to its header.
fn short_url(url: &str) -> String {
    if let Some(rest) = url.strip_prefix("data:") {
        let header = rest.split(',').next().unwrap_or("");
        return format!("data:{header},…");
    }
    if url.chars().count() > 80 {
        let cut: String = url.chars().take(80).collect();
        format!("{cut}…")
    } else {
        url.to_owned()
    }
}

/// The media type a URL's extension names (or a `data:` URL's header), if golem knows it.
pub(crate) fn guess_media_type(url: &str) -> Option<&'static str> {
    if let Some(rest) = url.strip_prefix("data:") {
        let header = rest.split([';', ',']).next().unwrap_or("");
        return KNOWN.iter().map(|(_, t)| *t).find(|t| *t == header);
    }
    let path = url.split(['?', '#']).next().unwrap_or(url);
    let extension = path.rsplit_once('.')?.1.to_ascii_lowercase();
    KNOWN
        .iter()
        .find(|(ext, _)| *ext == extension)
        .map(|(_, media_type)| *media_type)
}

const KNOWN: &[(&str, &str)] = &[
    ("png", "image/png"),
    ("jpg", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("gif", "image/gif"),
    ("webp", "image/webp"),
    ("heic", "image/heic"),
    ("heif", "image/heif"),
    ("pdf", "application/pdf"),
    ("txt", "text/plain"),
    ("wav", "audio/wav"),
    ("mp3", "audio/mpeg"),
    ("flac", "audio/flac"),
    ("ogg", "audio/ogg"),
    ("aac", "audio/aac"),
    ("aiff", "audio/aiff"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_data_url_names_the_media_type_alone() {
        let named = BinaryContent::new(b"%PDF".to_vec(), "Application/PDF; name=rules.pdf");
        assert_eq!(named.data_url(), "data:application/pdf;base64,JVBERg==");
    }

    #[test]
    fn media_types_name_their_kind() {
        assert_eq!(MediaKind::of("image/png"), MediaKind::Image);
        assert_eq!(MediaKind::of("audio/wav"), MediaKind::Audio);
        assert_eq!(MediaKind::of("application/pdf"), MediaKind::Document);
        assert_eq!(
            MediaKind::of("text/plain; charset=utf-8"),
            MediaKind::Document
        );
        assert_eq!(MediaKind::of("video/mp4"), MediaKind::Other);
        assert_eq!(MediaKind::of("Image/PNG"), MediaKind::Image);
    }

    #[test]
    fn urls_name_their_media_type() {
        assert_eq!(
            guess_media_type("https://x.test/a/dice.PNG?size=2"),
            Some("image/png")
        );
        assert_eq!(
            guess_media_type("data:image/webp;base64,AAAA"),
            Some("image/webp")
        );
        assert_eq!(guess_media_type("https://x.test/a"), None);
        assert_eq!(
            DocumentUrl::new("https://x.test/report").media_type(),
            "application/pdf"
        );
    }

    #[test]
    fn descriptions_never_hold_the_bytes() {
        let binary = UserContent::binary(vec![7u8; 2048], "image/png");
        assert_eq!(binary.describe(), "image/png bytes (2.0 KB)");
        assert_eq!(
            UserContent::image_url("data:image/png;base64,iVBORw0KGgo=").describe(),
            "an image URL (data:image/png;base64,…)"
        );
    }

    #[test]
    fn debug_shows_a_data_url_s_header_and_size_never_its_data() {
        let image = ImageUrl::new("data:image/png;base64,iVBORw0KGgo=");
        assert_eq!(
            format!("{image:?}"),
            r#"ImageUrl { url: "data:image/png,…" (8 bytes), media_type: None }"#
        );
        let document = UserContent::document_url("data:application/pdf;base64,JVBERi0xLjQ=");
        assert!(!format!("{document:?}").contains("JVBERi0xLjQ"));
        let plain = UserContent::image_url("https://x.test/a.png");
        assert!(format!("{plain:?}").contains(r#"url: "https://x.test/a.png""#));
        assert_eq!(
            data_url_summary("data:text/plain,hello"),
            Some(("text/plain", 5))
        );
        assert_eq!(data_url_summary("https://x.test/a.png"), None);
    }

    #[test]
    fn traces_show_a_tool_s_media_without_the_bytes() {
        let content =
            ToolContent::new("March").with(UserContent::binary(vec![1u8; 10], "image/png"));
        assert_eq!(
            loggable(&content.into()),
            r#"{"value":"March","media":["image/png bytes (10 bytes)"]}"#
        );
        assert_eq!(loggable(&Value::from(3)), "3");
    }

    #[test]
    fn tool_content_is_recognized_only_in_its_own_shape() {
        let content = ToolContent::new(3).with(UserContent::image_url("https://x.test/a.png"));
        let value = Value::from(content.clone());
        assert_eq!(ToolContent::from_value(&value), Some(content));
        assert_eq!(
            ToolContent::from_value(&serde_json::json!({"$golem_value": 1})),
            None
        );
    }
}
