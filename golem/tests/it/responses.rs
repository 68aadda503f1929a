//! OpenAI's Responses API against a real HTTP server on loopback: the input items golem
//! sends (calls and results paired by `call_id`, reasoning carried back), the response it
//! reads, streamed and not, and the errors.

#![cfg(feature = "openai")]

use crate::common;

use std::time::Duration;

use common::dice::*;
use common::http::{bodies, first_header, json_ok, serve};
use common::sse::{Reply, SseServer, serve as serve_sse};
use common::streams::*;
use common::*;
use futures_util::StreamExt;
use golem::model::fallback::FailureClass;
use golem::model::http::{HttpSettings, RetryPolicy};
use golem::model::openai::responses::OpenAiResponsesModel;
use golem::model::{
    FinishReason, Message, Model, ModelError, ModelResponse, ModelSettings, ProviderPart,
    RequestParams, ResponsePart, StreamFault, TextPart, ThinkingPart, ToolCallPart, Usage,
};
use golem::output::{Json, OutputMode};
use golem::{Agent, RunEvent, Stage};
use serde_json::{Value, json};
use wiremock::{MockServer, ResponseTemplate};

const KEY: &str = "sk-test-0123456789abcdef";
const ENCRYPTED: &str = "gAAAAABpLzK1x0Y3b2xlbS1yZWFzb25pbmctZW5jcnlwdGVkLWNvbnRlbnQtZml4dHVyZQ==";

fn fast_retries() -> HttpSettings {
    HttpSettings::default().retry(
        RetryPolicy::default()
            .max_retries(2)
            .backoff(Duration::from_millis(1), Duration::from_millis(5)),
    )
}

fn model_at(uri: &str) -> OpenAiResponsesModel {
    OpenAiResponsesModel::builder("o4-mini")
        .api_key(KEY)
        .base_url(format!("{uri}/v1"))
        .http(fast_retries())
        .build()
        .expect("valid model")
}

fn model(server: &MockServer) -> OpenAiResponsesModel {
    model_at(&server.uri())
}

/// A response as the Responses API sends it.
fn response(id: &str, output: Value, input: u64, output_tokens: u64) -> Value {
    json!({
        "id": id,
        "object": "response",
        "created_at": 1_764_720_000,
        "status": "completed",
        "error": null,
        "incomplete_details": null,
        "model": "o4-mini-2025-04-16",
        "output": output,
        "parallel_tool_calls": true,
        "store": false,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": input,
            "input_tokens_details": {"cache_write_tokens": 0, "cached_tokens": 0},
            "output_tokens": output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input + output_tokens
        }
    })
}

fn function_call(call_id: &str, name: &str, arguments: &str) -> Value {
    json!({
        "id": format!("fc_{call_id}"),
        "type": "function_call",
        "status": "completed",
        "call_id": call_id,
        "name": name,
        "arguments": arguments
    })
}

fn message(text: &str) -> Value {
    json!({
        "id": "msg_1",
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}]
    })
}

fn reasoning(id: &str, summary: &str) -> Value {
    json!({
        "id": id,
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": summary}],
        "encrypted_content": ENCRYPTED
    })
}

/// A call that came in the output item `id`, after a reasoning item.
fn item_call(tool: &str, args: &str, call_id: &str, id: &str) -> ResponsePart {
    ResponsePart::ToolCall(ToolCallPart::new(tool, args, call_id).with_id(id))
}

/// The dice tool as the Responses API takes it.
fn dice_tool() -> Value {
    json!({
        "type": "function",
        "name": "roll_dice",
        "description": "Roll `n` dice and return their total.",
        "parameters": {
            "type": "object",
            "properties": {"n": {"type": "integer", "description": "How many dice to roll."}},
            "required": ["n"],
            "additionalProperties": false
        },
        "strict": false
    })
}

