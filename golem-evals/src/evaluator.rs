//! Evaluators: what decides whether a case passed, and how well.
//!
//! An [`Evaluator`] reads an [`EvalContext`] — the case, the output, the run's [`Trace`]
//! and how long it took — and returns an [`Evaluation`]: [`Outcome`]s that are assertions
//! (pass or fail), scores or labels, each with an optional reason. A case passes when its
//! task succeeded and every assertion holds.
//!
//! Most evaluators need no `await` and implement [`Evaluator::evaluate`]; the [`Judge`]
//! asks a model and implements [`Evaluator::evaluate_async`]. One-line checks of the run
//! are closures:
//!
//! ```
//! use golem_evals::evaluator::{check, score};
//!
//! let no_rejection = check("no rejected round", |ctx| ctx.trace.usage.rejected.is_empty());
//! let at_most_one = check("search rejected at most once", |ctx| {
//!     ctx.trace.rejections_of("search").count() <= 1
//! });
//! let cheap = check("rejected rounds under 500 tokens", |ctx| {
//!     let cost = ctx.trace.rejected_cost();
//!     cost.input_tokens + cost.output_tokens < 500
//! });
//! let length = score("length", |ctx: &golem_evals::EvalContext<'_, String, String, String>| {
//!     ctx.output.len() as f64
//! });
//! # let _: [&dyn golem_evals::Evaluator<String, String, String>; 4] =
//! #     [&no_rejection, &at_most_one, &cheap, &length];
//! ```

use std::fmt;
use std::time::Duration;

use futures_util::future::{BoxFuture, FutureExt};
use golem::Usage;
use serde::{Deserialize, Serialize};

use crate::dataset::Case;
use crate::trace::Trace;

mod builtin;
mod judge;

pub use builtin::{
    Contains, CostBound, EqualsExpected, MatchesSchema, MaxDuration, SchemaError, WithinTolerance,
};
pub use judge::{JUDGE_INSTRUCTIONS, Judge, Verdict};

/// What an evaluator sees of one case's run.
#[derive(Debug)]
#[non_exhaustive]
pub struct EvalContext<'a, I, O, E> {
    /// The case.
    pub case: &'a Case<I, E>,
    /// What the task produced.
    pub output: &'a O,
    /// The run's history, usage and events.
    pub trace: &'a Trace,
    /// How long the task took.
    pub duration: Duration,
    /// Which repeat of the case this is, from 0.
    pub repeat: u32,
}

impl<'a, I, O, E> EvalContext<'a, I, O, E> {
    /// The context of `output` on `case`, with `trace`, `duration` and `repeat`.
    pub fn new(
        case: &'a Case<I, E>,
        output: &'a O,
        trace: &'a Trace,
        duration: Duration,
        repeat: u32,
    ) -> Self {
        EvalContext {
            case,
            output,
            trace,
            duration,
            repeat,
        }
    }
}

/// One result of an evaluator: an assertion, a score or a label, named, with a reason.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Outcome {
    /// What was evaluated, e.g. `equals expected`.
    pub name: String,
    /// The result.
    pub value: OutcomeValue,
    /// Why, when the evaluator says (always for a failed built-in assertion).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Outcome {
    /// An assertion: `passed` or not.
    pub fn assertion(name: impl Into<String>, passed: bool) -> Self {
        Outcome::of(name, OutcomeValue::Assertion(passed))
    }

    /// A score (by convention from 0 to 1, but any number).
    pub fn score(name: impl Into<String>, score: f64) -> Self {
        Outcome::of(name, OutcomeValue::Score(score))
    }

    /// A label, e.g. a category the output falls in.
    pub fn label(name: impl Into<String>, label: impl Into<String>) -> Self {
        Outcome::of(name, OutcomeValue::Label(label.into()))
    }

    fn of(name: impl Into<String>, value: OutcomeValue) -> Self {
        Outcome {
            name: name.into(),
            value,
            reason: None,
        }
    }

    /// Sets the reason.
    #[must_use]
    pub fn because(mut self, reason: impl Into<String>) -> Self {
        self.reason = Some(reason.into());
        self
    }

    /// Whether this is an assertion that failed.
    pub fn is_failure(&self) -> bool {
        self.value == OutcomeValue::Assertion(false)
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.value {
            OutcomeValue::Assertion(true) => write!(f, "{}: passed", self.name)?,
            OutcomeValue::Assertion(false) => write!(f, "{}: failed", self.name)?,
            OutcomeValue::Score(score) => write!(f, "{}: {score:.2}", self.name)?,
            OutcomeValue::Label(label) => write!(f, "{}: {label}", self.name)?,
        }
        match &self.reason {
            Some(reason) => write!(f, " ({reason})"),
            None => Ok(()),
        }
    }
}

