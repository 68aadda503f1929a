//! [`Experiment`]: a task and its evaluators, run over a dataset.

use std::fmt;
use std::io::IsTerminal;
use std::time::Duration;

use std::panic::AssertUnwindSafe;

use futures_util::{FutureExt, StreamExt};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use crate::dataset::{Case, Dataset};
use crate::evaluator::{EvalContext, Evaluation, Evaluator, Outcome, OutcomeValue};
use crate::report::{CaseReport, CaseResult, Report};
use crate::task::{Task, TaskFailure};
use crate::trace::Trace;

/// Whether an experiment shows a progress bar.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Progress {
    /// On standard error when it is a terminal; none otherwise (CI, a pipe, a test).
    #[default]
    Auto,
    /// Never.
    Hidden,
}

/// A task and its evaluators, to run over a [`Dataset`]: `concurrency` runs at a time
/// (1 by default), each case `repeats` times (1 by default), each run under an optional
/// timeout. A run that fails, times out (an agent's run is stopped with what it spent; see
/// [`Task::run_within`]), or panics is a result in the report, not the end of the
/// experiment; the report lists runs in the dataset's order whatever order they finished
/// in.
///
/// ```
/// use golem::model::function::FunctionModel;
/// use golem::model::{Message, ModelResponse};
/// use golem::Agent;
/// use golem_evals::evaluator::{check, EqualsExpected};
/// use golem_evals::{AgentTask, Case, Dataset, Experiment};
///
/// let model = FunctionModel::new(|messages: &[Message], _| {
///     let answer = if format!("{messages:?}").contains("2 + 2") { "4" } else { "?" };
///     ModelResponse::text(answer).with_usage(20, 1)
/// });
/// let agent = Agent::<(), String>::builder(model).build()?;
/// let dataset = Dataset::new([
///     Case::new("two plus two", "What is 2 + 2?".to_owned()).expect("4".to_owned()),
///     Case::new("three plus three", "What is 3 + 3?".to_owned()).expect("6".to_owned()),
/// ]);
/// let experiment = Experiment::new("arithmetic", AgentTask::new(agent, |q: &String| (q.clone(), ())))
///     .evaluator(EqualsExpected)
///     .evaluator(check("no rejected round", |ctx| ctx.trace.usage.rejected.is_empty()))
///     .concurrency(2);
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let report = experiment.run(&dataset).await;
/// assert_eq!(report.totals.passed, 1);
/// assert_eq!(report.totals.usage.input_tokens, 40);
/// println!("{}", report.table());
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// ```
pub struct Experiment<I, E, T: Task<I>> {
    name: String,
    task: T,
    evaluators: Vec<Box<dyn Evaluator<I, T::Output, E>>>,
    concurrency: usize,
    repeats: u32,
    timeout: Option<Duration>,
    progress: Progress,
    #[cfg(feature = "prices")]
    prices: Option<(String, String)>,
}

impl<I, E, T: Task<I>> fmt::Debug for Experiment<I, E, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Experiment")
            .field("name", &self.name)
            .field("evaluators", &self.evaluators.len())
            .field("concurrency", &self.concurrency)
            .field("repeats", &self.repeats)
            .field("timeout", &self.timeout)
            .field("progress", &self.progress)
            .finish_non_exhaustive()
    }
}

