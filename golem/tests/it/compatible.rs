//! OpenAI's own endpoint and compatible servers: the server profiles, the tool choice each
//! output channel needs, and recorded bodies of llama.cpp, vLLM and Ollama.

#![cfg(all(feature = "openai", feature = "anthropic"))]

use crate::common;

use std::time::Duration;

use common::dice::*;
use common::http::{bodies, json_ok, serve};
use common::*;
use futures_util::StreamExt;
use golem::Agent;
use golem::model::anthropic::AnthropicModel;
use golem::model::http::{HttpSettings, RetryPolicy};
use golem::model::openai::{OpenAiModel, ServerProfile};
use golem::model::{
    Model, ModelError, ModelSettings, RequestParams, ResponsePart, StreamEvent, ThinkingPart,
    ToolChoice,
};
use golem::output::{Json, OutputMode};
use serde_json::{Value, json};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, ResponseTemplate};

fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/tests/fixtures/openai-compatible/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).expect("fixture exists");
    serde_json::from_str(&text).expect("fixture is JSON")
}

fn fast_retries() -> HttpSettings {
    HttpSettings::default().retry(
        RetryPolicy::default()
            .max_retries(2)
            .backoff(Duration::from_millis(1), Duration::from_millis(2)),
    )
}

fn local(server: &MockServer, profile: ServerProfile) -> OpenAiModel {
    OpenAiModel::builder("local-model")
        .base_url(format!("{}/v1", server.uri()))
        .profile(profile)
        .http(fast_retries())
        .build()
        .expect("valid model")
}

/// A model that sends its reasoning back, as DeepSeek's thinking mode wants.
fn reasoning_back(server: &MockServer) -> OpenAiModel {
    OpenAiModel::builder("deepseek-chat")
        .base_url(format!("{}/v1", server.uri()))
        .send_reasoning(true)
        .build()
        .expect("valid model")
}

fn completion(message: Value, finish_reason: &str) -> Value {
    json!({
        "id": "c", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1}
    })
}

fn says(text: &str) -> Value {
    completion(json!({"role": "assistant", "content": text}), "stop")
}

fn calls(name: &str, arguments: &str) -> Value {
    completion(
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}
        ]}),
        "tool_calls",
    )
}

#[tokio::test]
async fn openai_itself_gets_max_completion_tokens_and_compatible_servers_max_tokens() {
    for (profile, field, absent) in [
        (ServerProfile::OpenAi, "max_completion_tokens", "max_tokens"),
        (
            ServerProfile::Compatible,
            "max_tokens",
            "max_completion_tokens",
        ),
        (
            ServerProfile::LlamaCpp,
            "max_tokens",
            "max_completion_tokens",
        ),
        (ServerProfile::Vllm, "max_tokens", "max_completion_tokens"),
        (ServerProfile::Ollama, "max_tokens", "max_completion_tokens"),
    ] {
        let server = serve(
            "/v1/chat/completions",
            vec![json_ok(fixture("openai-reasoning.json"))],
        )
        .await;
        let model = OpenAiModel::builder("o4-mini")
            .api_key("sk-test-0123456789")
            .base_url(format!("{}/v1", server.uri()))
            .profile(profile)
            .settings(
                ModelSettings::default()
                    .max_tokens(512)
                    .stop_sequences(["END"]),
            )
            .build()
            .unwrap();
        assert_eq!(model.profile(), profile);
        let agent = Agent::<(), String>::builder(model).build().unwrap();

        let result = agent.run("Roll", ()).await.unwrap();

        assert_eq!(result.output, "You rolled 6.");
        assert_eq!(result.usage.output_tokens, 210);
        let body = &bodies(&server).await[0];
        assert_eq!(body[field], json!(512), "{profile:?}");
        assert!(body.get(absent).is_none(), "{profile:?}");
        assert_eq!(body["stop"], json!(["END"]));
    }
}

#[test]
fn the_profile_follows_the_base_url_unless_set() {
    let official = OpenAiModel::builder("gpt-4o")
        .api_key("sk-test-0123456789")
        .build()
        .unwrap();
    assert_eq!(official.profile(), ServerProfile::OpenAi);
    let ollama = OpenAiModel::builder("llama3.2")
        .base_url("http://localhost:11434/v1")
        .build()
        .unwrap();
    assert_eq!(ollama.profile(), ServerProfile::Ollama);
    let other = OpenAiModel::builder("m")
        .base_url("http://127.0.0.1:8080/v1")
        .build()
        .unwrap();
    assert_eq!(other.profile(), ServerProfile::Compatible);
}

