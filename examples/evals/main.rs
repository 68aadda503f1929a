//! Evals: the same calculator agent with and without a tool budget, over a small dataset.
//! Without a budget, a rejected call fails the run; with one, the agent corrects itself,
//! and the report shows what that cost. The comparison table is printed, and the HTML
//! report of the run with the budget is written under `target/evals/`.
//!
//! ```text
//! cargo run --example evals    # offline, a scripted model
//! ```

use std::process::ExitCode;

use golem::model::function::FunctionModel;
use golem::model::{Message, ModelResponse};
use golem::{Agent, ModelRetry, RunContext};
use golem_evals::evaluator::{CostBound, EqualsExpected, check};
use golem_evals::{AgentTask, Comparison, Dataset, EvalContext, Experiment, Report};

/// Add two whole numbers that are not negative.
///
/// # Arguments
/// * `a` - the first number
/// * `b` - the second number
#[golem::tool]
async fn add(_ctx: &RunContext<()>, a: i64, b: i64) -> Result<i64, ModelRetry> {
    if a < 0 || b < 0 {
        return Err(ModelRetry::new(format!(
            "the numbers must not be negative, got {a} and {b}"
        )));
    }
    Ok(a + b)
}

/// The numbers of "What is A + B?" in the user's prompt.
fn question(messages: &[Message]) -> Option<(i64, i64)> {
    let prompt = messages.first()?.as_request()?;
    let text = format!("{prompt:?}");
    let start = text.find("What is ")? + "What is ".len();
    let end = start + text[start..].find('?')?;
    let (a, b) = text[start..end].split_once(" + ")?;
    Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
}

/// The sum the tool returned, from the last request.
fn tool_result(messages: &[Message]) -> Option<String> {
    let request = messages.last()?.as_request()?;
    request.parts.iter().find_map(|part| match part {
        golem::model::RequestPart::ToolReturn(tool_return) => {
            Some(tool_return.model_text().into_owned())
        }
        _ => None,
    })
}

/// Plays the model offline: it calls `add`, slipping on the sign of a first number of 10
/// or more; after a rejection it calls again correctly; then it answers with the sum.
pub(crate) fn scripted_model() -> FunctionModel {
    FunctionModel::new(|messages: &[Message], _| {
        let Some((a, b)) = question(messages) else {
            return ModelResponse::text("I can only add.");
        };
        let call = |a: i64, id: &str| {
            ModelResponse::tool_call("add", format!(r#"{{"a": {a}, "b": {b}}}"#), id)
        };
        match messages.len() {
            1 if a >= 10 => call(-a, "call_1").with_usage(52, 12),
            1 => call(a, "call_1").with_usage(52, 12),
            3 if a >= 10 => call(a, "call_2").with_usage(81, 12),
            _ => ModelResponse::text(tool_result(messages).unwrap_or_default()).with_usage(95, 3),
        }
    })
    .with_name("scripted")
}

type Ctx<'a> = EvalContext<'a, String, String, String>;

/// Runs the calculator with `tool_retries` over `dataset`.
async fn evaluate(name: &str, tool_retries: u32, dataset: &Dataset<String, String>) -> Report {
    let agent = Agent::<(), String>::builder(scripted_model())
        .instructions("Add with the add tool, then answer with the sum alone.")
        .tool(Add)
        .tool_retries(tool_retries)
        .build()
        .expect("the agent builds");
    Experiment::new(name, AgentTask::new(agent, |q: &String| (q.clone(), ())))
        .evaluator(EqualsExpected)
        .evaluator(CostBound::new().requests(4))
        .evaluator(check("add rejected at most once", |ctx: &Ctx<'_>| {
            ctx.trace.rejections_of("add").count() <= 1
        }))
        .concurrency(2)
        .run(dataset)
        .await
}

/// Runs both experiments; returns their reports and the comparison.
pub(crate) async fn run() -> Result<(Report, Report, Comparison), Box<dyn std::error::Error>> {
    let dataset: Dataset<String, String> = Dataset::from_yaml(include_str!("sums.yaml"))?;
    let baseline = evaluate("without a tool budget", 0, &dataset).await;
    let candidate = evaluate("with a tool budget of 1", 1, &dataset).await;
    let comparison = Comparison::new(&baseline, &candidate);
    Ok((baseline, candidate, comparison))
}

#[tokio::main]
async fn main() -> Result<ExitCode, Box<dyn std::error::Error>> {
    let (baseline, candidate, comparison) = run().await?;
    println!("{}", baseline.table());
    println!("{}", candidate.table());
    print!("{}", comparison.table());

    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/evals");
    std::fs::create_dir_all(&dir)?;
    let dir = dir.canonicalize()?;
    let page = dir.join("report.html");
    std::fs::write(&page, candidate.html())?;
    std::fs::write(dir.join("report.json"), candidate.to_json()?)?;
    println!("\nHTML report: {}", page.display());
    Ok(comparison.exit_code())
}
