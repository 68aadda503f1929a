//! [`ModelRetry`]: the rejection that tools, decoders and validators return so the model
//! can correct itself.

use std::error::Error as StdError;
use std::fmt;

use crate::error::BoxError;

/// Reject what the model produced and tell it why, so it can try again.
///
/// Return it from a tool, an output decoder or an output validator, on its own or wrapped
/// anywhere in an error's `source()` chain (`anyhow` context, a `thiserror` variant with
/// `#[from]`). Within the budget the message goes back to the model as feedback; past it the
/// run fails with this as the cause. Only this message is shown to the model, never the text
/// of the errors around it.
///
/// golem finds it by walking `source()`, so a wrapper must return it from `source()`: with
/// thiserror write `#[error("{0}")] Rejected(#[from] ModelRetry)`, not
/// `#[error(transparent)]`, which forwards `source()` past it.
///
/// ```
/// use golem::ModelRetry;
///
/// fn check(n: i64) -> Result<i64, ModelRetry> {
///     if n <= 0 {
///         return Err(ModelRetry::new(format!("n must be positive, got {n}")));
///     }
///     Ok(n)
/// }
/// assert_eq!(check(-1).unwrap_err().to_string(), "n must be positive, got -1");
/// ```
#[derive(Debug)]
pub struct ModelRetry {
    message: String,
    source: Option<BoxError>,
}

impl ModelRetry {
    /// A rejection whose feedback to the model is `message`.
    pub fn new(message: impl Into<String>) -> Self {
        ModelRetry {
            message: message.into(),
            source: None,
        }
    }

    /// Keeps `source` as the underlying cause; it is not shown to the model.
    #[must_use]
    pub fn with_source(mut self, source: impl Into<BoxError>) -> Self {
        self.source = Some(source.into());
        self
    }

    /// The feedback for the model.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The first `ModelRetry` in `error`'s `source()` chain, `error` itself included, up to
    /// the first [`RunError`](crate::RunError) in it: another run's rejections are its own.
    ///
    /// ```
    /// use golem::ModelRetry;
    ///
    /// #[derive(Debug, thiserror::Error)]
    /// enum LookupError {
    ///     #[error("lookup rejected")]
    ///     Rejected(#[from] ModelRetry),
    /// }
    ///
    /// let error = LookupError::from(ModelRetry::new("unknown city"));
    /// let found = ModelRetry::find(&error).expect("wrapped");
    /// assert_eq!(found.message(), "unknown city");
    /// ```
    pub fn find<'a>(error: &'a (dyn StdError + 'static)) -> Option<&'a ModelRetry> {
        let mut current = Some(error);
        while let Some(error) = current {
            if let Some(retry) = error.downcast_ref::<ModelRetry>() {
                return Some(retry);
            }
            // Another run's rejections are its own: an agent's failed run, as an error of
            // its caller, is a failure there, not a rejection.
            if error.is::<crate::run::RunError>() {
                return None;
            }
            current = error.source();
        }
        None
    }
}

impl fmt::Display for ModelRetry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl StdError for ModelRetry {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.source
            .as_deref()
            .map(|source| source as &(dyn StdError + 'static))
    }
}
