//! Gemini, streamed (`streamGenerateContent?alt=sse`): chunks of the shape Google documents
//! (thought summaries with their signatures, text split over chunks, signed function calls,
//! a signature in a chunk of its own), validated against the google-genai SDK's types and
//! served a few bytes at a time from a loopback socket; what they add up to equals the
//! unstreamed response for the same content. Faults (a cut, a stall, an early end, an error
//! chunk, a corrupt or non-UTF-8 chunk, an answer that is no stream) end in typed errors.

#![cfg(feature = "gemini")]

use crate::common;

use std::time::Duration;

use common::dice::{Game, Verdict, roll_dice};
use common::gemini::validate;
use common::sse::{Piece, Reply, SseServer, serve};
use common::streams::*;
use common::*;
use futures_util::StreamExt;
use golem::model::gemini::GeminiModel;
use golem::model::http::{HttpSettings, RetryPolicy};
use golem::model::{
    FinishReason, Model, ModelResponse, ProviderPart, RequestParams, RequestUsage, ResponseDelta,
    ResponsePart, StreamFault, ThinkingPart,
};
use golem::output::{Json, OutputMode};
use golem::{Agent, RunEvent};
use serde_json::{Value, json};
use wiremock::matchers::{method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY: &str = "AIzaSyTest-0123456789abcdefghijklmno";

fn model(base: &str) -> GeminiModel {
    GeminiModel::builder("gemini-2.5-flash")
        .api_key(KEY)
        .base_url(format!("{base}/v1beta"))
        .build()
        .expect("valid model")
}

/// A chunk (or a whole response) holding `parts`, with `extra` fields on the candidate.
fn chunk(parts: Value, candidate: Value, usage: Value) -> Value {
    let mut candidate_fields = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if let (Value::Object(fields), Value::Object(extra)) = (&mut candidate_fields, candidate) {
        fields.extend(extra);
    }
    json!({
        "candidates": [candidate_fields],
        "usageMetadata": usage,
        "modelVersion": "gemini-2.5-flash",
        "responseId": "resp-s1"
    })
}

fn usage(prompt: u64, candidates: u64, thoughts: u64) -> Value {
    json!({
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "thoughtsTokenCount": thoughts,
        "totalTokenCount": prompt + candidates + thoughts
    })
}

/// An event stream of `chunks`, as Gemini frames it.
fn sse(chunks: &[Value]) -> String {
    chunks
        .iter()
        .map(|chunk| format!("data: {chunk}\r\n\r\n"))
        .collect()
}

/// Streams `chunks` (split into pieces of `split` bytes), then asks for `whole` unstreamed,
/// from one server; both checked against the SDK's types first.
async fn streamed_and_whole(
    chunks: &[Value],
    whole: &Value,
    split: usize,
) -> (Streamed, ModelResponse, SseServer) {
    let mut responses = chunks.to_vec();
    responses.push(whole.clone());
    validate(&[], &responses);
    let server = serve(vec![
        Reply::sse(&sse(chunks), split, Duration::from_millis(1)),
        Reply::json(whole),
    ])
    .await;
    let model = model(&server.uri());
    let messages = [request(vec![user("Roll two dice.")])];
    let params = RequestParams::text(Vec::new());
    let streamed = drive(&model, &messages, &params).await;
    let whole = model
        .request(&messages, &params)
        .await
        .expect("as scripted");
    let bodies = server.bodies();
    validate(&bodies, &[]);
    // The same body, streamed or not: the endpoint says which.
    assert_eq!(bodies[0], bodies[1]);
    (streamed, whole, server)
}

fn signature(signature: &str) -> ResponsePart {
    ResponsePart::Thinking(
        ThinkingPart::new("")
            .with_signature(signature)
            .with_provider("gemini"),
    )
}

#[tokio::test]
async fn thoughts_text_and_signed_calls_stream_and_add_up_to_the_unstreamed_response() {
    let chunks = [
        chunk(
            json!([{"text": "The user wants", "thought": true}]),
            json!({}),
            usage(40, 0, 10),
        ),
        chunk(
            json!([{"text": " two dice.", "thought": true, "thoughtSignature": "c2lnLXRob3VnaHQ="}]),
            json!({}),
            usage(40, 0, 21),
        ),
        chunk(json!([{"text": "Rolling "}]), json!({}), usage(40, 2, 21)),
        chunk(
            json!([
                {"text": "now."},
                {"functionCall": {"name": "roll_dice", "args": {"n": 2}}, "thoughtSignature": "c2lnLWNhbGw="}
            ]),
            json!({}),
            usage(40, 12, 21),
        ),
        chunk(
            json!([{"functionCall": {"name": "roll_dice", "args": {"n": 3}}}]),
            json!({"finishReason": "STOP"}),
            usage(40, 20, 21),
        ),
    ];
    let whole = chunk(
        json!([
            {"text": "The user wants two dice.", "thought": true, "thoughtSignature": "c2lnLXRob3VnaHQ="},
            {"text": "Rolling now."},
            {"functionCall": {"name": "roll_dice", "args": {"n": 2}}, "thoughtSignature": "c2lnLWNhbGw="},
            {"functionCall": {"name": "roll_dice", "args": {"n": 3}}}
        ]),
        json!({"finishReason": "STOP"}),
        usage(40, 20, 21),
    );

    let (streamed, whole, _server) = streamed_and_whole(&chunks, &whole, 7).await;

    assert_eq!(
        streamed.deltas,
        [
            thinking_delta(0, "The user wants"),
            thinking_delta(0, " two dice."),
            ResponseDelta::ThinkingSignature {
                part: 0,
                signature: "c2lnLXRob3VnaHQ=".to_owned(),
            },
            text_delta(1, "Rolling "),
            text_delta(1, "now."),
            call_start(2, "roll_dice", ""),
            args_delta(2, r#"{"n":2}"#),
            ResponseDelta::ThinkingSignature {
                part: 3,
                signature: "c2lnLWNhbGw=".to_owned(),
            },
            call_start(4, "roll_dice", ""),
            args_delta(4, r#"{"n":3}"#),
        ]
    );
    let response = streamed.response();
    assert_eq!(response, whole);
    assert_eq!(
        response.parts,
        [
            ResponsePart::Thinking(
                ThinkingPart::new("The user wants two dice.")
                    .with_signature("c2lnLXRob3VnaHQ=")
                    .with_provider("gemini")
            ),
            text("Rolling now."),
            call("roll_dice", r#"{"n":2}"#, ""),
            signature("c2lnLWNhbGw="),
            call("roll_dice", r#"{"n":3}"#, ""),
        ]
    );
    assert_eq!(response.finish_reason, Some(FinishReason::ToolCall));
    // The last chunk's usage is the response's; thoughts are output, and reasoning.
    assert_eq!(
        response.usage,
        RequestUsage {
            reasoning_tokens: 21,
            ..RequestUsage::new(40, 41)
        }
    );
    assert_eq!(response.provider_response_id.as_deref(), Some("resp-s1"));
}

#[tokio::test]
async fn a_signature_in_a_chunk_of_its_own_closes_the_text_served_byte_by_byte() {
    let chunks = [
        chunk(json!([{"text": "Hel"}]), json!({}), usage(5, 1, 0)),
        chunk(
            json!([{"text": "lo, Ünïcode \"quotes\"\n"}]),
            json!({}),
            usage(5, 4, 0),
        ),
        chunk(
            json!([{"text": "", "thoughtSignature": "c2ln"}]),
            json!({"finishReason": "STOP"}),
            usage(5, 6, 0),
        ),
    ];
    let whole = chunk(
        json!([{"text": "Hello, Ünïcode \"quotes\"\n", "thoughtSignature": "c2ln"}]),
        json!({"finishReason": "STOP"}),
        usage(5, 6, 0),
    );

    let (streamed, whole, _server) = streamed_and_whole(&chunks, &whole, 1).await;

    assert_eq!(
        streamed.deltas,
        [
            text_delta(0, "Hel"),
            text_delta(0, "lo, Ünïcode \"quotes\"\n"),
            ResponseDelta::ThinkingSignature {
                part: 1,
                signature: "c2ln".to_owned(),
            },
        ]
    );
    let response = streamed.response();
    assert_eq!(response, whole);
    assert_eq!(
        response.parts,
        [text("Hello, Ünïcode \"quotes\"\n"), signature("c2ln")]
    );
    assert_eq!(response.finish_reason, Some(FinishReason::Stop));
}

#[tokio::test]
async fn a_blocked_prompt_streams_as_one_chunk_and_equals_the_unstreamed_verdict() {
    let blocked = json!({
        "promptFeedback": {"blockReason": "SAFETY"},
        "usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7},
        "modelVersion": "gemini-2.5-flash",
        "responseId": "resp-s2"
    });

    let (streamed, whole, _server) =
        streamed_and_whole(std::slice::from_ref(&blocked), &blocked, 64).await;

    assert!(streamed.deltas.is_empty());
    let response = streamed.response();
    assert_eq!(response, whole);
    assert_eq!(response.finish_reason, Some(FinishReason::ContentFilter));
    assert_eq!(
        response.parts,
        [ResponsePart::Provider(ProviderPart::new(
            "gemini",
            json!({"safetyVerdict": {"promptFeedback": {"blockReason": "SAFETY"}}})
        ))]
    );
}

#[tokio::test]
async fn streams_go_to_stream_generate_content_with_alt_sse() {
    let server = MockServer::start().await;
    let body = sse(&[chunk(
        json!([{"text": "hi"}]),
        json!({"finishReason": "STOP"}),
        usage(1, 1, 0),
    )]);
    Mock::given(method("POST"))
        .and(path(
            "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
        ))
        .and(query_param("alt", "sse"))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw(body.into_bytes(), "text/event-stream"),
        )
        .mount(&server)
        .await;

    let streamed = drive(
        &model(&server.uri()),
        &[request(vec![user("Hi")])],
        &RequestParams::text(Vec::new()),
    )
    .await;

    assert_eq!(streamed.response().parts, [text("hi")]);
    let requests = server.received_requests().await.unwrap();
    assert_eq!(
        requests[0]
            .headers
            .get("x-goog-api-key")
            .map(|value| value.to_str().unwrap()),
        Some(KEY)
    );
}

/// Streams `body` and returns the error it ended with, after the deltas it gave.
async fn fault(body: &str) -> (Vec<ResponseDelta>, golem::model::ModelError) {
    let server = serve(vec![Reply::sse_whole(body)]).await;
    let streamed = drive(
        &model(&server.uri()),
        &[request(vec![user("Hi")])],
        &RequestParams::text(Vec::new()),
    )
    .await;
    let Streamed { deltas, end } = streamed;
    (deltas, end.expect_err("a fault"))
}

#[tokio::test]
async fn faults_end_in_typed_errors() {
    // No finish reason before the body ended.
    let (deltas, error) = fault(&sse(&[chunk(
        json!([{"text": "Once upon"}]),
        json!({}),
        usage(3, 2, 0),
    )]))
    .await;
    assert_eq!(deltas, [text_delta(0, "Once upon")]);
    assert_eq!(error.stream_fault(), Some(StreamFault::EndedEarly));

    // An error in the stream.
    let (_, error) = fault(&format!(
        "{}data: {}\r\n\r\n",
        sse(&[chunk(json!([{"text": "Once"}]), json!({}), usage(3, 1, 0))]),
        json!({"error": {"code": 500, "message": "An internal error has occurred.", "status": "INTERNAL"}})
    ))
    .await;
    assert_eq!(
        error.to_string(),
        "the response stream from gemini failed (provider error): INTERNAL: An internal error has occurred."
    );

    // A chunk that is no JSON object, and parts that are no array.
    let (_, error) = fault("data: {\"candidates\": [\r\n\r\n").await;
    assert_eq!(error.stream_fault(), Some(StreamFault::Corrupt));
    let (_, error) = fault(&sse(&[json!({"candidates": [{"content": {"parts": {}}}]})])).await;
    assert_eq!(
        error.to_string(),
        "the response stream from gemini failed (corrupt chunk): `parts` is not an array"
    );
}

/// The dice game's two turns: a signed call, then a native answer split over chunks.
fn dice_turns() -> [(Vec<Value>, Value); 2] {
    let call = json!([{"functionCall": {"name": "roll_dice", "args": {"n": 2}}, "thoughtSignature": "c2lnLWNhbGw="}]);
    let first = (
        vec![chunk(
            call.clone(),
            json!({"finishReason": "STOP"}),
            usage(30, 9, 0),
        )],
        chunk(call, json!({"finishReason": "STOP"}), usage(30, 9, 0)),
    );
    let second = (
        vec![
            chunk(
                json!([{"text": "{\"winner\": \"Ann\","}]),
                json!({}),
                usage(50, 3, 0),
            ),
            chunk(
                json!([{"text": " \"score\": 6}"}]),
                json!({"finishReason": "STOP"}),
                usage(50, 7, 0),
            ),
        ],
        chunk(
            json!([{"text": "{\"winner\": \"Ann\", \"score\": 6}"}]),
            json!({"finishReason": "STOP"}),
            usage(50, 7, 0),
        ),
    );
    [first, second]
}

fn dice_agent(server: &SseServer) -> Agent<Game, Json<Verdict>> {
    // Native output beside tools: Gemini 3.
    let model = GeminiModel::builder("gemini-3-flash-preview")
        .api_key(KEY)
        .base_url(format!("{}/v1beta", server.uri()))
        .build()
        .expect("valid model");
    Agent::builder(model)
        .tool(roll_dice())
        .output_mode(OutputMode::Native)
        .build()
        .expect("as scripted")
}

#[tokio::test]
async fn an_agent_run_streams_with_the_history_and_usage_of_a_run_that_does_not() {
    let turns = dice_turns();
    validate(
        &[],
        &turns
            .iter()
            .flat_map(|(chunks, whole)| chunks.iter().chain([whole]).cloned())
            .collect::<Vec<_>>(),
    );
    let streaming = serve(
        turns
            .iter()
            .map(|(chunks, _)| Reply::sse(&sse(chunks), 9, Duration::from_millis(1)))
            .collect(),
    )
    .await;
    let whole = serve(turns.iter().map(|(_, whole)| Reply::json(whole)).collect()).await;

    let mut events = dice_agent(&streaming).run_stream("Roll two for Ann", Game);
    let mut deltas = Vec::new();
    let mut finished = None;
    while let Some(event) = events.next().await {
        match event.expect("as scripted") {
            RunEvent::Delta { turn, delta } => deltas.push((turn, delta)),
            RunEvent::Finished(result) => finished = Some(result),
            _ => {}
        }
    }
    let streamed = finished.expect("the run finishes");
    let plain = dice_agent(&whole)
        .run("Roll two for Ann", Game)
        .await
        .expect("as scripted");

    assert_eq!(
        deltas,
        [
            (1, call_start(0, "roll_dice", "")),
            (1, args_delta(0, r#"{"n":2}"#)),
            (
                1,
                ResponseDelta::ThinkingSignature {
                    part: 1,
                    signature: "c2lnLWNhbGw=".to_owned(),
                }
            ),
            (2, text_delta(0, "{\"winner\": \"Ann\",")),
            (2, text_delta(0, " \"score\": 6}")),
        ]
    );
    assert_eq!(
        (streamed.output.winner.as_str(), streamed.output.score),
        ("Ann", 6)
    );
    assert_eq!(streamed.messages, plain.messages);
    assert_eq!(streamed.usage, plain.usage);
    assert_eq!(streamed.usage.input_tokens, 80);
    assert_eq!(streamed.usage.output_tokens, 16);
    // The second request sent the streamed call, its id and its signature back as the
    // unstreamed run did.
    let (sent, plain_sent) = (streaming.bodies(), whole.bodies());
    validate(&sent, &[]);
    assert_eq!(sent, plain_sent);
    assert_eq!(
        sent[1]["contents"][1],
        json!({"role": "model", "parts": [
            {"functionCall": {"name": "roll_dice", "args": {"n": 2}, "id": "call_1_0"}, "thoughtSignature": "c2lnLWNhbGw="}
        ]})
    );
}

/// The start of a text response: one delta, "Hel".
fn head() -> String {
    sse(&[chunk(json!([{"text": "Hel"}]), json!({}), usage(3, 1, 0))])
}

/// A whole text response, "Hello".
fn full() -> String {
    head()
        + &sse(&[chunk(
            json!([{"text": "lo"}]),
            json!({"finishReason": "STOP"}),
            usage(3, 2, 0),
        )])
}

fn retrying() -> HttpSettings {
    HttpSettings::default().retry(
        RetryPolicy::default()
            .max_retries(2)
            .backoff(Duration::from_millis(1), Duration::from_millis(5)),
    )
}

async fn stream_from(server: &SseServer, http: HttpSettings) -> Streamed {
    let model = GeminiModel::builder("gemini-2.5-flash")
        .api_key(KEY)
        .base_url(format!("{}/v1beta", server.uri()))
        .http(http)
        .build()
        .expect("valid model");
    drive(
        &model,
        &[request(vec![user("Hi")])],
        &RequestParams::text(Vec::new()),
    )
    .await
}

#[tokio::test]
async fn a_cut_a_stall_and_bytes_that_are_not_utf8_are_typed_faults_after_the_deltas_that_arrived()
{
    let server = serve(vec![
        Reply::sse_open(&(head() + "data: {\"candid"), 9, Duration::ZERO).then(Piece::Cut),
    ])
    .await;
    let streamed = stream_from(&server, retrying()).await;
    assert_eq!(streamed.deltas, [text_delta(0, "Hel")]);
    assert_eq!(
        streamed.error().to_string(),
        "the response stream from gemini failed (disconnected): the connection broke before the response was complete"
    );
    assert_eq!(server.requests(), 1, "a started stream is never retried");

    let server = serve(vec![
        Reply::sse_open(&head(), usize::MAX, Duration::ZERO)
            .then(Piece::Pause(Duration::from_secs(30))),
    ])
    .await;
    let streamed = stream_from(
        &server,
        retrying().idle_timeout(Some(Duration::from_millis(200))),
    )
    .await;
    assert_eq!(streamed.deltas, [text_delta(0, "Hel")]);
    assert_eq!(streamed.error().stream_fault(), Some(StreamFault::Idle));
    assert!(streamed.error().is_timeout());

    let server = serve(vec![
        Reply::sse_open(&head(), usize::MAX, Duration::ZERO)
            .then(Piece::Chunk(b"data: \xff\xfe\r\n\r\n".to_vec()))
            .then(Piece::End),
    ])
    .await;
    let streamed = stream_from(&server, retrying()).await;
    assert_eq!(
        streamed.error().to_string(),
        "the response stream from gemini failed (corrupt chunk): the stream is not UTF-8"
    );
}

#[tokio::test]
async fn statuses_before_the_stream_are_retried_and_an_answer_that_is_no_stream_is_refused() {
    let server = serve(vec![
        Reply::whole(
            429,
            "application/json",
            r#"{"error":{"code":429,"message":"Resource has been exhausted.","status":"RESOURCE_EXHAUSTED"}}"#,
        ),
        Reply::whole(503, "text/plain", "upstream unavailable"),
        Reply::sse(&full(), 8, Duration::ZERO),
    ])
    .await;
    let streamed = stream_from(&server, retrying()).await;
    assert_eq!(streamed.text(0), "Hello");
    assert_eq!(streamed.response().parts, [text("Hello")]);
    assert_eq!(server.requests(), 3);

    let body = r#"{"candidates":[]}"#;
    let server = serve(vec![Reply::whole(200, "application/json", body)]).await;
    let streamed = stream_from(&server, retrying()).await;
    assert!(streamed.deltas.is_empty());
    assert_eq!(
        streamed.error().to_string(),
        format!(
            "the response stream from gemini failed (not an event stream): expected an event stream, got content type `application/json`: {body}"
        )
    );
    assert_eq!(server.requests(), 1, "not retried");
}

#[tokio::test]
async fn dropping_the_stream_closes_the_connection() {
    let server = serve(vec![
        Reply::sse_open(&head(), usize::MAX, Duration::ZERO).then(Piece::Hold),
    ])
    .await;
    let model = model(&server.uri());
    let (messages, params) = ([request(vec![user("Hi")])], RequestParams::text(Vec::new()));
    let mut stream = model.request_stream(&messages, &params);
    let first = tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .expect("a delta arrives");
    assert!(
        matches!(first, Some(Ok(golem::model::StreamEvent::Delta(_)))),
        "{first:?}"
    );
    drop(stream);
    assert!(server.wait_closed(Duration::from_secs(5)).await);
}
