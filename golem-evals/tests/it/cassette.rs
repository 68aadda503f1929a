//! Cassettes: a run recorded against a server on loopback replays offline, streamed and
//! not, with the same history and usage; a request the cassette does not hold fails
//! loudly; credentials never reach the file; an eval runs on a cassette.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use futures_util::StreamExt;
use golem::model::openai::OpenAiModel;
use golem::model::{Message, ModelError};
use golem::{Agent, RunContext, RunEvent, Usage};
use golem_evals::cassette::{Cassette, CassetteError, Matcher, Mode, RecordedBody, Tape};
use golem_evals::evaluator::Contains;
use golem_evals::{AgentTask, Dataset, Experiment};
use serde_json::{Value, json};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate, matchers};

const KEY: &str = "sk-test-0123456789abcdefghij";

/// Add two whole numbers.
///
/// # Arguments
/// * `a` - the first number
/// * `b` - the second number
#[golem::tool]
async fn add(_ctx: &RunContext<()>, a: i64, b: i64) -> i64 {
    a + b
}

/// An OpenAI-compatible server: a call of `add` for a question, the sum once the tool
/// answered; event streams when asked to stream.
struct Calculator;

impl Respond for Calculator {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let messages = body["messages"].as_array().unwrap();
        let last = messages.last().unwrap();
        let (message, finish) = if last["role"] == "tool" {
            let sum = last["content"].as_str().unwrap().to_owned();
            (
                json!({"role": "assistant", "content": format!("The sum is {sum}.")}),
                "stop",
            )
        } else {
            let question = last["content"].as_str().unwrap();
            let numbers: Vec<i64> = question
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|n| n.parse().ok())
                .collect();
            let arguments = json!({"a": numbers[0], "b": numbers[1]}).to_string();
            (
                json!({"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": arguments}}
                ]}),
                "tool_calls",
            )
        };
        let usage = json!({"prompt_tokens": 20 * messages.len(), "completion_tokens": 7, "total_tokens": 20 * messages.len() + 7});
        if body["stream"] != true {
            return ResponseTemplate::new(200).set_body_json(json!({
                "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini",
                "choices": [{"index": 0, "finish_reason": finish, "message": message}],
                "usage": usage,
            }));
        }
        let chunk = |delta: Value, finish: Value| {
            json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "gpt-4o-mini",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        };
        let mut events = Vec::new();
        if let Some(text) = message["content"].as_str() {
            let (head, tail) = text.split_at(8);
            events.push(chunk(
                json!({"role": "assistant", "content": head}),
                Value::Null,
            ));
            events.push(chunk(json!({"content": tail}), Value::Null));
        } else {
            let call = &message["tool_calls"][0];
            let arguments = call["function"]["arguments"].as_str().unwrap();
            let (head, tail) = arguments.split_at(5);
            events.push(chunk(
                json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "add", "arguments": head}}]}),
                Value::Null,
            ));
            events.push(chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": tail}}]}),
                Value::Null,
            ));
        }
        events.push(chunk(json!({}), json!(finish)));
        events.push(json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "gpt-4o-mini", "choices": [], "usage": usage}));
        let mut sse: String = events
            .iter()
            .map(|event| format!("data: {event}\n\n"))
            .collect();
        sse.push_str("data: [DONE]\n\n");
        ResponseTemplate::new(200).set_body_raw(sse, "text/event-stream")
    }
}

async fn upstream() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(matchers::method("POST"))
        .and(matchers::path("/v1/chat/completions"))
        .respond_with(Calculator)
        .mount(&server)
        .await;
    server
}

fn agent(url: &str) -> Agent<(), String> {
    let model = OpenAiModel::builder("gpt-4o-mini")
        .api_key(KEY)
        .base_url(format!("{url}/v1"))
        .build()
        .unwrap();
    Agent::builder(model).tool(Add).build().unwrap()
}

