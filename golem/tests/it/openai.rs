//! The OpenAI Chat Completions provider against a real HTTP server on loopback.

#![cfg(feature = "openai")]

use crate::common;

use std::error::Error as _;
use std::time::Duration;

use common::dice::*;
use common::http::{bodies, first_header, json_ok, serve};
use common::*;
use golem::model::http::{HttpSettings, RetryPolicy};
use golem::model::openai::OpenAiModel;
use golem::model::{FinishReason, ModelError, ModelSettings, ProviderError, ToolChoice};
use golem::output::{Json, OutputMode};
use golem::{Agent, ModelRetry, Stage};
use serde_json::{Value, json};
use wiremock::{MockServer, ResponseTemplate};

const KEY: &str = "sk-test-0123456789abcdef";

fn fast_retries() -> HttpSettings {
    HttpSettings::default().retry(
        RetryPolicy::default()
            .max_retries(2)
            .backoff(Duration::from_millis(1), Duration::from_millis(5)),
    )
}

fn model(server: &MockServer) -> OpenAiModel {
    OpenAiModel::builder("gpt-4o-mini")
        .api_key(KEY)
        .base_url(format!("{}/v1/", server.uri()))
        .organization("org-golem")
        .project("proj-dice")
        .settings(ModelSettings::default().temperature(0.0).seed(7))
        .http(fast_retries())
        .build()
        .expect("valid model")
}

/// A chat completion as OpenAI sends it.
fn completion(id: &str, message: Value, finish_reason: &str, prompt: u64, output: u64) -> Value {
    json!({
        "id": id,
        "object": "chat.completion",
        "created": 1_732_960_000,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": message, "logprobs": null, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": output,
            "total_tokens": prompt + output,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}
        },
        "service_tier": "default",
        "system_fingerprint": "fp_0ba0d124f1"
    })
}