/// The `tool_choice` of each request of one run, in order (`None` when absent).
async fn tool_choices(server: &MockServer) -> Vec<Option<Value>> {
    bodies(server)
        .await
        .into_iter()
        .map(|body| body.get("tool_choice").cloned())
        .collect()
}

#[tokio::test]
async fn native_output_with_function_tools_is_never_forced_to_call_a_tool() {
    let server = serve(
        "/v1/chat/completions",
        vec![
            json_ok(calls("roll_dice", r#"{"n": 2}"#)),
            json_ok(says(r#"{"winner": "Bob", "score": 6}"#)),
        ],
    )
    .await;
    let agent = Agent::<Game, Json<Verdict>>::builder(local(&server, ServerProfile::Compatible))
        .tool(roll_dice())
        .output_mode(OutputMode::Native)
        .build()
        .unwrap();

    let result = agent.run("Who won?", Game).await.unwrap();

    assert_eq!(result.output.score, 6);
    assert_eq!(tool_choices(&server).await, vec![None, None]);
    assert!(bodies(&server).await[0].get("response_format").is_some());
}

#[tokio::test]
async fn every_output_channel_gets_the_tool_choice_it_needs_with_and_without_tools() {
    // (output, function tools) -> the tool_choice of the first request.
    let cases: [(&str, bool, Option<Value>); 6] = [
        ("text", false, None),
        ("text", true, None),
        ("tool", false, Some(json!("required"))),
        ("tool", true, Some(json!("required"))),
        ("native", false, None),
        ("native", true, None),
    ];
    for (output, tools, expected) in cases {
        let answer = match output {
            "tool" => calls("final_result", r#"{"winner": "Ann", "score": 1}"#),
            "native" => says(r#"{"winner": "Ann", "score": 1}"#),
            _ => says("Ann"),
        };
        let server = serve("/v1/chat/completions", vec![json_ok(answer)]).await;
        let model = local(&server, ServerProfile::Compatible);
        if output == "text" {
            let mut builder = Agent::<Game, String>::builder(model);
            if tools {
                builder = builder.tool(roll_dice());
            }
            builder.build().unwrap().run("Go", Game).await.unwrap();
        } else {
            let mut builder =
                Agent::<Game, Json<Verdict>>::builder(model).output_mode(if output == "tool" {
                    OutputMode::Tool
                } else {
                    OutputMode::Native
                });
            if tools {
                builder = builder.tool(roll_dice());
            }
            builder.build().unwrap().run("Go", Game).await.unwrap();
        }
        assert_eq!(
            tool_choices(&server).await,
            vec![expected],
            "{output}, tools: {tools}"
        );
    }
}

#[tokio::test]
async fn a_forced_tool_on_a_text_agent_applies_once_so_the_run_can_finish() {
    for choice in [ToolChoice::Required, ToolChoice::Tool("roll_dice".into())] {
        let server = serve(
            "/v1/chat/completions",
            vec![
                json_ok(calls("roll_dice", r#"{"n": 2}"#)),
                json_ok(says("You rolled 6.")),
            ],
        )
        .await;
        let model = OpenAiModel::builder("m")
            .base_url(format!("{}/v1", server.uri()))
            .settings(ModelSettings::default().tool_choice(choice.clone()))
            .build()
            .unwrap();
        let agent = Agent::<Game, String>::builder(model)
            .tool(roll_dice())
            .max_turns(3)
            .build()
            .unwrap();

        let result = agent.run("Roll", Game).await.unwrap();

        assert_eq!(result.output, "You rolled 6.");
        let first = match &choice {
            ToolChoice::Required => json!("required"),
            _ => json!({"type": "function", "function": {"name": "roll_dice"}}),
        };
        assert_eq!(tool_choices(&server).await, vec![Some(first), None]);
    }
}

#[tokio::test]
async fn no_tool_calls_with_an_output_tool_forces_the_output_tool() {
    let server = serve(
        "/v1/chat/completions",
        vec![json_ok(calls(
            "final_result",
            r#"{"winner": "Ann", "score": 1}"#,
        ))],
    )
    .await;
    let model = OpenAiModel::builder("m")
        .base_url(format!("{}/v1", server.uri()))
        .settings(ModelSettings::default().tool_choice(ToolChoice::None))
        .build()
        .unwrap();
    let agent = Agent::<Game, Json<Verdict>>::builder(model)
        .tool(roll_dice())
        .build()
        .unwrap();

    agent.run("Go", Game).await.unwrap();

    assert_eq!(
        tool_choices(&server).await,
        vec![Some(
            json!({"type": "function", "function": {"name": "final_result"}})
        )]
    );
}

#[tokio::test]
async fn anthropic_derives_its_tool_choice_the_same_way() {
    fn message(content: Value, stop: &str) -> Value {
        json!({"id": "m", "type": "message", "role": "assistant", "model": "claude", "content": content,
               "stop_reason": stop, "usage": {"input_tokens": 1, "output_tokens": 1}})
    }
    // Output tool: any tool call is required.
    let server = serve(
        "/v1/messages",
        vec![json_ok(message(
            json!([{"type": "tool_use", "id": "t1", "name": "final_result", "input": {"winner": "Ann", "score": 1}}]),
            "tool_use",
        ))],
    )
    .await;
    let model = AnthropicModel::builder("claude")
        .api_key("sk-ant-0123456789")
        .base_url(format!("{}/v1", server.uri()))
        .build()
        .unwrap();
    Agent::<Game, Json<Verdict>>::builder(model)
        .tool(roll_dice())
        .build()
        .unwrap()
        .run("Go", Game)
        .await
        .unwrap();
    assert_eq!(
        tool_choices(&server).await,
        vec![Some(json!({"type": "any"}))]
    );

    // Text output with a forced tool: forced once, then free, and the run finishes.
    let server = serve(
        "/v1/messages",
        vec![
            json_ok(message(
                json!([{"type": "tool_use", "id": "t1", "name": "roll_dice", "input": {"n": 2}}]),
                "tool_use",
            )),
            json_ok(message(json!([{"type": "text", "text": "6"}]), "end_turn")),
        ],
    )
    .await;
    let model = AnthropicModel::builder("claude")
        .api_key("sk-ant-0123456789")
        .base_url(format!("{}/v1", server.uri()))
        .settings(ModelSettings::default().tool_choice(ToolChoice::Required))
        .build()
        .unwrap();
    let result = Agent::<Game, String>::builder(model)
        .tool(roll_dice())
        .build()
        .unwrap()
        .run("Go", Game)
        .await
        .unwrap();
    assert_eq!(result.output, "6");
    assert_eq!(
        tool_choices(&server).await,
        vec![Some(json!({"type": "any"})), None]
    );
}

#[tokio::test]
async fn llama_cpp_bodies_are_read_and_its_named_choice_goes_as_required() {
    let server = serve(
        "/v1/chat/completions",
        vec![
            // A grammar mismatch is a 500: retried like any server error.
            ResponseTemplate::new(500).set_body_json(fixture("llama-cpp-grammar-500.json")),
            json_ok(fixture("llama-cpp-tool-call.json")),
            json_ok(fixture("llama-cpp-tool-call-no-id.json")),
            json_ok(fixture("llama-cpp-text.json")),
        ],
    )
    .await;
    let model = OpenAiModel::builder("qwen2.5-7b-instruct")
        .base_url(format!("{}/v1", server.uri()))
        .profile(ServerProfile::LlamaCpp)
        .settings(ModelSettings::default().tool_choice(ToolChoice::Tool("roll_dice".into())))
        .http(fast_retries())
        .build()
        .unwrap();
    let agent = Agent::<Game, String>::builder(model)
        .tool(roll_dice())
        .build()
        .unwrap();

    let result = agent.run("Roll twice", Game).await.unwrap();

    assert_eq!(result.output, "You rolled 6.");
    let responses: Vec<_> = result
        .messages
        .iter()
        .filter_map(|message| message.as_response())
        .collect();
    // `content: ""` is no text part; the 32-character id is kept; a missing one is minted.
    assert_eq!(
        responses[0].parts,
        vec![call(
            "roll_dice",
            r#"{"n":2}"#,
            "Hx7mVbq3PzL0aWc2kYtR9sNdEfGu1iJo"
        )]
    );
    let minted = responses[1].tool_calls().next().unwrap();
    assert!(!minted.tool_call_id.is_empty());
    assert_ne!(minted.tool_call_id, "Hx7mVbq3PzL0aWc2kYtR9sNdEfGu1iJo");
    assert_eq!(result.usage.input_tokens, 312 + 298 + 350);
    let sent = bodies(&server).await;
    assert_eq!(sent.len(), 4);
    // The named choice would be read as `auto`; `required` forces the call.
    assert_eq!(sent[0]["tool_choice"], json!("required"));
    assert_eq!(sent[1]["tool_choice"], json!("required"));
    assert!(sent[2].get("tool_choice").is_none());
    // The minted id went back with the call and its result.
    assert_eq!(
        sent[3]["messages"][3]["tool_calls"][0]["id"],
        json!(minted.tool_call_id)
    );
    assert_eq!(
        sent[3]["messages"][4]["tool_call_id"],
        json!(minted.tool_call_id)
    );
}

#[tokio::test]
async fn a_llama_cpp_grammar_error_that_persists_names_the_server_message() {
    let grammar =
        || ResponseTemplate::new(500).set_body_json(fixture("llama-cpp-grammar-500.json"));
    let server = serve(
        "/v1/chat/completions",
        vec![grammar(), grammar(), grammar()],
    )
    .await;
    let agent = Agent::<Game, String>::builder(local(&server, ServerProfile::LlamaCpp))
        .tool(roll_dice())
        .build()
        .unwrap();

    let error = agent.run("Roll", Game).await.unwrap_err();

    let Some(ModelError::Http {
        status, message, ..
    }) = error.model_error()
    else {
        panic!("{error:?}");
    };
    assert_eq!(*status, 500);
    assert!(
        message.starts_with("Failed to parse input at pos 11"),
        "{message}"
    );
}

#[tokio::test]
async fn vllm_gets_the_one_output_tool_named_instead_of_required() {
    let server = serve(
        "/v1/chat/completions",
        vec![json_ok(fixture("vllm-tool-call.json"))],
    )
    .await;
    let agent = Agent::<Game, Json<Verdict>>::builder(local(&server, ServerProfile::Vllm))
        .build()
        .unwrap();

    let result = agent.run("Who won?", Game).await.unwrap();

    assert_eq!(result.output.winner, "Bob");
    assert_eq!(
        tool_choices(&server).await,
        vec![Some(
            json!({"type": "function", "function": {"name": "final_result"}})
        )]
    );

    // With function tools beside it nothing is forced: vLLM would refuse `required`.
    let server = serve(
        "/v1/chat/completions",
        vec![json_ok(fixture("vllm-tool-call.json"))],
    )
    .await;
    let agent = Agent::<Game, Json<Verdict>>::builder(local(&server, ServerProfile::Vllm))
        .tool(roll_dice())
        .build()
        .unwrap();
    agent.run("Who won?", Game).await.unwrap();
    assert_eq!(tool_choices(&server).await, vec![None]);
}

#[tokio::test]
async fn vllm_errors_at_the_top_level_are_read() {
    let server = serve(
        "/v1/chat/completions",
        vec![ResponseTemplate::new(400).set_body_json(fixture("vllm-required-400.json"))],
    )
    .await;
    let agent = Agent::<Game, Json<Verdict>>::builder(local(&server, ServerProfile::Compatible))
        .tool(roll_dice())
        .build()
        .unwrap();

    let error = agent.run("Who won?", Game).await.unwrap_err();

    let Some(ModelError::Http { message, .. }) = error.model_error() else {
        panic!("{error:?}");
    };
    assert!(
        message.contains("`tool_choice` must either be a named tool"),
        "{message}"
    );
    assert!(!message.contains("BadRequestError"), "{message}");
}

#[tokio::test]
async fn ollama_bodies_are_read() {
    let server = serve(
        "/v1/chat/completions",
        vec![
            json_ok(fixture("ollama-tool-call.json")),
            json_ok(fixture("ollama-text.json")),
        ],
    )
    .await;
    let agent = Agent::<Game, String>::builder(local(&server, ServerProfile::Ollama))
        .tool(roll_dice())
        .build()
        .unwrap();

    let result = agent.run("Roll", Game).await.unwrap();

    assert_eq!(result.output, "You rolled 6.");
    assert_eq!(
        result.messages[1].as_response().unwrap().parts,
        vec![call("roll_dice", r#"{"n":2}"#, "call_k3v9x2ab")]
    );
    assert_eq!(
        result.messages[2],
        request(vec![tool_return("roll_dice", "call_k3v9x2ab", json!(6))])
    );
}

#[tokio::test]
async fn reasoning_content_is_kept_as_thinking_and_never_sent_back() {
    let reasoning = completion(
        json!({"role": "assistant", "reasoning_content": "Roll two.", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "roll_dice", "arguments": "{\"n\": 2}"}}
        ]}),
        "tool_calls",
    );
    let server = serve(
        "/v1/chat/completions",
        vec![json_ok(reasoning), json_ok(says("6"))],
    )
    .await;
    let agent = Agent::<Game, String>::builder(local(&server, ServerProfile::Vllm))
        .tool(roll_dice())
        .build()
        .unwrap();

    let result = agent.run("Roll", Game).await.unwrap();

    let first = result.messages[1].as_response().unwrap();
    assert!(matches!(
        &first.parts[0],
        golem::model::ResponsePart::Thinking(thinking) if thinking.content == "Roll two."
    ));
    assert_eq!(
        bodies(&server).await[1]["messages"][1],
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "roll_dice", "arguments": "{\"n\": 2}"}}
        ]})
    );
}

#[tokio::test]
async fn a_server_that_asks_for_its_reasoning_back_gets_it_on_the_call_it_led_to() {
    // DeepSeek's thinking mode: the reasoning of a tool call's turn must come back.
    let mut reasoning = completion(
        json!({"role": "assistant", "reasoning_content": "Roll two.", "content": "", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "roll_dice", "arguments": "{\"n\": 2}"}}
        ]}),
        "tool_calls",
    );
    reasoning["usage"] = json!({
        "prompt_tokens": 120, "completion_tokens": 30,
        "prompt_cache_hit_tokens": 96, "prompt_cache_miss_tokens": 24
    });
    let server = serve(
        "/v1/chat/completions",
        vec![json_ok(reasoning), json_ok(says("6"))],
    )
    .await;
    let model = reasoning_back(&server);
    let agent = Agent::<Game, String>::builder(model)
        .tool(roll_dice())
        .build()
        .unwrap();

    let result = agent.run("Roll", Game).await.unwrap();

    assert_eq!(
        bodies(&server).await[1]["messages"][1],
        json!({"role": "assistant", "content": null, "reasoning_content": "Roll two.", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "roll_dice", "arguments": "{\"n\": 2}"}}
        ]})
    );
    // DeepSeek counts its cache hits in a field of its own.
    assert_eq!(
        result.messages[1]
            .as_response()
            .unwrap()
            .usage
            .cache_read_tokens,
        96
    );
}

