//! The dice game both provider tests play: one tool, one structured output.

use golem::tool::{FunctionTool, Tool};
use golem::{ModelRetry, RunContext};

/// The game's dependencies: none, every die shows 3.
pub struct Game;

#[golem::args]
pub struct Dice {
    /// How many dice to roll.
    pub n: i64,
}

/// A verdict on the game.
#[golem::args]
#[derive(Debug)]
pub struct Verdict {
    pub winner: String,
    pub score: u32,
}

/// Rejects `n <= 0` with a `ModelRetry`; otherwise returns `3n`.
pub fn roll_dice() -> impl Tool<Game> {
    FunctionTool::new(
        "roll_dice",
        |_ctx: RunContext<Game>, dice: Dice| async move {
            if dice.n <= 0 {
                return Err(ModelRetry::new(format!(
                    "n must be positive, got {}",
                    dice.n
                )));
            }
            Ok(dice.n * 3)
        },
    )
    .description("Roll `n` dice and return their total.")
}

/// What the model reads for a rejection with `reason`.
pub fn feedback(reason: &str) -> String {
    format!(
        "Automated validation feedback (not from the user):\n{reason}\n\nFix the errors and try again."
    )
}