fn calls(id: &str, name: &str, arguments: &str) -> Value {
    json!({
        "role": "assistant",
        "content": null,
        "tool_calls": [{"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}],
        "refusal": null,
        "annotations": []
    })
}

fn says(text: &str) -> Value {
    json!({"role": "assistant", "content": text, "refusal": null, "annotations": []})
}

#[tokio::test]
async fn a_full_self_correction_exchange_sends_exactly_the_documented_json() {
    let server = serve(
        "/v1/chat/completions",
        vec![
            json_ok(completion(
                "chatcmpl-1",
                calls("call_1", "roll_dice", r#"{"n":-1}"#),
                "tool_calls",
                82,
                17,
            )),
            json_ok(completion(
                "chatcmpl-2",
                calls("call_2", "roll_dice", r#"{"n":2}"#),
                "tool_calls",
                131,
                17,
            )),
            json_ok(completion(
                "chatcmpl-3",
                calls("call_3", "final_result", r#"{"winner":"Ann","score":-6}"#),
                "tool_calls",
                160,
                21,
            )),
            json_ok(completion(
                "chatcmpl-4",
                calls("call_4", "final_result", r#"{"winner":"Ann","score":6}"#),
                "tool_calls",
                230,
                21,
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

    assert_eq!(result.output.winner, "Ann");
    assert_eq!(result.output.score, 6);
    let sent = bodies(&server).await;
    assert_eq!(sent.len(), 4);
    let tools = json!([
        {"type": "function", "function": {
            "name": "roll_dice",
            "description": "Roll `n` dice and return their total.",
            "parameters": {
                "type": "object",
                "properties": {"n": {"type": "integer", "description": "How many dice to roll."}},
                "required": ["n"],
                "additionalProperties": false
            }
        }},
        {"type": "function", "function": {
            "name": "final_result",
            "description": "A verdict on the game.",
            "parameters": {
                "type": "object",
                "description": "A verdict on the game.",
                "properties": {"winner": {"type": "string"}, "score": {"type": "integer", "minimum": 0}},
                "required": ["winner", "score"],
                "additionalProperties": false
            }
        }}
    ]);
    assert_eq!(
        sent[0],
        json!({
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "You referee dice games."},
                {"role": "user", "content": "Roll two dice for Ann."}
            ],
            "tools": tools,
            "tool_choice": "required",
            "temperature": 0.0,
            "seed": 7
        })
    );
    assert_eq!(
        sent[3],
        json!({
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "You referee dice games."},
                {"role": "user", "content": "Roll two dice for Ann."},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "roll_dice", "arguments": "{\"n\":-1}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_1", "content": feedback("n must be positive, got -1")},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_2", "type": "function", "function": {"name": "roll_dice", "arguments": "{\"n\":2}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_2", "content": "6"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_3", "type": "function", "function": {"name": "final_result", "arguments": "{\"winner\":\"Ann\",\"score\":-6}"}}
                ]},
                {"role": "tool", "tool_call_id": "call_3", "content": feedback(
                    "invalid output: at `score`: invalid value: integer `-6`, expected u32 at line 1 column 26"
                )}
            ],
            "tools": tools,
            "tool_choice": "required",
            "temperature": 0.0,
            "seed": 7
        })
    );
    assert_eq!(
        first_header(&server, "authorization").await.as_deref(),
        Some("Bearer sk-test-0123456789abcdef")
    );
    assert_eq!(
        first_header(&server, "openai-organization")
            .await
            .as_deref(),
        Some("org-golem")
    );
    assert_eq!(
        first_header(&server, "openai-project").await.as_deref(),
        Some("proj-dice")
    );
    assert_eq!(
        first_header(&server, "content-type").await.as_deref(),
        Some("application/json")
    );

    let last = result.messages[7].as_response().unwrap();
    assert_eq!(last.model_name.as_deref(), Some("gpt-4o-mini-2024-07-18"));
    assert_eq!(last.provider_response_id.as_deref(), Some("chatcmpl-4"));
    assert_eq!(last.finish_reason, Some(FinishReason::ToolCall));
    assert_eq!(result.usage.requests, 4);
    assert_eq!(result.usage.input_tokens, 82 + 131 + 160 + 230);
    assert_eq!(result.usage.output_tokens, 17 + 17 + 21 + 21);
    assert_eq!(result.usage.rejected.tools["roll_dice"].input_tokens, 82);
    assert_eq!(result.usage.rejected.output.input_tokens, 160);
}

#[tokio::test]
async fn text_output_feedback_is_a_user_message_and_cached_tokens_are_read() {
    let mut cached = completion("chatcmpl-2", says("yes"), "stop", 120, 1);
    cached["usage"]["prompt_tokens_details"]["cached_tokens"] = json!(64);
    cached["usage"]["prompt_tokens_details"]["audio_tokens"] = json!(5);
    cached["usage"]["completion_tokens_details"]["reasoning_tokens"] = json!(1);
    cached["usage"]["completion_tokens_details"]["audio_tokens"] = json!(2);
    let server = serve(
        "/v1/chat/completions",
        vec![
            json_ok(completion("chatcmpl-1", says("maybe"), "stop", 100, 1)),
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
        bodies(&server).await[1]["messages"],
        json!([
            {"role": "user", "content": "Is water wet?"},
            {"role": "assistant", "content": "maybe"},
            {"role": "user", "content": feedback("answer yes or no")}
        ])
    );
    assert_eq!(result.usage.cache_read_tokens, 64);
    assert_eq!(result.usage.input_tokens, 220);
    // The detail the prices need, summed over the run like the rest.
    assert_eq!(
        (
            result.usage.reasoning_tokens,
            result.usage.audio_input_tokens,
            result.usage.audio_output_tokens
        ),
        (1, 5, 2)
    );
}

#[tokio::test]
async fn settings_and_native_structured_output_reach_the_body() {
    let server = serve(
        "/v1/chat/completions",
        vec![json_ok(completion(
            "chatcmpl-1",
            says(r#"{"winner":"Bob","score":4}"#),
            "stop",
            10,
            5,
        ))],
    )
    .await;
    let model = OpenAiModel::builder("llama3.2")
        .base_url(format!("{}/v1", server.uri()))
        .settings(
            ModelSettings::default()
                .max_tokens(256)
                .top_p(0.9)
                .parallel_tool_calls(false)
                .tool_choice(ToolChoice::Auto)
                .extra("keep_alive", "5m"),
        )
        .build()
        .unwrap();
    let agent = Agent::<(), Json<Verdict>>::builder(model)
        .output_mode(OutputMode::Native)
        .build()
        .unwrap();

    let result = agent.run("Who won?", ()).await.unwrap();

    assert_eq!(result.output.winner, "Bob");
    // No tools, so no tool settings; no key, so no authorization header.
    assert_eq!(
        bodies(&server).await[0],
        json!({
            "model": "llama3.2",
            "messages": [{"role": "user", "content": "Who won?"}],
            "response_format": {"type": "json_schema", "json_schema": {
                "name": "final_result",
                "description": "A verdict on the game.",
                "schema": {
                    "type": "object",
                    "description": "A verdict on the game.",
                    "properties": {"winner": {"type": "string"}, "score": {"type": "integer", "minimum": 0}},
                    "required": ["winner", "score"],
                    "additionalProperties": false
                },
                "strict": true
            }},
            "top_p": 0.9,
            "max_tokens": 256,
            "keep_alive": "5m"
        })
    );
    assert_eq!(first_header(&server, "authorization").await, None);
}

#[tokio::test]
async fn tool_settings_are_sent_when_there_are_tools() {
    let server = serve(
        "/v1/chat/completions",
        vec![json_ok(completion(
            "chatcmpl-1",
            says("done"),
            "stop",
            1,
            1,
        ))],
    )
    .await;
    let model = OpenAiModel::builder("gpt-4o-mini")
        .api_key(KEY)
        .base_url(format!("{}/v1", server.uri()))
        .settings(
            ModelSettings::default()
                .parallel_tool_calls(false)
                .tool_choice(ToolChoice::Tool("roll_dice".into())),
        )
        .build()
        .unwrap();
    let agent = Agent::<Game, String>::builder(model)
        .tool(roll_dice())
        .build()
        .unwrap();

    agent.run("Roll", Game).await.unwrap();

    let body = &bodies(&server).await[0];
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "function": {"name": "roll_dice"}})
    );
    assert_eq!(body["parallel_tool_calls"], json!(false));
}

#[tokio::test]
async fn arguments_sent_as_an_object_by_a_compatible_server_are_accepted() {
    let message = json!({
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "call_9", "function": {"name": "roll_dice", "arguments": {"n": 2}}}]
    });
    let server = serve(
        "/v1/chat/completions",
        vec![
            json_ok(completion("c1", message, "tool_calls", 1, 1)),
            json_ok(completion("c2", says("6"), "stop", 1, 1)),
        ],
    )
    .await;
    let agent = Agent::<Game, String>::builder(model(&server))
        .tool(roll_dice())
        .build()
        .unwrap();

    let result = agent.run("Roll", Game).await.unwrap();

    assert_eq!(
        result.messages[1].as_response().unwrap().parts,
        vec![call("roll_dice", r#"{"n":2}"#, "call_9")]
    );
    assert_eq!(
        result.messages[2],
        request(vec![tool_return("roll_dice", "call_9", json!(6))])
    );
}

async fn run_against(responses: Vec<ResponseTemplate>) -> (golem::RunError, MockServer) {
    let server = serve("/v1/chat/completions", responses).await;
    let agent = Agent::<(), String>::builder(model(&server))
        .build()
        .expect("valid agent");
    let error = agent.run("Hi", ()).await.expect_err("the run fails");
    (error, server)
}

#[tokio::test]
async fn rate_limits_and_server_errors_are_retried_and_never_charged_to_budgets() {
    let server = serve(
        "/v1/chat/completions",
        vec![
            ResponseTemplate::new(429)
                .insert_header("retry-after", "0")
                .set_body_json(
                    json!({"error": {"message": "Rate limit reached", "type": "requests"}}),
                ),
            ResponseTemplate::new(502).set_body_string("bad gateway"),
            json_ok(completion("c1", says("Hello"), "stop", 5, 1)),
        ],
    )
    .await;
    let agent = Agent::<(), String>::builder(model(&server))
        .build()
        .unwrap();

    let result = agent.run("Hi", ()).await.unwrap();

    assert_eq!(result.output, "Hello");
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
    assert_eq!(result.usage.requests, 1);
    assert!(result.usage.rejected.is_empty());
}

#[tokio::test]
async fn exhausted_retries_fail_with_the_status_the_message_and_the_history() {
    let overloaded = || {
        ResponseTemplate::new(503)
            .set_body_json(json!({"error": {"message": "The engine is currently overloaded", "type": "server_error"}}))
    };
    let (error, server) = run_against(vec![overloaded(), overloaded(), overloaded()]).await;

    assert_eq!(error.stage(), Stage::Model);
    assert!(matches!(
        error.model_error(),
        Some(ModelError::Http {
            status: 503,
            attempts: 3,
            ..
        })
    ));
    assert_eq!(
        error.source().unwrap().to_string(),
        "openai answered HTTP 503 after 3 attempt(s): The engine is currently overloaded"
    );
    assert_eq!(error.messages(), [request(vec![user("Hi")])]);
    assert_eq!(server.received_requests().await.unwrap().len(), 3);
}

#[tokio::test]
async fn retries_can_be_turned_off() {
    let server = serve(
        "/v1/chat/completions",
        vec![ResponseTemplate::new(500).set_body_string("oops")],
    )
    .await;
    let model = OpenAiModel::builder("gpt-4o-mini")
        .api_key(KEY)
        .base_url(format!("{}/v1", server.uri()))
        .http(HttpSettings::default().retry(RetryPolicy::none()))
        .build()
        .unwrap();
    let agent = Agent::<(), String>::builder(model).build().unwrap();

    let error = agent.run("Hi", ()).await.unwrap_err();

    assert_eq!(
        error.source().unwrap().to_string(),
        "openai answered HTTP 500 after 1 attempt(s): oops"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn client_errors_are_typed_and_not_retried() {
    for (status, message) in [
        (400, "Invalid schema for function 'roll_dice'"),
        (404, "The model `gpt-5-nano-x` does not exist"),
    ] {
        let (error, server) = run_against(vec![ResponseTemplate::new(status).set_body_json(
            json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": null}}),
        )])
        .await;

        assert_eq!(error.model_error().unwrap().status(), Some(status));
        assert_eq!(
            error.source().unwrap().to_string(),
            format!("openai answered HTTP {status} after 1 attempt(s): {message}")
        );
        assert_eq!(server.received_requests().await.unwrap().len(), 1);
    }
}

#[tokio::test]
async fn an_auth_error_names_the_env_var_and_never_shows_the_key() {
    let (error, server) = run_against(vec![ResponseTemplate::new(401).set_body_json(json!({
        "error": {"message": format!("Incorrect API key provided: {KEY}. You can find your API key at https://platform.openai.com/account/api-keys."), "type": "invalid_request_error", "code": "invalid_api_key"}
    }))])
    .await;

    let cause = error.source().unwrap().to_string();
    assert_eq!(
        cause,
        "openai refused the credentials (HTTP 401): Incorrect API key provided: [redacted]. \
         You can find your API key at https://platform.openai.com/account/api-keys.; check OPENAI_API_KEY"
    );
    assert!(matches!(error.model_error(), Some(ModelError::Auth { .. })));
    for text in [cause, format!("{error:?}"), format!("{error}")] {
        assert!(!text.contains(KEY), "{text}");
    }
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
    assert!(!format!("{:?}", model(&server)).contains(KEY));
}

#[tokio::test]
async fn bad_responses_become_typed_errors() {
    let cases = [
        (
            ResponseTemplate::new(200).set_body_raw("{\"choices\": [", "application/json"),
            "openai sent a response golem cannot read: the body is not a chat completion: EOF while parsing a list at line 1 column 13",
        ),
        (
            json_ok(json!({"id": "x", "object": "chat.completion", "choices": []})),
            "openai sent a response golem cannot read: the response has no choices",
        ),
        (
            ResponseTemplate::new(200).set_body_raw("<html>Gateway</html>", "text/html"),
            "openai sent a response golem cannot read: expected a JSON body, got content type `text/html`: <html>Gateway</html>",
        ),
    ];
    for (response, expected) in cases {
        let (error, server) = run_against(vec![response]).await;

        assert!(matches!(
            error.model_error(),
            Some(ModelError::InvalidResponse { .. })
        ));
        assert_eq!(error.source().unwrap().to_string(), expected);
        assert_eq!(server.received_requests().await.unwrap().len(), 1);
    }
}

#[tokio::test]
async fn a_body_over_the_size_limit_is_refused() {
    let server = serve(
        "/v1/chat/completions",
        vec![json_ok(completion(
            "c1",
            says(&"x".repeat(4096)),
            "stop",
            1,
            1,
        ))],
    )
    .await;
    let model = OpenAiModel::builder("gpt-4o-mini")
        .api_key(KEY)
        .base_url(format!("{}/v1", server.uri()))
        .http(fast_retries().max_response_bytes(1024))
        .build()
        .unwrap();
    let agent = Agent::<(), String>::builder(model).build().unwrap();

    let error = agent.run("Hi", ()).await.unwrap_err();

    assert_eq!(
        error.source().unwrap().to_string(),
        "openai sent a response golem cannot read: the response body exceeds the limit of 1024 bytes"
    );
}

#[tokio::test]
async fn a_slow_server_times_out_and_is_retried() {
    let slow =
        || json_ok(completion("c1", says("late"), "stop", 1, 1)).set_delay(Duration::from_secs(5));
    let server = serve("/v1/chat/completions", vec![slow(), slow()]).await;
    let model = OpenAiModel::builder("gpt-4o-mini")
        .api_key(KEY)
        .base_url(format!("{}/v1", server.uri()))
        .http(
            HttpSettings::default()
                .timeout(Duration::from_millis(200))
                .retry(
                    RetryPolicy::default()
                        .max_retries(1)
                        .backoff(Duration::from_millis(1), Duration::from_millis(1)),
                ),
        )
        .build()
        .unwrap();
    let agent = Agent::<(), String>::builder(model).build().unwrap();

    let error = agent.run("Hi", ()).await.unwrap_err();

    let model_error = error.model_error().unwrap();
    assert!(model_error.is_timeout(), "{model_error:?}");
    assert!(matches!(
        model_error,
        ModelError::Transport { attempts: 2, .. }
    ));
    assert_eq!(
        error.source().unwrap().to_string(),
        "the request to openai failed after 2 attempt(s)"
    );
}

#[tokio::test]
async fn a_refused_connection_is_a_transport_error() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let model = OpenAiModel::builder("gpt-4o-mini")
        .api_key(KEY)
        .base_url(format!("http://127.0.0.1:{port}/v1"))
        .http(fast_retries())
        .build()
        .unwrap();
    let agent = Agent::<(), String>::builder(model).build().unwrap();

    let error = agent.run("Hi", ()).await.unwrap_err();

    assert!(matches!(
        error.model_error(),
        Some(ModelError::Transport { attempts: 3, .. })
    ));
    assert!(error.source().unwrap().source().is_some());
}

#[tokio::test]
async fn a_truncated_body_is_a_transport_error() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let server = tokio::spawn(async move {
        for _ in 0..3 {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buffer = vec![0; 64 * 1024];
            let _ = socket.read(&mut buffer).await.unwrap();
            socket
                .write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{\"id\": \"chatcmpl-1\", \"cho",
                )
                .await
                .unwrap();
            socket.shutdown().await.unwrap();
        }
    });
    let model = OpenAiModel::builder("gpt-4o-mini")
        .api_key(KEY)
        .base_url(format!("http://{address}/v1"))
        .http(fast_retries())
        .build()
        .unwrap();
    let agent = Agent::<(), String>::builder(model).build().unwrap();

    let error = agent.run("Hi", ()).await.unwrap_err();

    assert!(
        matches!(
            error.model_error(),
            Some(ModelError::Transport { attempts: 3, .. })
        ),
        "{:?}",
        error.model_error()
    );
    server.await.unwrap();
}

#[tokio::test]
async fn length_and_content_filter_finishes_are_typed_errors_that_keep_the_response() {
    for (finish, expected) in [
        (
            "length",
            "the response was cut off at the output token limit; raise `max_tokens` \
             (ModelSettings::max_tokens, on the model, the agent or the run) so the whole answer fits",
        ),
        (
            "content_filter",
            "the provider's content filter withheld the response",
        ),
    ] {
        let (error, _server) = run_against(vec![json_ok(completion(
            "c1",
            says("Once upon a"),
            finish,
            9,
            4096,
        ))])
        .await;

        assert_eq!(error.stage(), Stage::Model);
        assert_eq!(error.source().unwrap().to_string(), expected);
        let kept = error.messages()[1].as_response().unwrap();
        assert_eq!(kept.text_content(), "Once upon a");
        assert_eq!(error.usage().output_tokens, 4096);
    }
}

#[test]
fn a_missing_key_for_openai_itself_is_a_clear_error() {
    let error = OpenAiModel::builder("gpt-4o-mini").build().unwrap_err();
    assert!(matches!(error, ProviderError::MissingApiKey { .. }));
    assert_eq!(
        error.to_string(),
        "no openai API key: set OPENAI_API_KEY, or pass one to the builder"
    );
    let bad = OpenAiModel::builder("m")
        .base_url("localhost:8080")
        .build()
        .unwrap_err();
    assert!(matches!(bad, ProviderError::InvalidBaseUrl { .. }), "{bad}");
}

#[tokio::test]
async fn a_forbidden_answer_is_an_auth_error_too() {
    let (error, server) = run_against(vec![ResponseTemplate::new(403).set_body_json(json!({
        "error": {"message": "Project does not have access to model gpt-4o-mini", "type": "invalid_request_error"}
    }))])
    .await;

    assert!(matches!(
        error.model_error(),
        Some(ModelError::Auth { status: 403, .. })
    ));
    assert_eq!(
        error.source().unwrap().to_string(),
        "openai refused the credentials (HTTP 403): Project does not have access to model gpt-4o-mini; check OPENAI_API_KEY"
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn an_empty_response_is_sent_back_as_empty_text_for_its_correction() {
    let server = serve(
        "/v1/chat/completions",
        vec![
            json_ok(completion(
                "c1",
                json!({"role": "assistant", "content": ""}),
                "stop",
                5,
                0,
            )),
            json_ok(completion("c2", says("Hello"), "stop", 9, 1)),
        ],
    )
    .await;
    let agent = Agent::<(), String>::builder(model(&server))
        .output_retries(1)
        .build()
        .unwrap();

    let result = agent.run("Hi", ()).await.unwrap();

    assert_eq!(result.output, "Hello");
    assert_eq!(
        bodies(&server).await[1]["messages"],
        json!([
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": ""},
            {"role": "user", "content": feedback("The response was empty. Answer with text.")}
        ])
    );
}

#[tokio::test]
async fn nulls_and_missing_ids_from_compatible_servers_are_read() {
    let no_calls = json!({
        "id": "c1", "model": "mistral-small", "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "roll_dice", "arguments": "{\"n\": 1}"}}
        ]}, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10, "prompt_tokens_details": {"cached_tokens": null}}
    });
    let nulls = json!({
        "id": "c2", "model": "mistral-small", "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "3", "tool_calls": null}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10}
    });
    let server = serve(
        "/v1/chat/completions",
        vec![json_ok(no_calls), json_ok(nulls)],
    )
    .await;
    let agent = Agent::<Game, String>::builder(model(&server))
        .tool(roll_dice())
        .build()
        .unwrap();

    let result = agent.run("Roll", Game).await.unwrap();

    assert_eq!(result.output, "3");
    assert_eq!(
        result.messages[2],
        request(vec![tool_return("roll_dice", "call_1_0", json!(3))])
    );
    assert_eq!(result.usage.input_tokens, 16);
}