/// A fresh file path under the target directory.
fn cassette_path(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cassettes");
    let path = dir.join(format!("{name}-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

/// A run of `question`, streamed or not: its history, usage and, streamed, its deltas.
async fn run(url: &str, question: &str, streamed: bool) -> (Vec<Message>, Usage, Vec<String>) {
    let agent = agent(url);
    if !streamed {
        let result = agent.run(question, ()).await.unwrap();
        return (result.messages, result.usage, Vec::new());
    }
    let mut run = agent.start(question, ());
    let mut deltas = Vec::new();
    let mut events = run.events();
    while let Some(event) = events.next().await {
        match event.unwrap() {
            RunEvent::Delta { delta, .. } => deltas.push(format!("{delta:?}")),
            RunEvent::Finished(result) => return (result.messages, result.usage, deltas),
            _ => {}
        }
    }
    panic!("the run finishes")
}

#[tokio::test]
async fn a_recorded_run_replays_offline_with_the_same_history_and_usage() {
    for streamed in [false, true] {
        let path = cassette_path(if streamed { "streamed" } else { "whole" });
        let server = upstream().await;
        let cassette = Cassette::record(&path, server.uri()).await.unwrap();
        assert_eq!(cassette.mode(), Mode::Record);
        let recorded = run(cassette.url(), "What is 2 + 3?", streamed).await;
        let finished = cassette.finish().await.unwrap();
        assert_eq!((finished.mode, finished.exchanges), (Mode::Record, 2));
        assert_eq!(server.received_requests().await.unwrap().len(), 2);
        drop(server);

        let tape = Tape::load(&path).unwrap();
        assert_eq!(tape.exchanges[0].request.method, "POST");
        assert_eq!(tape.exchanges[0].request.path, "/v1/chat/completions");
        assert_eq!(
            tape.exchanges[0].request.body["messages"][0]["content"],
            "What is 2 + 3?"
        );
        assert_eq!(tape.exchanges[1].response.status, 200);
        match &tape.exchanges[1].response.body {
            RecordedBody::Events(events) if streamed => {
                assert_eq!(events.len(), 5, "{events:#?}");
                assert_eq!(events[4], "data: [DONE]");
            }
            RecordedBody::Body(body) if !streamed => {
                assert_eq!(body["choices"][0]["message"]["content"], "The sum is 5.");
            }
            other => panic!("streamed {streamed}: {other:?}"),
        }

        let cassette = Cassette::replay(&path).await.unwrap();
        let replayed = run(cassette.url(), "What is 2 + 3?", streamed).await;
        let finished = cassette.finish().await.unwrap();
        assert_eq!(
            (finished.mode, finished.exchanges, finished.unused),
            (Mode::Replay, 2, 0)
        );
        assert_eq!(replayed.0, recorded.0, "streamed {streamed}");
        assert_eq!(replayed.1, recorded.1);
        assert_eq!(replayed.1.requests, 2, "{:?}", replayed.1);
        assert_eq!(replayed.2, recorded.2);
        if streamed {
            assert_eq!(replayed.2.len(), 5, "{:#?}", replayed.2);
        }
    }
}

#[tokio::test]
async fn a_stream_replays_one_event_a_chunk() {
    let path = cassette_path("chunks");
    let server = upstream().await;
    let cassette = Cassette::record(&path, server.uri()).await.unwrap();
    run(cassette.url(), "What is 2 + 3?", true).await;
    cassette.finish().await.unwrap();

    let cassette = Cassette::replay(&path).await.unwrap();
    let tape = Tape::load(&path).unwrap();
    let recorded = tape.exchanges[0].request.body.clone();
    assert_eq!(recorded["stream"], true);
    let mut response = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", cassette.url()))
        .header("content-type", "application/json")
        .body(recorded.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut chunks = Vec::new();
    while let Some(chunk) = response.chunk().await.unwrap() {
        chunks.push(String::from_utf8(chunk.to_vec()).unwrap());
    }
    let RecordedBody::Events(events) = &tape.exchanges[0].response.body else {
        panic!("a stream was recorded");
    };
    let expected: Vec<String> = events.iter().map(|event| format!("{event}\n\n")).collect();
    assert_eq!(chunks, expected);
    cassette.finish().await.unwrap();
}

#[tokio::test]
async fn a_request_the_cassette_does_not_hold_fails_loudly() {
    let path = cassette_path("mismatch");
    let server = upstream().await;
    let cassette = Cassette::record(&path, server.uri()).await.unwrap();
    run(cassette.url(), "What is 2 + 3?", false).await;
    cassette.finish().await.unwrap();

    let cassette = Cassette::replay(&path).await.unwrap();
    let error = agent(cassette.url())
        .run("What is 4 + 4?", ())
        .await
        .unwrap_err();
    let ModelError::Http {
        status, message, ..
    } = error.model_error().unwrap()
    else {
        panic!("{error:?}");
    };
    assert_eq!(*status, 400);
    assert!(
        message.contains("holds no answer for POST /v1/chat/completions"),
        "{message}"
    );
    assert_eq!(
        error.messages().len(),
        1,
        "the history holds the prompt, nothing more"
    );
    let misses = cassette.misses();
    assert_eq!(misses.len(), 1);
    assert_eq!(
        misses[0].request.body["messages"][0]["content"],
        "What is 4 + 4?"
    );
    let CassetteError::Mismatch { misses, .. } = cassette.finish().await.unwrap_err() else {
        panic!("a mismatch");
    };
    assert_eq!(misses.len(), 1);

    // Loosened, the same question finds the recorded answers.
    let cassette = Cassette::builder(&path)
        .matcher(Matcher::body().ignoring("/messages/0/content"))
        .replay()
        .await
        .unwrap();
    let result = agent(cassette.url())
        .run("What is 4 + 4?", ())
        .await
        .unwrap();
    assert_eq!(result.output, "The sum is 5.");
    cassette.finish().await.unwrap();
}

/// A server that echoes the request's credentials, and one that leaks a key of its own.
struct Echo {
    leak: Option<&'static str>,
}

impl Respond for Echo {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let authorization = request.headers["authorization"]
            .to_str()
            .unwrap()
            .to_owned();
        let content = match self.leak {
            Some(key) => format!("a key: {key}"),
            None => format!("you sent {authorization}"),
        };
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10},
        }))
    }
}

