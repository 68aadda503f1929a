//! A tool's return value, converted by its type: autoref dispatch chooses
//! [`ResultTag`] for any `Result<T, E>` (whatever alias names it: `anyhow::Result<T>`,
//! `io::Result<T>`, your own `Fallible<T>`) and [`ValueTag`] for any other type (a struct
//! named `SearchResult`, `impl Serialize`, `()`).
//!
//! The generated code calls `(&output).__golem_return_tag().into_tool_result(output)`.
//! Method lookup tries the receiver `&Output` first, where only [`ReturnsResult`] (for
//! `Result`) applies, and then `&&Output`, where [`ReturnsValue`] (for every type) does.
//! Both tags end in the one conversion, [`into_tool_result`], whose bounds
//! ([`ToolValue`], [`ToolError`]) carry the diagnostics.

use std::convert::Infallible;
use std::future::Future;

use futures_util::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;

use crate::error::BoxError;
use crate::model::ModelRetry;

/// What a tool's success value must be: serializable, since its JSON is the call's result.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a golem tool",
    label = "the tool's return value must implement `Serialize`",
    note = "a tool returns `T`, `Result<T, ModelRetry>` or `Result<T, E>` (any alias of `Result` too), where `T: Serialize`; for your own types, `#[golem::output]` derives it"
)]
pub trait ToolValue: Serialize {}

// `do_not_recommend`, as on the argument traits: the message names what is missing,
// without rustc's list of other types that implement `Serialize`.
#[diagnostic::do_not_recommend]
impl<T: Serialize + ?Sized> ToolValue for T {}

/// What a fallible tool's error must be: convertible into [`BoxError`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the error type of a golem tool",
    label = "the tool's error type must convert into `golem::BoxError`",
    note = "a tool's error is any `std::error::Error + Send + Sync + 'static` (a `thiserror` enum, `ModelRetry`), `anyhow::Error`, `String` or `&'static str`; one wrapping `ModelRetry` asks the model to retry, any other fails the run"
)]
pub trait ToolError: Into<BoxError> {}

// No `do_not_recommend` here: rustc's own help ("`std::error::Error` is not implemented")
// says what is missing better than the trait's name would.
impl<E: Into<BoxError>> ToolError for E {}

/// The one conversion of a tool's outcome into the call's JSON result.
///
/// # Errors
/// The tool's error, boxed unchanged, or the value's serialization error.
pub fn into_tool_result<T: ToolValue, E: ToolError>(
    result: Result<T, E>,
) -> Result<Value, BoxError> {
    Ok(serde_json::to_value(result.map_err(Into::into)?)?)
}

/// Chosen for a `Result<T, E>`.
#[derive(Debug, Clone, Copy)]
pub struct ResultTag;

/// Chosen for any other return type.
#[derive(Debug, Clone, Copy)]
pub struct ValueTag;

impl ResultTag {
    /// Converts a fallible tool's outcome.
    ///
    /// # Errors
    /// The tool's error, or the value's serialization error.
    pub fn into_tool_result<T: ToolValue, E: ToolError>(
        self,
        result: Result<T, E>,
    ) -> Result<Value, BoxError> {
        into_tool_result(result)
    }
}

impl ValueTag {
    /// Converts an infallible tool's value.
    ///
    /// # Errors
    /// The value's serialization error.
    pub fn into_tool_result<T: ToolValue>(self, value: T) -> Result<Value, BoxError> {
        into_tool_result(Ok::<T, Infallible>(value))
    }
}

/// Picks [`ResultTag`] at receiver `&Result<T, E>`.
pub trait ReturnsResult {
    /// The tag for a `Result`.
    fn __golem_return_tag(&self) -> ResultTag {
        ResultTag
    }
}

impl<T, E> ReturnsResult for Result<T, E> {}

/// Picks [`ValueTag`] at receiver `&&T`, for every `T`.
pub trait ReturnsValue {
    /// The tag for a plain value.
    fn __golem_return_tag(&self) -> ValueTag {
        ValueTag
    }
}

impl<T: ?Sized> ReturnsValue for &T {}

/// Boxes a tool call's future. The `Send` bound is here, stated once, so a tool whose
/// future is not `Send` gets one error at the call of this function (spanned at the tool
/// function's name), with rustc's note on the value held across an `.await`.
pub fn tool_future<'a, F, C>(future: F, convert: C) -> BoxFuture<'a, Result<Value, BoxError>>
where
    F: Future + Send + 'a,
    C: FnOnce(F::Output) -> Result<Value, BoxError> + Send + 'a,
{
    Box::pin(async move { convert(future.await) })
}

/// The future of a call whose arguments were rejected.
pub fn rejected<'a>(retry: ModelRetry) -> BoxFuture<'a, Result<Value, BoxError>> {
    Box::pin(std::future::ready(Err(retry.into())))
}

/// What an output function's error must be: convertible into [`BoxError`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the error type of a golem output function",
    label = "the output function's error type must convert into `golem::BoxError`",
    note = "an output function's error is any `std::error::Error + Send + Sync + 'static` (a `thiserror` enum, `ModelRetry`), `anyhow::Error`, `String` or `&'static str`; one wrapping `ModelRetry` rejects the call under the output budget, any other fails the run"
)]
pub trait OutputError: Into<BoxError> {}

impl<E: Into<BoxError>> OutputError for E {}

/// An output function's fallible outcome, its error boxed unchanged.
///
/// # Errors
/// The function's error.
pub fn output_result<T, E: OutputError>(result: Result<T, E>) -> Result<T, BoxError> {
    result.map_err(Into::into)
}

/// Boxes an output function's future; the `Send` bound is stated here, once, as for tools.
pub fn output_future<'a, F, C, T>(future: F, convert: C) -> BoxFuture<'a, Result<T, BoxError>>
where
    F: Future + Send + 'a,
    C: FnOnce(F::Output) -> Result<T, BoxError> + Send + 'a,
{
    Box::pin(async move { convert(future.await) })
}

/// The future of an output function call whose arguments were rejected.
pub fn output_rejected<'a, T: Send + 'a>(retry: ModelRetry) -> BoxFuture<'a, Result<T, BoxError>> {
    Box::pin(std::future::ready(Err(retry.into())))
}