#[tokio::test]
async fn a_tool_call_round_trip_carries_the_reasoning_and_pairs_calls_by_call_id() {
    let server = serve(
        "/v1/responses",
        vec![
            json_ok(
                response(
                    "resp_1",
                    json!([
                        reasoning("rs_1", "Two dice for Ann."),
                        function_call("call_ann", "roll_dice", r#"{"n":2}"#)
                    ]),
                    120,
                    80,
                )
                .tap(|body| {
                    body["usage"]["output_tokens_details"]["reasoning_tokens"] = json!(64);
                    body["usage"]["input_tokens_details"]["cached_tokens"] = json!(100);
                }),
            ),
            json_ok(response(
                "resp_2",
                json!([message("Ann rolled 6.")]),
                150,
                9,
            )),
        ],
    )
    .await;
    let agent = Agent::<Game, String>::builder(model(&server))
        .instructions("You referee dice games.")
        .tool(roll_dice())
        .build()
        .unwrap();

    let result = agent.run("Roll two dice for Ann", Game).await.unwrap();

    assert_eq!(result.output, "Ann rolled 6.");
    let thinking = ThinkingPart::new("Two dice for Ann.")
        .with_signature(ENCRYPTED)
        .with_provider("openai")
        .with_id("rs_1");
    assert_eq!(
        result.messages[1].as_response().unwrap().parts,
        [
            ResponsePart::Thinking(thinking),
            item_call("roll_dice", r#"{"n":2}"#, "call_ann", "fc_call_ann")
        ]
    );
    assert_eq!(
        result.usage,
        Usage {
            requests: 2,
            tool_calls: 1,
            cache_read_tokens: 100,
            reasoning_tokens: 64,
            ..Usage::request(270, 89)
        }
    );
    let sent = bodies(&server).await;
    assert_eq!(
        sent[0],
        json!({
            "model": "o4-mini",
            "instructions": "You referee dice games.",
            "input": [{"type": "message", "role": "user", "content": "Roll two dice for Ann"}],
            "tools": [dice_tool()],
            "store": false,
            "include": ["reasoning.encrypted_content"]
        })
    );
    assert_eq!(
        sent[1]["input"],
        json!([
            {"type": "message", "role": "user", "content": "Roll two dice for Ann"},
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "Two dice for Ann."}],
                "encrypted_content": ENCRYPTED
            },
            {
                "type": "function_call",
                "id": "fc_call_ann",
                "call_id": "call_ann",
                "name": "roll_dice",
                "arguments": "{\"n\":2}"
            },
            {"type": "function_call_output", "call_id": "call_ann", "output": "6"}
        ])
    );
    assert_eq!(
        first_header(&server, "authorization").await.as_deref(),
        Some(format!("Bearer {KEY}").as_str())
    );
}

/// `tap` for a JSON value: changes it in place and returns it.
trait Tap: Sized {
    fn tap(self, change: impl FnOnce(&mut Self)) -> Self;
}

impl Tap for Value {
    fn tap(mut self, change: impl FnOnce(&mut Self)) -> Self {
        change(&mut self);
        self
    }
}