#[tokio::test]
async fn the_attempt_count_includes_the_retries_before_a_final_error() {
    let (error, _server) = run_against(vec![
        ResponseTemplate::new(503).set_body_string("busy"),
        ResponseTemplate::new(400).set_body_json(json!({"error": {"message": "bad request"}})),
    ])
    .await;

    assert_eq!(
        error.source().unwrap().to_string(),
        "openai answered HTTP 400 after 2 attempt(s): bad request"
    );
}

#[tokio::test]
async fn strict_tools_send_strict_schemas_and_read_nulls_as_absent() {
    #[golem::args]
    struct Forecast {
        city: String,
        /// How many days ahead.
        days: Option<u8>,
    }
    let forecast = golem::tool::FunctionTool::new(
        "forecast",
        |_ctx: golem::RunContext<()>, args: Forecast| async move {
            Ok::<_, ModelRetry>(format!(
                "{}: sun for {} day(s)",
                args.city,
                args.days.unwrap_or(1)
            ))
        },
    );
    let server = serve(
        "/v1/chat/completions",
        vec![
            json_ok(completion(
                "c1",
                calls("call_1", "forecast", r#"{"city": "Oslo", "days": null}"#),
                "tool_calls",
                1,
                1,
            )),
            json_ok(completion("c2", says("Sunny."), "stop", 1, 1)),
        ],
    )
    .await;
    let model = OpenAiModel::builder("gpt-4o-mini")
        .api_key(KEY)
        .base_url(format!("{}/v1", server.uri()))
        .strict_tools(true)
        .build()
        .unwrap();
    let agent = Agent::<(), String>::builder(model)
        .tool(forecast)
        .build()
        .unwrap();

    let result = agent.run("Weather in Oslo?", ()).await.unwrap();

    assert_eq!(
        result.messages[2],
        request(vec![tool_return(
            "forecast",
            "call_1",
            json!("Oslo: sun for 1 day(s)")
        )])
    );
    assert_eq!(
        bodies(&server).await[0]["tools"],
        json!([{"type": "function", "function": {
            "name": "forecast",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": ["integer", "null"], "description": "How many days ahead.", "minimum": 0, "maximum": 255}
                },
                "required": ["city", "days"],
                "additionalProperties": false
            },
            "strict": true
        }}])
    );
}

