//! Self-correction on the tool path: the model asks for -1 dice, the tool rejects the call
//! with `ModelRetry`, the model reads the feedback, corrects itself and finishes.
//!
//! ```text
//! cargo run --example self-correction                       # offline, a scripted model
//! OPENAI_API_KEY=sk-... cargo run --example self-correction # a real model
//! ```

use golem::model::function::FunctionModel;
use golem::model::{Message, Model, ModelResponse};
use golem::{Agent, ModelRetry, RunContext};
use golem_examples::{Transcript, openai_from_env, usage_line};

/// The table the game is played at: every die shows `face`, so runs are repeatable.
#[derive(Debug)]
pub(crate) struct Table {
    face: i64,
}

/// Roll `n` six-sided dice and return their total.
///
/// # Arguments
/// * `n` - how many dice to roll, 1 to 10
#[golem::tool(max_retries = 1)]
async fn roll_dice(ctx: &RunContext<Table>, n: i64) -> Result<i64, ModelRetry> {
    if !(1..=10).contains(&n) {
        return Err(ModelRetry::new(format!(
            "n must be between 1 and 10, got {n}"
        )));
    }
    Ok(n * ctx.deps().face)
}

/// Who won the game, and with what score.
#[golem::output]
#[derive(Debug)]
pub(crate) struct Verdict {
    /// The winner's name.
    winner: String,
    /// The winner's total.
    score: u32,
}

/// Plays the model offline: a first call with a mistake, a corrected call once the
/// rejection comes back, then the verdict.
pub(crate) fn scripted_model() -> FunctionModel {
    FunctionModel::new(|messages: &[Message], _| match messages.len() {
        1 => ModelResponse::tool_call("roll_dice", r#"{"n": -1}"#, "call_1").with_usage(96, 17),
        3 => ModelResponse::tool_call("roll_dice", r#"{"n": 2}"#, "call_2").with_usage(151, 17),
        _ => ModelResponse::tool_call("final_result", r#"{"winner": "Ann", "score": 6}"#, "call_3")
            .with_usage(180, 24),
    })
    .with_name("scripted")
}

/// Runs the game with `model` and returns what the example prints.
pub(crate) async fn run(model: impl Model) -> Result<String, Box<dyn std::error::Error>> {
    let agent = Agent::<Table, Verdict>::builder(model)
        .instructions(
            "You referee dice games. Roll with the roll_dice tool, then give the verdict.",
        )
        .tool(RollDice)
        .output_retries(1)
        .build()?;

    let result = agent
        .run(
            "Roll two dice for Ann; she wins with whatever she rolls.",
            Table { face: 3 },
        )
        .await?;

    let transcript = Transcript::new(0, 1).tool_budget("roll_dice", 1);
    Ok(format!(
        "{}{}\nverdict: {} wins with {}\n",
        transcript.render(&result.messages),
        usage_line(&result.usage),
        result.output.winner,
        result.output.score
    ))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let output = match openai_from_env() {
        Some(model) => run(model).await?,
        None => {
            println!("OPENAI_API_KEY is not set: a scripted model plays the part.\n");
            run(scripted_model()).await?
        }
    };
    print!("{output}");
    Ok(())
}
