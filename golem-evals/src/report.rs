//! [`Report`]s of experiments: per case and totals, as a terminal table, JSON for CI and a
//! self-contained HTML page; and the [`Comparison`] of two reports.

use std::collections::BTreeMap;

use golem::Usage;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::evaluator::{Outcome, OutcomeValue};

mod compare;
mod html;
mod table;

pub use compare::{CaseDiff, Change, Comparison};

/// What an experiment found: one [`CaseReport`] per case and repeat, in the dataset's
/// order (repeats in order within a case) whatever order they finished in, and the
/// [`Totals`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Report {
    /// The experiment's name.
    pub name: String,
    /// The dataset's name, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<String>,
    /// Each case's run, in order.
    pub cases: Vec<CaseReport>,
    /// Sums and means over the cases.
    pub totals: Totals,
}

/// One run of one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CaseReport {
    /// The case's name.
    pub case: String,
    /// Which repeat this is, from 0.
    pub repeat: u32,
    /// How the run ended.
    pub result: CaseResult,
    /// How long the task took, in milliseconds (evaluators not included).
    pub duration_ms: f64,
    /// What the task's run cost, with the share of rejected rounds.
    pub usage: Usage,
    /// What the evaluators cost (a judge's model).
    #[serde(default, skip_serializing_if = "is_default")]
    pub evaluator_usage: Usage,
    /// Every evaluator's outcomes, in the order the evaluators were added.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outcomes: Vec<Outcome>,
    /// The task's output, as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// Why the task failed or timed out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What the run cost in money, when the experiment prices its runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub money: Option<Money>,
    /// Why the run could not be priced, when the experiment prices its runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_error: Option<String>,
}

fn is_default(usage: &Usage) -> bool {
    *usage == Usage::default()
}

impl CaseReport {
    /// A report of a run that ended with `result`, with nothing else recorded yet.
    pub fn new(case: impl Into<String>, repeat: u32, result: CaseResult) -> Self {
        CaseReport {
            case: case.into(),
            repeat,
            result,
            duration_ms: 0.0,
            usage: Usage::default(),
            evaluator_usage: Usage::default(),
            outcomes: Vec::new(),
            output: None,
            error: None,
            money: None,
            price_error: None,
        }
    }

    /// Whether the case passed: its task succeeded and every assertion held.
    pub fn passed(&self) -> bool {
        self.result == CaseResult::Passed
    }

    /// The scores, by name.
    pub fn scores(&self) -> impl Iterator<Item = (&str, f64)> {
        self.outcomes
            .iter()
            .filter_map(|outcome| match outcome.value {
                OutcomeValue::Score(score) => Some((outcome.name.as_str(), score)),
                _ => None,
            })
    }

    /// The assertions that held, and all of them.
    pub fn assertions(&self) -> (usize, usize) {
        let mut held = 0;
        let mut all = 0;
        for outcome in &self.outcomes {
            if let OutcomeValue::Assertion(passed) = outcome.value {
                all += 1;
                held += usize::from(passed);
            }
        }
        (held, all)
    }

    /// Tokens spent on rounds that ended in a rejection.
    pub fn rejected_tokens(&self) -> u64 {
        let rejected = self.usage.rejected.total;
        rejected.input_tokens.saturating_add(rejected.output_tokens)
    }
}

/// How a case's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaseResult {
    /// The task succeeded and every assertion held.
    Passed,
    /// The task succeeded and an assertion failed.
    Failed,
    /// The task failed: its error is in [`CaseReport::error`].
    Error,
    /// The task took longer than the experiment's timeout.
    TimedOut,
}

impl CaseResult {
    /// The word reports show.
    pub fn as_str(self) -> &'static str {
        match self {
            CaseResult::Passed => "passed",
            CaseResult::Failed => "failed",
            CaseResult::Error => "error",
            CaseResult::TimedOut => "timed out",
        }
    }
}

/// What a run cost in US dollars, and the share of its rejected rounds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Money {
    /// The whole run.
    pub total: f64,
    /// The rounds that ended in a rejection: what self-correction cost.
    pub rejected: f64,
}

impl Money {
    /// `total` dollars, of which `rejected` on rejected rounds.
    pub fn new(total: f64, rejected: f64) -> Self {
        Money { total, rejected }
    }
}

/// Sums and means over a report's cases.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Totals {
    /// Case runs (cases times repeats).
    pub runs: u64,
    /// Runs that passed.
    pub passed: u64,
    /// Runs whose task succeeded and an assertion failed.
    pub failed: u64,
    /// Runs whose task failed.
    pub errors: u64,
    /// Runs that timed out.
    pub timed_out: u64,
    /// `passed / runs`, from 0 to 1 (0 for no runs).
    pub pass_rate: f64,
    /// The mean of each score, by name, over the runs that have it.
    pub scores: BTreeMap<String, f64>,
    /// The tasks' durations, summed, in milliseconds.
    pub duration_ms: f64,
    /// The tasks' usage, summed: requests, tokens, and the rejected rounds' share.
    pub usage: Usage,
    /// The evaluators' usage, summed.
    #[serde(default, skip_serializing_if = "is_default")]
    pub evaluator_usage: Usage,
    /// The runs' money, summed, when every run was priced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub money: Option<Money>,
}

