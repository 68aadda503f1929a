//! Reports: the table and the JSON against golden files, the HTML's numbers, and the
//! comparison's table and exit status.
//!
//! After a deliberate change to a format, regenerate the golden files with
//! `GOLEM_BLESS=1 cargo test -p golem-evals --test it report::` and review the diff.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::{calculator_task, sums};
use golem_evals::evaluator::{CostBound, EqualsExpected, check, score};
use golem_evals::{
    CaseReport, CaseResult, Change, Comparison, EvalContext, Experiment, Progress, Report,
};

type Ctx<'a> = EvalContext<'a, String, String, String>;

/// The calculator over the sums, allowed `tool_retries` rejected calls. The clock is
/// paused in these tests, so every duration is 0.
async fn report(name: &str, tool_retries: u32) -> Report {
    Experiment::new(name, calculator_task(tool_retries))
        .evaluator(EqualsExpected)
        .evaluator(CostBound::new().rejected_rounds(1))
        .evaluator(check("add rejected at most once", |ctx: &Ctx<'_>| {
            ctx.trace.rejections_of("add").count() <= 1
        }))
        .evaluator(score("efficiency", |ctx: &Ctx<'_>| {
            2.0 / ctx.trace.usage.requests as f64
        }))
        .progress(Progress::Hidden)
        .run(&sums())
        .await
}

