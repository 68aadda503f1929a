//! Credentials and their redaction: the [`ApiKey`] that never shows, and the [`Redactor`]
//! that replaces every credential a provider sends in the text that leaves its transport.

use std::borrow::Cow;
use std::fmt;

use serde_json::Value;

use crate::model::{ModelResponse, ResponsePart};

/// An API key: sent in a sensitive header, never shown by `Debug`, and redacted from
/// provider messages that echo it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps `key`.
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

/// What replaces a credential in text golem shows.
pub const REDACTED: &str = "[redacted]";

/// Replaces every credential a provider sends in the text that leaves its transport.
///
/// Each secret is looked for as it is and in the escaped forms a body or an error message
/// may quote it in (JSON strings, Rust's `Debug`). Secrets shorter than
/// [`MIN_SECRET_LEN`](Self::MIN_SECRET_LEN) bytes are not looked for: replacing them would
/// mangle ordinary text (and JSON: a secret `1234` would replace a token count) without
/// protecting anything a real credential needs.
///
/// ```
/// use golem::model::http::Redactor;
///
/// let mut redactor = Redactor::default();
/// redactor.add("sk-secret-123");
/// assert_eq!(
///     redactor.redact("Incorrect API key provided: Bearer sk-secret-123."),
///     "Incorrect API key provided: Bearer [redacted]."
/// );
/// assert_eq!(redactor.redact("nothing here"), "nothing here");
/// ```
#[derive(Clone, Default)]
pub struct Redactor {
    /// The forms looked for, longest first, so an escaped form is replaced whole.
    needles: Vec<String>,
    /// A searcher per needle, built once: every streamed event is searched.
    finders: Vec<memchr::memmem::Finder<'static>>,
    /// The bytes a needle starts with, as a bit set: where a held-back tail may begin.
    starts: [u64; 4],
    /// The length of the longest needle.
    longest: usize,
}

impl PartialEq for Redactor {
    fn eq(&self, other: &Self) -> bool {
        self.needles == other.needles
    }
}

impl Eq for Redactor {}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Redactor({} form(s))", self.needles.len())
    }
}

impl Redactor {
    /// The shortest secret looked for, in bytes.
    pub const MIN_SECRET_LEN: usize = 8;

    /// Adds a secret.
    pub fn add(&mut self, secret: &str) {
        if secret.len() < Self::MIN_SECRET_LEN {
            return;
        }
        let json = serde_json::to_string(secret).unwrap_or_default();
        let debug = format!("{secret:?}");
        let unquote = |quoted: &str| {
            quoted
                .strip_prefix('"')
                .and_then(|rest| rest.strip_suffix('"'))
                .unwrap_or(quoted)
                .to_owned()
        };
        let forms = [secret.to_owned(), unquote(&json), unquote(&debug)];
        for form in forms {
            if form.len() >= Self::MIN_SECRET_LEN && !self.needles.contains(&form) {
                self.needles.push(form);
            }
        }
        self.needles
            .sort_by_key(|needle| std::cmp::Reverse(needle.len()));
        self.finders = self
            .needles
            .iter()
            .map(|needle| memchr::memmem::Finder::new(needle.as_bytes()).into_owned())
            .collect();
        self.longest = self.needles.first().map_or(0, String::len);
        for needle in &self.needles {
            let first = needle.as_bytes()[0];
            self.starts[usize::from(first / 64)] |= 1 << (first % 64);
        }
    }