#[tokio::test]
async fn credentials_never_reach_the_file() {
    for leak in [None, Some("sk-proj-zyxwvutsrqponmlkjihgfedcba")] {
        let server = MockServer::start().await;
        Mock::given(matchers::method("POST"))
            .respond_with(Echo { leak })
            .mount(&server)
            .await;
        let path = cassette_path(if leak.is_some() { "leak" } else { "echo" });
        let cassette = Cassette::record(&path, server.uri()).await.unwrap();
        let result = agent(cassette.url()).run("Hi", ()).await.unwrap();
        match leak {
            None => {
                // golem keeps its key out of what it reads; the cassette keeps it out of the
                // file, which holds what the server sent.
                assert_eq!(result.output, "you sent Bearer [redacted]");
                cassette.finish().await.unwrap();
                let text = std::fs::read_to_string(&path).unwrap();
                assert!(!text.contains(KEY), "{text}");
                assert!(text.contains("you sent [redacted]"), "{text}");
                assert!(!text.to_lowercase().contains("authorization"), "{text}");
            }
            Some(key) => {
                let error = cassette.finish().await.unwrap_err();
                let CassetteError::Secret { exchange, what, .. } = &error else {
                    panic!("{error:?}");
                };
                assert_eq!(*exchange, 0);
                assert!(what.contains("sk-"), "{what}");
                assert!(!error.to_string().contains(key), "{error}");
                assert!(!path.exists(), "nothing written");
            }
        }
    }
}

#[tokio::test]
async fn an_eval_runs_on_a_cassette() {
    let dataset: Dataset<String, String> = Dataset::from_yaml(
        "
cases:
  - name: small
    input: What is 2 + 3?
    expected: The sum is 5.
  - name: large
    input: What is 40 + 2?
    expected: The sum is 42.
",
    )
    .unwrap();
    let experiment = |url: &str| {
        Experiment::new(
            "calculator",
            AgentTask::new(agent(url), |q: &String| (q.clone(), ())),
        )
        .evaluator(Contains::new("The sum is"))
        .concurrency(2)
    };
    let path = cassette_path("eval");
    let server = upstream().await;
    let cassette = Cassette::record(&path, server.uri()).await.unwrap();
    let recorded = experiment(cassette.url()).run(&dataset).await;
    assert_eq!(cassette.finish().await.unwrap().exchanges, 4);
    drop(server);

    let cassette = Cassette::replay(&path).await.unwrap();
    let replayed = experiment(cassette.url()).run(&dataset).await;
    assert_eq!(cassette.finish().await.unwrap().unused, 0);
    let outputs = |report: &golem_evals::Report| {
        report
            .cases
            .iter()
            .map(|case| (case.case.clone(), case.output.clone(), case.usage.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(outputs(&replayed), outputs(&recorded));
    assert_eq!(replayed.totals.pass_rate, 1.0);
}