/// The value of an [`Outcome`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeValue {
    /// Passed (`true`) or failed.
    Assertion(bool),
    /// A number; reports average it per evaluator.
    Score(f64),
    /// A category.
    Label(String),
}

/// What one evaluator returned for one case: its outcomes, and what it cost when it ran a
/// model (a [`Judge`]).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Evaluation {
    /// The outcomes, in the evaluator's order.
    pub outcomes: Vec<Outcome>,
    /// What evaluating cost (zero unless the evaluator ran a model).
    pub usage: Usage,
}

impl Evaluation {
    /// An evaluation of `outcomes` that cost nothing.
    pub fn new(outcomes: impl IntoIterator<Item = Outcome>) -> Self {
        Evaluation {
            outcomes: outcomes.into_iter().collect(),
            usage: Usage::default(),
        }
    }

    /// Sets what evaluating cost.
    #[must_use]
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = usage;
        self
    }
}

impl From<Outcome> for Evaluation {
    fn from(outcome: Outcome) -> Self {
        Evaluation::new([outcome])
    }
}

/// Something that evaluates a case's output and run: synchronously
/// ([`evaluate`](Self::evaluate)), or asynchronously, e.g. by asking a model
/// ([`evaluate_async`](Self::evaluate_async), which the runner calls; a [`Judge`]).
/// Implement one of the two.
///
/// ```
/// use golem_evals::evaluator::{EvalContext, Evaluation, Evaluator, Outcome};
///
/// /// Passes outputs of at most this many characters.
/// struct Short(usize);
///
/// impl Evaluator<String, String, String> for Short {
///     fn evaluate(&self, ctx: &EvalContext<'_, String, String, String>) -> Evaluation {
///         Outcome::assertion("short", ctx.output.len() <= self.0).into()
///     }
/// }
/// ```
///
/// An async one:
///
/// ```
/// use futures_util::future::{BoxFuture, FutureExt};
/// use golem_evals::evaluator::{EvalContext, Evaluation, Evaluator, Outcome};
///
/// /// Asks a (here pretend) spell checker.
/// struct Spelling;
///
/// impl Evaluator<String, String, String> for Spelling {
///     fn evaluate_async<'a>(
///         &'a self,
///         ctx: &'a EvalContext<'a, String, String, String>,
///     ) -> BoxFuture<'a, Evaluation> {
///         async move {
///             tokio::task::yield_now().await;
///             let typos = ctx.output.matches("teh").count();
///             Outcome::assertion("spelling", typos == 0)
///                 .because(format!("{typos} typo(s)"))
///                 .into()
///         }
///         .boxed()
///     }
/// }
/// ```
pub trait Evaluator<I, O, E>: Send + Sync {
    /// Evaluates one case's run without waiting; the default evaluates nothing.
    fn evaluate(&self, ctx: &EvalContext<'_, I, O, E>) -> Evaluation {
        let _ = ctx;
        Evaluation::default()
    }

    /// Evaluates one case's run; the default is [`evaluate`](Self::evaluate).
    fn evaluate_async<'a>(
        &'a self,
        ctx: &'a EvalContext<'a, I, O, E>,
    ) -> BoxFuture<'a, Evaluation> {
        futures_util::future::ready(self.evaluate(ctx)).boxed()
    }
}

