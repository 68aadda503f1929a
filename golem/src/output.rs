//! Outputs: what a run produces, and how the model's answer is decoded into it.
//!
//! [`Output`] is the trait `#[golem::output]` implements. `String` is plain text output;
//! [`Json<T>`] makes any `T: DeserializeOwned + JsonSchema` structured output without the
//! macro. A decoder or validator rejects an answer by returning an error that wraps
//! [`ModelRetry`]; answers that do not parse at all are rejected the same way, with golem's
//! own diagnostic as feedback.

use std::ops::{Deref, DerefMut};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::BoxError;
use crate::model::retry::ModelRetry;

pub mod function;
pub mod partial;
pub(crate) mod prompted;

pub use function::{HandOff, OutputFunction};
pub use partial::{NoPartial, PartialCadence, PartialValue};

/// How structured output reaches the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum OutputMode {
    /// As an output tool (`final_result`) the model calls with its answer. Works with every
    /// provider that supports tools.
    #[default]
    Tool,
    /// As the provider's native JSON-schema response format; the answer is the response
    /// text. OpenAI's `response_format`, Anthropic's `output_config.format`, Gemini's
    /// `responseSchema`.
    Native,
    /// As instructions: the output's schema is sent with the agent's instructions, and the
    /// answer is the JSON in the response's text (the whole text, a fenced ```` ```json ````
    /// block, or the object among prose). For models that ignore output tools and servers
    /// whose JSON grammar would keep the model from calling tools. An answer that does not
    /// parse or validate is a rejection under the output budget, as in the other modes, and
    /// streaming runs read its partial form from the text.
    ///
    /// ```
    /// use golem::model::function::FunctionModel;
    /// use golem::model::{Message, ModelResponse, RequestParams};
    /// use golem::output::OutputMode;
    /// use golem::Agent;
    ///
    /// /// A verdict on the game.
    /// #[golem::output]
    /// struct Verdict {
    ///     winner: String,
    /// }
    ///
    /// let model = FunctionModel::new(|_: &[Message], params: &RequestParams| {
    ///     assert!(params.instructions.as_deref().is_some_and(|text| text.contains("\"winner\"")));
    ///     ModelResponse::text("Here you go:\n```json\n{\"winner\": \"Ann\"}\n```")
    /// });
    /// let agent = Agent::<(), Verdict>::builder(model)
    ///     .output_mode(OutputMode::Prompted)
    ///     .build()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// assert_eq!(agent.run("Who won?", ()).await?.output.winner, "Ann");
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    Prompted,
}

/// What kind of answer an [`Output`] needs.
#[derive(Debug, Clone, PartialEq)]
pub enum OutputKind {
    /// Plain text: the response's text is the answer.
    Text,
    /// JSON matching a schema.
    Structured(StructuredOutput),
}

/// The description of a structured output.
#[derive(Debug, Clone, PartialEq)]
pub struct StructuredOutput {
    /// The JSON schema of the output (need not be an object: golem wraps other schemas as
    /// `{"response": ...}` for the model).
    pub schema: Value,
    /// What the output is; becomes the output tool's description.
    pub description: Option<String>,
}

impl StructuredOutput {
    /// The provider-friendly schema of `T`, with its doc comment as the description.
    pub fn of<T: JsonSchema>() -> Self {
        let schema = crate::schema::schema_for::<T>();
        let description = schema
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned);
        StructuredOutput {
            schema,
            description,
        }
    }
}

