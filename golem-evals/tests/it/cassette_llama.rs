//! A cassette recorded against a real model server — llama.cpp's own, with a small real
//! model (tests/llama/) — replays offline with the same history and usage: on Chat
//! Completions unstreamed and on the Responses API streamed.

#![allow(clippy::unwrap_used)]

use crate::llama;

use std::path::PathBuf;

use futures_util::StreamExt;
use golem::model::openai::OpenAiModel;
use golem::model::openai::responses::OpenAiResponsesModel;
use golem::model::{Message, Model, ModelSettings};
use golem::{Agent, RunContext, RunEvent, Step, Usage};
use golem_evals::cassette::{Cassette, Mode, RecordedBody, Tape};

/// The current weather in a city.
///
/// # Arguments
/// * `city` - the city's name, e.g. "Paris"
#[golem::tool]
async fn get_weather(_ctx: &RunContext<()>, city: String) -> String {
    format!("It is 18 degrees and sunny in {city}.")
}

fn settings() -> ModelSettings {
    ModelSettings::default().temperature(0.0).max_tokens(128)
}

fn agent(model: impl Model) -> Agent<(), String> {
    Agent::builder(model)
        .instructions("Use the get_weather tool to answer questions about the weather.")
        .tool(GetWeather)
        .build()
        .unwrap()
}

fn chat(url: &str) -> OpenAiModel {
    OpenAiModel::builder("qwen2.5-coder-0.5b")
        .base_url(format!("{url}/v1"))
        .settings(settings())
        .build()
        .unwrap()
}

fn responses(url: &str) -> OpenAiResponsesModel {
    OpenAiResponsesModel::builder("qwen2.5-coder-0.5b")
        .base_url(format!("{url}/v1"))
        .settings(settings())
        .build()
        .unwrap()
}

const QUESTION: &str = "What is the weather in Paris?";

/// The run up to its second response (the small model may call the tool again after the
/// answer, so the run is not driven to its end): history and usage.
async fn two_responses(agent: Agent<(), String>, streamed: bool) -> (Vec<Message>, Usage) {
    let mut run = agent.start(QUESTION, ());
    if streamed {
        let mut responses = 0;
        let mut events = run.events();
        while let Some(event) = events.next().await {
            if let RunEvent::ResponseReceived { .. } = event.unwrap() {
                responses += 1;
                if responses == 2 {
                    break;
                }
            }
        }
    } else {
        assert!(matches!(run.step().await.unwrap(), Step::Responded));
        assert!(matches!(run.step().await.unwrap(), Step::Handled));
        assert!(matches!(run.step().await.unwrap(), Step::Responded));
    }
    (run.messages().to_vec(), run.usage().clone())
}

fn cassette_path(name: &str) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("cassettes")
        .join(format!("llama-{name}-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

#[tokio::test]
async fn a_run_recorded_against_llama_cpp_replays_offline() {
    let upstream = &llama::server().url;
    for (name, streamed) in [("chat", false), ("responses", true)] {
        let path = cassette_path(name);
        let make = |url: &str| match name {
            "chat" => agent(chat(url)),
            _ => agent(responses(url)),
        };

        let cassette = Cassette::record(&path, upstream.as_str()).await.unwrap();
        let recorded = two_responses(make(cassette.url()), streamed).await;
        let finished = cassette.finish().await.unwrap();
        assert_eq!(
            (finished.mode, finished.exchanges),
            (Mode::Record, 2),
            "{name}"
        );
        assert_eq!(recorded.1.requests, 2);
        assert_eq!(recorded.0.len(), 4, "{name}: {:#?}", recorded.0);

        let tape = Tape::load(&path).unwrap();
        let streamed_bodies = tape
            .exchanges
            .iter()
            .filter(|exchange| matches!(exchange.response.body, RecordedBody::Events(_)))
            .count();
        assert_eq!(streamed_bodies, if streamed { 2 } else { 0 }, "{name}");

        let cassette = Cassette::replay(&path).await.unwrap();
        let replayed = two_responses(make(cassette.url()), streamed).await;
        let finished = cassette.finish().await.unwrap();
        assert_eq!((finished.exchanges, finished.unused), (2, 0), "{name}");
        assert_eq!(replayed, recorded, "{name}");
    }
}
