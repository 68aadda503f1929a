//! The evals example, run offline: the comparison it prints, line by line.

#![allow(dead_code, clippy::unwrap_used)]

#[path = "../main.rs"]
mod example;

#[tokio::test]
async fn the_budget_turns_two_failures_into_passes_and_shows_their_cost() {
    let (baseline, candidate, comparison) = example::run().await.unwrap();
    assert_eq!(baseline.totals.passed, 2);
    assert_eq!(candidate.totals.passed, 4);
    assert_eq!(candidate.totals.usage.rejected.total.requests, 2);
    assert_eq!(comparison.exit_status(), 0);
    // After a deliberate change, `GOLEM_BLESS=1 cargo test -p golem-example-evals`.
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/comparison.txt");
    if std::env::var_os("GOLEM_BLESS").is_some() {
        std::fs::write(path, comparison.table()).unwrap();
    }
    assert_eq!(
        comparison.table(),
        std::fs::read_to_string(path).unwrap_or_default()
    );
}
