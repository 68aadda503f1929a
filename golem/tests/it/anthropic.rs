//! The Anthropic Messages provider against a real HTTP server on loopback.

#![cfg(feature = "anthropic")]

use crate::common;

use std::error::Error as _;
use std::time::Duration;

use common::dice::*;
use common::http::{bodies, first_header, json_ok, serve};
use common::*;
use golem::model::anthropic::AnthropicModel;
use golem::model::http::{HttpSettings, RetryPolicy};
use golem::model::{ModelError, ModelSettings, ProviderError};
use golem::output::{Json, OutputMode};
use golem::{Agent, ModelRetry, Stage};
use serde_json::{Value, json};
use wiremock::{MockServer, ResponseTemplate};

const KEY: &str = "sk-ant-api03-test-0123456789";

fn model(server: &MockServer) -> AnthropicModel {
    AnthropicModel::builder("claude-sonnet-4-5")
        .api_key(KEY)
        .base_url(format!("{}/v1", server.uri()))
        .settings(ModelSettings::default().max_tokens(1024))
        .http(
            HttpSettings::default().retry(
                RetryPolicy::default()
                    .max_retries(2)
                    .backoff(Duration::from_millis(1), Duration::from_millis(5)),
            ),
        )
        .build()
        .expect("valid model")
}

/// A model with extended thinking on, a budget of 10,000 tokens in 16,000.
fn thinking_model(server: &MockServer) -> AnthropicModel {
    AnthropicModel::builder("claude-sonnet-4-5")
        .api_key(KEY)
        .base_url(format!("{}/v1", server.uri()))
        .settings(ModelSettings::default().max_tokens(16000).extra(
            "thinking",
            json!({"type": "enabled", "budget_tokens": 10000}),
        ))
        .build()
        .expect("valid model")
}

/// A server that answers one request with the text `text`, in the message `id`.
async fn answering(id: &str, text: &str) -> MockServer {
    serve(
        "/v1/messages",
        vec![json_ok(message(
            id,
            json!([{"type": "text", "text": text}]),
            "end_turn",
            1,
            1,
        ))],
    )
    .await
}

/// A message as Anthropic sends it.
fn message(id: &str, content: Value, stop_reason: &str, input: u64, output: u64) -> Value {
    json!({
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": null,
        "usage": {
            "input_tokens": input,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": output,
            "service_tier": "standard"
        }
    })
}

fn tool_use(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "tool_use", "id": id, "name": name, "input": input})
}

