//! [`ArgsSchema`]: a tool's parameter schema, compiled once, that checks a call's arguments.

use std::fmt;

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::parse_args;
use crate::model::retry::ModelRetry;

/// A tool's parameter schema, compiled once, that checks arguments before they are parsed.
///
/// With the cargo feature `schema-validation` (off by default, it adds the `jsonschema`
/// crate), [`check`](Self::check) enforces every assertion of the schema that serde does
/// not: ranges (`minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`,
/// `multipleOf`), lengths (`minLength`, `maxLength`, `minItems`, `maxItems`,
/// `minProperties`, `maxProperties`), `pattern`, `enum`, `const`, `uniqueItems`,
/// `required`, types and the combinators (`oneOf`, `anyOf`, `allOf`, `not`) — so
/// `#[schemars(range(min = 1, max = 10))]`, `length(...)` and `regex(...)` on a parameter
/// hold before the tool runs. A violation is a [`ModelRetry`] with each failing path and
/// constraint, charged to the tool's budget like any rejection. Two things are not
/// checked: `additionalProperties` (extra fields are ignored, as serde does, rather than
/// spending a retry on them) and `format` (an annotation in draft 2020-12). Without the
/// feature, `check` accepts everything and serde's own checks (types, required fields,
/// integer ranges of the Rust type) remain.
///
/// `#[golem::tool]` and [`FunctionTool`](crate::tool::FunctionTool) use it; a hand-written tool can too:
///
/// ```
/// use golem::tool::{ArgsSchema, ToolDefinition};
///
/// #[golem::args]
/// struct Args {
///     #[schemars(range(min = 1, max = 10))]
///     n: u8,
/// }
///
/// let definition = ToolDefinition::for_args::<Args>("roll_dice", "Roll dice.");
/// let schema = ArgsSchema::new(&definition.parameters);
/// assert!(schema.check("roll_dice", r#"{"n": 3}"#).is_ok());
/// # #[cfg(feature = "schema-validation")]
/// assert_eq!(
///     schema.check("roll_dice", r#"{"n": 11}"#).unwrap_err().message(),
///     "invalid arguments for tool `roll_dice`: at `n`: 11 is greater than the maximum of 10"
/// );
/// ```
pub struct ArgsSchema {
    #[cfg(feature = "schema-validation")]
    validator: Option<jsonschema::Validator>,
}

impl fmt::Debug for ArgsSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArgsSchema")
            .field("enforced", &self.is_enforced())
            .finish()
    }
}

impl ArgsSchema {
    /// Compiles `parameters`, a tool's parameter schema. A schema the validator cannot
    /// compile is not enforced (serde still checks the arguments).
    pub fn new(parameters: &Value) -> Self {
        #[cfg(feature = "schema-validation")]
        {
            let validator = jsonschema::options()
                .with_draft(jsonschema::Draft::Draft202012)
                .build(parameters)
                .map_err(|error| {
                    tracing::warn!(%error, "a tool's parameter schema does not compile; it is not enforced");
                })
                .ok();
            ArgsSchema { validator }
        }
        #[cfg(not(feature = "schema-validation"))]
        {
            let _ = parameters;
            ArgsSchema {}
        }
    }

    /// Whether [`check`](Self::check) enforces the schema (the feature is on and the
    /// schema compiled).
    pub fn is_enforced(&self) -> bool {
        #[cfg(feature = "schema-validation")]
        {
            self.validator.is_some()
        }
        #[cfg(not(feature = "schema-validation"))]
        {
            false
        }
    }

    /// Checks the raw JSON `args` of a call of `tool_name` against the schema. Text that
    /// is not JSON passes, for [`parse_args`] to report.
    ///
    /// # Errors
    /// A [`ModelRetry`] listing each violation as `` at `path`: constraint ``.
    pub fn check(&self, tool_name: &str, args: &str) -> Result<(), ModelRetry> {
        #[cfg(feature = "schema-validation")]
        if let Some(validator) = &self.validator {
            let args = if args.trim().is_empty() { "{}" } else { args };
            let Ok(instance) = serde_json::from_str::<Value>(args) else {
                return Ok(());
            };
            let problems: Vec<String> = validator
                .iter_errors(&instance)
                .filter(|error| {
                    !matches!(
                        error.kind(),
                        jsonschema::error::ValidationErrorKind::AdditionalProperties { .. }
                    )
                })
                .map(|error| {
                    let path = instance_path(error.instance_path());
                    if path.is_empty() {
                        error.to_string()
                    } else {
                        format!("at `{path}`: {error}")
                    }
                })
                .collect();
            if !problems.is_empty() {
                return Err(ModelRetry::new(format!(
                    "invalid arguments for tool `{tool_name}`: {}",
                    problems.join("; ")
                )));
            }
        }
        #[cfg(not(feature = "schema-validation"))]
        let _ = (tool_name, args);
        Ok(())
    }

    /// [`check`](Self::check), then [`parse_args`].
    ///
    /// # Errors
    /// A [`ModelRetry`] for arguments that break the schema or do not deserialize.
    pub fn parse<T: DeserializeOwned>(&self, tool_name: &str, args: &str) -> Result<T, ModelRetry> {
        self.check(tool_name, args)?;
        parse_args(tool_name, args)
    }
}

