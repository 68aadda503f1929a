//! Money in reports, with the `prices` feature: `cargo test -p golem-evals --features
//! prices --test it prices::`.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::{calculator_task, sums};
use golem_evals::evaluator::EqualsExpected;
use golem_evals::{Experiment, Progress};

#[tokio::test(start_paused = true)]
async fn each_run_and_its_rejected_rounds_are_priced_and_summed() {
    let report = Experiment::new("priced", calculator_task(1))
        .evaluator(EqualsExpected)
        .prices("openai", "gpt-4o")
        .progress(Progress::Hidden)
        .run(&sums())
        .await;

    let mut total = 0.0;
    for case in &report.cases {
        let money = case.money.unwrap();
        let price = case.usage.price("openai", "gpt-4o").unwrap();
        let rejected = case.usage.rejected_price("openai", "gpt-4o").unwrap();
        assert_eq!((money.total, money.rejected), (price.total, rejected.total));
        assert!(money.total > 0.0);
        total += money.total;
    }
    assert_eq!(report.cases[0].money.unwrap().rejected, 0.0);
    assert!(report.cases[1].money.unwrap().rejected > 0.0);
    let totals = report.totals.money.unwrap();
    assert!((totals.total - total).abs() < 1e-12);
    let table = report.table();
    let header = table.lines().nth(1).unwrap();
    assert!(
        header.ends_with("rejected tokens     cost  rejected cost"),
        "{table}"
    );
    assert!(
        table.contains("\nmoney $0.0020, $0.0004 of it on rejected rounds\n"),
        "{table}"
    );
    assert!(
        report
            .html()
            .contains("<p id=\"money\">Cost $0.0020, of which rejected rounds $0.0004.</p>")
    );
}

#[tokio::test]
async fn a_model_without_prices_is_a_price_error_not_a_zero() {
    let report = Experiment::new("unpriced", calculator_task(1))
        .prices("openai", "no-such-model")
        .run(&sums())
        .await;

    assert_eq!(report.cases[0].money, None);
    assert_eq!(
        report.cases[0].price_error.as_deref(),
        Some("no prices for the model `no-such-model` of `openai` in genai-prices 0.2.1")
    );
    assert_eq!(report.totals.money, None);
}
