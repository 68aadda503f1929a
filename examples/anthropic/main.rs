//! The same self-correcting dice game on Anthropic's Messages API.
//!
//! ```text
//! cargo run --example anthropic                          # offline, a scripted model
//! ANTHROPIC_API_KEY=sk-ant-... cargo run --example anthropic  # Claude
//! ```
//!
//! `GOLEM_ANTHROPIC_MODEL` picks the model (default `claude-sonnet-4-5`).

use golem::model::anthropic::AnthropicModel;
use golem::model::function::FunctionModel;
use golem::model::{Message, Model, ModelResponse};
use golem::{Agent, ModelRetry};
use golem_examples::{Transcript, usage_line};

/// Look up the capital of a country.
///
/// # Arguments
/// * `country` - the country's English name, e.g. "France"
#[golem::tool(max_retries = 1)]
async fn capital(country: String) -> Result<&'static str, ModelRetry> {
    match country.as_str() {
        "France" => Ok("Paris"),
        "Norway" => Ok("Oslo"),
        "Japan" => Ok("Tokyo"),
        other => Err(ModelRetry::new(format!(
            "unknown country `{other}`; use the English name, e.g. France"
        ))),
    }
}

/// Plays the model offline: a first call with the French name, then the English one.
pub(crate) fn scripted_model() -> FunctionModel {
    FunctionModel::new(|messages: &[Message], _| match messages.len() {
        1 => ModelResponse::tool_call("capital", r#"{"country": "Norge"}"#, "toolu_1")
            .with_usage(380, 40),
        3 => ModelResponse::tool_call("capital", r#"{"country": "Norway"}"#, "toolu_2")
            .with_usage(450, 40),
        _ => ModelResponse::text("The capital of Norway is Oslo.").with_usage(510, 12),
    })
    .with_name("scripted")
}

/// Asks with `model` and returns what the example prints.
pub(crate) async fn run(model: impl Model) -> Result<String, Box<dyn std::error::Error>> {
    let agent = Agent::<(), String>::builder(model)
        .instructions("Answer geography questions with the capital tool.")
        .tool(Capital)
        .build()?;

    let result = agent.run("What is the capital of Norge?", ()).await?;

    Ok(format!(
        "{}{}\n",
        Transcript::new(0, 0)
            .tool_budget("capital", 1)
            .render(&result.messages),
        usage_line(&result.usage)
    ))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let output = if std::env::var("ANTHROPIC_API_KEY").is_ok_and(|key| !key.is_empty()) {
        let name = std::env::var("GOLEM_ANTHROPIC_MODEL")
            .unwrap_or_else(|_| "claude-sonnet-4-5".to_owned());
        run(AnthropicModel::from_env(name)?).await?
    } else {
        println!("ANTHROPIC_API_KEY is not set: a scripted model plays the part.\n");
        run(scripted_model()).await?
    };
    print!("{output}");
    Ok(())
}