#[tokio::test]
async fn a_full_self_correction_exchange_sends_exactly_the_documented_json() {
    let server = serve(
        "/v1/messages",
        vec![
            json_ok(message(
                "msg_01",
                json!([{"type": "text", "text": "Rolling."}, tool_use("toolu_01", "roll_dice", json!({"n": -1}))]),
                "tool_use",
                400,
                50,
            )),
            json_ok(message("msg_02", json!([tool_use("toolu_02", "roll_dice", json!({"n": 2}))]), "tool_use", 480, 40)),
            json_ok(message(
                "msg_03",
                json!([tool_use("toolu_03", "final_result", json!({"winner": "Ann", "score": -6}))]),
                "tool_use",
                520,
                45,
            )),
            json_ok(message(
                "msg_04",
                json!([tool_use("toolu_04", "final_result", json!({"winner": "Ann", "score": 6}))]),
                "tool_use",
                600,
                45,
            )),
        ],
    )
    .await;
    let agent = Agent::<Game, Json<Verdict>>::builder(model(&server))
        .instructions("You referee dice games.")
        .tool(roll_dice())
        .tool_retries(1)
        .output_retries(1)
        .build()
        .unwrap();

    let result = agent.run("Roll two dice for Ann.", Game).await.unwrap();

    assert_eq!(
        (result.output.winner.as_str(), result.output.score),
        ("Ann", 6)
    );
    let sent = bodies(&server).await;
    assert_eq!(sent.len(), 4);
    let tools = json!([
        {
            "name": "roll_dice",
            "description": "Roll `n` dice and return their total.",
            "input_schema": {
                "type": "object",
                "properties": {"n": {"type": "integer", "description": "How many dice to roll."}},
                "required": ["n"],
                "additionalProperties": false
            }
        },
        {
            "name": "final_result",
            "description": "A verdict on the game.",
            "input_schema": {
                "type": "object",
                "description": "A verdict on the game.",
                "properties": {"winner": {"type": "string"}, "score": {"type": "integer", "minimum": 0}},
                "required": ["winner", "score"],
                "additionalProperties": false
            }
        }
    ]);
    assert_eq!(
        sent[3],
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 1024,
            "system": "You referee dice games.",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Roll two dice for Ann."}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Rolling."},
                    {"type": "tool_use", "id": "toolu_01", "name": "roll_dice", "input": {"n": -1}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_01", "content": feedback("n must be positive, got -1"), "is_error": true}
                ]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_02", "name": "roll_dice", "input": {"n": 2}}
                ]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_02", "content": "6"}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "toolu_03", "name": "final_result", "input": {"winner": "Ann", "score": -6}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_03", "content": feedback(
                        "invalid output: at `score`: invalid value: integer `-6`, expected u32 at line 1 column 26"
                    ), "is_error": true}
                ]}
            ],
            "tools": tools,
            "tool_choice": {"type": "any"}
        })
    );
    assert_eq!(
        first_header(&server, "x-api-key").await.as_deref(),
        Some(KEY)
    );
    assert_eq!(
        first_header(&server, "anthropic-version").await.as_deref(),
        Some("2023-06-01")
    );
    assert_eq!(first_header(&server, "authorization").await, None);
    let first = result.messages[1].as_response().unwrap();
    assert_eq!(first.provider_response_id.as_deref(), Some("msg_01"));
    assert_eq!(
        first.model_name.as_deref(),
        Some("claude-sonnet-4-5-20250929")
    );
    assert_eq!(result.usage.requests, 4);
    assert_eq!(result.usage.input_tokens, 400 + 480 + 520 + 600);
    assert_eq!(result.usage.output_tokens, 50 + 40 + 45 + 45);
}

#[tokio::test]
async fn text_feedback_is_a_user_text_block_and_cache_tokens_count_as_input() {
    let mut cached = message(
        "msg_02",
        json!([{"type": "text", "text": "yes"}]),
        "end_turn",
        20,
        1,
    );
    cached["usage"]["cache_read_input_tokens"] = json!(300);
    cached["usage"]["cache_creation_input_tokens"] = json!(12);
    let server = serve(
        "/v1/messages",
        vec![
            json_ok(message(
                "msg_01",
                json!([{"type": "text", "text": "maybe"}]),
                "end_turn",
                10,
                1,
            )),
            json_ok(cached),
        ],
    )
    .await;
    let agent = Agent::<(), String>::builder(model(&server))
        .output_retries(1)
        .output_validator(|_ctx, text: String| async move {
            if text == "maybe" {
                return Err(ModelRetry::new("answer yes or no"));
            }
            Ok(text)
        })
        .build()
        .unwrap();

    let result = agent.run("Is water wet?", ()).await.unwrap();

    assert_eq!(result.output, "yes");
    assert_eq!(
        bodies(&server).await[1],
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 1024,
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Is water wet?"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "maybe"}]},
                {"role": "user", "content": [{"type": "text", "text": feedback("answer yes or no")}]}
            ]
        })
    );
    assert_eq!(result.usage.input_tokens, 10 + 20 + 300 + 12);
    assert_eq!(result.usage.cache_read_tokens, 300);
    assert_eq!(result.usage.cache_write_tokens, 12);
}

#[tokio::test]
async fn a_prompt_after_tool_results_joins_the_same_user_message() {
    let server = answering("msg_02", "ok").await;
    let agent = Agent::<Game, String>::builder(model(&server))
        .tool(roll_dice())
        .build()
        .unwrap();
    let history = vec![
        request(vec![user("Roll")]),
        response(vec![call("roll_dice", r#"{"n":1}"#, "toolu_1")], 1, 1),
        request(vec![tool_return("roll_dice", "toolu_1", json!(3))]),
    ];

    agent
        .run_with_history(history, "Again?", Game)
        .await
        .unwrap();

    assert_eq!(
        bodies(&server).await[0]["messages"][2],
        json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "3"},
            {"type": "text", "text": "Again?"}
        ]})
    );
}

