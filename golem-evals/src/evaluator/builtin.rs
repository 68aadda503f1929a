//! The built-in evaluators that need no model.

use std::fmt;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::{EvalContext, Evaluation, Evaluator, Outcome};

/// An assertion, `equals expected`, that the output equals the case's expected output.
/// A case without an expected output gets no outcome from it.
///
/// ```
/// use std::time::Duration;
/// use golem_evals::evaluator::{EqualsExpected, Evaluator};
/// use golem_evals::{Case, EvalContext, Trace};
///
/// let case = Case::new("sum", "2 + 2".to_owned()).expect(4);
/// let trace = Trace::default();
/// let ctx = EvalContext::new(&case, &5, &trace, Duration::ZERO, 0);
/// let evaluation = EqualsExpected.evaluate(&ctx);
/// assert_eq!(evaluation.outcomes[0].to_string(), "equals expected: failed (expected 4, got 5)");
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct EqualsExpected;

impl<I, O, E> Evaluator<I, O, E> for EqualsExpected
where
    O: PartialEq<E> + fmt::Debug,
    E: fmt::Debug,
{
    fn evaluate(&self, ctx: &EvalContext<'_, I, O, E>) -> Evaluation {
        let Some(expected) = &ctx.case.expected else {
            return Evaluation::default();
        };
        let outcome = Outcome::assertion("equals expected", ctx.output == expected);
        if ctx.output == expected {
            outcome.into()
        } else {
            outcome
                .because(format!("expected {expected:?}, got {:?}", ctx.output))
                .into()
        }
    }
}

/// An assertion, `contains "…"`, that the output contains a text: a string output as a
/// substring, any other output in its compact JSON form.
///
/// ```
/// use std::time::Duration;
/// use golem_evals::evaluator::{Contains, Evaluator};
/// use golem_evals::{Case, EvalContext, Trace};
///
/// let case: Case<String, ()> = Case::new("greeting", "Say hello".to_owned());
/// let trace = Trace::default();
/// let output = "Hello there".to_owned();
/// let ctx = EvalContext::new(&case, &output, &trace, Duration::ZERO, 0);
/// let outcome = &Contains::new("Hello").evaluate(&ctx).outcomes[0];
/// assert_eq!(outcome.to_string(), r#"contains "Hello": passed"#);
/// ```
#[derive(Debug, Clone)]
pub struct Contains {
    needle: String,
}

impl Contains {
    /// Checks for `needle`.
    pub fn new(needle: impl Into<String>) -> Self {
        Contains {
            needle: needle.into(),
        }
    }
}

impl<I, O: Serialize, E> Evaluator<I, O, E> for Contains {
    fn evaluate(&self, ctx: &EvalContext<'_, I, O, E>) -> Evaluation {
        let name = format!("contains {:?}", self.needle);
        let haystack = match serde_json::to_value(ctx.output) {
            Ok(Value::String(text)) => text,
            Ok(value) => value.to_string(),
            Err(error) => {
                return Outcome::assertion(name, false)
                    .because(format!("the output is not JSON: {error}"))
                    .into();
            }
        };
        if haystack.contains(&self.needle) {
            Outcome::assertion(name, true).into()
        } else {
            Outcome::assertion(name, false)
                .because(format!("not in {haystack:?}"))
                .into()
        }
    }
}

/// An assertion, `matches schema`, that the output (as JSON) is valid under a JSON schema
/// (draft 2020-12, what schemars writes).
///
/// ```
/// use golem_evals::evaluator::MatchesSchema;
///
/// let schema = MatchesSchema::new(&serde_json::json!({"type": "integer", "minimum": 0}))?;
/// # let _ = schema;
/// # Ok::<_, golem_evals::evaluator::SchemaError>(())
/// ```
pub struct MatchesSchema {
    validator: jsonschema::Validator,
}

impl fmt::Debug for MatchesSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MatchesSchema").finish_non_exhaustive()
    }
}

impl MatchesSchema {
    /// Checks against `schema`.
    ///
    /// # Errors
    /// [`SchemaError`] when the schema does not compile.
    pub fn new(schema: &Value) -> Result<Self, SchemaError> {
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(schema)
            .map_err(|error| SchemaError {
                message: error.to_string(),
            })?;
        Ok(MatchesSchema { validator })
    }

    /// Checks against the schema of `T`.
    ///
    /// # Errors
    /// [`SchemaError`] when the schema does not compile.
    pub fn of<T: JsonSchema>() -> Result<Self, SchemaError> {
        Self::new(&schemars::schema_for!(T).to_value())
    }
}

/// A JSON schema that does not compile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the JSON schema does not compile: {message}")]
pub struct SchemaError {
    /// The validator's message.
    pub message: String,
}

impl<I, O: Serialize, E> Evaluator<I, O, E> for MatchesSchema {
    fn evaluate(&self, ctx: &EvalContext<'_, I, O, E>) -> Evaluation {
        let instance = match serde_json::to_value(ctx.output) {
            Ok(instance) => instance,
            Err(error) => {
                return Outcome::assertion("matches schema", false)
                    .because(format!("the output is not JSON: {error}"))
                    .into();
            }
        };
        let problems: Vec<String> = self
            .validator
            .iter_errors(&instance)
            .map(|error| {
                let path = error.instance_path().to_string();
                if path.is_empty() {
                    error.to_string()
                } else {
                    format!("at `{path}`: {error}")
                }
            })
            .collect();
        if problems.is_empty() {
            Outcome::assertion("matches schema", true).into()
        } else {
            Outcome::assertion("matches schema", false)
                .because(problems.join("; "))
                .into()
        }
    }
}

