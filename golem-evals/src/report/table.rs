//! Plain-text tables for a terminal.

use std::fmt::Write as _;

use super::{CaseReport, Report};

/// Column alignment.
#[derive(Clone, Copy)]
pub(super) enum Align {
    Left,
    Right,
}

/// Rows under a header, each column as wide as its widest cell, two spaces apart; a rule
/// under the header and above the last `footer` rows.
pub(super) fn render(header: &[(&str, Align)], rows: &[Vec<String>], footer: usize) -> String {
    let mut widths: Vec<usize> = header
        .iter()
        .map(|(name, _)| name.chars().count())
        .collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut text = String::new();
        for ((cell, width), (_, align)) in cells.zip(&widths).zip(header) {
            if !text.is_empty() {
                text.push_str("  ");
            }
            let pad = width - cell.chars().count();
            match align {
                Align::Left => {
                    text.push_str(cell);
                    text.extend(std::iter::repeat_n(' ', pad));
                }
                Align::Right => {
                    text.extend(std::iter::repeat_n(' ', pad));
                    text.push_str(cell);
                }
            }
        }
        text.truncate(text.trim_end().len());
        text.push('\n');
        text
    };
    let rule = {
        let width = widths.iter().sum::<usize>() + 2 * widths.len().saturating_sub(1);
        "-".repeat(width) + "\n"
    };
    let mut text = line(&mut header.iter().map(|(name, _)| *name));
    text.push_str(&rule);
    for (index, row) in rows.iter().enumerate() {
        if footer > 0 && index == rows.len() - footer {
            text.push_str(&rule);
        }
        text.push_str(&line(&mut row.iter().map(String::as_str)));
    }
    text
}

/// Dollars with enough places for cheap runs.
pub(super) fn dollars(amount: f64) -> String {
    format!("${amount:.4}")
}

fn scores(case: &CaseReport) -> String {
    let scores: Vec<String> = case
        .scores()
        .map(|(name, score)| format!("{name}={score:.2}"))
        .collect();
    if scores.is_empty() {
        "-".to_owned()
    } else {
        scores.join(" ")
    }
}

pub(super) fn report(report: &Report) -> String {
    use Align::{Left, Right};
    let priced = report.totals.money.is_some();
    let mut header = vec![
        ("case", Left),
        ("run", Right),
        ("result", Left),
        ("checks", Right),
        ("scores", Left),
        ("ms", Right),
        ("requests", Right),
        ("tokens", Right),
        ("rejected", Right),
        ("rejected tokens", Right),
    ];
    if priced {
        header.extend([("cost", Right), ("rejected cost", Right)]);
    }
    let mut rows = Vec::new();
    for case in &report.cases {
        let (held, all) = case.assertions();
        let mut row = vec![
            case.case.clone(),
            (case.repeat + 1).to_string(),
            case.result.as_str().to_owned(),
            format!("{held}/{all}"),
            scores(case),
            format!("{:.0}", case.duration_ms),
            case.usage.requests.to_string(),
            case.usage.total_tokens().to_string(),
            case.usage.rejected.total.requests.to_string(),
            case.rejected_tokens().to_string(),
        ];
        if priced {
            let money = case.money.unwrap_or_default();
            row.extend([dollars(money.total), dollars(money.rejected)]);
        }
        rows.push(row);
    }
    let totals = &report.totals;
    let (held, all) = report.cases.iter().fold((0, 0), |(held, all), case| {
        let (h, a) = case.assertions();
        (held + h, all + a)
    });
    let rejected = totals.usage.rejected.total;
    let mut row = vec![
        "total".to_owned(),
        totals.runs.to_string(),
        format!("{}/{} passed", totals.passed, totals.runs),
        format!("{held}/{all}"),
        String::new(),
        format!("{:.0}", totals.duration_ms),
        totals.usage.requests.to_string(),
        totals.usage.total_tokens().to_string(),
        rejected.requests.to_string(),
        (rejected.input_tokens + rejected.output_tokens).to_string(),
    ];
    if let Some(money) = totals.money {
        row.extend([dollars(money.total), dollars(money.rejected)]);
    }
    rows.push(row);

    let mut text = match &report.dataset {
        Some(dataset) => format!("{} on {dataset}\n", report.name),
        None => format!("{}\n", report.name),
    };
    text.push_str(&render(&header, &rows, 1));
    let _ = writeln!(
        text,
        "pass rate {:.1}% ({} passed, {} failed, {} errors, {} timed out)",
        totals.pass_rate * 100.0,
        totals.passed,
        totals.failed,
        totals.errors,
        totals.timed_out
    );
    if !totals.scores.is_empty() {
        let scores: Vec<String> = totals
            .scores
            .iter()
            .map(|(name, score)| format!("{name}={score:.2}"))
            .collect();
        let _ = writeln!(text, "mean scores {}", scores.join(" "));
    }
    let _ = writeln!(
        text,
        "self-correction {} rejected rounds, {} of {} tokens ({:.1}%)",
        rejected.requests,
        rejected.input_tokens + rejected.output_tokens,
        totals.usage.total_tokens(),
        percent(
            rejected.input_tokens + rejected.output_tokens,
            totals.usage.total_tokens()
        )
    );
    if let Some(money) = totals.money {
        let _ = writeln!(
            text,
            "money {}, {} of it on rejected rounds",
            dollars(money.total),
            dollars(money.rejected)
        );
    }
    if totals.evaluator_usage.requests > 0 {
        let _ = writeln!(
            text,
            "evaluators {} requests, {} tokens",
            totals.evaluator_usage.requests,
            totals.evaluator_usage.total_tokens()
        );
    }
    for case in &report.cases {
        for outcome in case.outcomes.iter().filter(|outcome| outcome.is_failure()) {
            let _ = writeln!(text, "  {} #{}: {outcome}", case.case, case.repeat + 1);
        }
        if let Some(error) = &case.error {
            let _ = writeln!(text, "  {} #{}: {error}", case.case, case.repeat + 1);
        }
    }
    text
}

pub(super) fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}