#[tokio::test]
async fn overloaded_is_retried_and_auth_errors_name_the_env_var() {
    let server = serve(
        "/v1/messages",
        vec![
            ResponseTemplate::new(529).set_body_json(
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
            ),
            json_ok(message("msg_01", json!([{"type": "text", "text": "hi"}]), "end_turn", 1, 1)),
        ],
    )
    .await;
    let agent = Agent::<(), String>::builder(model(&server))
        .build()
        .unwrap();
    assert_eq!(agent.run("Hi", ()).await.unwrap().output, "hi");
    assert_eq!(server.received_requests().await.unwrap().len(), 2);

    let server = serve(
        "/v1/messages",
        vec![ResponseTemplate::new(401).set_body_json(
            json!({"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}),
        )],
    )
    .await;
    let agent = Agent::<(), String>::builder(model(&server))
        .build()
        .unwrap();
    let error = agent.run("Hi", ()).await.unwrap_err();
    assert_eq!(error.stage(), Stage::Model);
    assert_eq!(
        error.source().unwrap().to_string(),
        "anthropic refused the credentials (HTTP 401): invalid x-api-key; check ANTHROPIC_API_KEY"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
    assert!(!format!("{error:?} {:?}", model(&server)).contains(KEY));
}

#[tokio::test]
async fn max_tokens_and_context_window_stops_are_truncation_errors() {
    for stop_reason in ["max_tokens", "model_context_window_exceeded"] {
        let server = serve(
            "/v1/messages",
            vec![json_ok(message(
                "msg_01",
                json!([{"type": "text", "text": "Once"}]),
                stop_reason,
                5,
                1024,
            ))],
        )
        .await;
        let agent = Agent::<(), String>::builder(model(&server))
            .build()
            .unwrap();

        let error = agent.run("Tell a story", ()).await.unwrap_err();

        assert!(
            matches!(error.model_error(), Some(ModelError::Truncated)),
            "{stop_reason}"
        );
        // The cut-off answer is kept; the request after it says it was not used.
        assert_eq!(error.messages().len(), 3);
    }
}

#[tokio::test]
async fn a_truncated_structured_answer_says_what_to_raise() {
    let server = serve(
        "/v1/messages",
        vec![json_ok(message(
            "msg_01",
            json!([tool_use("toolu_1", "final_result", json!({"winner": "Bo"}))]),
            "max_tokens",
            5,
            1024,
        ))],
    )
    .await;
    let agent = Agent::<(), Json<Verdict>>::builder(model(&server))
        .output_retries(2)
        .build()
        .unwrap();

    let error = agent.run("Who won?", ()).await.unwrap_err();

    assert!(matches!(error.model_error(), Some(ModelError::Truncated)));
    assert!(
        error
            .source()
            .unwrap()
            .to_string()
            .contains("raise `max_tokens`"),
        "{error}"
    );
}

#[tokio::test]
async fn native_output_sends_the_schema_as_output_config_and_reads_the_json_text() {
    let server = serve(
        "/v1/messages",
        vec![
            json_ok(message(
                "msg_01",
                json!([{"type": "text", "text": "{\"winner\": \"Ann\", \"score\": -6}"}]),
                "end_turn",
                30,
                9,
            )),
            json_ok(message(
                "msg_02",
                json!([{"type": "text", "text": "{\"winner\": \"Ann\", \"score\": 6}"}]),
                "end_turn",
                60,
                9,
            )),
        ],
    )
    .await;
    let agent = Agent::<(), Json<Verdict>>::builder(model(&server))
        .instructions("You referee dice games.")
        .output_mode(OutputMode::Native)
        .output_retries(1)
        .build()
        .unwrap();

    let result = agent.run("Who won?", ()).await.unwrap();

    assert_eq!(
        (result.output.winner.as_str(), result.output.score),
        ("Ann", 6)
    );
    let sent = bodies(&server).await;
    let output_config = json!({
        "format": {
            "type": "json_schema",
            "schema": {
                "type": "object",
                "description": "A verdict on the game.",
                "properties": {
                    "winner": {"type": "string"},
                    "score": {"type": "integer", "description": "{minimum: 0}"}
                },
                "required": ["winner", "score"],
                "additionalProperties": false
            }
        }
    });
    assert_eq!(
        sent[0],
        json!({
            "model": "claude-sonnet-4-5",
            "max_tokens": 1024,
            "system": "You referee dice games.",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Who won?"}]}],
            "output_config": output_config
        })
    );
    // The rejected answer's feedback goes back as a user text block, the schema with it.
    let golem::model::Message::Request(feedback) = &result.messages[2] else {
        panic!("feedback after the rejected answer: {:?}", result.messages)
    };
    let [golem::model::RequestPart::RetryPrompt(feedback)] = feedback.parts.as_slice() else {
        panic!("one retry prompt: {feedback:?}")
    };
    assert_eq!(sent[1]["output_config"], output_config);
    assert_eq!(
        sent[1]["messages"][2],
        json!({"role": "user", "content": [{"type": "text", "text": feedback.model_text()}]})
    );
    assert_eq!(result.usage.rejected.output.requests, 1);
    assert!(first_header(&server, "anthropic-beta").await.is_none());
}

#[test]
fn a_missing_key_is_a_clear_error() {
    let error = AnthropicModel::builder("claude-sonnet-4-5")
        .build()
        .unwrap_err();
    assert!(matches!(error, ProviderError::MissingApiKey { .. }));
    assert_eq!(
        error.to_string(),
        "no anthropic API key: set ANTHROPIC_API_KEY, or pass one to the builder"
    );
}

#[tokio::test]
async fn thinking_and_redacted_thinking_are_kept_and_sent_back_with_the_tool_use() {
    let thinking = json!({"type": "thinking", "thinking": "Two dice, then report.", "signature": "EqQBCkYIARgCIkCx"});
    let redacted = json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT"});
    let server = serve(
        "/v1/messages",
        vec![
            json_ok(message(
                "msg_1",
                json!([
                    thinking,
                    redacted,
                    tool_use("toolu_1", "roll_dice", json!({"n": 2}))
                ]),
                "tool_use",
                10,
                5,
            )),
            json_ok(message(
                "msg_2",
                json!([{"type": "text", "text": "You rolled 6."}]),
                "end_turn",
                20,
                3,
            )),
        ],
    )
    .await;
    let agent = Agent::<Game, String>::builder(model(&server))
        .tool(roll_dice())
        .build()
        .unwrap();

    let result = agent.run("Roll", Game).await.unwrap();

    assert_eq!(result.output, "You rolled 6.");
    let first = result.messages[1].as_response().unwrap();
    assert_eq!(
        first.parts[0],
        golem::model::ResponsePart::Thinking(
            golem::model::ThinkingPart::new("Two dice, then report.")
                .with_signature("EqQBCkYIARgCIkCx")
                .with_provider("anthropic")
        )
    );
    assert_eq!(
        first.parts[1],
        golem::model::ResponsePart::Provider(golem::model::ProviderPart::new(
            "anthropic",
            redacted.clone()
        ))
    );
    assert_eq!(
        bodies(&server).await[1]["messages"][1],
        json!({"role": "assistant", "content": [
            thinking,
            redacted,
            {"type": "tool_use", "id": "toolu_1", "name": "roll_dice", "input": {"n": 2}}
        ]})
    );
}

#[tokio::test]
async fn another_providers_reasoning_is_not_sent_to_anthropic() {
    use golem::model::{
        Message, Model, ModelRequest, ModelResponse, ProviderPart, RequestParams, ResponsePart,
        ThinkingPart,
    };

    let server = answering("msg_1", "ok").await;
    let history: Vec<Message> = vec![
        ModelRequest::user_prompt("Hi").into(),
        ModelResponse::new(vec![
            ResponsePart::Thinking(ThinkingPart::new("unsigned").with_provider("openai")),
            ResponsePart::Provider(ProviderPart::new(
                "gemini",
                json!({"thoughtSignature": "x"}),
            )),
            ResponsePart::text("Hello"),
        ])
        .into(),
        ModelRequest::user_prompt("Again").into(),
    ];

    model(&server)
        .request(&history, &RequestParams::text(Vec::new()))
        .await
        .unwrap();

    assert_eq!(
        bodies(&server).await[0]["messages"][1],
        json!({"role": "assistant", "content": [{"type": "text", "text": "Hello"}]})
    );
}

#[tokio::test]
async fn what_the_api_refuses_of_another_turn_is_left_out_or_made_fit() {
    use golem::model::{
        Message, Model, ModelRequest, ModelResponse, RequestParams, ResponsePart, ThinkingPart,
    };

    let answer = || {
        json_ok(message(
            "msg_1",
            json!([{"type": "text", "text": "ok"}]),
            "end_turn",
            1,
            1,
        ))
    };
    let server = serve("/v1/messages", vec![answer(), answer()]).await;
    let signed = |text: &str| {
        ResponsePart::Thinking(
            ThinkingPart::new(text)
                .with_signature("sig")
                .with_provider("anthropic"),
        )
    };
    let history: Vec<Message> = vec![
        ModelRequest::user_prompt("Roll").into(),
        // A call another provider made, with an id the API's pattern refuses.
        ModelResponse::new(vec![
            ResponsePart::text(" \n"),
            ResponsePart::tool_call("roll_dice", r#"{"n":2}"#, "functions.roll_dice:0"),
        ])
        .into(),
        request(vec![tool_return(
            "roll_dice",
            "functions.roll_dice:0",
            json!(6),
        )]),
        // An answer of whitespace, then one of thinking alone: each was rejected.
        ModelResponse::new(vec![ResponsePart::text("\n\n")]).into(),
        request(vec![retry("Answer in words.")]),
        ModelResponse::new(vec![signed("Hmm.")]).into(),
        request(vec![retry("Answer in words.")]),
    ];

    model(&server)
        .request(&history, &RequestParams::text(Vec::new()))
        .await
        .unwrap();
    // Without max_tokens, the default leaves room beyond the thinking budget.
    let thinking = AnthropicModel::builder("claude-sonnet-4-5")
        .api_key(KEY)
        .base_url(format!("{}/v1", server.uri()))
        .settings(ModelSettings::default().extra(
            "thinking",
            json!({"type": "enabled", "budget_tokens": 10000}),
        ))
        .build()
        .unwrap();
    thinking
        .request(&history[..1], &RequestParams::text(Vec::new()))
        .await
        .unwrap();

    let sent = bodies(&server).await;
    let feedback = json!({"type": "text", "text": feedback("Answer in words.")});
    assert_eq!(
        sent[0]["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Roll"}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "functions_roll_dice_0", "name": "roll_dice", "input": {"n": 2}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "functions_roll_dice_0", "content": "6"},
                feedback,
                feedback
            ]}
        ])
    );
    assert_eq!(sent[1]["max_tokens"], json!(14096));
}

