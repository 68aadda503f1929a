//! Multi-agent: a router that delegates to two specialists, each an agent called as a
//! tool. The dice specialist rolls a bad number once and corrects itself; the rules
//! specialist answers at once. The usage tree shows what each agent spent, and what its
//! mistakes cost, inside the router's totals.
//!
//! ```text
//! cargo run --example multi-agent                       # offline, scripted models
//! OPENAI_API_KEY=sk-... cargo run --example multi-agent # a real model for every agent
//! ```

use std::fmt::Write as _;

use golem::model::function::FunctionModel;
use golem::model::{Message, Model, ModelResponse};
use golem::usage::Usage;
use golem::{Agent, ModelRetry, RunContext};
use golem_examples::{Transcript, openai_from_env};

/// Roll `n` six-sided dice and return their total.
///
/// # Arguments
/// * `n` - how many dice to roll, 1 to 10
#[golem::tool(max_retries = 1)]
async fn roll_dice(n: i64) -> Result<i64, ModelRetry> {
    if !(1..=10).contains(&n) {
        return Err(ModelRetry::new(format!(
            "n must be between 1 and 10, got {n}"
        )));
    }
    Ok(n * 3)
}

#[golem::args]
struct Task {
    /// What the specialist should do, in a sentence.
    task: String,
}

/// The router's scripted model: asks each specialist once, then answers.
pub(crate) fn scripted_router() -> FunctionModel {
    FunctionModel::new(|messages: &[Message], _| match messages.len() {
        1 => ModelResponse::tool_call("rules", r#"{"task": "How does one win at dice?"}"#, "r1")
            .with_usage(120, 18),
        3 => ModelResponse::tool_call("dice", r#"{"task": "Roll two dice for Ann."}"#, "r2")
            .with_usage(170, 18),
        _ => ModelResponse::text("Ann rolled 6; the highest total wins, so she leads.")
            .with_usage(220, 14),
    })
    .with_name("scripted-router")
}

/// The dice specialist's scripted model: a bad roll first, then a good one.
pub(crate) fn scripted_dice() -> FunctionModel {
    FunctionModel::new(|messages: &[Message], _| match messages.len() {
        1 => ModelResponse::tool_call("roll_dice", r#"{"n": 20}"#, "d1").with_usage(90, 12),
        3 => ModelResponse::tool_call("roll_dice", r#"{"n": 2}"#, "d2").with_usage(130, 12),
        _ => ModelResponse::text("Ann rolled 6.").with_usage(150, 5),
    })
    .with_name("scripted-dice")
}

/// The rules specialist's scripted model.
pub(crate) fn scripted_rules() -> FunctionModel {
    FunctionModel::new(|_: &[Message], _| {
        ModelResponse::text("The highest total wins.").with_usage(60, 6)
    })
    .with_name("scripted-rules")
}

/// Runs the router with these models and returns what the example prints.
pub(crate) async fn run(
    router: impl Model,
    dice: impl Model,
    rules: impl Model,
) -> Result<String, Box<dyn std::error::Error>> {
    let dice = Agent::<(), String>::builder(dice)
        .instructions("You roll dice. Call roll_dice, then say what was rolled.")
        .tool(RollDice)
        .build()?;
    let rules = Agent::<(), String>::builder(rules)
        .instructions("You know the rules of dice games. Answer in one sentence.")
        .build()?;
    let router = Agent::<(), String>::builder(router)
        .instructions("Delegate: dice rolls to `dice`, questions on rules to `rules`.")
        .tool(rules.as_tool(
            "rules",
            "Answers a question on the rules.",
            |_ctx: &RunContext<()>, task: Task| (task.task, ()),
        ))
        .tool(dice.as_tool(
            "dice",
            "Rolls dice as asked.",
            |_ctx: &RunContext<()>, task: Task| (task.task, ()),
        ))
        .build()?;

    let result = router
        .run("Roll two dice for Ann and tell her how to win.", ())
        .await?;

    let mut out = Transcript::new(0, 0).render(&result.messages);
    writeln!(out, "usage tree")?;
    tree(&mut out, "router", &result.usage, 0);
    writeln!(out, "answer: {}", result.output)?;
    Ok(out)
}

/// One line per agent: its requests and tokens, and what its rejected rounds cost.
fn tree(out: &mut String, name: &str, usage: &Usage, depth: usize) {
    let rejected = usage.rejected.total;
    let _ = writeln!(
        out,
        "{:indent$}{name}: {} requests, {} tokens; rejected rounds: {} requests, {} tokens",
        "",
        usage.requests,
        usage.total_tokens(),
        rejected.requests,
        rejected.input_tokens + rejected.output_tokens,
        indent = 2 + depth * 2,
    );
    for (child, spent) in &usage.agents {
        tree(out, child, spent, depth + 1);
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let output = match (openai_from_env(), openai_from_env(), openai_from_env()) {
        (Some(router), Some(dice), Some(rules)) => run(router, dice, rules).await?,
        _ => {
            println!("OPENAI_API_KEY is not set: scripted models play the parts.\n");
            run(scripted_router(), scripted_dice(), scripted_rules()).await?
        }
    };
    print!("{output}");
    Ok(())
}