/// A type a run can produce.
///
/// `#[golem::output]` implements it for structs and enums. By hand:
///
/// ```
/// use golem::output::{decode_json, NoPartial, Output, OutputKind, StructuredOutput};
/// use golem::{BoxError, ModelRetry};
///
/// #[golem::args] // `Deserialize` and `JsonSchema`, without `impl Output`
/// struct Verdict {
///     winner: String,
///     score: u32,
/// }
///
/// impl Output for Verdict {
///     fn kind() -> OutputKind {
///         OutputKind::Structured(StructuredOutput::of::<Self>())
///     }
///
///     // Streamed answers report nothing typed until they are complete.
///     type Partial = NoPartial;
///
///     fn decode(raw: &str) -> Result<Self, BoxError> {
///         let verdict: Verdict = decode_json(raw)?;
///         if verdict.winner.is_empty() {
///             return Err(ModelRetry::new("name the winner").into());
///         }
///         Ok(verdict)
///     }
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the output of a golem agent",
    label = "not a golem `Output`",
    note = "put `#[golem::output]` on the type, wrap it as `golem::output::Json<{Self}>`, or use `String` for plain text"
)]
pub trait Output: Sized + Send + 'static {
    /// Text or structured, with the schema. Called once, when the agent is built.
    fn kind() -> OutputKind;

    /// What of a structured answer has arrived while it streams, reported as
    /// [`RunEvent::PartialOutput`](crate::run::RunEvent::PartialOutput). `#[golem::output]`
    /// makes it a twin of the type with every field optional; [`NoPartial`] reports
    /// nothing.
    type Partial: std::fmt::Debug + Send + 'static;

    /// Decodes the model's answer: the response text for [`OutputKind::Text`], the JSON
    /// arguments of the output call (or the native JSON response) otherwise.
    ///
    /// # Errors
    /// An error wrapping [`ModelRetry`] rejects the answer with feedback for the model; any
    /// other error fails the run at the decode stage.
    fn decode(raw: &str) -> Result<Self, BoxError>;

    /// Reads an answer that is still streaming: `json` is what has arrived, with open
    /// strings, lists and objects closed where they stop (unwrapped from `{"response": ...}`
    /// when golem wrapped the schema). `None` reports nothing for now; the default.
    ///
    /// Nothing is validated here: the whole answer is decoded and validated by
    /// [`decode`](Self::decode), under the output budget, once it is complete.
    fn decode_partial(json: Value) -> Option<Self::Partial> {
        let _ = json;
        None
    }
}

impl Output for String {
    /// Text streams as text, in [`RunEvent::Delta`](crate::run::RunEvent::Delta)s.
    type Partial = NoPartial;

    fn kind() -> OutputKind {
        OutputKind::Text
    }

    fn decode(raw: &str) -> Result<Self, BoxError> {
        Ok(raw.to_owned())
    }
}

/// Structured output for any `T: DeserializeOwned + JsonSchema`, without the macro.
///
/// ```
/// use golem::model::function::FunctionModel;
/// use golem::model::ModelResponse;
/// use golem::output::Json;
/// use golem::Agent;
///
/// let model = FunctionModel::new(|_, _| {
///     ModelResponse::tool_call("final_result", r#"{"response": [1, 2, 3]}"#, "c1")
/// });
/// let agent = Agent::<(), Json<Vec<u32>>>::builder(model).build()?;
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let result = agent.run("Count to three", ()).await?;
/// assert_eq!(*result.output, vec![1, 2, 3]);
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Json<T>(pub T);

impl<T> Json<T> {
    /// The decoded value.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> Deref for Json<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> DerefMut for Json<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

impl<T: DeserializeOwned + JsonSchema + Send + 'static> Output for Json<T> {
    /// The JSON that has arrived, untyped: `T` says nothing of its partial form.
    type Partial = Value;

    fn kind() -> OutputKind {
        OutputKind::Structured(StructuredOutput::of::<T>())
    }

    fn decode(raw: &str) -> Result<Self, BoxError> {
        Ok(Json(decode_json(raw)?))
    }

    fn decode_partial(json: Value) -> Option<Value> {
        Some(json)
    }
}

