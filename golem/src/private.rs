//! What the code `#[golem::tool]` and `#[golem::output]` generate calls, re-exported as
//! `golem::__private`. Not public API: it changes without notice.
//!
//! The traits carry `#[diagnostic::on_unimplemented]` so a misuse is reported at the
//! user's parameter or return type in the user's terms.

pub use schemars;
pub use serde;
pub use serde_json;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::error::BoxError;

/// A type a tool parameter can have: read from the model's JSON, described by a schema.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the type of a golem tool parameter",
    label = "the model's JSON arguments cannot be read into `{Self}`",
    note = "a tool parameter's type must implement `Deserialize` and `JsonSchema`; for your own types, `#[golem::args]` derives both"
)]
pub trait ToolArgument: DeserializeOwned + JsonSchema {}

impl<T: DeserializeOwned + JsonSchema> ToolArgument for T {}

/// Fails to compile, at the parameter's type, unless `T` is a [`ToolArgument`].
pub const fn assert_tool_argument<T: ToolArgument>() {}

pub mod args;
pub mod returns;

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

/// What a `#[golem::tool]` builds once: its definition and its compiled parameter schema.
#[derive(Debug)]
pub struct ToolStatics {
    /// The definition shown to the model.
    pub definition: crate::tool::ToolDefinition,
    schema: crate::tool::ArgsSchema,
}

impl ToolStatics {
    /// The definition of `Args` under `name` and `description`, and its schema.
    pub fn new<Args: JsonSchema>(name: &str, description: &str) -> Self {
        let definition = crate::tool::ToolDefinition::for_args::<Args>(name, description);
        ToolStatics {
            schema: crate::tool::ArgsSchema::new(&definition.parameters),
            definition,
        }
    }

    /// The call's arguments, checked against the schema and parsed.
    ///
    /// # Errors
    /// A `ModelRetry` for arguments that break the schema or do not deserialize.
    pub fn parse<Args: DeserializeOwned>(&self, args: &str) -> Result<Args, crate::ModelRetry> {
        self.schema.parse(&self.definition.name, args)
    }

    /// The call's arguments, checked against the schema and read into the tuple of the
    /// parameters named `names`.
    ///
    /// # Errors
    /// A `ModelRetry` for arguments that break the schema or do not deserialize, with the
    /// path of the bad field.
    pub fn parse_fields<Fields: args::ArgFields>(
        &self,
        names: &'static [&'static str],
        args: &str,
    ) -> Result<Fields, crate::ModelRetry> {
        let name = &self.definition.name;
        self.schema.check(name, args)?;
        let args = if args.trim().is_empty() { "{}" } else { args };
        crate::output::decode_json_seed(args, args::NamedFields::<Fields>::new(names)).map_err(
            |(message, source)| {
                crate::ModelRetry::new(format!("invalid arguments for tool `{name}`: {message}"))
                    .with_source(source)
            },
        )
    }
}
