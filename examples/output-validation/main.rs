//! Self-correction on the output path: `#[golem::output(validate = ...)]` rejects a summary
//! that breaks the rules, the model reads why and sends a better one.
//!
//! ```text
//! cargo run --example output-validation                       # offline, a scripted model
//! OPENAI_API_KEY=sk-... cargo run --example output-validation # a real model
//! ```

use golem::model::function::FunctionModel;
use golem::model::{Message, Model, ModelResponse};
use golem::{Agent, ModelRetry};
use golem_examples::{Transcript, openai_from_env, usage_line};

/// A release note for one change.
#[golem::output(validate = check_note)]
#[derive(Debug)]
pub(crate) struct ReleaseNote {
    /// A one-line title in the imperative mood, at most 60 characters.
    title: String,
    /// Who is affected: "users", "operators" or "developers".
    audience: String,
}

fn check_note(note: &ReleaseNote) -> Result<(), ModelRetry> {
    let mut problems = Vec::new();
    if note.title.chars().count() > 60 {
        problems.push(format!(
            "the title has {} characters; keep it to 60",
            note.title.chars().count()
        ));
    }
    if !["users", "operators", "developers"].contains(&note.audience.as_str()) {
        problems.push(format!(
            "audience must be users, operators or developers, not `{}`",
            note.audience
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ModelRetry::new(problems.join("; ")))
    }
}

/// Plays the model offline: a first note that breaks both rules, then a good one.
pub(crate) fn scripted_model() -> FunctionModel {
    FunctionModel::new(|messages: &[Message], _| match messages.len() {
        1 => ModelResponse::tool_call(
            "final_result",
            r#"{"title": "This release changes how retries are counted for every tool in the agent", "audience": "everyone"}"#,
            "call_1",
        )
        .with_usage(120, 31),
        _ => ModelResponse::tool_call(
            "final_result",
            r#"{"title": "Count tool retries per run", "audience": "developers"}"#,
            "call_2",
        )
        .with_usage(190, 22),
    })
    .with_name("scripted")
}

/// Writes the note with `model` and returns what the example prints.
pub(crate) async fn run(model: impl Model) -> Result<String, Box<dyn std::error::Error>> {
    let agent = Agent::<(), ReleaseNote>::builder(model)
        .instructions("You write release notes.")
        .output_retries(2)
        .build()?;

    let result = agent
        .run(
            "Write the release note for: tool retry counters are now per run.",
            (),
        )
        .await?;

    Ok(format!(
        "{}{}\nnote: {} (for {})\n",
        Transcript::new(0, 2).render(&result.messages),
        usage_line(&result.usage),
        result.output.title,
        result.output.audience
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