/// Deserializes the model's JSON answer, rejecting a bad one with a [`ModelRetry`] that
/// says where it went wrong.
///
/// ```
/// #[derive(serde::Deserialize, Debug)]
/// struct Verdict {
///     score: u32,
/// }
///
/// let error = golem::output::decode_json::<Verdict>(r#"{"score": -3}"#).unwrap_err();
/// assert_eq!(
///     error.message(),
///     "invalid output: at `score`: invalid value: integer `-3`, expected u32 at line 1 column 12"
/// );
/// ```
///
/// # Errors
/// A [`ModelRetry`] when `raw` is empty, not JSON, or not a `T`.
pub fn decode_json<T: DeserializeOwned>(raw: &str) -> Result<T, ModelRetry> {
    decode_json_at(raw).map_err(|(message, source)| {
        ModelRetry::new(format!("invalid output: {message}")).with_source(source)
    })
}

/// Deserializes `raw`, describing a failure with the path of the bad field.
pub(crate) fn decode_json_at<T: DeserializeOwned>(
    raw: &str,
) -> Result<T, (String, serde_json::Error)> {
    decode_json_seed(raw, std::marker::PhantomData::<T>)
}

/// Deserializes `raw` with `seed`, describing a failure with the path of the bad field.
///
/// JSON that reads is read once, without tracking the path; only JSON that does not is read
/// again with it, to say where it went wrong.
pub(crate) fn decode_json_seed<'de, S: serde::de::DeserializeSeed<'de> + Clone>(
    raw: &'de str,
    seed: S,
) -> Result<S::Value, (String, serde_json::Error)> {
    let mut deserializer = serde_json::Deserializer::from_str(raw);
    if let Ok(value) = seed.clone().deserialize(&mut deserializer)
        && deserializer.end().is_ok()
    {
        return Ok(value);
    }
    let mut deserializer = serde_json::Deserializer::from_str(raw);
    let mut track = serde_path_to_error::Track::new();
    let result = seed.deserialize(serde_path_to_error::Deserializer::new(
        &mut deserializer,
        &mut track,
    ));
    let value = result.map_err(|inner| {
        let error = serde_path_to_error::Error::new(track.path(), inner);
        let located = error
            .path()
            .iter()
            .any(|segment| !matches!(segment, serde_path_to_error::Segment::Unknown));
        let path = error.path().to_string();
        let inner = error.into_inner();
        let message = if located {
            format!("at `{path}`: {inner}")
        } else if inner.is_eof() && raw.trim().is_empty() {
            "expected a JSON value, got nothing".to_owned()
        } else {
            inner.to_string()
        };
        (message, inner)
    })?;
    deserializer
        .end()
        .map_err(|trailing| (trailing.to_string(), trailing))?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Point {
        x: i32,
        tags: Vec<String>,
    }

    #[test]
    fn decode_reports_the_path_of_the_bad_field() {
        let error = decode_json::<Point>(r#"{"x": 1, "tags": ["a", 2]}"#).unwrap_err();
        assert_eq!(
            error.message(),
            "invalid output: at `tags[1]`: invalid type: integer `2`, expected a string at line 1 column 24"
        );
    }

    #[test]
    fn decode_reports_missing_fields_invalid_json_and_trailing_text() {
        let missing = decode_json::<Point>(r#"{"x": 1}"#).unwrap_err();
        assert_eq!(
            missing.message(),
            "invalid output: missing field `tags` at line 1 column 8"
        );
        let broken = decode_json::<Point>(r#"{"x": 1,"#).unwrap_err();
        assert_eq!(
            broken.message(),
            "invalid output: EOF while parsing a value at line 1 column 8"
        );
        let empty = decode_json::<Point>("  ").unwrap_err();
        assert_eq!(
            empty.message(),
            "invalid output: expected a JSON value, got nothing"
        );
        let trailing = decode_json::<Point>(r#"{"x": 1, "tags": []} and more"#).unwrap_err();
        assert_eq!(
            trailing.message(),
            "invalid output: trailing characters at line 1 column 22"
        );
    }

    #[test]
    fn string_output_is_text() {
        assert_eq!(String::kind(), OutputKind::Text);
        assert_eq!(String::decode("hi").expect("text"), "hi");
    }
}
