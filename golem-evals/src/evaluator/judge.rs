//! [`Judge`]: an LLM judge, itself a golem agent whose output is a [`Verdict`].

use std::fmt::Write as _;

use futures_util::future::{BoxFuture, FutureExt};
use golem::model::Model;
use golem::{Agent, BuildError, ModelRetry};
use serde::Serialize;

use super::{EvalContext, Evaluation, Evaluator, Outcome};
use crate::task::chain;

/// A judge's verdict on one output: whether it passes the rubric, a score from 0 to 1 and
/// why. A score outside 0..=1 or an empty reason is rejected, and the judge corrects it
/// under its output budget.
#[golem::output(validate = Verdict::check)]
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// Whether the output meets the rubric.
    pub pass: bool,
    /// How well it meets it, from 0 (not at all) to 1 (fully).
    pub score: f64,
    /// Why, in a sentence or two.
    pub reason: String,
}

impl Verdict {
    fn check(&self) -> Result<(), ModelRetry> {
        if !(0.0..=1.0).contains(&self.score) {
            return Err(ModelRetry::new(format!(
                "`score` must be between 0 and 1, not {}",
                self.score
            )));
        }
        if self.reason.trim().is_empty() {
            return Err(ModelRetry::new("`reason` must say why"));
        }
        Ok(())
    }
}

/// The instructions a judge's agent gets; the rubric comes with each case.
pub const JUDGE_INSTRUCTIONS: &str = "You judge the output of an AI system against a rubric. \
Read the rubric, the input and the output (and the expected output, when given), then give \
your verdict: whether the output passes the rubric, a score from 0 to 1, and the reason.";

/// An LLM judge: asks a model, through a golem agent, whether each output meets a rubric.
/// Its outcomes are an assertion named after the judge (`judge` by default) and a score
/// (`judge score`), both with the verdict's reason; what the judge cost is in the case's
/// evaluator usage.
///
/// The verdict is a `#[golem::output]` type, so a malformed verdict is sent back to the
/// judge's model as feedback, under the agent's output budget (2 by default with
/// [`Judge::new`]). A judge whose run fails gives a failed assertion whose reason is the
/// error, and the usage it spent.
///
/// ```
/// use golem::model::function::FunctionModel;
/// use golem::model::ModelResponse;
/// use golem_evals::evaluator::Judge;
///
/// let model = FunctionModel::new(|_, _| {
///     ModelResponse::tool_call(
///         "final_result",
///         r#"{"pass": true, "score": 0.9, "reason": "polite and correct"}"#,
///         "call_1",
///     )
/// });
/// let judge = Judge::new(model, "The answer is polite and correct.")?;
/// # let _ = judge;
/// # Ok::<_, golem::BuildError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Judge {
    agent: Agent<(), Verdict>,
    rubric: String,
    name: String,
}

impl Judge {
    /// A judge on `model` that applies `rubric`, with [`JUDGE_INSTRUCTIONS`] and an output
    /// budget of 2 corrections.
    ///
    /// # Errors
    /// [`BuildError`] from building the judge's agent.
    pub fn new(model: impl Model, rubric: impl Into<String>) -> Result<Self, BuildError> {
        let agent = Agent::<(), Verdict>::builder(model)
            .name("judge")
            .instructions(JUDGE_INSTRUCTIONS)
            .output_retries(2)
            .build()?;
        Ok(Judge::with_agent(agent, rubric))
    }

    /// A judge that is `agent` (with its own instructions, budgets and limits), applying
    /// `rubric`.
    pub fn with_agent(agent: Agent<(), Verdict>, rubric: impl Into<String>) -> Self {
        Judge {
            agent,
            rubric: rubric.into(),
            name: "judge".to_owned(),
        }
    }

    /// Names the judge's outcomes `name` and `{name} score`, to tell judges apart.
    #[must_use]
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The prompt the judge gets for one case.
    pub fn prompt<I: Serialize, O: Serialize, E: Serialize>(
        &self,
        ctx: &EvalContext<'_, I, O, E>,
    ) -> String {
        let mut prompt = format!(
            "Rubric: {}\n\nInput:\n{}\n",
            self.rubric,
            json(&ctx.case.input)
        );
        if let Some(expected) = &ctx.case.expected {
            let _ = write!(prompt, "\nExpected output:\n{}\n", json(expected));
        }
        let _ = write!(prompt, "\nOutput:\n{}\n", json(ctx.output));
        prompt
    }
}

/// `value` as pretty JSON, a string as itself.
fn json<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(text)) => text,
        Ok(value) => serde_json::to_string_pretty(&value).unwrap_or_else(|_| value.to_string()),
        Err(error) => format!("(not JSON: {error})"),
    }
}

impl<I, O, E> Evaluator<I, O, E> for Judge
where
    I: Serialize + Sync,
    O: Serialize + Sync,
    E: Serialize + Sync,
{
    fn evaluate_async<'a>(
        &'a self,
        ctx: &'a EvalContext<'a, I, O, E>,
    ) -> BoxFuture<'a, Evaluation> {
        let prompt = self.prompt(ctx);
        async move {
            match self.agent.run(prompt, ()).await {
                Ok(result) => {
                    let verdict = result.output;
                    Evaluation::new([
                        Outcome::assertion(&self.name, verdict.pass).because(&verdict.reason),
                        Outcome::score(format!("{} score", self.name), verdict.score)
                            .because(verdict.reason),
                    ])
                    .with_usage(result.usage)
                }
                Err(error) => {
                    let usage = error.usage().clone();
                    Evaluation::from(
                        Outcome::assertion(&self.name, false)
                            .because(format!("the judge failed: {}", chain(&error))),
                    )
                    .with_usage(usage)
                }
            }
        }
        .boxed()
    }
}
