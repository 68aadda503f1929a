//! What the HTTP providers share: the builder state every one of them has (key, base URL,
//! HTTP settings, model settings, custom headers), the environment, and the decisions that
//! do not depend on a wire format (which tool choice a turn needs, which settings apply).

use std::borrow::Cow;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::http::{ApiKey, HttpSettings, Redactor, Transport};
use super::{Message, ModelRequest, ModelSettings, ProviderError, RequestParams, ToolChoice};
use crate::output::OutputMode;

/// The configuration every HTTP provider's builder holds.
#[derive(Debug)]
pub(crate) struct HttpConfig {
    pub(crate) api_key: Option<ApiKey>,
    pub(crate) base_url: String,
    pub(crate) http: HttpSettings,
    pub(crate) settings: ModelSettings,
    pub(crate) headers: Vec<CustomHeader>,
}

/// A header the user added; a secret one is redacted like the API key.
pub(crate) struct CustomHeader {
    name: String,
    value: ApiKey,
    secret: bool,
}

impl std::fmt::Debug for CustomHeader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut debug = f.debug_struct("CustomHeader");
        debug.field("name", &self.name);
        if self.secret {
            debug.field("value", &self.value);
        } else {
            debug.field("value", &self.value.expose());
        }
        debug.finish()
    }
}

impl HttpConfig {
    pub(crate) fn new(base_url: &str) -> Self {
        HttpConfig {
            api_key: None,
            base_url: base_url.to_owned(),
            http: HttpSettings::default(),
            settings: ModelSettings::default(),
            headers: Vec::new(),
        }
    }

    /// Adds a header; one whose name says it carries a credential is secret however it
    /// was added.
    pub(crate) fn header(&mut self, name: String, value: String, secret: bool) {
        let secret = secret || names_a_credential(&name);
        self.headers.push(CustomHeader {
            name,
            value: ApiKey::new(value),
            secret,
        });
    }

    /// The transport, sending `headers` (the provider's own, credentials among them) and
    /// then the custom headers, which replace a provider header of the same name. The API
    /// key and every secret header are redacted from all the transport returns.
    pub(crate) fn transport(
        &self,
        provider: &'static str,
        key_env_var: &'static str,
        mut headers: HeaderMap,
    ) -> Result<Transport, ProviderError> {
        let mut redactor = Redactor::default();
        if let Some(key) = &self.api_key {
            redactor.add(key.expose());
        }
        for header in &self.headers {
            let name = HeaderName::from_bytes(header.name.as_bytes()).map_err(|_| {
                ProviderError::InvalidHeader {
                    name: header.name.clone(),
                }
            })?;
            headers.insert(name, header_value(&header.name, header.value.expose())?);
            if header.secret {
                redactor.add(header.value.expose());
            }
        }
        Transport::new(provider, self.http.clone(), headers, redactor, key_env_var)
            .map_err(ProviderError::Client)
    }
}

/// Whether a header of this name carries a credential (`Authorization`, `api-key`,
/// `X-Auth-Token`, `Cookie`, ...).
fn names_a_credential(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "auth",
        "key",
        "token",
        "secret",
        "cookie",
        "password",
        "credential",
        "signature",
    ]
    .iter()
    .any(|word| name.contains(word))
}

/// A header value, or [`ProviderError::InvalidHeader`] naming the header (never the value,
/// which may be a key).
pub(crate) fn header_value(name: &str, value: &str) -> Result<HeaderValue, ProviderError> {
    HeaderValue::from_str(value).map_err(|_| ProviderError::InvalidHeader {
        name: name.to_owned(),
    })
}

/// Checks a base URL and drops its trailing `/`.
pub(crate) fn normalize_base_url(url: &str) -> Result<String, ProviderError> {
    let parsed = reqwest::Url::parse(url).map_err(|error| ProviderError::InvalidBaseUrl {
        url: url.to_owned(),
        reason: error.to_string(),
    })?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(ProviderError::InvalidBaseUrl {
            url: url.to_owned(),
            reason: "the scheme must be http or https".to_owned(),
        });
    }
    Ok(url.trim_end_matches('/').to_owned())
}