fn golden(name: &str, actual: &str) {
    let path = format!("{}/tests/golden/{name}", env!("CARGO_MANIFEST_DIR"));
    if std::env::var_os("GOLEM_BLESS").is_some() {
        std::fs::write(&path, actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        actual, expected,
        "{name} changed: run `GOLEM_BLESS=1 cargo test -p golem-evals --test it report::` and review the diff"
    );
}

#[tokio::test(start_paused = true)]
async fn the_table_shows_each_run_the_totals_and_what_self_correction_cost() {
    golden(
        "with-budget.txt",
        &report("with a tool budget", 1).await.table(),
    );
    golden(
        "without-budget.txt",
        &report("without a tool budget", 0).await.table(),
    );
}

#[tokio::test(start_paused = true)]
async fn the_json_is_stable_and_reads_back() {
    let report = report("with a tool budget", 1).await;
    let json = report.to_json().unwrap() + "\n";
    golden("with-budget.json", &json);
    assert_eq!(Report::from_json(&json).unwrap(), report);
}

#[tokio::test(start_paused = true)]
async fn the_html_is_one_page_that_holds_the_numbers() {
    let html = report("with a tool budget", 1).await.html();
    assert!(html.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"));
    assert!(html.ends_with("</table>\n</body>\n</html>\n"));
    // Self-contained: no scripts, no links to other files.
    for outside in ["<script", "src=", "href=", "<link"] {
        assert!(!html.contains(outside), "{outside}");
    }
    assert!(html.contains(
        "Pass rate <b>100.0%</b> (3 of 3 runs passed; 0 failed, 0 errors, 0 timed out). \
         8 requests, 595 tokens. Self-correction: <b>2 rejected rounds</b> costing \
         <b>120 tokens</b> (20.2% of all)."
    ));
    assert!(html.contains("Mean scores: efficiency <b>0.78</b>"));
    // The chart: each case's score and rejected tokens.
    assert!(html.contains("<svg xmlns=\"http://www.w3.org/2000/svg\""));
    assert_eq!(html.matches("<g class=\"case\"").count(), 3);
    assert!(html.contains(
        "<g class=\"case\" data-case=\"large\"><text x=\"0\" y=\"65\" font-size=\"12\">large</text>"
    ));
    assert!(html.contains(">0.67</text>"));
    assert!(html.contains(">60</text>"));
    assert!(html.contains(
        "<tr><td>large</td><td>1</td><td class=\"passed\">passed</td><td>0</td><td>3</td>\
         <td>225</td><td>1</td><td>60</td>"
    ));
}

#[tokio::test(start_paused = true)]
async fn a_comparison_shows_each_case_and_exits_1_on_a_regression() {
    let without = report("without a tool budget", 0).await;
    let with = report("with a tool budget", 1).await;

    let better = Comparison::new(&without, &with);
    golden("comparison.txt", &better.table());
    assert!(!better.is_regression());
    assert_eq!(better.exit_status(), 0);
    let changes: Vec<Change> = better.cases.iter().map(|diff| diff.change).collect();
    assert_eq!(changes, [Change::Same, Change::Improved, Change::Improved]);

    let worse = Comparison::new(&with, &without);
    assert!(worse.is_regression());
    assert_eq!(worse.exit_status(), 1);
    assert!(
        worse.table().ends_with("regression: large, larger\n"),
        "{}",
        worse.table()
    );
}

#[test]
fn missing_cases_and_a_lower_pass_rate_are_regressions_and_a_tolerance_forgives_scores() {
    let run = |case: &str, result| CaseReport::new(case, 0, result);
    let baseline = Report::new(
        "baseline",
        None,
        vec![run("a", CaseResult::Passed), run("b", CaseResult::Passed)],
    );
    let dropped = Report::new("candidate", None, vec![run("a", CaseResult::Passed)]);
    let comparison = Comparison::new(&baseline, &dropped);
    assert_eq!(comparison.cases[1].change, Change::Removed);
    assert_eq!(comparison.exit_status(), 1);

    let added = Report::new(
        "candidate",
        None,
        vec![
            run("a", CaseResult::Passed),
            run("b", CaseResult::Passed),
            run("c", CaseResult::Error),
        ],
    );
    let comparison = Comparison::new(&baseline, &added);
    assert_eq!(comparison.cases[2].change, Change::Added);
    // Every old case holds, but the total pass rate fell: 100% to 67%.
    assert!(comparison.is_regression());
    assert!(
        comparison
            .table()
            .ends_with("regression: the pass rate fell\n")
    );

    let scored = |score: f64| {
        let mut case = run("a", CaseResult::Passed);
        case.outcomes = vec![golem_evals::Outcome::score("judge score", score)];
        Report::new("r", None, vec![case])
    };
    let comparison = Comparison::new(&scored(0.9), &scored(0.85));
    assert_eq!(comparison.cases[0].change, Change::Regressed);
    let forgiven = comparison.score_tolerance(0.1);
    assert_eq!(forgiven.cases[0].change, Change::Same);
    assert_eq!(forgiven.exit_status(), 0);
}

#[test]
fn a_comparison_weighs_each_evaluators_score_on_its_own() {
    let scored = |scores: &[(&str, f64)]| {
        let mut case = CaseReport::new("a", 0, CaseResult::Passed);
        case.outcomes = scores
            .iter()
            .map(|(name, score)| golem_evals::Outcome::score(*name, *score))
            .collect();
        Report::new("r", None, vec![case])
    };
    // The judge fell by 0.4 while the length score rose by 0.5: the mean of the two rose,
    // and the case still regressed.
    let comparison = Comparison::new(
        &scored(&[("judge score", 0.9), ("length", 0.2)]),
        &scored(&[("judge score", 0.5), ("length", 0.7)]),
    );
    assert_eq!(comparison.cases[0].change, Change::Regressed);
    assert_eq!(
        comparison.cases[0].candidate.as_ref().unwrap().scores["judge score"],
        0.5
    );
    assert!(comparison.is_regression());

    // One score rose and none fell: improved.
    let comparison = Comparison::new(
        &scored(&[("judge score", 0.5), ("length", 0.2)]),
        &scored(&[("judge score", 0.5), ("length", 0.7)]),
    );
    assert_eq!(comparison.cases[0].change, Change::Improved);

    // A score the baseline had is missing from the candidate: regressed, though what is
    // left rose.
    let comparison = Comparison::new(
        &scored(&[("judge score", 0.9), ("length", 0.2)]),
        &scored(&[("length", 0.7)]),
    );
    assert_eq!(comparison.cases[0].change, Change::Regressed);
    assert_eq!(comparison.exit_status(), 1);

    // A score only the candidate has changes nothing.
    let comparison = Comparison::new(
        &scored(&[("length", 0.2)]),
        &scored(&[("judge score", 0.1), ("length", 0.2)]),
    );
    assert_eq!(comparison.cases[0].change, Change::Same);
}

#[test]
fn the_html_escapes_what_the_dataset_and_the_outcomes_say() {
    let mut case = CaseReport::new("<script>alert(1)</script>", 0, CaseResult::Failed);
    case.outcomes = vec![golem_evals::Outcome::assertion("a & b", false).because("\"x\" < 'y'")];
    let html = Report::new("<i>name</i>", Some("a&b".to_owned()), vec![case]).html();
    assert!(!html.contains("<script"));
    assert!(html.contains("<title>&lt;i&gt;name&lt;/i&gt;</title>"));
    assert!(html.contains("<p>Dataset: a&amp;b</p>"));
    assert!(html.contains("data-case=\"&lt;script&gt;alert(1)&lt;/script&gt;\""));
    assert!(html.contains("a &amp; b: failed (&quot;x&quot; &lt; &#39;y&#39;)"));
}
