//! The wires against a real model server: llama.cpp's own HTTP server with a small real
//! instruction model (tests/llama/), on loopback. On each wire golem speaks, streamed and
//! not, the model calls a tool, golem runs it and sends its answer paired with the call, and
//! the server takes that history and responds: the round trip that a wire most often gets
//! wrong. What the small model says after the answer is not asserted (it may call the tool
//! again); its first call and the server's acceptance of the answer are.

use crate::llama;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures_util::StreamExt;
use golem::model::anthropic::AnthropicModel;
use golem::model::openai::OpenAiModel;
use golem::model::openai::responses::OpenAiResponsesModel;
use golem::model::{Message, Model, ModelSettings, RequestPart};
use golem::{Agent, RunContext, RunEvent, Step};

/// What the tool saw: how often it ran, and the city it was last asked for.
#[derive(Debug, Default)]
struct Seen {
    calls: AtomicUsize,
    city: std::sync::Mutex<String>,
}

/// The current weather in a city.
///
/// # Arguments
/// * `city` - the city's name, e.g. "Paris"
#[golem::tool]
async fn get_weather(ctx: &RunContext<Arc<Seen>>, city: String) -> String {
    ctx.deps().calls.fetch_add(1, Ordering::SeqCst);
    *ctx.deps().city.lock().expect("not poisoned") = city.clone();
    format!("It is 18 degrees and sunny in {city}.")
}

/// Deterministic decoding and a bound on the output, as small models need.
fn settings() -> ModelSettings {
    ModelSettings::default().temperature(0.0).max_tokens(128)
}

fn chat() -> OpenAiModel {
    OpenAiModel::builder("qwen2.5-coder-0.5b")
        .base_url(format!("{}/v1", llama::server().url))
        .settings(settings())
        .build()
        .expect("a valid model")
}

fn responses() -> OpenAiResponsesModel {
    OpenAiResponsesModel::builder("qwen2.5-coder-0.5b")
        .base_url(format!("{}/v1", llama::server().url))
        .settings(settings())
        .build()
        .expect("a valid model")
}

fn messages() -> AnthropicModel {
    AnthropicModel::builder("qwen2.5-coder-0.5b")
        .api_key("local")
        .base_url(format!("{}/v1", llama::server().url))
        .settings(settings())
        .build()
        .expect("a valid model")
}

fn agent(model: impl Model) -> Agent<Arc<Seen>, String> {
    Agent::builder(model)
        .instructions("Use the get_weather tool to answer questions about the weather.")
        .tool(GetWeather)
        .build()
        .expect("a valid agent")
}

const QUESTION: &str = "What is the weather in Paris?";

/// The run's history after its second response: the question, the model's call to
/// `get_weather` for Paris, golem's answer to that call, and the server's response to that
/// history; both requests counted.
fn assert_round_trip(messages: &[Message], usage: &golem::Usage, seen: &Seen) {
    assert_eq!(seen.calls.load(Ordering::SeqCst), 1, "the tool ran once");
    let city = seen.city.lock().expect("not poisoned").to_lowercase();
    assert!(
        city.contains("paris"),
        "the model asked for Paris: {city:?}"
    );
    assert_eq!(messages.len(), 4, "{messages:#?}");
    let Message::Request(first) = &messages[0] else {
        panic!("the history opens with a request: {messages:#?}");
    };
    assert!(
        matches!(&first.parts[..], [RequestPart::UserPrompt(prompt)] if prompt.text() == QUESTION),
        "{first:#?}"
    );
    let Message::Response(response) = &messages[1] else {
        panic!("the model answers the question: {messages:#?}");
    };
    let calls: Vec<_> = response.tool_calls().collect();
    assert_eq!(calls.len(), 1, "{response:#?}");
    assert_eq!(calls[0].tool_name, "get_weather");
    assert!(!calls[0].tool_call_id.is_empty());
    let Message::Request(answer) = &messages[2] else {
        panic!("golem answers the call: {messages:#?}");
    };
    assert!(
        matches!(&answer.parts[..], [RequestPart::ToolReturn(returned)]
            if returned.tool_call_id == calls[0].tool_call_id
                && returned.tool_name == "get_weather"
                && returned.content == "It is 18 degrees and sunny in Paris."),
        "{answer:#?}"
    );
    assert!(
        matches!(&messages[3], Message::Response(_)),
        "{messages:#?}"
    );
    assert_eq!(usage.requests, 2);
    assert!(
        usage.input_tokens > 0 && usage.output_tokens > 0,
        "{usage:?}"
    );
}

async fn unstreamed(model: impl Model) {
    let seen = Arc::new(Seen::default());
    let agent = agent(model);
    let mut run = agent.start(QUESTION, Arc::clone(&seen));
    assert!(matches!(
        run.step().await.expect("a first response"),
        Step::Responded
    ));
    assert!(matches!(
        run.step().await.expect("the call handled"),
        Step::Handled
    ));
    let second = run
        .step()
        .await
        .expect("the server takes the answered call");
    assert!(matches!(second, Step::Responded), "{second:?}");
    assert_round_trip(run.messages(), run.usage(), &seen);
}

async fn streamed(model: impl Model) {
    let seen = Arc::new(Seen::default());
    let agent = agent(model);
    let mut run = agent.start(QUESTION, Arc::clone(&seen));
    let mut deltas = 0;
    let mut responses = 0;
    {
        let mut events = run.events();
        while let Some(event) = events.next().await {
            match event.expect("the server takes the answered call") {
                RunEvent::Delta { .. } => deltas += 1,
                RunEvent::ResponseReceived { .. } => {
                    responses += 1;
                    if responses == 2 {
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    assert_eq!(responses, 2);
    assert!(deltas > 1, "the responses arrived as streams");
    assert_round_trip(run.messages(), run.usage(), &seen);
}

#[tokio::test]
async fn chat_completions_round_trip_a_tool_call() {
    unstreamed(chat()).await;
}

#[tokio::test]
async fn chat_completions_round_trip_a_tool_call_streamed() {
    streamed(chat()).await;
}

#[tokio::test]
async fn responses_round_trip_a_tool_call() {
    unstreamed(responses()).await;
}

#[tokio::test]
async fn responses_round_trip_a_tool_call_streamed() {
    streamed(responses()).await;
}

#[tokio::test]
async fn anthropic_messages_round_trip_a_tool_call() {
    unstreamed(messages()).await;
}

#[tokio::test]
async fn anthropic_messages_round_trip_a_tool_call_streamed() {
    streamed(messages()).await;
}