/// An environment variable's value, if set and not empty.
pub(crate) fn env_var(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .filter(|value| !value.trim().is_empty())
}

/// Reads a 200 body as `T`; the error says what it should have been, with serde's message
/// (which the transport redacts).
pub(crate) fn decode<'a, T: serde::Deserialize<'a>>(
    body: &'a [u8],
    what: &str,
) -> Result<T, String> {
    // Read as text once checked as a whole: checking the body at once costs less than
    // serde's check of each string in it.
    match std::str::from_utf8(body) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(body),
    }
    .map_err(|error| format!("the body is not {what}: {error}"))
}

/// A string of a response that is only looked at: borrowed from the body when it has no
/// escape, else owned. (serde reads a `Cow<str>` as owned when it is in an `Option`.)
#[cfg(any(feature = "openai", feature = "gemini", feature = "anthropic"))]
#[derive(Debug)]
pub(crate) struct Text<'a>(pub(crate) Cow<'a, str>);

#[cfg(any(feature = "openai", feature = "gemini", feature = "anthropic"))]
impl std::ops::Deref for Text<'_> {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

#[cfg(any(feature = "openai", feature = "gemini", feature = "anthropic"))]
impl<'de: 'a, 'a> serde::Deserialize<'de> for Text<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;

        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Text<'de>;

            fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                formatter.write_str("a string")
            }

            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(text)))
            }

            fn visit_str<E>(self, text: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(text.to_owned())))
            }

            fn visit_string<E>(self, text: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(text)))
            }
        }

        deserializer.deserialize_str(Visit)
    }
}

/// serde's message, without the position: for a piece read out of a larger body, where
/// the position in the piece would mislead.
#[cfg(any(feature = "openai", feature = "gemini"))]
pub(crate) fn without_position(error: &serde_json::Error) -> String {
    let message = error.to_string();
    let position = format!(" at line {} column {}", error.line(), error.column());
    match message.strip_suffix(&position) {
        Some(message) => message.to_owned(),
        None => message,
    }
}

/// The settings of one request: the provider's, with the request's own over them.
pub(crate) fn request_settings<'a>(
    provider: &'a ModelSettings,
    params: &'a RequestParams,
) -> Cow<'a, ModelSettings> {
    if params.settings.is_empty() {
        Cow::Borrowed(provider)
    } else if provider.is_empty() {
        Cow::Borrowed(&params.settings)
    } else {
        Cow::Owned(provider.merged(&params.settings))
    }
}

/// What one request asks of the model's tool use, before a wire format spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolUse<'a> {
    /// The model decides (said explicitly).
    Auto,
    /// The model must call some tool.
    Required,
    /// The model must not call tools.
    None,
    /// The model must call this tool.
    Tool(&'a str),
}

