//! Self-correction on the tool path: the model asks for -1 dice, the tool rejects the call
//! with `ModelRetry`, the model reads the feedback, corrects itself and finishes.
//!
//! Runs offline with a scripted model:
//!
//! ```text
//! cargo run --example self-correction
//! ```

use golem::model::function::FunctionModel;
use golem::model::{Message, ModelResponse, RequestPart};
use golem::output::Json;
use golem::tool::FunctionTool;
use golem::{Agent, ModelRetry, RunContext};
use golem_examples::{transcript, usage_line};

/// The dice in play: every roll adds `face` per die, so the script is repeatable.
struct Game {
    face: i64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[schemars(crate = "golem::__private::schemars")]
struct Dice {
    /// How many dice to roll, 1 to 10.
    n: i64,
}

/// A verdict on the game.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[schemars(crate = "golem::__private::schemars")]
struct Verdict {
    winner: String,
    score: u32,
}

/// Plays the model: a first call with a mistake, then whatever the feedback asks for.
fn scripted_model() -> FunctionModel {
    FunctionModel::new(|messages: &[Message], _| {
        let last = messages.last().and_then(Message::as_request);
        let rejected = last.is_some_and(|request| {
            request
                .parts
                .iter()
                .any(|part| matches!(part, RequestPart::RetryPrompt(_)))
        });
        match messages.len() {
            1 => ModelResponse::tool_call("roll_dice", r#"{"n": -1}"#, "call_1").with_usage(82, 17),
            3 if rejected => {
                ModelResponse::tool_call("roll_dice", r#"{"n": 2}"#, "call_2").with_usage(131, 17)
            }
            _ => ModelResponse::tool_call(
                "final_result",
                r#"{"winner": "Ann", "score": 6}"#,
                "call_3",
            )
            .with_usage(160, 21),
        }
    })
    .with_name("scripted")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("No model key is used by this example: a scripted model plays the part.\n");

    let roll_dice = FunctionTool::new(
        "roll_dice",
        |ctx: RunContext<Game>, dice: Dice| async move {
            if !(1..=10).contains(&dice.n) {
                return Err(ModelRetry::new(format!(
                    "n must be between 1 and 10, got {}",
                    dice.n
                )));
            }
            Ok(dice.n * ctx.deps().face)
        },
    )
    .description("Roll `n` six-sided dice and return their total.");

    let agent = Agent::<Game, Json<Verdict>>::builder(scripted_model())
        .instructions("You referee dice games.")
        .tool(roll_dice)
        .tool_retries(1)
        .output_retries(1)
        .build()?;

    let result = agent
        .run("Roll two dice for Ann.", Game { face: 3 })
        .await?;

    print!("{}", transcript(&result.messages));
    println!("{}", usage_line(&result.usage));
    println!(
        "\nverdict: {} wins with {}",
        result.output.winner, result.output.score
    );
    Ok(())
}
