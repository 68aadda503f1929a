//! Credentials and their redaction: the [`ApiKey`] that never shows, and the [`Redactor`]
//! that replaces every credential a provider sends in the text that leaves its transport.

use std::borrow::Cow;
use std::fmt;

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

    /// `bytes` with every secret replaced, when they are UTF-8 and hold one.
    pub(super) fn redact_bytes(&self, bytes: Vec<u8>) -> Vec<u8> {
        if self.needles.is_empty() {
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
}
