//! `&RunContext<D>` fixes the dependencies; without it a tool works for any; the keys
//! rename the tool and its struct; raw identifiers, `mut` and no parameters are fine.

use golem::RunContext;
use golem::tool::{RetryLimit, Tool};

struct Game {
    seed: u64,
}

/// Roll dice.
#[golem::tool(name = "roll-dice", max_retries = 0)]
async fn roll_dice(ctx: &golem::RunContext<Game>, mut n: i64) -> i64 {
    n += ctx.deps().seed as i64;
    n
}

/// A forecast; the struct would collide with the user's `Forecast` type.
#[golem::tool(struct_name = ForecastTool, description = "Tomorrow's forecast.")]
async fn forecast(r#type: String) -> Forecast {
    Forecast(r#type)
}

#[derive(serde::Serialize)]
struct Forecast(String);

#[golem::tool]
async fn ping() -> &'static str {
    "pong"
}

#[golem::tool]
pub async fn seed(ctx: &RunContext<Game>) -> u64 {
    ctx.deps().seed
}

fn assert_tool<D, T: Tool<D>>(_: T) {}

fn main() {
    assert_tool::<Game, _>(RollDice);
    assert_tool::<Game, _>(Seed);
    assert_tool::<(), _>(ForecastTool);
    assert_tool::<Game, _>(ForecastTool);
    assert_tool::<String, _>(Ping);
    assert_eq!(Tool::<Game>::max_retries(&RollDice), Some(RetryLimit(0)));
    assert_eq!(Tool::<()>::max_retries(&Ping), None);
    assert_eq!(Tool::<Game>::definition(&RollDice).name, "roll-dice");
    let forecast = Tool::<()>::definition(&ForecastTool);
    assert_eq!(forecast.name, "forecast");
    assert_eq!(
        forecast.description.as_deref(),
        Some("Tomorrow's forecast.")
    );
    assert_eq!(forecast.parameters["required"], serde_json::json!(["type"]));
    // The function stays callable as written.
    let ctx = RunContext::new(Game { seed: 1 });
    let _future = roll_dice(&ctx, 2);
}