impl<I, E, T> Experiment<I, E, T>
where
    I: Sync,
    E: Sync,
    T: Task<I>,
    T::Output: Serialize + Sync,
{
    /// An experiment named `name` that runs `task`, with no evaluators yet.
    pub fn new(name: impl Into<String>, task: T) -> Self {
        Experiment {
            name: name.into(),
            task,
            evaluators: Vec::new(),
            concurrency: 1,
            repeats: 1,
            timeout: None,
            progress: Progress::Auto,
            #[cfg(feature = "prices")]
            prices: None,
        }
    }

    /// Adds an evaluator; outcomes come in the order evaluators were added.
    #[must_use]
    pub fn evaluator(mut self, evaluator: impl Evaluator<I, T::Output, E> + 'static) -> Self {
        self.evaluators.push(Box::new(evaluator));
        self
    }

    /// Runs up to `runs` cases at a time (at least 1).
    #[must_use]
    pub fn concurrency(mut self, runs: usize) -> Self {
        self.concurrency = runs.max(1);
        self
    }

    /// Runs each case `times` times (at least 1), for models whose answers vary.
    #[must_use]
    pub fn repeats(mut self, times: u32) -> Self {
        self.repeats = times.max(1);
        self
    }

    /// Stops a case's task after `timeout`; the run is then
    /// [`CaseResult::TimedOut`].
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Whether to show a progress bar; [`Progress::Auto`] by default.
    #[must_use]
    pub fn progress(mut self, progress: Progress) -> Self {
        self.progress = progress;
        self
    }

    /// Prices each run (and its rejected rounds) as `model` of `provider` with golem's
    /// bundled price data.
    #[cfg(feature = "prices")]
    #[must_use]
    pub fn prices(mut self, provider: impl Into<String>, model: impl Into<String>) -> Self {
        self.prices = Some((provider.into(), model.into()));
        self
    }

    /// Runs the experiment over `dataset`.
    pub async fn run(&self, dataset: &Dataset<I, E>) -> Report {
        let runs = dataset.cases.len() as u64 * u64::from(self.repeats);
        let bar = match self.progress {
            Progress::Auto if std::io::stderr().is_terminal() => {
                let bar = ProgressBar::new(runs).with_message(self.name.clone());
                if let Ok(style) =
                    ProgressStyle::with_template("{msg} {bar:30} {pos}/{len} {elapsed}")
                {
                    bar.set_style(style);
                }
                bar
            }
            _ => ProgressBar::hidden(),
        };
        let repeats = self.repeats;
        let jobs = dataset
            .cases
            .iter()
            .enumerate()
            .flat_map(|(index, case)| (0..repeats).map(move |repeat| (index, case, repeat)));
        let mut done: Vec<(usize, CaseReport)> = futures_util::stream::iter(jobs)
            .map(|(index, case, repeat)| {
                let bar = &bar;
                async move {
                    let report = self.run_case(case, repeat).await;
                    bar.inc(1);
                    (index, report)
                }
            })
            .buffer_unordered(self.concurrency)
            .collect()
            .await;
        bar.finish_and_clear();
        done.sort_by_key(|(index, report)| (*index, report.repeat));
        Report::new(
            self.name.clone(),
            dataset.name.clone(),
            done.into_iter().map(|(_, report)| report).collect(),
        )
    }

    async fn run_case(&self, case: &Case<I, E>, repeat: u32) -> CaseReport {
        let start = tokio::time::Instant::now();
        // A task that panics fails its case, not the experiment.
        let run = match unwinding(|| match self.timeout {
            Some(timeout) => self.task.run_within(&case.input, timeout),
            None => self.task.run(&case.input),
        })
        .await
        {
            Ok(run) => run,
            Err(panic) => Err(TaskFailure {
                message: format!("the task panicked: {}", panic_message(&*panic)),
                trace: Trace::default(),
                timed_out: false,
            }),
        };
        let duration = start.elapsed();
        let duration_ms = duration.as_secs_f64() * 1000.0;
        let mut report = match run {
            Err(failure) => {
                let result = match failure.timed_out {
                    true => CaseResult::TimedOut,
                    false => CaseResult::Error,
                };
                let mut report = CaseReport::new(&case.name, repeat, result);
                report.error = Some(failure.message);
                report.usage = failure.trace.usage;
                report
            }
            Ok(run) => {
                let ctx = EvalContext::new(case, &run.output, &run.trace, duration, repeat);
                let mut report = CaseReport::new(&case.name, repeat, CaseResult::Passed);
                for (index, evaluator) in self.evaluators.iter().enumerate() {
                    let evaluation = unwinding(|| evaluator.evaluate_async(&ctx))
                        .await
                        .unwrap_or_else(|panic| {
                            Evaluation::from(
                                Outcome::assertion(format!("evaluator {}", index + 1), false)
                                    .because(format!("panicked: {}", panic_message(&*panic))),
                            )
                        });
                    report
                        .outcomes
                        .extend(evaluation.outcomes.into_iter().map(finite));
                    report.evaluator_usage += &evaluation.usage;
                }
                if report.outcomes.iter().any(|outcome| outcome.is_failure()) {
                    report.result = CaseResult::Failed;
                }
                report.output = serde_json::to_value(&run.output).ok();
                report.usage = run.trace.usage;
                report
            }
        };
        report.duration_ms = duration_ms;
        #[cfg(feature = "prices")]
        if let Some((provider, model)) = &self.prices {
            let priced = report.usage.price(provider, model).and_then(|price| {
                let rejected = report.usage.rejected_price(provider, model)?;
                Ok(crate::report::Money::new(price.total, rejected.total))
            });
            match priced {
                Ok(money) => report.money = Some(money),
                Err(error) => report.price_error = Some(error.to_string()),
            }
        }
        report
    }
}

/// The output of the future `start` makes, or the panic of making it or of polling it.
async fn unwinding<'a, T>(
    start: impl FnOnce() -> futures_util::future::BoxFuture<'a, T>,
) -> Result<T, Box<dyn std::any::Any + Send>> {
    let future = std::panic::catch_unwind(AssertUnwindSafe(start))?;
    AssertUnwindSafe(future).catch_unwind().await
}

/// What a panic said, when it said it with a string.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("no message")
}

/// `outcome`, or, for a score that is not a finite number (a division by zero), a failed
/// assertion that says so: reports average scores, and JSON has no NaN.
fn finite(outcome: Outcome) -> Outcome {
    match outcome.value {
        OutcomeValue::Score(score) if !score.is_finite() => Outcome::assertion(outcome.name, false)
            .because(format!("the score is not a finite number: {score}")),
        _ => outcome,
    }
}
