//! What the code `#[golem::tool]` and `#[golem::output]` generate calls, re-exported as
//! `golem::__private`. Not public API: it changes without notice.
//!
//! The traits carry `#[diagnostic::on_unimplemented]` so a misuse is reported at the
//! user's parameter or return type in the user's terms.

pub use golem_macros::ToolItems;
pub use schemars;
pub use serde;
pub use serde_json;

use std::marker::PhantomData;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::error::BoxError;

/// A type a tool parameter's JSON can be read into. One of the two halves of
/// [`assert_tool_argument`], so that a type missing both traits gets one error for each,
/// each saying what to derive.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the type of a golem tool parameter: it does not implement `Deserialize`",
    label = "the model's JSON arguments cannot be read into `{Self}`",
    note = "put `#[golem::args]` on `{Self}`: it derives `Deserialize` and `JsonSchema` through golem, with no serde or schemars dependency (with your own serde, `#[derive(serde::Deserialize)]` works too); a type from another crate needs its `serde` feature, or a type of your own in its place"
)]
pub trait DeserializeArgument: DeserializeOwned {}

// `do_not_recommend`: the error names the missing trait through the message above, without
// rustc's list of other types that implement `Deserialize`.
#[diagnostic::do_not_recommend]
impl<T: DeserializeOwned> DeserializeArgument for T {}

/// A type a tool parameter's JSON schema can be made from; the other half of
/// [`assert_tool_argument`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the type of a golem tool parameter: it does not implement `JsonSchema`",
    label = "the model is shown a JSON schema of each parameter, and `{Self}` has none",
    note = "put `#[golem::args]` on `{Self}`: it derives `Deserialize` and `JsonSchema` through golem, with no serde or schemars dependency (with your own schemars 1.x, `#[derive(schemars::JsonSchema)]` works too); a type from another crate needs its `schemars` feature, or a type of your own in its place"
)]
pub trait SchemaArgument: JsonSchema {}

#[diagnostic::do_not_recommend]
impl<T: JsonSchema> SchemaArgument for T {}

/// Fails to compile, at the parameter's type, unless `T` is a [`DeserializeArgument`] and
/// a [`SchemaArgument`]: one error for each trait `T` lacks. It is the only place the
/// expansion states these bounds; the uses of the arguments go through [`ArgsReady`] and
/// [`ArgsUnready`], which add no error of their own.
pub const fn assert_tool_argument<T: DeserializeArgument + SchemaArgument>() {}

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

/// The arguments of a tool whose parameters are read by name into the tuple `Fields`, with
/// the schema of `Schema` (the generated arguments struct).
#[derive(Debug)]
pub struct FieldsProbe<Schema, Fields>(PhantomData<fn() -> (Schema, Fields)>);

/// The arguments of a tool read whole into `Args`, which derives `Deserialize` (parameters
/// with `#[serde]` attributes, more than [`args::MAX_FIELDS`] of them, or none: `()`).
#[derive(Debug)]
pub struct StructProbe<Args>(PhantomData<fn() -> Args>);

impl<Schema, Fields> FieldsProbe<Schema, Fields> {
    /// The probe; it holds nothing.
    pub const NEW: Self = FieldsProbe(PhantomData);
}

impl<Args> StructProbe<Args> {
    /// The probe; it holds nothing.
    pub const NEW: Self = StructProbe(PhantomData);
}

/// What a probe reads the arguments into.
pub trait ArgsProbe {
    /// The value the generated `call` takes apart: the tuple or the struct.
    type Fields;
}

impl<Schema, Fields> ArgsProbe for FieldsProbe<Schema, Fields> {
    type Fields = Fields;
}

impl<Args> ArgsProbe for StructProbe<Args> {
    type Fields = Args;
}

/// Builds a tool's statics and reads its arguments, for parameter types that are all
/// argument types.
///
/// The generated code calls `(&probe).statics(..)` and `(&probe).read(..)` with both this
/// trait and [`ArgsUnready`] in scope. Method lookup tries the receiver `&Probe` first,
/// where only this trait applies, and only when the impl's bounds hold; otherwise it takes
/// `&&Probe`, where [`ArgsUnready`] applies to any probe. So a parameter type without
/// `Deserialize` or `JsonSchema` is reported once, by [`assert_tool_argument`] at the
/// parameter, and not again at each use of the arguments (autoref dispatch, as in
/// [`returns`]).
pub trait ArgsReady: ArgsProbe {
    /// The definition and the compiled schema.
    fn statics(&self, name: &str, description: &str) -> ToolStatics;

    /// The call's arguments, checked against the schema and parsed.
    ///
    /// # Errors
    /// A `ModelRetry` for arguments that break the schema or do not deserialize.
    fn read(
        &self,
        statics: &ToolStatics,
        names: &'static [&'static str],
        args: &str,
    ) -> Result<Self::Fields, crate::ModelRetry>;
}

impl<Schema: JsonSchema, Fields: args::ArgFields> ArgsReady for FieldsProbe<Schema, Fields> {
    fn statics(&self, name: &str, description: &str) -> ToolStatics {
        ToolStatics::new::<Schema>(name, description)
    }

    fn read(
        &self,
        statics: &ToolStatics,
        names: &'static [&'static str],
        args: &str,
    ) -> Result<Fields, crate::ModelRetry> {
        statics.parse_fields(names, args)
    }
}

impl<Args: JsonSchema + DeserializeOwned> ArgsReady for StructProbe<Args> {
    fn statics(&self, name: &str, description: &str) -> ToolStatics {
        ToolStatics::new::<Args>(name, description)
    }

    fn read(
        &self,
        statics: &ToolStatics,
        _names: &'static [&'static str],
        args: &str,
    ) -> Result<Args, crate::ModelRetry> {
        statics.parse(args)
    }
}

/// The fallback of [`ArgsReady`], chosen only when a parameter type lacks `Deserialize` or
/// `JsonSchema` — and then [`assert_tool_argument`] has already failed the build, so these
/// methods are never compiled into a program.
pub trait ArgsUnready {
    /// What the arguments would be read into.
    type Fields;

    /// Never called.
    fn statics(&self, name: &str, description: &str) -> ToolStatics;

    /// Never called.
    ///
    /// # Errors
    /// None: it is never called.
    fn read(
        &self,
        statics: &ToolStatics,
        names: &'static [&'static str],
        args: &str,
    ) -> Result<Self::Fields, crate::ModelRetry>;
}

impl<P: ArgsProbe> ArgsUnready for &P {
    type Fields = P::Fields;

    fn statics(&self, _name: &str, _description: &str) -> ToolStatics {
        unreachable!("a tool parameter type without `Deserialize` or `JsonSchema` fails the build")
    }

    fn read(
        &self,
        _statics: &ToolStatics,
        _names: &'static [&'static str],
        _args: &str,
    ) -> Result<P::Fields, crate::ModelRetry> {
        unreachable!("a tool parameter type without `Deserialize` or `JsonSchema` fails the build")
    }
}