#[tokio::test]
async fn thinking_is_left_out_of_a_request_whose_tool_loop_another_provider_began() {
    use golem::model::{Model, ModelResponse, RequestParams};

    let server = answering("msg_1", "Six.").await;
    let model = thinking_model(&server);
    // After a fallback: OpenAI made the call, so the turn has no thinking to begin with.
    let history = [
        request(vec![user("Roll")]),
        golem::model::Message::from(ModelResponse::new(vec![call(
            "roll_dice",
            r#"{"n":2}"#,
            "call_1",
        )])),
        request(vec![tool_return("roll_dice", "call_1", json!(6))]),
    ];

    model
        .request(&history, &RequestParams::text(Vec::new()))
        .await
        .unwrap();

    let body = &bodies(&server).await[0];
    assert_eq!(body.get("thinking"), None);
    assert_eq!(body["max_tokens"], json!(16000));

    // Adaptive thinking may skip it on a turn of its own: the request keeps it.
    let server = answering("msg_2", "Six.").await;
    let adaptive = AnthropicModel::builder("claude-opus-4-6")
        .api_key(KEY)
        .base_url(format!("{}/v1", server.uri()))
        .settings(ModelSettings::default().extra("thinking", json!({"type": "adaptive"})))
        .build()
        .unwrap();
    adaptive
        .request(&history, &RequestParams::text(Vec::new()))
        .await
        .unwrap();
    assert_eq!(
        bodies(&server).await[0]["thinking"],
        json!({"type": "adaptive"})
    );
}