#[tokio::test]
async fn strict_tools_accept_the_nulls_they_ask_for_in_default_fields() {
    #[golem::args]
    struct Search {
        query: String,
        #[serde(default)]
        limit: u32,
        #[serde(default)]
        filters: Filters,
    }
    #[golem::args]
    #[derive(Default)]
    struct Filters {
        #[serde(default)]
        tags: Vec<String>,
    }
    let search = golem::tool::FunctionTool::new(
        "search",
        |_ctx: golem::RunContext<()>, args: Search| async move {
            Ok::<_, ModelRetry>(format!(
                "{} (limit {}, {} tag(s))",
                args.query,
                args.limit,
                args.filters.tags.len()
            ))
        },
    );
    let server = serve(
        "/v1/chat/completions",
        vec![
            json_ok(completion(
                "c1",
                calls(
                    "call_1",
                    "search",
                    r#"{"query": "rust", "limit": null, "filters": {"tags": null}}"#,
                ),
                "tool_calls",
                1,
                1,
            )),
            json_ok(completion(
                "c2",
                calls(
                    "call_2",
                    "search",
                    r#"{"query": "golem", "limit": 2, "filters": null}"#,
                ),
                "tool_calls",
                1,
                1,
            )),
            json_ok(completion("c3", says("Found."), "stop", 1, 1)),
        ],
    )
    .await;
    let model = OpenAiModel::builder("gpt-4o-mini")
        .api_key(KEY)
        .base_url(format!("{}/v1", server.uri()))
        .strict_tools(true)
        .build()
        .unwrap();
    // No retry budget: a null the tool cannot read would fail the run.
    let agent = Agent::<(), String>::builder(model)
        .tool(search)
        .build()
        .unwrap();

    let result = agent.run("Search", ()).await.unwrap();

    assert_eq!(
        result.messages[2],
        request(vec![tool_return(
            "search",
            "call_1",
            json!("rust (limit 0, 0 tag(s))")
        )])
    );
    assert_eq!(
        result.messages[4],
        request(vec![tool_return(
            "search",
            "call_2",
            json!("golem (limit 2, 0 tag(s))")
        )])
    );
    // The history keeps the arguments without the nulls golem removed.
    assert_eq!(
        result.messages[1].as_response().unwrap().parts,
        vec![call("search", r#"{"query":"rust","filters":{}}"#, "call_1")]
    );
    let sent = bodies(&server).await;
    assert_eq!(
        sent[0]["tools"][0]["function"]["parameters"]["required"],
        json!(["query", "limit", "filters"])
    );
    assert_eq!(sent[0]["tools"], sent[2]["tools"]);
}
