//! A scripted calculator agent shared by the tests: it adds with an `add` tool, and slips
//! on the sign of a first operand of 10 or more, which the tool rejects.

#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use golem::model::function::FunctionModel;
use golem::model::{Message, ModelResponse};
use golem::{Agent, ModelRetry, RunContext};
use golem_evals::{AgentTask, Case, Dataset};

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

/// The two numbers of "What is A + B?" in the first message.
pub fn question(messages: &[Message]) -> (i64, i64) {
    let text = serde_json::to_string(&messages[0]).unwrap();
    let start = text.find("What is ").unwrap() + "What is ".len();
    let end = start + text[start..].find('?').unwrap();
    let (a, b) = text[start..end].split_once(" + ").unwrap();
    (a.trim().parse().unwrap(), b.trim().parse().unwrap())
}

/// The sum a tool returned in the last request, as text.
fn last_return(messages: &[Message]) -> String {
    let request = messages.last().unwrap().as_request().unwrap();
    let text = serde_json::to_value(request).unwrap();
    text["parts"][0]["content"].to_string()
}

/// The model: a call of `add` (with the sign slip when the first number is 10 or more),
/// the corrected call after a rejection, then the tool's sum as the answer.
pub fn calculator_model() -> FunctionModel {
    FunctionModel::new(|messages: &[Message], _| {
        let (a, b) = question(messages);
        let slips = a >= 10;
        match (messages.len(), slips) {
            (1, true) => {
                ModelResponse::tool_call("add", format!(r#"{{"a": {}, "b": {b}}}"#, -a), "call_1")
                    .with_usage(50, 10)
            }
            (1, false) => {
                ModelResponse::tool_call("add", format!(r#"{{"a": {a}, "b": {b}}}"#), "call_1")
                    .with_usage(50, 10)
            }
            (3, true) => {
                ModelResponse::tool_call("add", format!(r#"{{"a": {a}, "b": {b}}}"#), "call_2")
                    .with_usage(70, 10)
            }
            _ => ModelResponse::text(last_return(messages)).with_usage(80, 5),
        }
    })
    .with_name("calculator")
}

/// The calculator agent, allowed `tool_retries` rejected calls.
pub fn calculator(tool_retries: u32) -> Agent<(), String> {
    Agent::<(), String>::builder(calculator_model())
        .instructions("Add with the add tool, then answer with the sum alone.")
        .tool(Add)
        .tool_retries(tool_retries)
        .build()
        .unwrap()
}

/// The calculator as a task over questions.
pub fn calculator_task(
    tool_retries: u32,
) -> AgentTask<(), String, impl Fn(&String) -> (String, ()) + Send + Sync> {
    AgentTask::new(calculator(tool_retries), |question: &String| {
        (question.clone(), ())
    })
}

/// Three sums: one the model gets right at once, two it slips on first.
pub fn sums() -> Dataset<String, String> {
    Dataset::new([
        Case::new("small", "What is 2 + 3?".to_owned()).expect("5".to_owned()),
        Case::new("large", "What is 12 + 30?".to_owned()).expect("42".to_owned()),
        Case::new("larger", "What is 40 + 2?".to_owned()).expect("42".to_owned()),
    ])
    .named("sums")
}
