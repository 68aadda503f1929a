//! [`Comparison`]: a baseline report against a candidate, case by case and in total.

use std::fmt::Write as _;
use std::process::ExitCode;

use super::table::{Align, render};
use super::{CaseSummary, Report};

/// A baseline report compared with a candidate: per case (matched by name) and in total,
/// with a verdict for CI.
///
/// A case regressed when its pass rate fell, when the mean of one of its scores (each
/// evaluator's, by name) fell by more than the [`score_tolerance`](Self::score_tolerance),
/// or when a score it had in the baseline is missing from the candidate; it improved when
/// its pass rate or a score rose and nothing fell. The candidate regressed when a case did,
/// when a baseline case is missing from it, or when the total pass rate fell.
///
/// ```
/// use golem_evals::{CaseReport, CaseResult, Comparison, Report};
///
/// let baseline = Report::new("before", None, vec![CaseReport::new("a", 0, CaseResult::Passed)]);
/// let candidate = Report::new("after", None, vec![CaseReport::new("a", 0, CaseResult::Failed)]);
/// let comparison = Comparison::new(&baseline, &candidate);
/// assert!(comparison.is_regression());
/// assert_eq!(comparison.exit_status(), 1);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Comparison {
    /// The baseline's name.
    pub baseline: String,
    /// The candidate's name.
    pub candidate: String,
    /// Each case: the baseline's in order, then the candidate's new ones.
    pub cases: Vec<CaseDiff>,
    /// Pass rate, baseline and candidate.
    pub pass_rate: (f64, f64),
    /// Total tokens, baseline and candidate.
    pub tokens: (u64, u64),
    /// Rejected rounds, baseline and candidate.
    pub rejected_rounds: (u64, u64),
    /// Tokens spent on rejected rounds, baseline and candidate.
    pub rejected_tokens: (u64, u64),
    score_tolerance: f64,
}

/// One case in a [`Comparison`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CaseDiff {
    /// The case's name.
    pub case: String,
    /// Its runs in the baseline, if it was there.
    pub baseline: Option<CaseSummary>,
    /// Its runs in the candidate, if it is there.
    pub candidate: Option<CaseSummary>,
    /// What changed.
    pub change: Change,
}

/// What happened to a case between baseline and candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// Its pass rate or one of its scores fell, or a score went missing.
    Regressed,
    /// Its pass rate or one of its scores rose, and none fell.
    Improved,
    /// Neither moved.
    Same,
    /// It is only in the candidate.
    Added,
    /// It is only in the baseline.
    Removed,
}

impl Change {
    /// The word the table shows.
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Regressed => "regressed",
            Change::Improved => "improved",
            Change::Same => "same",
            Change::Added => "added",
            Change::Removed => "removed",
        }
    }
}

impl Comparison {
    /// Compares `candidate` with `baseline`, with a score tolerance of 0.
    pub fn new(baseline: &Report, candidate: &Report) -> Self {
        let before = baseline.summaries();
        let after = candidate.summaries();
        let mut cases: Vec<CaseDiff> = before
            .iter()
            .map(|summary| {
                let candidate = after.iter().find(|other| other.case == summary.case);
                CaseDiff {
                    case: summary.case.clone(),
                    baseline: Some(summary.clone()),
                    candidate: candidate.cloned(),
                    change: Change::Removed,
                }
            })
            .collect();
        for summary in &after {
            if !before.iter().any(|other| other.case == summary.case) {
                cases.push(CaseDiff {
                    case: summary.case.clone(),
                    baseline: None,
                    candidate: Some(summary.clone()),
                    change: Change::Added,
                });
            }
        }
        let rejected = |report: &Report| report.totals.usage.rejected.total;
        let rejected_tokens = |report: &Report| {
            let cost = rejected(report);
            cost.input_tokens + cost.output_tokens
        };
        let mut comparison = Comparison {
            baseline: baseline.name.clone(),
            candidate: candidate.name.clone(),
            cases,
            pass_rate: (baseline.totals.pass_rate, candidate.totals.pass_rate),
            tokens: (
                baseline.totals.usage.total_tokens(),
                candidate.totals.usage.total_tokens(),
            ),
            rejected_rounds: (rejected(baseline).requests, rejected(candidate).requests),
            rejected_tokens: (rejected_tokens(baseline), rejected_tokens(candidate)),
            score_tolerance: 0.0,
        };
        comparison.classify();
        comparison
    }

    /// Lets each of a case's mean scores fall by up to `tolerance` without counting as a
    /// regression, and rise by as much without counting as an improvement (for judges whose
    /// scores wobble).
    #[must_use]
    pub fn score_tolerance(mut self, tolerance: f64) -> Self {
        self.score_tolerance = tolerance;
        self.classify();
        self
    }