/// `filters.since`, `tags[0]`: the path notation of [`parse_args`]'s messages.
#[cfg(feature = "schema-validation")]
fn instance_path(location: &jsonschema::paths::Location) -> String {
    let mut path = String::new();
    for segment in location {
        match segment {
            jsonschema::paths::LocationSegment::Property(name) => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(&name);
            }
            jsonschema::paths::LocationSegment::Index(index) => {
                path.push_str(&format!("[{index}]"));
            }
        }
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::RunContext;
    use crate::tool::{Tool, ToolDefinition};

    /// Search the catalogue.
    #[crate::args(crate = crate)]
    #[derive(Debug)]
    struct SearchArgs {
        #[schemars(length(min = 1, max = 20))]
        query: String,
        #[schemars(range(min = 1, max = 10))]
        limit: u8,
        #[schemars(inner(regex(pattern = r"^[a-z]+$")))]
        tags: Vec<String>,
        sort: Option<Sort>,
    }

    #[crate::args(crate = crate)]
    #[derive(Debug)]
    #[serde(rename_all = "snake_case")]
    enum Sort {
        Newest,
        Oldest,
    }

    fn schema() -> ArgsSchema {
        ArgsSchema::new(&ToolDefinition::for_args::<SearchArgs>("search", "").parameters)
    }

    #[test]
    fn valid_arguments_pass_and_parse() {
        let args: SearchArgs = schema()
            .parse(
                "search",
                r#"{"query": "rust", "limit": 3, "tags": ["a"], "sort": "newest", "extra": 1}"#,
            )
            .expect("valid");
        assert_eq!(
            (args.query.as_str(), args.limit, args.tags.len()),
            ("rust", 3, 1)
        );
        assert!(matches!(args.sort, Some(Sort::Newest)));
        assert!(!matches!(args.sort, Some(Sort::Oldest)));
    }

    /// Aim at a point or at a name.
    #[crate::args(crate = crate)]
    #[derive(Debug)]
    struct AimArgs {
        speed: u32,
        #[serde(flatten)]
        target: Target,
    }

    #[crate::args(crate = crate)]
    #[derive(Debug)]
    #[serde(tag = "kind")]
    enum Target {
        Point { x: i32 },
        Named { name: String },
    }

    #[test]
    fn arguments_with_a_flattened_enum_pass_and_parse() {
        let schema = ArgsSchema::new(&ToolDefinition::for_args::<AimArgs>("aim", "").parameters);
        let args: AimArgs = schema
            .parse("aim", r#"{"speed": 2, "kind": "Named", "name": "Ann"}"#)
            .expect("valid");
        assert_eq!(args.speed, 2);
        assert!(matches!(args.target, Target::Named { ref name } if name == "Ann"));
        let args: AimArgs = schema
            .parse("aim", r#"{"speed": 1, "kind": "Point", "x": -3}"#)
            .expect("valid");
        assert!(matches!(args.target, Target::Point { x: -3 }));
    }

    #[test]
    fn text_that_is_not_json_is_left_to_parse_args() {
        let error = schema().parse::<SearchArgs>("search", "{").unwrap_err();
        assert!(
            error
                .message()
                .starts_with("invalid arguments for tool `search`: ")
        );
        assert!(schema().check("search", "{").is_ok());
    }

    #[cfg(not(feature = "schema-validation"))]
    #[test]
    fn without_the_feature_only_serde_checks() {
        assert!(!schema().is_enforced());
        let args: SearchArgs = schema()
            .parse("search", r#"{"query": "", "limit": 11, "tags": ["A"]}"#)
            .expect("serde accepts it");
        assert_eq!(args.limit, 11);
    }

    #[cfg(feature = "schema-validation")]
    #[test]
    fn constraints_are_enforced_with_each_failing_path() {
        assert!(schema().is_enforced());
        let error = schema()
            .parse::<SearchArgs>(
                "search",
                r#"{"query": "", "limit": 11, "tags": ["ok", "NO"], "sort": "best"}"#,
            )
            .unwrap_err();
        assert_eq!(
            error.message(),
            "invalid arguments for tool `search`: at `query`: \"\" is shorter than 1 character; \
             at `limit`: 11 is greater than the maximum of 10; \
             at `tags[1]`: \"NO\" does not match \"^[a-z]+$\"; \
             at `sort`: \"best\" is not one of \"newest\", \"oldest\" or null"
        );
    }

    #[cfg(feature = "schema-validation")]
    #[test]
    fn a_missing_field_is_reported_at_the_root() {
        let error = schema()
            .check("search", r#"{"limit": 1, "tags": []}"#)
            .unwrap_err();
        assert_eq!(
            error.message(),
            "invalid arguments for tool `search`: \"query\" is a required property"
        );
    }

    /// Roll dice.
    #[crate::tool(crate = crate)]
    async fn roll(#[schemars(range(min = 1, max = 10))] n: u8) -> u8 {
        n
    }

    #[cfg(feature = "schema-validation")]
    #[test]
    fn generated_tools_check_their_arguments_too() {
        use futures_util::FutureExt;
        let ctx = RunContext::new(());
        let error = Tool::<()>::call(&Roll, &ctx, r#"{"n": 11}"#)
            .now_or_never()
            .expect("ready")
            .unwrap_err();
        let retry = error.downcast_ref::<ModelRetry>().expect("a rejection");
        assert_eq!(
            retry.message(),
            "invalid arguments for tool `roll`: at `n`: 11 is greater than the maximum of 10"
        );
    }

    #[test]
    fn generated_tools_accept_valid_arguments() {
        use futures_util::FutureExt;
        let ctx = RunContext::new(());
        let output = Tool::<()>::call(&Roll, &ctx, r#"{"n": 10}"#)
            .now_or_never()
            .expect("ready")
            .expect("valid");
        assert_eq!(output, 10);
    }
}