    /// Whether no secret is looked for.
    pub fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }

    /// `text` with every secret replaced by [`REDACTED`]; borrowed when there was none.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut text = Cow::Borrowed(text);
        for (needle, finder) in self.needles.iter().zip(&self.finders) {
            if finder.find(text.as_bytes()).is_some() {
                text = Cow::Owned(text.replace(needle.as_str(), REDACTED));
            }
        }
        text
    }

    /// Replaces every secret in `text`, reallocating only when there was one.
    pub(crate) fn redact_in_place(&self, text: &mut String) {
        let redacted = match self.redact(text) {
            Cow::Owned(redacted) => Some(redacted),
            Cow::Borrowed(_) => None,
        };
        if let Some(redacted) = redacted {
            *text = redacted;
        }
    }

    /// Replaces every secret in the strings of `value`.
    fn redact_value(&self, value: &mut Value) {
        match value {
            Value::String(text) => self.redact_in_place(text),
            Value::Array(items) => items.iter_mut().for_each(|item| self.redact_value(item)),
            Value::Object(fields) => fields.values_mut().for_each(|item| self.redact_value(item)),
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// Replaces every secret in the text a response carries: its text, thinking, tool
    /// calls (names, arguments, ids), provider parts, model name and id. A streamed
    /// response passes it whole, since a secret split across events is in no single event.
    pub(crate) fn redact_response(&self, response: &mut ModelResponse) {
        if self.is_empty() {
            return;
        }
        for part in &mut response.parts {
            match part {
                ResponsePart::Text(text) => self.redact_in_place(&mut text.content),
                ResponsePart::ToolCall(call) => {
                    self.redact_in_place(&mut call.tool_name);
                    self.redact_in_place(&mut call.args);
                    self.redact_in_place(&mut call.tool_call_id);
                }
                ResponsePart::Thinking(thinking) => {
                    self.redact_in_place(&mut thinking.content);
                    if let Some(signature) = &mut thinking.signature {
                        self.redact_in_place(signature);
                    }
                }
                ResponsePart::Provider(provider) => self.redact_value(&mut provider.data),
            }
        }
        for text in [&mut response.model_name, &mut response.provider_response_id]
            .into_iter()
            .flatten()
        {
            self.redact_in_place(text);
        }
    }

    /// Where the end of `text` that could still be the start of a secret begins: the
    /// earliest position whose rest is a proper prefix of a needle (`text.len()` when
    /// there is none). Only the last `longest - 1` bytes are looked at, and only where a
    /// needle's first byte is.
    fn partial_from(&self, text: &str) -> usize {
        let bytes = text.as_bytes();
        let from = bytes.len().saturating_sub(self.longest.saturating_sub(1));
        for at in from..bytes.len() {
            let byte = bytes[at];
            if self.starts[usize::from(byte / 64)] & (1 << (byte % 64)) == 0 {
                continue;
            }
            let rest = &bytes[at..];
            // A needle's first byte never continues a UTF-8 character, so `at` is a
            // character boundary; checked all the same, as `split_off` needs one.
            if text.is_char_boundary(at)
                && self
                    .needles
                    .iter()
                    .any(|needle| needle.len() > rest.len() && needle.as_bytes().starts_with(rest))
            {
                return at;
            }
        }
        bytes.len()
    }

    /// `bytes` with every secret replaced, when they are UTF-8 and hold one.
    pub(super) fn redact_bytes(&self, bytes: Vec<u8>) -> Vec<u8> {
        // Most bodies hold no secret: the bytes are searched first, so that only a body that
        // holds one is read as text.
        if !self
            .finders
            .iter()
            .any(|finder| finder.find(&bytes).is_some())
        {
            return bytes;
        }
        match std::str::from_utf8(&bytes).map(|text| self.redact(text)) {
            Ok(Cow::Owned(redacted)) => redacted.into_bytes(),
            // Not UTF-8: no decoder reads it as text, and its snippet is redacted when it
            // is quoted in an error.
            Ok(Cow::Borrowed(_)) | Err(_) => bytes,
        }
    }
}

/// The redaction of one part of a streamed response, whose text arrives in pieces that may
/// split a secret.
///
/// Each piece is redacted together with the tail held back from the pieces before it, and
/// the end of the result that could still be the start of a secret is held back in turn:
/// it is released once a later piece shows it is not one, or when the part ends. The
/// concatenation of what it releases is the part's whole text, redacted. A piece costs one
/// search per secret form and a look at its last bytes; with no secret, nothing.
#[derive(Debug, Default)]
pub(crate) struct PartRedactor {
    held: String,
}

impl PartRedactor {
    /// Takes the next piece of the part's text; returns what can be released of it.
    pub(crate) fn push(&mut self, redactor: &Redactor, piece: String) -> String {
        if redactor.is_empty() {
            return piece;
        }
        let mut text = if self.held.is_empty() {
            piece
        } else {
            let mut held = std::mem::take(&mut self.held);
            held.push_str(&piece);
            held
        };
        redactor.redact_in_place(&mut text);
        let partial = redactor.partial_from(&text);
        if partial < text.len() {
            self.held = text.split_off(partial);
        }
        text
    }

    /// The part has ended: what was held back, which is no secret.
    pub(crate) fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }

    /// Whether a tail is held back.
    pub(crate) fn is_holding(&self) -> bool {
        !self.held.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_never_show() {
        let key = ApiKey::new("sk-secret-123");
        assert_eq!(format!("{key:?}"), "ApiKey([redacted])");
        let mut redactor = Redactor::default();
        redactor.add(key.expose());
        assert_eq!(
            redactor.redact("Incorrect API key provided: sk-secret-123."),
            "Incorrect API key provided: [redacted]."
        );
        assert!(!format!("{redactor:?}").contains("secret"));
    }

    #[test]
    fn escaped_forms_of_a_secret_are_redacted_too() {
        let mut redactor = Redactor::default();
        redactor.add("k\\ey/\"quoted\"");
        redactor.add("1234567");
        let json = serde_json::to_string("k\\ey/\"quoted\"").unwrap();
        assert_eq!(redactor.redact(&json), "\"[redacted]\"");
        assert_eq!(
            redactor.redact(&format!("{:?}", "k\\ey/\"quoted\"")),
            "\"[redacted]\""
        );
        assert_eq!(
            redactor.redact("{\"tokens\": 1234567}"),
            "{\"tokens\": 1234567}",
            "too short to look for"
        );
        assert_eq!(
            redactor.redact_bytes(b"{\"echo\": \"k\\\\ey/\\\"quoted\\\"\"}".to_vec()),
            b"{\"echo\": \"[redacted]\"}".to_vec()
        );
    }

    fn split_redacted(redactor: &Redactor, text: &str, pieces: &[usize]) -> (Vec<String>, String) {
        let mut part = PartRedactor::default();
        let mut out = Vec::new();
        let mut at = 0;
        for &len in pieces {
            let end = (at + len).min(text.len());
            out.push(part.push(redactor, text[at..end].to_owned()));
            at = end;
        }
        out.push(part.push(redactor, text[at..].to_owned()));
        out.push(part.finish());
        let joined = out.concat();
        (out, joined)
    }

    #[test]
    fn a_secret_split_across_pieces_is_redacted_whole() {
        let mut redactor = Redactor::default();
        redactor.add("sk-secret-123");
        redactor.add("tok\"en-é-456");
        let text = "a sk-secret-123 b tok\"en-é-456 c sk-secret-12 d sk-s";
        let expected = "a [redacted] b [redacted] c sk-secret-12 d sk-s";
        // In one, two and three pieces, then a character at a time.
        for pieces in [vec![8], vec![6, 7], Vec::new()] {
            let (_, joined) = split_redacted(&redactor, text, &pieces);
            assert_eq!(joined, expected, "{pieces:?}");
        }
        let bytes: Vec<usize> = text.chars().map(char::len_utf8).collect();
        let (out, joined) = split_redacted(&redactor, text, &bytes);
        assert_eq!(joined, expected);
        // Each secret went out whole, as one replacement.
        assert_eq!(
            out.iter().filter(|piece| piece.contains(REDACTED)).count(),
            2
        );
        // What could begin a secret is held back only while it could.
        let mut part = PartRedactor::default();
        assert_eq!(part.push(&redactor, "x sk-sec".into()), "x ");
        assert!(part.is_holding());
        assert_eq!(part.push(&redactor, "ond".into()), "sk-second");
        assert!(!part.is_holding());
        assert_eq!(part.push(&redactor, "sk-secret-123".into()), "[redacted]");
    }
}