    fn classify(&mut self) {
        let tolerance = self.score_tolerance;
        for diff in &mut self.cases {
            let (Some(before), Some(after)) = (&diff.baseline, &diff.candidate) else {
                continue;
            };
            let pass = after.pass_rate - before.pass_rate;
            let (mut fell, mut rose) = (pass < 0.0, pass > 0.0);
            for (name, before) in &before.scores {
                match after.scores.get(name) {
                    Some(after) if after - before < -tolerance => fell = true,
                    Some(after) if after - before > tolerance => rose = true,
                    Some(_) => {}
                    // A score the baseline had is gone: its evaluator did not run or failed.
                    None => fell = true,
                }
            }
            diff.change = if fell {
                Change::Regressed
            } else if rose {
                Change::Improved
            } else {
                Change::Same
            };
        }
    }

    /// The cases that regressed or went missing.
    pub fn regressions(&self) -> impl Iterator<Item = &CaseDiff> {
        self.cases
            .iter()
            .filter(|diff| matches!(diff.change, Change::Regressed | Change::Removed))
    }

    /// Whether the candidate regressed: a case did, a case is missing, or the total pass
    /// rate fell.
    pub fn is_regression(&self) -> bool {
        self.regressions().next().is_some() || self.pass_rate.1 < self.pass_rate.0
    }

    /// The status for CI: 1 for a regression, 0 otherwise.
    pub fn exit_status(&self) -> u8 {
        u8::from(self.is_regression())
    }

    /// [`exit_status`](Self::exit_status) as what `main` returns.
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(self.exit_status())
    }

    /// The comparison as a plain-text table: per case the pass rate, the mean score,
    /// tokens and rejected tokens (means per run), before and after; a totals row; the
    /// verdict.
    pub fn table(&self) -> String {
        use Align::{Left, Right};
        let header = [
            ("case", Left),
            ("pass rate", Right),
            ("score", Right),
            ("tokens", Right),
            ("rejected tokens", Right),
            ("change", Left),
        ];
        let pair = |before: Option<String>, after: Option<String>| {
            let dash = || "-".to_owned();
            format!(
                "{} -> {}",
                before.unwrap_or_else(dash),
                after.unwrap_or_else(dash)
            )
        };
        let percent = |rate: f64| format!("{:.0}%", rate * 100.0);
        let mut rows: Vec<Vec<String>> = self
            .cases
            .iter()
            .map(|diff| {
                let (before, after) = (diff.baseline.as_ref(), diff.candidate.as_ref());
                let field = |summary: Option<&CaseSummary>,
                             read: &dyn Fn(&CaseSummary) -> String| {
                    summary.map(read)
                };
                vec![
                    diff.case.clone(),
                    pair(
                        field(before, &|s| percent(s.pass_rate)),
                        field(after, &|s| percent(s.pass_rate)),
                    ),
                    pair(
                        before.and_then(|s| s.score).map(|s| format!("{s:.2}")),
                        after.and_then(|s| s.score).map(|s| format!("{s:.2}")),
                    ),
                    pair(
                        field(before, &|s| format!("{:.0}", s.tokens)),
                        field(after, &|s| format!("{:.0}", s.tokens)),
                    ),
                    pair(
                        field(before, &|s| format!("{:.0}", s.rejected_tokens)),
                        field(after, &|s| format!("{:.0}", s.rejected_tokens)),
                    ),
                    diff.change.as_str().to_owned(),
                ]
            })
            .collect();
        rows.push(vec![
            "total".to_owned(),
            pair(
                Some(percent(self.pass_rate.0)),
                Some(percent(self.pass_rate.1)),
            ),
            String::new(),
            pair(
                Some(self.tokens.0.to_string()),
                Some(self.tokens.1.to_string()),
            ),
            pair(
                Some(self.rejected_tokens.0.to_string()),
                Some(self.rejected_tokens.1.to_string()),
            ),
            String::new(),
        ]);
        let mut text = format!("{} -> {}\n", self.baseline, self.candidate);
        text.push_str(&render(&header, &rows, 1));
        let _ = writeln!(
            text,
            "rejected rounds {} -> {}",
            self.rejected_rounds.0, self.rejected_rounds.1
        );
        let regressions: Vec<&str> = self.regressions().map(|diff| diff.case.as_str()).collect();
        if self.is_regression() {
            if regressions.is_empty() {
                text.push_str("regression: the pass rate fell\n");
            } else {
                let _ = writeln!(text, "regression: {}", regressions.join(", "));
            }
        } else {
            text.push_str("no regression\n");
        }
        text
    }
}
