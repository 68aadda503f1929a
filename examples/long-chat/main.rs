//! Long chat: a conversation kept within a token budget. Each question is a new run that
//! continues the stored history; a history processor sends only the latest turns that fit
//! the budget, and a limit on one request's tokens refuses anything larger. The whole
//! conversation stays in the history; each line shows what was sent of it.
//!
//! ```text
//! cargo run --example long-chat                       # offline, a scripted model
//! OPENAI_API_KEY=sk-... cargo run --example long-chat # a real model
//! ```

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use golem::history::{self, FitTokens};
use golem::model::function::FunctionModel;
use golem::model::{Message, Model, ModelResponse, ModelSettings, RequestPart};
use golem::usage::UsageLimits;
use golem::{Agent, RunContext};
use golem_examples::openai_from_env;

/// What each request sent, noted by the processors as the run goes.
#[derive(Debug, Default)]
pub(crate) struct Sent {
    /// The messages in the whole history, at the last request.
    whole: Mutex<usize>,
    /// One line per request: how much of the history it sent.
    notes: Mutex<Vec<String>>,
}

/// The estimated tokens the history sent may take, and the most any one request may.
const HISTORY_BUDGET: u64 = 70;
const REQUEST_LIMIT: u64 = 400;

const QUESTIONS: [&str; 6] = [
    "Which planet is the largest?",
    "How many moons does it have?",
    "Which of them is the biggest?",
    "Is it bigger than Mercury?",
    "Who discovered it?",
    "What did we talk about first?",
];

/// Plays the model offline: answers each question in a sentence, and says how much of
/// the conversation it was sent.
pub(crate) fn scripted_model() -> FunctionModel {
    FunctionModel::new(|messages: &[Message], _| {
        let question = match messages.last() {
            Some(Message::Request(request)) => request
                .parts
                .iter()
                .find_map(|part| match part {
                    RequestPart::UserPrompt(prompt) => Some(prompt.text().into_owned()),
                    _ => None,
                })
                .unwrap_or_default(),
            _ => String::new(),
        };
        let answer = match QUESTIONS.iter().position(|q| *q == question) {
            Some(0) => "Jupiter is the largest planet in the solar system.".to_owned(),
            Some(1) => "Jupiter has 95 officially recognised moons.".to_owned(),
            Some(2) => "Ganymede is the biggest of Jupiter's moons.".to_owned(),
            Some(3) => "Yes, Ganymede is larger than Mercury, though less massive.".to_owned(),
            Some(4) => "Galileo Galilei discovered Ganymede in 1610.".to_owned(),
            _ => format!(
                "The first question I can see is: {}",
                first_prompt(messages)
            ),
        };
        ModelResponse::text(answer).with_usage(30 * messages.len() as u64, 12)
    })
    .with_name("scripted")
}

/// The first user prompt in `messages`.
fn first_prompt(messages: &[Message]) -> String {
    messages
        .iter()
        .find_map(|message| match message {
            Message::Request(request) => request.parts.iter().find_map(|part| match part {
                RequestPart::UserPrompt(prompt) => Some(prompt.text().into_owned()),
                _ => None,
            }),
            Message::Response(_) => None,
        })
        .unwrap_or_default()
}

/// An agent whose requests send at most `HISTORY_BUDGET` estimated tokens of history.
fn agent(model: impl Model) -> Result<Agent<Arc<Sent>, String>, golem::BuildError> {
    Agent::<Arc<Sent>, String>::builder(model)
        .instructions("You are a terse astronomy guide. Answer in one sentence.")
        .model_settings(ModelSettings::default().max_tokens(256))
        .history_processor(history::from_fn(
            "note_whole",
            |ctx: &RunContext<Arc<Sent>>, messages: Vec<Message>| {
                *ctx.deps().whole.lock().expect("not poisoned") = messages.len();
                messages
            },
        ))
        .history_processor(FitTokens::new(HISTORY_BUDGET))
        .history_processor(history::from_fn(
            "note_sent",
            |ctx: &RunContext<Arc<Sent>>, messages: Vec<Message>| {
                let whole = *ctx.deps().whole.lock().expect("not poisoned");
                ctx.deps().notes.lock().expect("not poisoned").push(format!(
                    "sent {} of {whole} messages, ~{} tokens",
                    messages.len(),
                    history::estimate_tokens(&messages)
                ));
                messages
            },
        ))
        .usage_limits(UsageLimits::new().request_tokens_limit(REQUEST_LIMIT))
        .build()
}

/// Holds the conversation with `model` and returns what the example prints.
pub(crate) async fn run(model: impl Model) -> Result<String, Box<dyn std::error::Error>> {
    let agent = agent(model)?;
    let sent = Arc::new(Sent::default());
    let mut history = Vec::new();
    let mut out = String::new();
    for (turn, question) in QUESTIONS.iter().enumerate() {
        let result = agent
            .run_with_history(history, *question, Arc::clone(&sent))
            .await?;
        let note = sent
            .notes
            .lock()
            .expect("not poisoned")
            .pop()
            .unwrap_or_default();
        writeln!(out, "turn {} │ {note}", turn + 1)?;
        writeln!(out, "user   │ {question}")?;
        writeln!(out, "model  │ {}", result.output)?;
        history = result.messages;
    }
    writeln!(
        out,
        "kept   │ {} messages in the history, all of them",
        history.len()
    )?;
    Ok(out)
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