/// An assertion, `within tolerance`, that a numeric output is close to the expected one:
/// within an absolute difference, or within a fraction of the expected value. A case
/// without an expected output gets no outcome from it.
///
/// ```
/// use std::time::Duration;
/// use golem_evals::evaluator::{Evaluator, WithinTolerance};
/// use golem_evals::{Case, EvalContext, Trace};
///
/// let case = Case::new("half", "1 / 2".to_owned()).expect(0.5);
/// let trace = Trace::default();
/// let ctx = EvalContext::new(&case, &0.56, &trace, Duration::ZERO, 0);
/// let outcome = &WithinTolerance::absolute(0.05).evaluate(&ctx).outcomes[0];
/// assert_eq!(outcome.to_string(), "within tolerance: failed (|0.56 - 0.5| = 0.06 > 0.05)");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct WithinTolerance {
    tolerance: f64,
    relative: bool,
}

impl WithinTolerance {
    /// Passes when `|output - expected| <= tolerance`.
    pub fn absolute(tolerance: f64) -> Self {
        WithinTolerance {
            tolerance,
            relative: false,
        }
    }

    /// Passes when `|output - expected| <= fraction * |expected|`.
    pub fn relative(fraction: f64) -> Self {
        WithinTolerance {
            tolerance: fraction,
            relative: true,
        }
    }
}

fn number<T: Serialize>(value: &T) -> Option<f64> {
    serde_json::to_value(value).ok()?.as_f64()
}

impl<I, O: Serialize, E: Serialize> Evaluator<I, O, E> for WithinTolerance {
    fn evaluate(&self, ctx: &EvalContext<'_, I, O, E>) -> Evaluation {
        const NAME: &str = "within tolerance";
        let Some(expected) = &ctx.case.expected else {
            return Evaluation::default();
        };
        let (Some(output), Some(expected)) = (number(ctx.output), number(expected)) else {
            return Outcome::assertion(NAME, false)
                .because("the output or the expected output is not a number")
                .into();
        };
        let allowed = if self.relative {
            self.tolerance * expected.abs()
        } else {
            self.tolerance
        };
        let difference = (output - expected).abs();
        // Rounded for the reason only: 0.56 - 0.5 is 0.06000000000000005 in f64.
        let shown = (difference * 1e9).round() / 1e9;
        if difference <= allowed + f64::EPSILON * expected.abs().max(1.0) {
            Outcome::assertion(NAME, true).into()
        } else {
            Outcome::assertion(NAME, false)
                .because(format!("|{output} - {expected}| = {shown} > {allowed}"))
                .into()
        }
    }
}

/// An assertion, `duration`, that the task took at most this long.
#[derive(Debug, Clone, Copy)]
pub struct MaxDuration(pub Duration);

impl<I, O, E> Evaluator<I, O, E> for MaxDuration {
    fn evaluate(&self, ctx: &EvalContext<'_, I, O, E>) -> Evaluation {
        let outcome = Outcome::assertion("duration", ctx.duration <= self.0);
        if ctx.duration <= self.0 {
            outcome.into()
        } else {
            outcome
                .because(format!("took {:?}, more than {:?}", ctx.duration, self.0))
                .into()
        }
    }
}

/// Assertions on what a run cost: one per bound set, named after it (`requests`, `total
/// tokens`, `rejected rounds`, `rejected tokens`).
///
/// ```
/// use golem_evals::evaluator::CostBound;
///
/// // At most 4 requests, and self-correction under 500 tokens.
/// let bound = CostBound::new().requests(4).rejected_tokens(500);
/// # let _ = bound;
/// ```
#[derive(Debug, Clone, Copy, Default)]
#[must_use]
pub struct CostBound {
    requests: Option<u64>,
    total_tokens: Option<u64>,
    rejected_rounds: Option<u64>,
    rejected_tokens: Option<u64>,
}

impl CostBound {
    /// No bounds yet.
    pub fn new() -> Self {
        CostBound::default()
    }

    /// At most `max` model requests.
    pub fn requests(mut self, max: u64) -> Self {
        self.requests = Some(max);
        self
    }

    /// At most `max` input and output tokens.
    pub fn total_tokens(mut self, max: u64) -> Self {
        self.total_tokens = Some(max);
        self
    }

    /// At most `max` rounds that ended in a rejection.
    pub fn rejected_rounds(mut self, max: u64) -> Self {
        self.rejected_rounds = Some(max);
        self
    }

    /// At most `max` tokens spent on rounds that ended in a rejection.
    pub fn rejected_tokens(mut self, max: u64) -> Self {
        self.rejected_tokens = Some(max);
        self
    }
}

impl<I, O, E> Evaluator<I, O, E> for CostBound {
    fn evaluate(&self, ctx: &EvalContext<'_, I, O, E>) -> Evaluation {
        let usage = &ctx.trace.usage;
        let rejected = usage.rejected.total;
        let measured = [
            ("requests", self.requests, usage.requests),
            ("total tokens", self.total_tokens, usage.total_tokens()),
            ("rejected rounds", self.rejected_rounds, rejected.requests),
            (
                "rejected tokens",
                self.rejected_tokens,
                rejected.input_tokens.saturating_add(rejected.output_tokens),
            ),
        ];
        Evaluation::new(measured.into_iter().filter_map(|(name, bound, value)| {
            let bound = bound?;
            let outcome = Outcome::assertion(name, value <= bound);
            Some(if value <= bound {
                outcome
            } else {
                outcome.because(format!("{value} > {bound}"))
            })
        }))
    }
}