#[tokio::test]
async fn reasoning_is_read_under_either_name_whole_and_streamed() {
    // vLLM, Ollama and OpenRouter name it `reasoning`.
    // Beside an empty `reasoning_content`, too.
    let whole = completion(
        json!({"role": "assistant", "reasoning_content": "", "reasoning": "Six, surely.", "content": "6"}),
        "stop",
    );
    let server = serve("/v1/chat/completions", vec![json_ok(whole)]).await;
    let response = local(&server, ServerProfile::Vllm)
        .request(
            &[request(vec![user("Roll")])],
            &RequestParams::text(Vec::new()),
        )
        .await
        .unwrap();
    assert_eq!(
        response.parts,
        [
            ResponsePart::Thinking(ThinkingPart::new("Six, surely.").with_provider("openai")),
            text("6")
        ]
    );

    let streamed = streamed_response(vec![
        delta(
            json!({"role": "assistant", "reasoning_content": "", "reasoning": "Six,"}),
            Value::Null,
        ),
        delta(json!({"reasoning": " surely."}), Value::Null),
        // A `reasoning` that is not text is not read as reasoning, and fails nothing.
        delta(json!({"reasoning": {"effort": "low"}}), Value::Null),
        delta(json!({"content": "6"}), json!("stop")),
    ])
    .await;
    assert_eq!(streamed.parts, response.parts);
}