/// The tool choice a request needs, derived from the output channel, or `None` to send
/// none (the provider's default, "auto").
///
/// - Output tool, text not accepted: a tool call is required, else the run cannot end.
/// - Text or native output: the model must be free to answer without a tool, so nothing is
///   forced by default.
/// - A user's [`ToolChoice`] is honoured where it leaves the run a way to end: a forced
///   function-tool call (`Required`, `Tool(name)`) applies to the first turn after a user
///   prompt only, and afterwards the output channel's default applies again; `None` with an
///   output tool forces that output tool (the only tool the model may then call); a choice
///   naming no tool the request sends is ignored.
pub(crate) fn tool_use<'a>(
    messages: &[Message],
    params: &'a RequestParams,
    choice: Option<&'a ToolChoice>,
) -> Option<ToolUse<'a>> {
    if params.function_tools.is_empty() && params.output_tools.is_empty() {
        return None;
    }
    let needs_output_tool = params.output_mode == OutputMode::Tool
        && !params.output_tools.is_empty()
        && !params.allow_text_output;
    let channel_default = needs_output_tool.then_some(ToolUse::Required);
    let after_prompt = || {
        messages
            .iter()
            .rev()
            .find_map(Message::as_request)
            .is_some_and(ModelRequest::has_user_prompt)
    };
    match choice {
        None => channel_default,
        Some(ToolChoice::Auto) => Some(ToolUse::Auto),
        Some(ToolChoice::Required) => {
            if needs_output_tool || (!params.function_tools.is_empty() && after_prompt()) {
                Some(ToolUse::Required)
            } else {
                channel_default
            }
        }
        Some(ToolChoice::None) if needs_output_tool => match params.output_tools.as_slice() {
            [only] => Some(ToolUse::Tool(&only.name)),
            _ => Some(ToolUse::Required),
        },
        Some(ToolChoice::None) => Some(ToolUse::None),
        Some(ToolChoice::Tool(name)) => {
            let forced_output = params.output_tools.iter().any(|tool| &tool.name == name);
            let forced_call =
                params.function_tools.iter().any(|tool| &tool.name == name) && after_prompt();
            if forced_output || forced_call {
                Some(ToolUse::Tool(name))
            } else {
                channel_default
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::{ModelResponse, OutputSchema, RequestPart};
    use crate::tool::ToolDefinition;

    #[cfg(any(feature = "openai", feature = "gemini", feature = "anthropic"))]
    #[test]
    fn a_text_is_borrowed_from_the_body_unless_it_has_an_escape() {
        let read = |json: &'static str| serde_json::from_str::<Option<Text<'static>>>(json);
        assert!(matches!(
            read(r#""STOP""#),
            Ok(Some(Text(Cow::Borrowed("STOP"))))
        ));
        assert!(matches!(
            read(r#""a \"quoted\" word""#),
            Ok(Some(Text(Cow::Owned(text)))) if text == "a \"quoted\" word"
        ));
        assert!(matches!(read("null"), Ok(None)));
        assert_eq!(
            read("7").unwrap_err().to_string(),
            "invalid type: integer `7`, expected a string at line 1 column 1"
        );
    }

    #[test]
    fn a_body_is_read_as_text_and_refused_with_serdes_message() {
        #[derive(Debug, serde::Deserialize)]
        struct Answer {
            text: String,
        }
        let read: Answer = decode("{\"text\": \"caf\\u00e9 é\"}".as_bytes(), "an answer").unwrap();
        assert_eq!(read.text, "café é");
        assert_eq!(
            decode::<Answer>(b"{\"text\": \"\xff\"}", "an answer").unwrap_err(),
            "the body is not an answer: invalid unicode code point at line 1 column 11"
        );
        assert_eq!(
            decode::<Answer>(b"{\"text\": 1}", "an answer").unwrap_err(),
            "the body is not an answer: invalid type: integer `1`, expected a string at line 1 column 10"
        );
    }

    fn tool(name: &str) -> ToolDefinition {
        ToolDefinition {
            name: name.to_owned(),
            description: None,
            parameters: json!({"type": "object", "properties": {}}),
        }
    }

    fn params(mode: &str, function_tools: bool) -> RequestParams {
        let tools = if function_tools {
            vec![tool("roll_dice")]
        } else {
            Vec::new()
        };
        let mut params = RequestParams::text(tools);
        match mode {
            "text" => {}
            "tool" => {
                params.allow_text_output = false;
                params.output_tools.push(tool("final_result"));
            }
            _ => {
                params.allow_text_output = false;
                params.output_mode = OutputMode::Native;
                params.output_schema = Some(OutputSchema {
                    name: "final_result".into(),
                    description: None,
                    schema: json!({"type": "object"}),
                });
            }
        }
        params
    }

    fn first_turn() -> Vec<Message> {
        vec![ModelRequest::user_prompt("Roll").into()]
    }

    fn after_tools() -> Vec<Message> {
        vec![
            ModelRequest::user_prompt("Roll").into(),
            ModelResponse::tool_call("roll_dice", "{}", "c1").into(),
            ModelRequest::new(vec![RequestPart::tool_return("roll_dice", "c1", 4)]).into(),
        ]
    }

    #[test]
    fn headers_named_for_credentials_are_secret_however_added() {
        for name in [
            "Authorization",
            "api-key",
            "X-Auth-Token",
            "Cookie",
            "x-goog-api-key",
        ] {
            assert!(names_a_credential(name), "{name}");
        }
        for name in [
            "HTTP-Referer",
            "X-Title",
            "anthropic-beta",
            "OpenAI-Organization",
        ] {
            assert!(!names_a_credential(name), "{name}");
        }
        let mut config = HttpConfig::new("http://127.0.0.1:1/v1");
        config.header(
            "authorization".into(),
            "Bearer plain-added-0123".into(),
            false,
        );
        assert!(!format!("{config:?}").contains("plain-added"));
    }

    #[test]
    fn defaults_follow_the_output_channel_in_every_mode() {
        let cases = [
            ("text", false, None),
            ("text", true, None),
            ("tool", false, Some(ToolUse::Required)),
            ("tool", true, Some(ToolUse::Required)),
            ("native", false, None),
            // The native answer is text: forcing a tool would make it impossible.
            ("native", true, None),
        ];
        for (mode, tools, expected) in cases {
            let params = params(mode, tools);
            for messages in [first_turn(), after_tools()] {
                assert_eq!(
                    tool_use(&messages, &params, None),
                    expected,
                    "{mode}, tools: {tools}"
                );
            }
        }
    }

    #[test]
    fn a_forced_function_tool_applies_to_the_first_turn_after_a_prompt_only() {
        let required = ToolChoice::Required;
        let named = ToolChoice::Tool("roll_dice".into());
        for mode in ["text", "native"] {
            let params = params(mode, true);
            for choice in [&required, &named] {
                assert!(tool_use(&first_turn(), &params, Some(choice)).is_some());
                assert_eq!(
                    tool_use(&after_tools(), &params, Some(choice)),
                    None,
                    "{mode}"
                );
            }
        }
        let params = params("tool", true);
        assert_eq!(
            tool_use(&first_turn(), &params, Some(&named)),
            Some(ToolUse::Tool("roll_dice"))
        );
        assert_eq!(
            tool_use(&after_tools(), &params, Some(&named)),
            Some(ToolUse::Required)
        );
        assert_eq!(
            tool_use(&after_tools(), &params, Some(&required)),
            Some(ToolUse::Required)
        );
    }

    #[test]
    fn no_tools_with_an_output_tool_forces_the_output_tool() {
        let output_tool = params("tool", true);
        assert_eq!(
            tool_use(&after_tools(), &output_tool, Some(&ToolChoice::None)),
            Some(ToolUse::Tool("final_result"))
        );
        assert_eq!(
            tool_use(
                &after_tools(),
                &params("text", true),
                Some(&ToolChoice::None)
            ),
            Some(ToolUse::None)
        );
    }

    #[test]
    fn choices_naming_no_sent_tool_are_ignored_and_no_tools_means_no_choice() {
        let unknown = ToolChoice::Tool("nope".into());
        assert_eq!(
            tool_use(&first_turn(), &params("text", true), Some(&unknown)),
            None
        );
        assert_eq!(
            tool_use(&first_turn(), &params("tool", true), Some(&unknown)),
            Some(ToolUse::Required)
        );
        for choice in [ToolChoice::Auto, ToolChoice::Required, ToolChoice::None] {
            assert_eq!(
                tool_use(&first_turn(), &params("native", false), Some(&choice)),
                None
            );
        }
        assert_eq!(
            tool_use(
                &after_tools(),
                &params("native", true),
                Some(&ToolChoice::Auto)
            ),
            Some(ToolUse::Auto)
        );
    }
}