macro_rules! closure_evaluator {
    ($(#[$doc:meta])* $ty:ident, $ctor:ident, $returns:ty, |$name:ident, $value:ident| $evaluation:expr) => {
        $(#[$doc])*
        pub fn $ctor<I, O, E, F>(name: impl Into<String>, evaluate: F) -> $ty<F>
        where
            F: Fn(&EvalContext<'_, I, O, E>) -> $returns + Send + Sync,
        {
            $ty {
                name: name.into(),
                evaluate,
            }
        }

        #[doc = concat!("The evaluator [`", stringify!($ctor), "`] makes of a closure.")]
        pub struct $ty<F> {
            name: String,
            evaluate: F,
        }

        impl<F> fmt::Debug for $ty<F> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($ty))
                    .field("name", &self.name)
                    .finish_non_exhaustive()
            }
        }

        impl<I, O, E, F> Evaluator<I, O, E> for $ty<F>
        where
            F: Fn(&EvalContext<'_, I, O, E>) -> $returns + Send + Sync,
        {
            fn evaluate(&self, ctx: &EvalContext<'_, I, O, E>) -> Evaluation {
                let $name = self.name.as_str();
                let $value = (self.evaluate)(ctx);
                Evaluation::from($evaluation)
            }
        }
    };
}

closure_evaluator!(
    /// An assertion named `name` that holds when `holds(ctx)` is true.
    Check, check, bool, |name, holds| Outcome::assertion(name, holds)
);

closure_evaluator!(
    /// An assertion named `name` that holds when `holds(ctx)` is `Ok(())` and fails with
    /// the reason in the `Err`.
    ///
    /// ```
    /// use golem_evals::evaluator::check_with_reason;
    /// use golem_evals::EvalContext;
    ///
    /// let polite = check_with_reason("polite", |ctx: &EvalContext<'_, String, String, String>| {
    ///     if ctx.output.contains("please") { Ok(()) } else { Err("no please".to_owned()) }
    /// });
    /// # let _ = polite;
    /// ```
    CheckWithReason, check_with_reason, Result<(), String>, |name, holds| match holds {
        Ok(()) => Outcome::assertion(name, true),
        Err(reason) => Outcome::assertion(name, false).because(reason),
    }
);

closure_evaluator!(
    /// A score named `name`: `score(ctx)`.
    Score, score, f64, |name, score| Outcome::score(name, score)
);

closure_evaluator!(
    /// A label named `name`: `label(ctx)`.
    Label, label, String, |name, label| Outcome::label(name, label)
);

/// An evaluator that is the closure `evaluate(ctx)`, returning a whole [`Evaluation`].
///
/// ```
/// use golem_evals::evaluator::{evaluator_fn, Evaluation, Outcome};
/// use golem_evals::EvalContext;
///
/// let both = evaluator_fn(|ctx: &EvalContext<'_, String, String, String>| {
///     Evaluation::new([
///         Outcome::assertion("not empty", !ctx.output.is_empty()),
///         Outcome::score("words", ctx.output.split_whitespace().count() as f64),
///     ])
/// });
/// # let _ = both;
/// ```
pub fn evaluator_fn<I, O, E, F>(evaluate: F) -> EvaluatorFn<F>
where
    F: Fn(&EvalContext<'_, I, O, E>) -> Evaluation + Send + Sync,
{
    EvaluatorFn { evaluate }
}

/// The evaluator [`evaluator_fn`] makes of a closure.
pub struct EvaluatorFn<F> {
    evaluate: F,
}

impl<F> fmt::Debug for EvaluatorFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EvaluatorFn").finish_non_exhaustive()
    }
}

impl<I, O, E, F> Evaluator<I, O, E> for EvaluatorFn<F>
where
    F: Fn(&EvalContext<'_, I, O, E>) -> Evaluation + Send + Sync,
{
    fn evaluate(&self, ctx: &EvalContext<'_, I, O, E>) -> Evaluation {
        (self.evaluate)(ctx)
    }
}