/// A chat completion chunk whose first choice's delta is `delta`.
fn delta(delta: Value, finish: Value) -> Value {
    json!({"id": "c", "object": "chat.completion.chunk", "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
}

/// The response a model reads from `chunks`, streamed, then `[DONE]`.
async fn streamed_response(chunks: Vec<Value>) -> golem::model::ModelResponse {
    let sse: String = chunks
        .iter()
        .map(|chunk| format!("data: {chunk}\n\n"))
        .chain(["data: [DONE]\n\n".to_owned()])
        .collect();
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(sse, "text/event-stream"))
        .mount(&server)
        .await;
    let model = OpenAiModel::builder("local-model")
        .base_url(format!("{}/v1", server.uri()))
        .stream_usage(false)
        .build()
        .expect("valid model");
    let (messages, params) = (
        [request(vec![user("Roll")])],
        RequestParams::text(Vec::new()),
    );
    let mut events = model.request_stream(&messages, &params);
    let mut streamed = None;
    while let Some(event) = events.next().await {
        if let StreamEvent::Done(done) = event.expect("as served") {
            streamed = Some(done);
        }
    }
    streamed.expect("a response")
}

#[tokio::test]
async fn mistrals_content_chunks_read_as_text_and_reasoning_whole_and_streamed() {
    // Magistral: `content` as a list of chunks, thinking first.
    let whole = completion(
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": [{"type": "text", "text": "Two dice, "}, {"type": "text", "text": "then sum."}]},
            {"type": "text", "text": "Six."}
        ]}),
        "stop",
    );
    let server = serve("/v1/chat/completions", vec![json_ok(whole)]).await;
    let (messages, params) = (
        [request(vec![user("Roll")])],
        RequestParams::text(Vec::new()),
    );
    let response = local(&server, ServerProfile::Compatible)
        .request(&messages, &params)
        .await
        .unwrap();
    assert_eq!(
        response.parts,
        [
            ResponsePart::Thinking(
                ThinkingPart::new("Two dice, then sum.").with_provider("openai")
            ),
            text("Six.")
        ]
    );

    let content = |content: Value, finish: Value| delta(json!({"content": content}), finish);
    let streamed = streamed_response(vec![
        content(
            json!([{"type": "thinking", "thinking": [{"type": "text", "text": "Two dice, "}]}]),
            Value::Null,
        ),
        content(
            json!([{"type": "thinking", "thinking": [{"type": "text", "text": "then sum."}]}]),
            Value::Null,
        ),
        content(json!("Six"), Value::Null),
        content(json!([{"type": "text", "text": "."}]), json!("stop")),
    ])
    .await;
    assert_eq!(streamed.parts, response.parts);
}

