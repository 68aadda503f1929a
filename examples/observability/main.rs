//! Observability: golem's spans exported over OTLP with golem-otel, and what the run cost
//! in dollars, rejected rounds included. The model calls a tool with a mistake and gives an
//! answer the validator rejects; both rejections show in the trace as events, and in the
//! cost as rounds that ended in a rejection.
//!
//! The example starts a small OTLP collector of its own on loopback and prints the span
//! tree it received; a program points golem-otel at a real collector instead.
//!
//! ```text
//! cargo run --example observability                       # offline, a scripted model
//! OPENAI_API_KEY=sk-... cargo run --example observability # a real model
//! ```

mod collector;

use golem::model::function::FunctionModel;
use golem::model::{Message, Model, ModelResponse};
use golem::{Agent, ModelRetry, RunContext};
use golem_examples::{Transcript, openai_from_env, usage_line};
use tracing::instrument::WithSubscriber;
use tracing_subscriber::layer::SubscriberExt;

use collector::Collector;

/// Roll `n` six-sided dice; every die shows 3, so runs are repeatable.
///
/// # Arguments
/// * `n` - how many dice to roll, 1 to 10
#[golem::tool(max_retries = 1)]
async fn roll_dice(_ctx: &RunContext<()>, n: i64) -> Result<i64, ModelRetry> {
    if !(1..=10).contains(&n) {
        return Err(ModelRetry::new(format!(
            "n must be between 1 and 10, got {n}"
        )));
    }
    Ok(3 * n)
}

/// Plays the model offline: a call with a mistake, the corrected call, an answer without
/// the total (rejected), then the answer.
pub(crate) fn scripted_model() -> FunctionModel {
    FunctionModel::new(|messages: &[Message], _| match messages.len() {
        1 => ModelResponse::tool_call("roll_dice", r#"{"n": 0}"#, "call_1").with_usage(120, 18),
        3 => ModelResponse::tool_call("roll_dice", r#"{"n": 2}"#, "call_2").with_usage(170, 18),
        5 => ModelResponse::text("Ann rolled well.").with_usage(200, 6),
        _ => ModelResponse::text("Ann rolled 6.").with_usage(230, 7),
    })
    .with_name("scripted")
}

/// Runs the game with `model`, its spans exported to a loopback collector, and returns
/// what the example prints: the transcript, the usage and its cost at the prices of
/// `provider`'s `priced_as`, and the span tree the collector received.
pub(crate) async fn run(
    model: impl Model,
    provider: &str,
    priced_as: &str,
) -> Result<String, Box<dyn std::error::Error>> {
    let collector = Collector::start()?;
    let exporter = golem_otel::Exporter::builder()
        .endpoint(collector.endpoint())
        .service_name("observability-example")
        .build()?;
    let subscriber = tracing_subscriber::registry().with(exporter.layer());

    let agent = Agent::<(), String>::builder(model)
        .name("referee")
        .instructions("Roll two dice for Ann with roll_dice, then say what she rolled.")
        .tool(RollDice)
        .output_retries(1)
        .output_validator(|_ctx, answer: String| async move {
            if !answer.chars().any(|c| c.is_ascii_digit()) {
                return Err(ModelRetry::new("say the total as a number"));
            }
            Ok(answer)
        })
        .build()?;
    let result = agent
        .run("Roll two dice for Ann.", ())
        .with_subscriber(subscriber)
        .await?;
    // Sends what is left; the collector has every span once this returns.
    exporter.shutdown()?;

    let usage = &result.usage;
    let price = usage.price(provider, priced_as)?;
    let rejected = usage.rejected_price(provider, priced_as)?;
    let mut rejected_by = vec![format!("output ${:.6}", rejected.output)];
    for (tool, cost) in &rejected.tools {
        rejected_by.insert(0, format!("{tool} ${cost:.6}"));
    }
    let transcript = Transcript::new(0, 1).tool_budget("roll_dice", 1);
    Ok(format!(
        "{}{}\ncost     │ {price} at {priced_as} prices, of which rejected rounds ${:.6} ({})\n{}",
        transcript.render(&result.messages),
        usage_line(usage),
        rejected.total,
        rejected_by.join(", "),
        collector.tree(),
    ))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let output = match openai_from_env() {
        Some(model) => {
            let (provider, name) = (model.system().to_owned(), model.name().to_owned());
            run(model, &provider, &name).await?
        }
        None => {
            println!(
                "OPENAI_API_KEY is not set: a scripted model plays the part, priced as gpt-4o-mini.\n"
            );
            run(scripted_model(), "openai", "gpt-4o-mini").await?
        }
    };
    print!("{output}");
    Ok(())
}