impl Totals {
    /// The totals of `cases`.
    pub fn of(cases: &[CaseReport]) -> Self {
        let mut totals = Totals {
            runs: cases.len() as u64,
            passed: 0,
            failed: 0,
            errors: 0,
            timed_out: 0,
            pass_rate: 0.0,
            scores: BTreeMap::new(),
            duration_ms: 0.0,
            usage: Usage::default(),
            evaluator_usage: Usage::default(),
            money: (!cases.is_empty()).then(Money::default),
        };
        let mut scores: BTreeMap<&str, (f64, u32)> = BTreeMap::new();
        for case in cases {
            match case.result {
                CaseResult::Passed => totals.passed += 1,
                CaseResult::Failed => totals.failed += 1,
                CaseResult::Error => totals.errors += 1,
                CaseResult::TimedOut => totals.timed_out += 1,
            }
            for (name, score) in case.scores() {
                let entry = scores.entry(name).or_default();
                entry.0 += score;
                entry.1 += 1;
            }
            totals.duration_ms += case.duration_ms;
            totals.usage += &case.usage;
            totals.evaluator_usage += &case.evaluator_usage;
            totals.money = match (totals.money, case.money) {
                (Some(sum), Some(money)) => Some(Money::new(
                    sum.total + money.total,
                    sum.rejected + money.rejected,
                )),
                _ => None,
            };
        }
        if totals.runs > 0 {
            totals.pass_rate = totals.passed as f64 / totals.runs as f64;
        }
        totals.scores = scores
            .into_iter()
            .map(|(name, (sum, count))| (name.to_owned(), sum / f64::from(count)))
            .collect();
        totals
    }
}

impl Report {
    /// The report named `name` of `cases`, with their totals.
    pub fn new(name: impl Into<String>, dataset: Option<String>, cases: Vec<CaseReport>) -> Self {
        let totals = Totals::of(&cases);
        Report {
            name: name.into(),
            dataset,
            cases,
            totals,
        }
    }

    /// The report as pretty-printed JSON, for CI and for [`Comparison`]s later.
    ///
    /// # Errors
    /// serde_json's, which a report does not produce in practice (its maps have string
    /// keys).
    pub fn to_json(&self) -> Result<String, serde_json::Error> {
        serde_json::to_string_pretty(self)
    }

    /// A report read from [`to_json`](Self::to_json)'s text.
    ///
    /// # Errors
    /// serde_json's, for text that is not a report.
    pub fn from_json(json: &str) -> Result<Self, serde_json::Error> {
        serde_json::from_str(json)
    }

    /// The report as a plain-text table for a terminal: one row per case run, a totals
    /// row, then the pass rate, the mean scores and what self-correction cost.
    pub fn table(&self) -> String {
        table::report(self)
    }

    /// The report as one self-contained HTML page (no scripts, no external files): the
    /// totals, a chart (inline SVG) of each case's score and of what its rejected rounds
    /// cost, and the table of runs with each outcome's reason.
    pub fn html(&self) -> String {
        html::report(self)
    }

    /// Each case's runs summed up, in the report's order.
    pub fn summaries(&self) -> Vec<CaseSummary> {
        let mut order: Vec<&str> = Vec::new();
        let mut runs: BTreeMap<&str, Vec<&CaseReport>> = BTreeMap::new();
        for case in &self.cases {
            let entry = runs.entry(case.case.as_str()).or_default();
            if entry.is_empty() {
                order.push(&case.case);
            }
            entry.push(case);
        }
        order
            .into_iter()
            .map(|name| CaseSummary::of(name, &runs[name]))
            .collect()
    }
}

/// One case's runs (its repeats) summed up: what a comparison and the chart show.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CaseSummary {
    /// The case's name.
    pub case: String,
    /// Its runs.
    pub runs: u64,
    /// `passed / runs`.
    pub pass_rate: f64,
    /// The mean of all its scores, if it has any (what the table and the chart show).
    pub score: Option<f64>,
    /// The mean of each evaluator's score, by the score's name, over the runs that have it
    /// (what a [`Comparison`](crate::Comparison) compares).
    pub scores: BTreeMap<String, f64>,
    /// Mean tokens per run.
    pub tokens: f64,
    /// Mean rejected rounds per run.
    pub rejected_rounds: f64,
    /// Mean tokens per run spent on rejected rounds.
    pub rejected_tokens: f64,
}

impl CaseSummary {
    fn of(case: &str, runs: &[&CaseReport]) -> Self {
        let count = runs.len().max(1) as f64;
        let passed = runs.iter().filter(|run| run.passed()).count() as f64;
        let scores: Vec<f64> = runs
            .iter()
            .flat_map(|run| run.scores().map(|(_, score)| score))
            .collect();
        let mut by_name: BTreeMap<&str, (f64, u32)> = BTreeMap::new();
        for (name, score) in runs.iter().flat_map(|run| run.scores()) {
            let (sum, count) = by_name.entry(name).or_default();
            *sum += score;
            *count += 1;
        }
        let mean = |value: fn(&CaseReport) -> u64| {
            runs.iter().map(|run| value(run) as f64).sum::<f64>() / count
        };
        CaseSummary {
            case: case.to_owned(),
            runs: runs.len() as u64,
            pass_rate: passed / count,
            score: (!scores.is_empty()).then(|| scores.iter().sum::<f64>() / scores.len() as f64),
            scores: by_name
                .into_iter()
                .map(|(name, (sum, count))| (name.to_owned(), sum / f64::from(count)))
                .collect(),
            tokens: mean(|run| run.usage.total_tokens()),
            rejected_rounds: mean(|run| run.usage.rejected.total.requests),
            rejected_tokens: mean(CaseReport::rejected_tokens),
        }
    }
}
