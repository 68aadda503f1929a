//! An image in a prompt: a small PNG, embedded in the example, sent with a question.
//!
//! ```text
//! cargo run --example vision                        # offline, a scripted model
//! OPENAI_API_KEY=sk-... cargo run --example vision  # a real OpenAI model
//! ```
//!
//! `GOLEM_OPENAI_MODEL` picks the model (default `gpt-4o-mini`). The prompt is a list of
//! content parts: text, then the image's bytes with their media type; the OpenAI wire sends
//! the image as a `data:` URL. A URL works too (`UserContent::image_url`), and so do PDFs
//! and, where the provider takes it, audio (docs/providers.md has each provider's table).

use golem::Agent;
use golem::model::function::FunctionModel;
use golem::model::openai::OpenAiModel;
use golem::model::{BinaryContent, Message, Model, ModelResponse, RequestPart, UserContent};
use golem_examples::{Transcript, usage_line};

/// A 4×4 red square.
const RED_SQUARE: &[u8] = include_bytes!("red-square.png");

/// Plays the model offline: it reads the image's size from the PNG header it was sent, and
/// knows the colour.
pub(crate) fn scripted_model() -> FunctionModel {
    FunctionModel::new(|messages: &[Message], _| {
        let size = messages
            .iter()
            .filter_map(Message::as_request)
            .flat_map(|request| &request.parts)
            .find_map(|part| match part {
                RequestPart::UserPrompt(prompt) => prompt.media().find_map(png_size),
                _ => None,
            });
        match size {
            Some((width, height)) => ModelResponse::text(format!(
                "A solid red square, {width} by {height} pixels, with nothing else in it."
            ))
            .with_usage(290, 16),
            None => ModelResponse::text("I see no image.").with_usage(20, 5),
        }
    })
    .with_name("scripted")
}

/// The width and height in a PNG's header.
fn png_size(content: &UserContent) -> Option<(u32, u32)> {
    let UserContent::Binary(binary) = content else {
        return None;
    };
    let header = binary.data.get(16..24)?;
    let width = u32::from_be_bytes(header[..4].try_into().ok()?);
    let height = u32::from_be_bytes(header[4..].try_into().ok()?);
    Some((width, height))
}

/// Asks `model` about the image and returns what the example prints.
pub(crate) async fn run(model: impl Model) -> Result<String, Box<dyn std::error::Error>> {
    let agent = Agent::<(), String>::builder(model)
        .instructions("Describe images in one sentence.")
        .build()?;

    let prompt = [
        UserContent::text("What is in this picture?"),
        BinaryContent::new(RED_SQUARE, "image/png").into(),
    ];
    let result = agent.run(prompt, ()).await?;

    Ok(format!(
        "{}{}\n",
        Transcript::new(0, 0).render(&result.messages),
        usage_line(&result.usage)
    ))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let output = if std::env::var("OPENAI_API_KEY").is_ok_and(|key| !key.is_empty()) {
        let name = std::env::var("GOLEM_OPENAI_MODEL").unwrap_or_else(|_| "gpt-4o-mini".to_owned());
        run(OpenAiModel::from_env(name)?).await?
    } else {
        println!("OPENAI_API_KEY is not set: a scripted model plays the part.\n");
        run(scripted_model()).await?
    };
    print!("{output}");
    Ok(())
}
