//! What the code `#[golem::tool]` and `#[golem::output]` generate calls, re-exported as
//! `golem::__private`. Not public API: it changes without notice.
//!
//! The traits carry `#[diagnostic::on_unimplemented]` so a misuse is reported at the
//! user's parameter or return type in the user's terms.

pub use schemars;
pub use serde;
pub use serde_json;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::BoxError;

/// A type a tool parameter can have: read from the model's JSON, described by a schema.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the type of a golem tool parameter",
    label = "the model's JSON arguments cannot be read into `{Self}`",
    note = "a tool parameter's type must implement `Deserialize` and `JsonSchema`; for your own types, `#[golem::output]` derives both",
    note = "borrowed types such as `&str` cannot be read from JSON arguments: take an owned type such as `String`"
)]
pub trait ToolArgument: DeserializeOwned + JsonSchema {}

impl<T: DeserializeOwned + JsonSchema> ToolArgument for T {}

/// Fails to compile, at the parameter's type, unless `T` is a [`ToolArgument`].
pub const fn assert_tool_argument<T: ToolArgument>() {}

/// What a tool returning a `...Result<T, E>` gives back.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a golem tool",
    label = "not a `Result<T, E>` with `T: Serialize` and an error type `E`",
    note = "a tool returns `T`, `Result<T, ModelRetry>` or `Result<T, E>`, where `T: Serialize` and `E: Into<golem::BoxError>` (any `std::error::Error + Send + Sync + 'static`, or `anyhow::Error`)"
)]
pub trait IntoToolResult {
    /// The value as JSON, or the tool's error.
    ///
    /// # Errors
    /// The tool's error, or the value's serialization error.
    fn into_tool_result(self) -> Result<Value, BoxError>;
}

impl<T: Serialize, E: Into<BoxError>> IntoToolResult for Result<T, E> {
    fn into_tool_result(self) -> Result<Value, BoxError> {
        let value = self.map_err(Into::into)?;
        Ok(serde_json::to_value(value)?)
    }
}

/// What an infallible tool (returning a plain `T`) gives back.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a golem tool",
    label = "the tool's return value must implement `Serialize`",
    note = "a tool returns `T`, `Result<T, ModelRetry>` or `Result<T, E>`, where `T: Serialize`; for your own types, derive `serde::Serialize`"
)]
pub trait ToolReturn {
    /// The value as JSON.
    ///
    /// # Errors
    /// The value's serialization error.
    fn into_tool_result(self) -> Result<Value, BoxError>;
}

impl<T: Serialize> ToolReturn for T {
    fn into_tool_result(self) -> Result<Value, BoxError> {
        Ok(serde_json::to_value(self)?)
    }
}

/// A `validate = path` function of `#[golem::output]`: `fn(&T) -> Result<(), E>`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot validate a `{T}`",
    label = "expected a `fn(&{T}) -> Result<(), ModelRetry>`",
    note = "`#[golem::output(validate = path)]` takes a function `fn(&{T}) -> Result<(), ModelRetry>` (any error type `E: Into<golem::BoxError>` works; only one wrapping `ModelRetry` asks the model to retry)"
)]
pub trait OutputValidator<T> {
    /// Checks `output`.
    ///
    /// # Errors
    /// The validator's error, boxed.
    fn validate(&self, output: &T) -> Result<(), BoxError>;
}

impl<T, F, E> OutputValidator<T> for F
where
    F: Fn(&T) -> Result<(), E>,
    E: Into<BoxError>,
{
    fn validate(&self, output: &T) -> Result<(), BoxError> {
        self(output).map_err(Into::into)
    }
}