#[tokio::test]
async fn calls_without_reasoning_go_to_such_a_server_with_an_empty_one() {
    // DeepSeek wants the field on every message with calls: another provider's calls (after
    // a fallback) have no reasoning of its own.
    let server = serve("/v1/chat/completions", vec![json_ok(says("6"))]).await;
    let model = reasoning_back(&server);
    let history = [
        request(vec![user("Roll")]),
        golem::model::Message::from(golem::model::ModelResponse::new(vec![
            text("Rolling."),
            call("roll_dice", r#"{"n":2}"#, "toolu_01"),
        ])),
        request(vec![tool_return("roll_dice", "toolu_01", json!(6))]),
        golem::model::Message::from(golem::model::ModelResponse::new(vec![text("Six.")])),
        request(vec![user("Again")]),
    ];

    model
        .request(&history, &RequestParams::text(Vec::new()))
        .await
        .unwrap();

    let sent = &bodies(&server).await[0]["messages"];
    assert_eq!(sent[1]["reasoning_content"], json!(""));
    // A message without calls needs none.
    assert_eq!(sent[3], json!({"role": "assistant", "content": "Six."}));
}

#[tokio::test]
async fn a_refusal_ends_the_run_as_filtered_with_its_words_kept() {
    let refusal = completion(
        json!({"role": "assistant", "content": null, "refusal": "I can't help with that."}),
        "stop",
    );
    let server = serve("/v1/chat/completions", vec![json_ok(refusal)]).await;
    let agent = Agent::<(), String>::builder(local(&server, ServerProfile::Compatible))
        .build()
        .unwrap();

    let error = agent.run("Something forbidden", ()).await.unwrap_err();

    assert_refused(&error, "I can't help with that.");
}
