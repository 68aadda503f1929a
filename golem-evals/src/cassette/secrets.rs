//! What must never reach a cassette: the credentials the client sent, the ones the user
//! names, and anything shaped like a provider's key.

use std::borrow::Cow;

use golem::model::http::Redactor;

/// The request headers that carry credentials; their values are secrets.
const SECRET_HEADERS: [&str; 5] = [
    "authorization",
    "x-api-key",
    "x-goog-api-key",
    "api-key",
    "proxy-authorization",
];

/// The query parameters that carry credentials.
const SECRET_PARAMS: [&str; 2] = ["key", "api_key"];

/// The secret values known to a cassette, looked for by golem's own [`Redactor`] (as they
/// are and in their JSON-escaped forms; values shorter than
/// [`Redactor::MIN_SECRET_LEN`] are not credentials and would scrub ordinary text).
#[derive(Clone, Default, Debug)]
pub(crate) struct Secrets {
    redactor: Redactor,
}

impl Secrets {
    /// Knows `value` as a secret.
    pub(crate) fn add(&mut self, value: &str) {
        self.redactor.add(value.trim());
    }

    /// Learns the credentials of a request: secret headers (with and without their
    /// scheme, `Bearer …`) and secret query parameters.
    pub(crate) fn learn<'a>(
        &mut self,
        headers: impl IntoIterator<Item = (&'a str, &'a str)>,
        query: Option<&str>,
    ) {
        for (name, value) in headers {
            if SECRET_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
                self.add(value);
                if let Some((_scheme, token)) = value.split_once(' ') {
                    self.add(token);
                }
            }
        }
        for (name, value) in query.into_iter().flat_map(params) {
            if SECRET_PARAMS.contains(&name) {
                self.add(value);
            }
        }
    }

    /// `text` with every known secret replaced by golem's redaction marker.
    pub(crate) fn scrub(&self, text: &str) -> String {
        self.redactor.redact(text).into_owned()
    }

    /// What in `text` is a secret, if anything: a known value, or a string shaped like a
    /// provider key. Names the kind, never the value.
    pub(crate) fn find(&self, text: &str) -> Option<&'static str> {
        if matches!(self.redactor.redact(text), Cow::Owned(_)) {
            return Some("a credential the client sent");
        }
        key_shaped(text)
    }
}

/// The pairs of a query string (not percent-decoded: keys are plain).
fn params(query: &str) -> impl Iterator<Item = (&str, &str)> {
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .filter(|(_, value)| !value.is_empty())
}

/// Whether `text` holds something shaped like a provider's key: OpenAI's and Anthropic's
/// `sk-…`, Google's `AIza…`, or a bearer token.
fn key_shaped(text: &str) -> Option<&'static str> {
    let token = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    let run_after = |prefix: &str, at_least: usize| {
        text.match_indices(prefix).any(|(start, _)| {
            let before = text[..start].chars().next_back();
            let rest = &text[start + prefix.len()..];
            !before.is_some_and(token) && rest.chars().take_while(|&c| token(c)).count() >= at_least
        })
    };
    if run_after("sk-", 20) {
        Some("a string shaped like an OpenAI or Anthropic key (`sk-…`)")
    } else if run_after("AIza", 30) {
        Some("a string shaped like a Google API key (`AIza…`)")
    } else if run_after("Bearer ", 20) {
        Some("a bearer token")
    } else {
        None
    }
}

/// Whether a query parameter carries a credential (it is left out of a recorded path).
pub(crate) fn is_secret_param(name: &str) -> bool {
    SECRET_PARAMS.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_of_a_request_are_learned_and_scrubbed() {
        let mut secrets = Secrets::default();
        secrets.learn(
            [
                ("Authorization", "Bearer sk-test-0123456789abcdef"),
                ("content-type", "application/json"),
            ],
            Some("alt=sse&key=AIzaFAKEFAKEFAKE"),
        );
        assert_eq!(
            secrets.scrub("echo: Bearer sk-test-0123456789abcdef and AIzaFAKEFAKEFAKE"),
            "echo: [redacted] and [redacted]"
        );
        assert_eq!(
            secrets.find("sk-test-0123456789abcdef"),
            Some("a credential the client sent")
        );
        assert_eq!(secrets.find("application/json"), None);
    }

    #[test]
    fn key_shaped_strings_are_found_even_when_unknown() {
        let secrets = Secrets::default();
        assert!(
            secrets
                .find("{\"k\":\"sk-proj-abcdefghijklmnopqrstuvwx\"}")
                .is_some()
        );
        assert!(
            secrets
                .find("AIzaSyA1234567890abcdefghijklmnopqrstu")
                .is_some()
        );
        assert_eq!(secrets.find("a task-list with risk-free sk-ills"), None);
        assert_eq!(secrets.find("ask-abcdefghijklmnopqrstuvwxyz"), None);
    }
}