#[tokio::test]
async fn rejected_calls_and_text_go_back_as_call_outputs_and_user_messages() {
    let server = serve(
        "/v1/responses",
        vec![
            json_ok(response(
                "resp_1",
                json!([function_call("call_1", "roll_dice", r#"{"n":-1}"#)]),
                80,
                17,
            )),
            json_ok(response(
                "resp_2",
                json!([function_call(
                    "call_2",
                    "final_result",
                    r#"{"winner":"Ann","score":6}"#
                )]),
                120,
                21,
            )),
        ],
    )
    .await;
    let agent = Agent::<Game, Json<Verdict>>::builder(model(&server))
        .tool(roll_dice())
        .tool_retries(1)
        .model_settings(ModelSettings::default().parallel_tool_calls(false))
        .build()
        .unwrap();

    let result = agent.run("Who won?", Game).await.unwrap();

    assert_eq!(result.output.winner, "Ann");
    let sent = bodies(&server).await;
    assert_eq!(sent[0]["tool_choice"], json!("required"));
    assert_eq!(sent[0]["parallel_tool_calls"], json!(false));
    assert_eq!(
        sent[0]["tools"][1]["name"],
        json!("final_result"),
        "the output tool follows the function tools"
    );
    assert_eq!(
        sent[1]["input"].as_array().unwrap()[1..],
        [
            json!({"type": "function_call", "call_id": "call_1", "name": "roll_dice", "arguments": "{\"n\":-1}"}),
            json!({
                "type": "function_call_output",
                "call_id": "call_1",
                "output": feedback("n must be positive, got -1")
            }),
        ]
    );
}

#[tokio::test]
async fn a_model_that_does_not_reason_is_not_asked_for_encrypted_reasoning() {
    let server = serve(
        "/v1/responses",
        vec![json_ok(response("resp_1", json!([message("ok")]), 4, 1))],
    )
    .await;
    let model = OpenAiResponsesModel::builder("gpt-4.1")
        .api_key(KEY)
        .base_url(format!("{}/v1", server.uri()))
        .build()
        .expect("valid model");
    let agent = Agent::<(), String>::builder(model).build().unwrap();

    agent.run("Hi.", ()).await.unwrap();

    let sent = bodies(&server).await;
    assert_eq!(
        sent[0],
        json!({
            "model": "gpt-4.1",
            "input": [{"type": "message", "role": "user", "content": "Hi."}],
            "store": false
        })
    );
}

#[tokio::test]
async fn extra_body_fields_are_sent_beside_golems_own() {
    let server = serve(
        "/v1/responses",
        vec![json_ok(response("resp_1", json!([message("ok")]), 4, 1))],
    )
    .await;
    let settings = ModelSettings::default()
        .max_tokens(64)
        .extra("service_tier", json!("flex"))
        .extra("metadata", json!({"run": "a \"quoted\" name"}));
    let agent = Agent::<(), String>::builder(model(&server))
        .instructions("Be brief.")
        .model_settings(settings)
        .build()
        .unwrap();

    agent.run("Hi.", ()).await.unwrap();

    let sent = bodies(&server).await;
    assert_eq!(
        sent[0],
        json!({
            "model": "o4-mini",
            "instructions": "Be brief.",
            "input": [{"type": "message", "role": "user", "content": "Hi."}],
            "max_output_tokens": 64,
            "store": false,
            "include": ["reasoning.encrypted_content"],
            "service_tier": "flex",
            "metadata": {"run": "a \"quoted\" name"}
        })
    );
}

#[tokio::test]
async fn native_output_asks_for_a_strict_json_schema_text_format() {
    let server = serve(
        "/v1/responses",
        vec![json_ok(response(
            "resp_1",
            json!([message(r#"{"winner":"Bob","score":9}"#)]),
            40,
            12,
        ))],
    )
    .await;
    // An extra `text` field is merged into golem's: one `text`, with both in it.
    let agent = Agent::<(), Json<Verdict>>::builder(model(&server))
        .output_mode(OutputMode::Native)
        .model_settings(ModelSettings::default().extra("text", json!({"verbosity": "low"})))
        .build()
        .unwrap();

    let result = agent.run("Who won?", ()).await.unwrap();

    assert_eq!(result.output.winner, "Bob");
    let sent = bodies(&server).await;
    assert_eq!(sent[0]["text"]["verbosity"], json!("low"));
    assert_eq!(sent[0]["text"]["format"]["type"], json!("json_schema"));
    assert_eq!(sent[0]["text"]["format"]["strict"], json!(true));
    assert_eq!(
        sent[0]["text"]["format"]["schema"]["required"],
        json!(["winner", "score"])
    );
    assert_eq!(sent[0].get("tools"), None);
    assert_eq!(sent[0].get("tool_choice"), None);
}

#[tokio::test]
async fn with_store_reasoning_goes_back_by_id_and_nothing_encrypted_is_asked_for() {
    let server = serve(
        "/v1/responses",
        vec![json_ok(response(
            "resp_2",
            json!([message("Done.")]),
            10,
            2,
        ))],
    )
    .await;
    let model = OpenAiResponsesModel::builder("o4-mini")
        .api_key(KEY)
        .base_url(format!("{}/v1", server.uri()))
        .store(true)
        .reasoning_effort("high")
        .reasoning_summary("auto")
        .organization("org-golem")
        .build()
        .unwrap();
    let history = [
        request(vec![user("Roll")]),
        Message::from(ModelResponse::new(vec![
            ResponsePart::Thinking(
                ThinkingPart::new("")
                    .with_signature(ENCRYPTED)
                    .with_provider("openai")
                    .with_id("rs_9"),
            ),
            // Another provider's reasoning, and reasoning without an id, stay out.
            ResponsePart::Thinking(ThinkingPart::new("hmm").with_provider("anthropic")),
            ResponsePart::Thinking(ThinkingPart::new("hmm").with_provider("openai")),
            ResponsePart::Text(TextPart::new("One die.").with_id("msg_9")),
            item_call("roll_dice", r#"{"n":1}"#, "call_9", "fc_9"),
        ])),
        request(vec![tool_return("roll_dice", "call_9", json!(3))]),
    ];

    model
        .request(&history, &RequestParams::text(Vec::new()))
        .await
        .unwrap();

    let sent = &bodies(&server).await[0];
    assert_eq!(sent["store"], json!(true));
    assert_eq!(sent.get("include"), None);
    assert_eq!(
        sent["reasoning"],
        json!({"effort": "high", "summary": "auto"})
    );
    assert_eq!(
        sent["input"],
        json!([
            {"type": "message", "role": "user", "content": "Roll"},
            {"type": "reasoning", "id": "rs_9", "summary": []},
            // The items that followed the reasoning go with their ids, which pair them.
            {
                "type": "message",
                "role": "assistant",
                "id": "msg_9",
                "status": "completed",
                "content": [{"type": "output_text", "text": "One die.", "annotations": []}]
            },
            {
                "type": "function_call",
                "id": "fc_9",
                "call_id": "call_9",
                "name": "roll_dice",
                "arguments": "{\"n\":1}"
            },
            {"type": "function_call_output", "call_id": "call_9", "output": "3"}
        ])
    );
    assert_eq!(
        first_header(&server, "openai-organization")
            .await
            .as_deref(),
        Some("org-golem")
    );
}

#[tokio::test]
async fn without_store_reasoning_that_was_not_encrypted_stays_out() {
    let server = serve(
        "/v1/responses",
        vec![json_ok(response(
            "resp_2",
            json!([message("Done.")]),
            10,
            2,
        ))],
    )
    .await;
    let history = [
        request(vec![user("Roll")]),
        Message::from(ModelResponse::new(vec![
            ResponsePart::Thinking(
                ThinkingPart::new("plain")
                    .with_provider("openai")
                    .with_id("rs_9"),
            ),
            web_search("ws_9"),
            ResponsePart::Text(TextPart::new("Rolling.").with_id("msg_9")),
        ])),
        request(vec![retry("Answer with a number.")]),
        Message::from(ModelResponse::new(vec![
            web_search("ws_10"),
            ResponsePart::text("Seven."),
        ])),
        request(vec![retry("Answer with a number.")]),
    ];

    model(&server)
        .request(&history, &RequestParams::text(Vec::new()))
        .await
        .unwrap();

    assert_eq!(
        bodies(&server).await[0]["input"],
        json!([
            {"type": "message", "role": "user", "content": "Roll"},
            // Without its reasoning, the text goes without the id that would pair them, and
            // the built-in tool's item, which is its id, not at all.
            {"type": "message", "role": "assistant", "content": "Rolling."},
            {"type": "message", "role": "user", "content": feedback("Answer with a number.")},
            // A built-in tool's item of a response without reasoning goes as it came.
            {"type": "web_search_call", "id": "ws_10", "status": "completed",
             "action": {"type": "search", "query": "dice"}},
            {"type": "message", "role": "assistant", "content": "Seven."},
            {"type": "message", "role": "user", "content": feedback("Answer with a number.")}
        ])
    );
}

/// A `web_search_call` item as OpenAI sends it, kept as a provider part.
fn web_search(id: &str) -> ResponsePart {
    ResponsePart::Provider(ProviderPart::new(
        "openai",
        json!({"type": "web_search_call", "id": id, "status": "completed",
               "action": {"type": "search", "query": "dice"}}),
    ))
}

#[tokio::test]
async fn settings_the_api_has_no_field_for_are_refused_before_sending() {
    let server = serve("/v1/responses", Vec::new()).await;
    for (settings, message) in [
        (
            ModelSettings::default().stop_sequences(["END"]),
            "the OpenAI Responses API takes no stop sequences: unset ModelSettings::stop_sequences",
        ),
        (
            ModelSettings::default().seed(7),
            "the OpenAI Responses API takes no seed: unset ModelSettings::seed",
        ),
    ] {
        let mut params = RequestParams::text(Vec::new());
        params.settings = settings;
        let error = model(&server)
            .request(&[request(vec![user("Hi")])], &params)
            .await
            .unwrap_err();
        assert_eq!(error.to_string(), message);
    }
    assert_eq!(server.received_requests().await.unwrap().len(), 0);

    // OpenAI's own minimum output; another server of the API may take less.
    let mut params = RequestParams::text(Vec::new());
    params.settings = ModelSettings::default().max_tokens(10);
    let openai = OpenAiResponsesModel::builder("o4-mini")
        .api_key(KEY)
        .build()
        .expect("valid model");
    let error = openai
        .request(&[request(vec![user("Hi")])], &params)
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the OpenAI Responses API takes a max_output_tokens of 16 or more: raise ModelSettings::max_tokens"
    );
}

#[tokio::test]
async fn a_model_that_does_not_reason_gets_no_reasoning_items_and_includes_join() {
    // After a fallback from o4-mini to gpt-4.1, say: OpenAI refuses reasoning items for a
    // model that does not reason.
    let server = serve(
        "/v1/responses",
        vec![
            json_ok(response("resp_2", json!([message("Done.")]), 10, 2)),
            json_ok(response("resp_3", json!([message("Done.")]), 10, 2)),
        ],
    )
    .await;
    let history = [
        request(vec![user("Roll")]),
        Message::from(ModelResponse::new(vec![
            ResponsePart::Thinking(
                ThinkingPart::new("One die.")
                    .with_signature(ENCRYPTED)
                    .with_provider("openai")
                    .with_id("rs_9"),
            ),
            item_call("roll_dice", r#"{"n":1}"#, "call_9", "fc_9"),
        ])),
        request(vec![tool_return("roll_dice", "call_9", json!(3))]),
    ];
    let gpt_4_1 = OpenAiResponsesModel::builder("gpt-4.1")
        .api_key(KEY)
        .base_url(format!("{}/v1", server.uri()))
        .settings(
            ModelSettings::default().extra("include", json!(["message.output_text.logprobs"])),
        )
        .build()
        .expect("valid model");
    let mut params = RequestParams::text(Vec::new());

    gpt_4_1.request(&history, &params).await.unwrap();
    // To a model that reasons, the user's include joins golem's.
    params.settings =
        ModelSettings::default().extra("include", json!(["message.output_text.logprobs"]));
    model(&server).request(&history, &params).await.unwrap();

    let sent = bodies(&server).await;
    assert_eq!(
        sent[0]["input"],
        json!([
            {"type": "message", "role": "user", "content": "Roll"},
            {"type": "function_call", "call_id": "call_9", "name": "roll_dice", "arguments": "{\"n\":1}"},
            {"type": "function_call_output", "call_id": "call_9", "output": "3"}
        ])
    );
    assert_eq!(sent[0]["include"], json!(["message.output_text.logprobs"]));
    assert_eq!(sent[1]["input"][1]["type"], json!("reasoning"));
    assert_eq!(sent[1]["input"][2]["id"], json!("fc_9"));
    assert_eq!(
        sent[1]["include"],
        json!([
            "reasoning.encrypted_content",
            "message.output_text.logprobs"
        ])
    );
}

#[tokio::test]
async fn an_incomplete_response_at_the_output_limit_ends_the_run_as_truncated() {
    let server = serve(
        "/v1/responses",
        vec![json_ok(json_fixture("responses/incomplete.json"))],
    )
    .await;
    let agent = Agent::<(), String>::builder(model(&server))
        .model_settings(ModelSettings::default().max_tokens(16))
        .build()
        .unwrap();

    let error = agent.run("Tell a story", ()).await.unwrap_err();

    assert_eq!(error.stage(), Stage::Model);
    assert!(matches!(error.model_error(), Some(ModelError::Truncated)));
    // The cut-off answer is kept; the request after it says it was not used.
    assert_eq!(error.messages().len(), 3);
    let cut = error.messages()[1].as_response().unwrap();
    assert_eq!(cut.finish_reason, Some(FinishReason::Length));
    assert_eq!(cut.parts, [text("Once upon a time, two players")]);
    assert_eq!(bodies(&server).await[0]["max_output_tokens"], json!(16));
}

#[tokio::test]
async fn errors_are_typed_with_the_providers_message() {
    let server = serve(
        "/v1/responses",
        vec![
            ResponseTemplate::new(400).set_body_json(json!({"error": {
                "message": "Invalid type for 'input[0].content': expected one of a string or array.",
                "type": "invalid_request_error",
                "param": "input[0].content",
                "code": "invalid_type"
            }})),
            json_ok(json!({
                "id": "resp_f",
                "object": "response",
                "status": "failed",
                "error": {"code": "server_error", "message": "The model failed to respond."},
                "output": []
            })),
        ],
    )
    .await;
    let model = model(&server);
    let params = RequestParams::text(Vec::new());
    let messages = [request(vec![user("Hi")])];

    let bad_request = model.request(&messages, &params).await.unwrap_err();
    let failed = model.request(&messages, &params).await.unwrap_err();

    assert!(matches!(
        bad_request,
        ModelError::Http {
            status: 400,
            attempts: 1,
            ..
        }
    ));
    assert_eq!(
        bad_request.to_string(),
        "openai answered HTTP 400 after 1 attempt(s): Invalid type for 'input[0].content': expected one of a string or array."
    );
    assert!(matches!(failed, ModelError::InvalidResponse { .. }));
    assert_eq!(
        failed.to_string(),
        "openai sent a response golem cannot read: the response failed: server_error: The model failed to respond."
    );
    // Classed by its code, as the same failure streamed is: a fallback moves on.
    assert_eq!(FailureClass::of(&failed), FailureClass::ServerError);
}

// Streaming.

/// The fixture `name` streamed (`split` bytes at a time) and answered whole, through the
/// same model: the two responses, and the deltas.
async fn streamed_and_whole(name: &str, split: usize) -> (Streamed, ModelResponse) {
    let sse = fixture(&format!("responses/{name}.sse"));
    let whole = json_fixture(&format!("responses/{name}.json"));
    let server = serve_sse(vec![
        Reply::sse(&sse, split, Duration::from_millis(1)),
        Reply::json(&whole),
    ])
    .await;
    let model = model_at(&server.uri());
    let messages = [request(vec![user("Hi")])];
    let params = RequestParams::text(Vec::new());
    let streamed = drive(&model, &messages, &params).await;
    let whole = model
        .request(&messages, &params)
        .await
        .expect("as scripted");
    let bodies = server.bodies();
    assert_eq!(bodies[0]["stream"], json!(true));
    assert_eq!(bodies[1].get("stream"), None);
    (streamed, whole)
}

#[tokio::test]
async fn streamed_text_adds_up_to_the_non_streamed_response() {
    let (streamed, whole) = streamed_and_whole("text", 7).await;
    assert_eq!(
        streamed.deltas,
        [
            text_delta(0, "The sky"),
            text_delta(0, " is \"blue\""),
            text_delta(0, " — mostly"),
            text_delta(0, ",\nby day."),
        ]
    );
    let response = streamed.response();
    assert_eq!(response, whole);
    assert_eq!(
        response.parts,
        [text("The sky is \"blue\" — mostly,\nby day.")]
    );
    assert_eq!(response.finish_reason, Some(FinishReason::Stop));
    assert_eq!(
        response.usage,
        golem::usage::RequestUsage {
            cache_read_tokens: 3,
            ..golem::usage::RequestUsage::new(19, 10)
        }
    );
    assert_eq!(
        response.provider_response_id.as_deref(),
        Some("resp_0a1b2c3d4e5f60718293a4b5c6d7e8f9")
    );
    assert_eq!(response.model_name.as_deref(), Some("o4-mini-2025-04-16"));
}

#[tokio::test]
async fn streamed_reasoning_and_parallel_calls_add_up_to_the_non_streamed_response() {
    let (streamed, whole) = streamed_and_whole("tools", 16).await;
    assert_eq!(
        streamed.deltas,
        [
            thinking_delta(0, "**Rolling"),
            thinking_delta(0, " for both**\n\nTwo players,"),
            thinking_delta(0, "\n\n"),
            thinking_delta(0, " one roll"),
            thinking_delta(0, " each."),
            call_start(1, "roll_dice", "call_ann"),
            args_delta(1, r#"{"n"#),
            args_delta(1, r#"":2}"#),
            call_start(2, "roll_dice", "call_bob"),
            args_delta(2, r#"{"n":"#),
            args_delta(2, "3}"),
        ]
    );
    let response = streamed.response();
    assert_eq!(response, whole);
    assert_eq!(
        response.parts,
        [
            ResponsePart::Thinking(
                ThinkingPart::new("**Rolling for both**\n\nTwo players,\n\n one roll each.")
                    .with_signature(ENCRYPTED)
                    .with_provider("openai")
                    .with_id("rs_0a1b2c3d4e5f6071829300bb")
            ),
            item_call(
                "roll_dice",
                r#"{"n":2}"#,
                "call_ann",
                "fc_0a1b2c3d4e5f6071829300cc"
            ),
            item_call(
                "roll_dice",
                r#"{"n":3}"#,
                "call_bob",
                "fc_0a1b2c3d4e5f6071829300dd"
            ),
        ]
    );
    assert_eq!(response.finish_reason, Some(FinishReason::ToolCall));
    assert_eq!(
        response.usage,
        golem::usage::RequestUsage {
            cache_read_tokens: 128,
            cache_write_tokens: 32,
            reasoning_tokens: 64,
            ..golem::usage::RequestUsage::new(182, 96)
        }
    );
}

#[tokio::test]
async fn a_streamed_incomplete_response_is_cut_off_like_the_non_streamed_one() {
    let (streamed, whole) = streamed_and_whole("incomplete", 64).await;
    let response = streamed.response();
    assert_eq!(response, whole);
    assert_eq!(response.finish_reason, Some(FinishReason::Length));
}

#[tokio::test]
async fn an_agent_run_streams_with_the_history_and_usage_of_a_run_that_does_not() {
    let tools = fixture("responses/tools.sse");
    let answer = json!({
        "type": "response.completed",
        "response": response("resp_3", json!([message("Ann 6, Bob 9.")]), 300, 8)
    });
    let answer_sse = format!("event: response.completed\ndata: {answer}\n\n");
    let streaming = serve_sse(vec![
        Reply::sse(&tools, 32, Duration::ZERO),
        Reply::sse(&answer_sse, 32, Duration::ZERO),
    ])
    .await;
    let whole = serve_sse(vec![
        Reply::json(&json_fixture("responses/tools.json")),
        Reply::json(&answer["response"]),
    ])
    .await;
    let agent = |server: &SseServer| {
        Agent::<Game, String>::builder(model_at(&server.uri()))
            .tool(roll_dice())
            .build()
            .unwrap()
    };

    let mut events = agent(&streaming).run_stream("Roll for both", Game);
    let mut finished = None;
    let mut deltas = 0;
    while let Some(event) = events.next().await {
        match event.unwrap() {
            RunEvent::Delta { .. } => deltas += 1,
            RunEvent::Finished(result) => finished = Some(result),
            _ => {}
        }
    }
    let streamed = finished.expect("a result");
    let unstreamed = agent(&whole).run("Roll for both", Game).await.unwrap();

    assert!(deltas > 0);
    assert_eq!(streamed.output, "Ann 6, Bob 9.");
    assert_eq!(streamed.messages, unstreamed.messages);
    assert_eq!(streamed.usage, unstreamed.usage);
    // The second request of both carries the reasoning back before the calls it led to.
    let (sent_streamed, sent_whole) = (streaming.bodies(), whole.bodies());
    assert_eq!(sent_streamed[1]["input"], sent_whole[1]["input"]);
    assert_eq!(sent_whole[1]["input"][1]["type"], json!("reasoning"));
    assert_eq!(
        sent_whole[1]["input"][1]["encrypted_content"],
        json!(ENCRYPTED)
    );
    assert_eq!(sent_whole[1]["input"][4]["call_id"], json!("call_ann"));
    assert_eq!(sent_whole[1]["input"][5]["call_id"], json!("call_bob"));
}

/// The events of a stream that begins as `text.sse` does, then `tail`.
fn begun_then(tail: &str) -> String {
    let sse = fixture("responses/text.sse");
    let cut = sse
        .find("event: response.output_text.delta")
        .expect("the fixture streams text");
    format!("{}{tail}", &sse[..cut])
}

#[tokio::test]
async fn stream_faults_are_typed() {
    let cases = [
        (
            begun_then(
                "event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"The server had an error.\",\"param\":null,\"sequence_number\":3}\n\n",
            ),
            StreamFault::Provider,
            "the response stream from openai failed (provider error): server_error: The server had an error.",
        ),
        // The code and message in an `error` object, as servers also send them.
        (
            begun_then(
                "event: error\ndata: {\"type\":\"error\",\"sequence_number\":3,\"error\":{\"type\":\"too_many_requests\",\"code\":\"too_many_requests\",\"message\":\"Too Many Requests\",\"param\":null}}\n\n",
            ),
            StreamFault::Provider,
            "the response stream from openai failed (provider error): too_many_requests: Too Many Requests",
        ),
        // An output index far past the items seen: refused, not made room for.
        (
            begun_then(
                "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"output_index\":4000000000000,\"content_index\":0,\"delta\":\"The\"}\n\n",
            ),
            StreamFault::Corrupt,
            "the response stream from openai failed (corrupt chunk): an event names output item 4000000000000, more than 64 past the items seen",
        ),
        (
            begun_then(
                "event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"id\":\"resp_f\",\"status\":\"failed\",\"error\":{\"code\":\"rate_limit_exceeded\",\"message\":\"Slow down.\"},\"output\":[]},\"sequence_number\":3}\n\n",
            ),
            StreamFault::Provider,
            "the response stream from openai failed (provider error): the response failed: rate_limit_exceeded: Slow down.",
        ),
        (
            begun_then(
                "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"content_index\":0,\"delta\":\"The\"}\n\n",
            ),
            StreamFault::EndedEarly,
            "the response stream from openai failed (ended early): the stream ended before the response was complete",
        ),
        (
            begun_then("event: response.output_text.delta\ndata: {\"type\":\n\n"),
            StreamFault::Corrupt,
            "the response stream from openai failed (corrupt chunk): an event cannot be read: EOF while parsing a value at line 1 column 8",
        ),
    ];
    for (sse, fault, message) in cases {
        let server = serve_sse(vec![Reply::sse(&sse, 64, Duration::ZERO)]).await;
        let streamed = drive(
            &model_at(&server.uri()),
            &[request(vec![user("Hi")])],
            &RequestParams::text(Vec::new()),
        )
        .await;
        assert_eq!(streamed.error().stream_fault(), Some(fault), "{message}");
        assert_eq!(streamed.error().to_string(), message);
    }
}

/// The response `events` stream into and the non-streamed `done`, from a server that sends
/// each.
async fn streamed_against_whole(events: &[Value], done: &Value) -> (Streamed, ModelResponse) {
    let sse: String = events
        .iter()
        .map(|event| format!("data: {event}\n\n"))
        .collect();
    let server = serve_sse(vec![
        Reply::sse(&sse, 50, Duration::ZERO),
        Reply::json(done),
    ])
    .await;
    let model = model_at(&server.uri());
    let messages = [request(vec![user("Hi")])];
    let params = RequestParams::text(Vec::new());
    let streamed = drive(&model, &messages, &params).await;
    let whole = model
        .request(&messages, &params)
        .await
        .expect("the whole response");
    (streamed, whole)
}

#[tokio::test]
async fn a_call_sent_whole_when_done_streams_its_arguments_once() {
    let item = function_call("call_1", "roll_dice", r#"{"n":4}"#);
    let done = response("resp_w", json!([item.clone()]), 10, 5);
    let sse = [
        json!({"type": "response.created", "response": {"id": "resp_w", "status": "in_progress", "output": []}}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        json!({"type": "response.completed", "response": done.clone().tap(|r| r["output"] = json!([]))}),
    ];
    let (streamed, whole) = streamed_against_whole(&sse, &done).await;

    assert_eq!(
        streamed.deltas,
        [
            call_start(0, "roll_dice", "call_1"),
            args_delta(0, r#"{"n":4}"#)
        ]
    );
    assert_eq!(streamed.response(), whole);
}

#[tokio::test]
async fn events_that_name_their_item_by_id_alone_add_up_as_indexed_ones_do() {
    // llama.cpp's server sends no `output_index`: its events name the item by id.
    let text = message("Rolling.");
    let call = function_call("call_1", "roll_dice", r#"{"n":4}"#);
    let done = response("resp_i", json!([text.clone(), call.clone()]), 10, 5);
    let sse = [
        json!({"type": "response.created", "response": {"id": "resp_i", "status": "in_progress"}}),
        json!({"type": "response.output_item.added", "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []}}),
        json!({"type": "response.output_text.delta", "item_id": "msg_1", "delta": "Roll"}),
        json!({"type": "response.output_text.delta", "item_id": "msg_1", "delta": "ing."}),
        json!({"type": "response.output_item.done", "item": text}),
        json!({"type": "response.output_item.added", "item": {"id": "fc_call_1", "type": "function_call", "call_id": "call_1", "name": "roll_dice", "arguments": ""}}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_call_1", "delta": "{\"n\":"}),
        json!({"type": "response.function_call_arguments.delta", "item_id": "fc_call_1", "delta": "4}"}),
        json!({"type": "response.output_item.done", "item": call}),
        json!({"type": "response.completed", "response": done}),
    ];
    let (streamed, whole) = streamed_against_whole(&sse, &done).await;

    assert_eq!(
        streamed.deltas,
        [
            text_delta(0, "Roll"),
            text_delta(0, "ing."),
            call_start(1, "roll_dice", "call_1"),
            args_delta(1, r#"{"n":"#),
            args_delta(1, "4}"),
        ]
    );
    assert_eq!(streamed.response(), whole);
}

#[tokio::test]
async fn a_refusal_without_text_ends_the_run_as_filtered() {
    let refusal = json!({
        "id": "msg_r",
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "refusal", "refusal": "I can't help with that."}]
    });
    let server = serve(
        "/v1/responses",
        vec![json_ok(response("resp_r", json!([refusal]), 12, 7))],
    )
    .await;
    let agent = Agent::<(), String>::builder(model(&server))
        .build()
        .unwrap();

    let error = agent.run("Something forbidden", ()).await.unwrap_err();

    // What the model said in refusing is kept, for the user to see.
    assert_refused(&error, "I can't help with that.");
    assert_eq!(error.usage().requests, 1);
}