#[tokio::test]
async fn with_extended_thinking_no_tool_is_forced() {
    let server = serve(
        "/v1/messages",
        vec![json_ok(message(
            "msg_1",
            json!([
                {"type": "thinking", "thinking": "Bob won.", "signature": "sig"},
                tool_use("toolu_1", "final_result", json!({"winner": "Bob", "score": 4}))
            ]),
            "tool_use",
            10,
            5,
        ))],
    )
    .await;
    let model = thinking_model(&server);
    let agent = Agent::<(), Json<Verdict>>::builder(model).build().unwrap();

    let result = agent.run("Who won?", ()).await.unwrap();

    assert_eq!(result.output.winner, "Bob");
    let body = &bodies(&server).await[0];
    // The API refuses `any` with thinking on.
    assert_eq!(body["tool_choice"], json!({"type": "auto"}));
    assert_eq!(body["thinking"]["budget_tokens"], json!(10000));
}

#[tokio::test]
async fn the_request_limit_counts_with_anthropics_endpoint_and_refuses_before_sending() {
    let server = MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .and(wiremock::matchers::path("/v1/messages/count_tokens"))
        .respond_with(json_ok(json!({"input_tokens": 1200})))
        .mount(&server)
        .await;
    let agent = Agent::<Game, String>::builder(model(&server))
        .instructions("You referee dice games.")
        .tool(roll_dice())
        .model_settings(ModelSettings::default().temperature(0.0))
        .usage_limits(
            golem::usage::UsageLimits::new()
                .request_tokens_limit(1000)
                .count_request_tokens(true),
        )
        .build()
        .unwrap();

    let error = agent.run("Roll two dice", Game).await.unwrap_err();

    assert_eq!(error.stage(), Stage::Limit);
    assert_eq!(
        error.limit(),
        Some(&golem::usage::LimitExceeded::RequestTokens {
            limit: 1000,
            tokens: 1200
        })
    );
    // Only the count was asked for, with the request's fields the endpoint takes.
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].url.path(), "/v1/messages/count_tokens");
    assert_eq!(
        requests[0]
            .headers
            .get("x-api-key")
            .map(|v| v.to_str().unwrap()),
        Some(KEY)
    );
    let body: Value = serde_json::from_slice(&requests[0].body).unwrap();
    assert_eq!(
        body,
        json!({
            "model": "claude-sonnet-4-5",
            "system": "You referee dice games.",
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Roll two dice"}]}],
            "tools": [{
                "name": "roll_dice",
                "description": "Roll `n` dice and return their total.",
                "input_schema": body["tools"][0]["input_schema"].clone(),
            }],
        })
    );
    assert_eq!(error.usage().requests, 0);
}

#[tokio::test]
async fn a_request_the_count_allows_is_sent() {
    let server = MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .and(wiremock::matchers::path("/v1/messages/count_tokens"))
        .respond_with(json_ok(json!({"input_tokens": 12})))
        .mount(&server)
        .await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .and(wiremock::matchers::path("/v1/messages"))
        .respond_with(json_ok(message(
            "msg_1",
            json!([{"type": "text", "text": "Hello."}]),
            "end_turn",
            12,
            3,
        )))
        .mount(&server)
        .await;
    let agent = Agent::<(), String>::builder(model(&server))
        .usage_limits(
            golem::usage::UsageLimits::new()
                .request_tokens_limit(100)
                .count_request_tokens(true),
        )
        .build()
        .unwrap();

    let result = agent.run("Hi", ()).await.unwrap();

    assert_eq!(result.output, "Hello.");
    let paths: Vec<String> = server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|request| request.url.path().to_owned())
        .collect();
    assert_eq!(paths, ["/v1/messages/count_tokens", "/v1/messages"]);
}
