//! A self-contained HTML page: totals, an inline SVG chart and the table of runs.

use std::fmt::Write as _;

use super::table::{dollars, percent};
use super::{CaseSummary, Report};

/// `text` with `&`, `<`, `>` and quotes escaped, for HTML text and attributes.
fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&#39;"),
            other => escaped.push(other),
        }
    }
    escaped
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:2rem;color:#222}\
table{border-collapse:collapse;margin:1rem 0}\
td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:right}\
td:first-child,th:first-child{text-align:left}\
.passed{color:#1a7f37}.failed,.error,.timed-out{color:#cf222e}\
.reason{color:#555;font-size:.9em;text-align:left}";

/// The chart: per case, a bar for its score (or pass rate when it has no score) from 0 to
/// 1, and a bar for the tokens its rejected rounds cost, scaled to the largest.
fn chart(summaries: &[CaseSummary]) -> String {
    const ROW: usize = 28;
    const LABEL: usize = 180;
    const BAR: f64 = 220.0;
    let height = ROW * summaries.len() + 30;
    let most_rejected = summaries
        .iter()
        .map(|summary| summary.rejected_tokens)
        .fold(0.0, f64::max);
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" width=\"{}\" height=\"{height}\" \
         aria-label=\"score and self-correction cost per case\">\n\
         <text x=\"{LABEL}\" y=\"14\" font-size=\"12\">score</text>\n\
         <text x=\"{}\" y=\"14\" font-size=\"12\">rejected tokens</text>\n",
        LABEL + 2 * (BAR as usize) + 140,
        LABEL + BAR as usize + 70,
    );
    for (index, summary) in summaries.iter().enumerate() {
        let y = 24 + index * ROW;
        let score = summary.score.unwrap_or(summary.pass_rate);
        let score_width = BAR * score.clamp(0.0, 1.0);
        let rejected_width = if most_rejected > 0.0 {
            BAR * summary.rejected_tokens / most_rejected
        } else {
            0.0
        };
        let _ = writeln!(
            svg,
            "<g class=\"case\" data-case=\"{name}\">\
             <text x=\"0\" y=\"{text_y}\" font-size=\"12\">{name}</text>\
             <rect x=\"{LABEL}\" y=\"{y}\" width=\"{score_width:.1}\" height=\"18\" fill=\"#2da44e\"/>\
             <text x=\"{score_x:.1}\" y=\"{text_y}\" font-size=\"12\">{score:.2}</text>\
             <rect x=\"{rejected_x}\" y=\"{y}\" width=\"{rejected_width:.1}\" height=\"18\" fill=\"#cf222e\"/>\
             <text x=\"{rejected_text_x:.1}\" y=\"{text_y}\" font-size=\"12\">{rejected:.0}</text></g>",
            name = escape(&summary.case),
            text_y = y + 13,
            score_x = LABEL as f64 + score_width + 4.0,
            rejected_x = LABEL + BAR as usize + 70,
            rejected_text_x = (LABEL + BAR as usize + 70) as f64 + rejected_width + 4.0,
            rejected = summary.rejected_tokens,
        );
    }
    svg.push_str("</svg>\n");
    svg
}

pub(super) fn report(report: &Report) -> String {
    let totals = &report.totals;
    let rejected = totals.usage.rejected.total;
    let rejected_tokens = rejected.input_tokens + rejected.output_tokens;
    let title = escape(&report.name);
    let mut html = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{title}</h1>\n"
    );
    if let Some(dataset) = &report.dataset {
        let _ = writeln!(html, "<p>Dataset: {}</p>", escape(dataset));
    }
    let _ = writeln!(
        html,
        "<p id=\"totals\">Pass rate <b>{:.1}%</b> ({} of {} runs passed; {} failed, {} errors, \
         {} timed out). {} requests, {} tokens. Self-correction: <b>{} rejected rounds</b> \
         costing <b>{} tokens</b> ({:.1}% of all).</p>",
        totals.pass_rate * 100.0,
        totals.passed,
        totals.runs,
        totals.failed,
        totals.errors,
        totals.timed_out,
        totals.usage.requests,
        totals.usage.total_tokens(),
        rejected.requests,
        rejected_tokens,
        percent(rejected_tokens, totals.usage.total_tokens()),
    );
    if let Some(money) = totals.money {
        let _ = writeln!(
            html,
            "<p id=\"money\">Cost {}, of which rejected rounds {}.</p>",
            dollars(money.total),
            dollars(money.rejected)
        );
    }
    if !totals.scores.is_empty() {
        html.push_str("<p id=\"scores\">Mean scores:");
        for (name, score) in &totals.scores {
            let _ = write!(html, " {} <b>{score:.2}</b>", escape(name));
        }
        html.push_str("</p>\n");
    }
    html.push_str("<h2>Score and self-correction cost per case</h2>\n");
    html.push_str(&chart(&report.summaries()));
    html.push_str(
        "<h2>Runs</h2>\n<table>\n<tr><th>case</th><th>run</th><th>result</th><th>ms</th>\
         <th>requests</th><th>tokens</th><th>rejected</th><th>rejected tokens</th>\
         <th>outcomes</th></tr>\n",
    );
    for case in &report.cases {
        let class = case.result.as_str().replace(' ', "-");
        let mut outcomes: Vec<String> = case
            .outcomes
            .iter()
            .map(|outcome| escape(&outcome.to_string()))
            .collect();
        if let Some(error) = &case.error {
            outcomes.push(escape(error));
        }
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{}</td><td class=\"{class}\">{}</td><td>{:.0}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td class=\"reason\">{}</td></tr>",
            escape(&case.case),
            case.repeat + 1,
            case.result.as_str(),
            case.duration_ms,
            case.usage.requests,
            case.usage.total_tokens(),
            case.usage.rejected.total.requests,
            case.rejected_tokens(),
            outcomes.join("<br>"),
        );
    }
    html.push_str("</table>\n</body>\n</html>\n");
    html
}
