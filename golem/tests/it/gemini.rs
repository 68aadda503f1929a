//! The Gemini provider against a real HTTP server on loopback, answering with responses of
//! the shape Google documents; every request body golem sends, and every response the
//! server gives, is validated against Google's official Python SDK types (`google-genai`).

#![cfg(feature = "gemini")]

use crate::common;

use std::error::Error as _;
use std::time::Duration;

use common::dice::*;
use common::gemini::validate;
use common::http::{bodies, first_header, json_ok, serve};
use common::*;
use golem::model::gemini::GeminiModel;
use golem::model::http::{HttpSettings, RetryPolicy};
use golem::model::{
    FinishReason, Model, ModelError, ModelSettings, ProviderError, ProviderPart, RequestParams,
    RequestUsage, ResponsePart, ThinkingPart, ToolChoice,
};
use golem::output::{Json, OutputMode};
use golem::{Agent, Stage};
use serde_json::{Value, json};
use wiremock::{MockServer, ResponseTemplate};

const KEY: &str = "AIzaSyTest-0123456789abcdefghijklmno";
const ROUTE: &str = "/v1beta/models/gemini-2.5-flash:generateContent";

fn model(server: &MockServer) -> GeminiModel {
    model_named(server, "gemini-2.5-flash")
}

/// The Gemini 3 model these tests use, and its route.
const GEMINI_3: &str = "gemini-3-flash-preview";
const ROUTE_3: &str = "/v1beta/models/gemini-3-flash-preview:generateContent";

fn model_named(server: &MockServer, name: &str) -> GeminiModel {
    GeminiModel::builder(name)
        .api_key(KEY)
        .base_url(format!("{}/v1beta", server.uri()))
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

/// A `generateContent` response as Gemini sends it.
fn generated(id: &str, parts: Value, finish: &str, prompt: u64, candidates: u64) -> Value {
    json!({
        "candidates": [{
            "content": {"role": "model", "parts": parts},
            "finishReason": finish,
            "index": 0
        }],
        "usageMetadata": {
            "promptTokenCount": prompt,
            "candidatesTokenCount": candidates,
            "totalTokenCount": prompt + candidates,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}]
        },
        "modelVersion": "gemini-2.5-flash",
        "responseId": id
    })
}

fn function_call(name: &str, args: Value) -> Value {
    json!({"functionCall": {"name": name, "args": args}})
}

/// Serves `responses` and checks them against the SDK's types first.
async fn serve_checked(responses: Vec<Value>) -> MockServer {
    validate(&[], &responses);
    serve(ROUTE, responses.into_iter().map(json_ok).collect()).await
}

#[tokio::test]
async fn a_full_self_correction_exchange_sends_exactly_the_documented_json() {
    let server = serve_checked(vec![
        generated(
            "resp-1",
            json!([{"text": "Rolling."}, function_call("roll_dice", json!({"n": -1}))]),
            "STOP",
            400,
            50,
        ),
        generated(
            "resp-2",
            json!([function_call("roll_dice", json!({"n": 2}))]),
            "STOP",
            480,
            40,
        ),
        generated(
            "resp-3",
            json!([function_call(
                "final_result",
                json!({"winner": "Ann", "score": -6})
            )]),
            "STOP",
            520,
            45,
        ),
        generated(
            "resp-4",
            json!([function_call(
                "final_result",
                json!({"winner": "Ann", "score": 6})
            )]),
            "STOP",
            600,
            45,
        ),
    ])
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
    validate(&sent, &[]);
    let tools = json!([{"functionDeclarations": [
        {
            "name": "roll_dice",
            "description": "Roll `n` dice and return their total.",
            "parameters": {
                "type": "OBJECT",
                "properties": {"n": {"type": "INTEGER", "description": "How many dice to roll."}},
                "required": ["n"]
            }
        },
        {
            "name": "final_result",
            "description": "A verdict on the game.",
            "parameters": {
                "type": "OBJECT",
                "description": "A verdict on the game.",
                "properties": {"winner": {"type": "STRING"}, "score": {"type": "INTEGER", "minimum": 0}},
                "required": ["winner", "score"]
            }
        }
    ]}]);
    // Gemini sends no call ids: the run gives each call one unique in the history.
    let ids: Vec<String> = result
        .messages
        .iter()
        .filter_map(|message| message.as_response())
        .flat_map(|response| response.tool_calls())
        .map(|call| call.tool_call_id.clone())
        .collect();
    assert_eq!(ids, ["call_1_1", "call_3_0", "call_5_0", "call_7_0"]);
    assert_eq!(
        sent[3],
        json!({
            "systemInstruction": {"parts": [{"text": "You referee dice games."}]},
            "contents": [
                {"role": "user", "parts": [{"text": "Roll two dice for Ann."}]},
                {"role": "model", "parts": [
                    {"text": "Rolling."},
                    {"functionCall": {"name": "roll_dice", "args": {"n": -1}, "id": "call_1_1"}}
                ]},
                {"role": "user", "parts": [
                    {"functionResponse": {"name": "roll_dice", "id": "call_1_1", "response": {"error": feedback("n must be positive, got -1")}}}
                ]},
                {"role": "model", "parts": [
                    {"functionCall": {"name": "roll_dice", "args": {"n": 2}, "id": "call_3_0"}}
                ]},
                {"role": "user", "parts": [
                    {"functionResponse": {"name": "roll_dice", "id": "call_3_0", "response": {"result": 6}}}
                ]},
                {"role": "model", "parts": [
                    {"functionCall": {"name": "final_result", "args": {"winner": "Ann", "score": -6}, "id": "call_5_0"}}
                ]},
                {"role": "user", "parts": [
                    {"functionResponse": {"name": "final_result", "id": "call_5_0", "response": {"error": feedback(
                        "invalid output: at `score`: invalid value: integer `-6`, expected u32 at line 1 column 26"
                    )}}}
                ]}
            ],
            "tools": tools,
            "toolConfig": {"functionCallingConfig": {"mode": "ANY"}},
            "generationConfig": {"maxOutputTokens": 1024}
        })
    );
    assert_eq!(
        first_header(&server, "x-goog-api-key").await.as_deref(),
        Some(KEY)
    );
    assert_eq!(first_header(&server, "authorization").await, None);
    let first = result.messages[1].as_response().unwrap();
    assert_eq!(first.provider_response_id.as_deref(), Some("resp-1"));
    assert_eq!(first.model_name.as_deref(), Some("gemini-2.5-flash"));
    assert_eq!(first.finish_reason, Some(FinishReason::ToolCall));
    assert_eq!(result.usage.requests, 4);
    assert_eq!(result.usage.input_tokens, 400 + 480 + 520 + 600);
    assert_eq!(result.usage.output_tokens, 50 + 40 + 45 + 45);
    assert_eq!(result.usage.tool_calls, 2);
}

#[tokio::test]
async fn thought_signatures_are_kept_and_go_back_on_the_parts_they_came_on() {
    let server = serve_checked(vec![
        generated(
            "resp-1",
            json!([
                {"text": "Two dice, then the verdict.", "thought": true, "thoughtSignature": "c2lnLXRob3VnaHQ="},
                {"functionCall": {"name": "roll_dice", "args": {"n": 2}}, "thoughtSignature": "c2lnLWNhbGw="}
            ]),
            "STOP",
            40,
            12,
        ),
        generated(
            "resp-2",
            json!([{"text": "Ann wins with 6.", "thoughtSignature": "c2lnLXRleHQ="}]),
            "STOP",
            70,
            8,
        ),
    ])
    .await;
    let agent = Agent::<Game, String>::builder(model(&server))
        .tool(roll_dice())
        .build()
        .unwrap();

    let result = agent.run("Roll two dice for Ann.", Game).await.unwrap();

    assert_eq!(result.output, "Ann wins with 6.");
    let signature = |signature: &str| {
        ResponsePart::Thinking(
            ThinkingPart::new("")
                .with_signature(signature)
                .with_provider("gemini"),
        )
    };
    assert_eq!(
        result.messages[1].as_response().unwrap().parts,
        [
            ResponsePart::Thinking(
                ThinkingPart::new("Two dice, then the verdict.")
                    .with_signature("c2lnLXRob3VnaHQ=")
                    .with_provider("gemini")
            ),
            call("roll_dice", r#"{"n":2}"#, "call_1_1"),
            signature("c2lnLWNhbGw="),
        ]
    );
    assert_eq!(
        result.messages[3].as_response().unwrap().parts,
        [text("Ann wins with 6."), signature("c2lnLXRleHQ=")]
    );
    let sent = bodies(&server).await;
    validate(&sent, &[]);
    assert_eq!(
        sent[1]["contents"][1],
        json!({"role": "model", "parts": [
            {"text": "Two dice, then the verdict.", "thought": true, "thoughtSignature": "c2lnLXRob3VnaHQ="},
            {"functionCall": {"name": "roll_dice", "args": {"n": 2}, "id": "call_1_1"}, "thoughtSignature": "c2lnLWNhbGw="}
        ]})
    );
}

#[tokio::test]
async fn answers_follow_the_order_of_the_calls_and_other_providers_reasoning_stays_home() {
    let server = serve_checked(vec![generated(
        "resp-1",
        json!([{"text": "Both done."}]),
        "STOP",
        9,
        3,
    )])
    .await;
    let messages = [
        request(vec![system("Be brief."), user("Roll and flip.")]),
        golem::model::Message::from(golem::model::ModelResponse::new(vec![
            ResponsePart::Thinking(
                ThinkingPart::new("Anthropic's thoughts.")
                    .with_signature("anthropic-signature")
                    .with_provider("anthropic"),
            ),
            call("roll_dice", r#"{"n":1}"#, "c1"),
            call("flip", "not json", "c2"),
        ])),
        request(vec![
            tool_return("flip", "c2", json!({"side": "heads"})),
            tool_retry("roll_dice", "c1", "too few"),
            user("And?"),
        ]),
    ];
    let mut params = RequestParams::text(Vec::new());
    params.instructions = Some("You play games.".into());

    let response = model(&server).request(&messages, &params).await.unwrap();

    assert_eq!(response.parts, [text("Both done.")]);
    let sent = bodies(&server).await;
    validate(&sent, &[]);
    assert_eq!(
        sent[0],
        json!({
            "systemInstruction": {"parts": [{"text": "You play games.\n\nBe brief."}]},
            "contents": [
                {"role": "user", "parts": [{"text": "Roll and flip."}]},
                {"role": "model", "parts": [
                    {"functionCall": {"name": "roll_dice", "args": {"n": 1}, "id": "c1"}},
                    {"functionCall": {"name": "flip", "args": {}, "id": "c2"}}
                ]},
                {"role": "user", "parts": [
                    {"functionResponse": {"name": "roll_dice", "id": "c1", "response": {"error": feedback("too few")}}},
                    {"functionResponse": {"name": "flip", "id": "c2", "response": {"side": "heads"}}},
                    {"text": "And?"}
                ]}
            ],
            "generationConfig": {"maxOutputTokens": 1024}
        })
    );
}

#[tokio::test]
async fn gemini_3_takes_calls_no_gemini_model_signed_with_googles_signature_for_them() {
    let reply = || generated("resp-1", json!([{"text": "Done."}]), "STOP", 9, 3);
    validate(&[], &[reply()]);
    let server = serve(ROUTE_3, vec![json_ok(reply())]).await;
    let older = serve(ROUTE, vec![json_ok(reply())]).await;
    // Calls another provider made, then calls Gemini signed.
    let messages = [
        request(vec![user("Roll twice.")]),
        golem::model::Message::from(golem::model::ModelResponse::new(vec![
            call("roll_dice", r#"{"n":1}"#, "c1"),
            call("roll_dice", r#"{"n":2}"#, "c2"),
        ])),
        request(vec![
            tool_return("roll_dice", "c1", json!(4)),
            tool_return("roll_dice", "c2", json!(7)),
        ]),
        golem::model::Message::from(golem::model::ModelResponse::new(vec![
            call("roll_dice", r#"{"n":3}"#, "c3"),
            ResponsePart::Thinking(
                ThinkingPart::new("")
                    .with_signature("c2lnLTM=")
                    .with_provider("gemini"),
            ),
        ])),
        request(vec![tool_return("roll_dice", "c3", json!(9))]),
    ];
    let params = RequestParams::text(Vec::new());

    model_named(&server, GEMINI_3)
        .request(&messages, &params)
        .await
        .unwrap();
    // Before Gemini 3, signatures are not checked: none is made up.
    model(&older).request(&messages, &params).await.unwrap();

    let sent = bodies(&server).await;
    validate(&sent, &[]);
    assert_eq!(
        sent[0]["contents"][1]["parts"],
        json!([
            {
                "functionCall": {"name": "roll_dice", "args": {"n": 1}, "id": "c1"},
                "thoughtSignature": "skip_thought_signature_validator"
            },
            {"functionCall": {"name": "roll_dice", "args": {"n": 2}, "id": "c2"}}
        ])
    );
    assert_eq!(
        sent[0]["contents"][3]["parts"],
        json!([{
            "functionCall": {"name": "roll_dice", "args": {"n": 3}, "id": "c3"},
            "thoughtSignature": "c2lnLTM="
        }])
    );
    assert_eq!(
        bodies(&older).await[0]["contents"][1]["parts"][0],
        json!({"functionCall": {"name": "roll_dice", "args": {"n": 1}, "id": "c1"}})
    );
}

#[tokio::test]
async fn before_gemini_3_native_output_beside_tools_is_refused_before_sending() {
    let server = serve(ROUTE, Vec::new()).await;
    let agent = Agent::<Game, Json<Verdict>>::builder(model(&server))
        .tool(roll_dice())
        .output_mode(OutputMode::Native)
        .build()
        .unwrap();

    let error = agent.run("Who won?", Game).await.unwrap_err();

    assert_eq!(error.to_string(), "the model request failed");
    assert_eq!(
        std::error::Error::source(&error).unwrap().to_string(),
        "Gemini gemini-2.5-flash takes no native output beside function tools \
         (Gemini 3 does): use OutputMode::Tool or OutputMode::Prompted, or a Gemini 3 model"
    );
    assert!(server.received_requests().await.unwrap().is_empty());
}

#[tokio::test]
async fn native_output_sends_a_response_schema_in_geminis_dialect() {
    let server = serve_checked(vec![generated(
        "resp-1",
        json!([{"text": "{\"winner\": \"Ann\", \"score\": 6}"}]),
        "STOP",
        30,
        9,
    )])
    .await;
    let agent = Agent::<(), Json<Verdict>>::builder(model(&server))
        .output_mode(OutputMode::Native)
        .build()
        .unwrap();

    let result = agent.run("Who won?", ()).await.unwrap();

    assert_eq!(
        (result.output.winner.as_str(), result.output.score),
        ("Ann", 6)
    );
    let sent = bodies(&server).await;
    validate(&sent, &[]);
    assert_eq!(
        sent[0],
        json!({
            "contents": [{"role": "user", "parts": [{"text": "Who won?"}]}],
            "generationConfig": {
                "maxOutputTokens": 1024,
                "responseMimeType": "application/json",
                "responseSchema": {
                    "type": "OBJECT",
                    "description": "A verdict on the game.",
                    "properties": {"winner": {"type": "STRING"}, "score": {"type": "INTEGER", "minimum": 0}},
                    "required": ["winner", "score"]
                }
            }
        })
    );
}

/// Scores by player.
#[golem::args]
struct Scores {
    #[allow(dead_code)]
    scores: std::collections::BTreeMap<String, u32>,
}

#[tokio::test]
async fn what_geminis_dialect_cannot_say_goes_as_json_schema() {
    let reply = generated(
        "resp-1",
        json!([{"text": "{\"Ann\": 6, \"Bob\": 9}"}]),
        "STOP",
        30,
        9,
    );
    validate(&[], std::slice::from_ref(&reply));
    let server = serve(ROUTE_3, vec![json_ok(reply)]).await;
    // Maps of scores: Gemini's dialect has no object without properties.
    let record = golem::tool::FunctionTool::new(
        "record",
        |_ctx: golem::RunContext<()>, _scores: Scores| async {
            Ok::<_, golem::ModelRetry>("recorded")
        },
    );
    // Gemini 3 takes native output beside tools.
    let agent = Agent::<(), Json<std::collections::BTreeMap<String, u32>>>::builder(model_named(
        &server, GEMINI_3,
    ))
    .output_mode(OutputMode::Native)
    .tool(record)
    .build()
    .unwrap();

    let result = agent.run("Who scored what?", ()).await.unwrap();

    assert_eq!(result.output.get("Bob"), Some(&9));
    let sent = bodies(&server).await;
    validate(&sent, &[]);
    let declaration = &sent[0]["tools"][0]["functionDeclarations"][0];
    assert_eq!(declaration.get("parameters"), None);
    assert_eq!(
        declaration["parametersJsonSchema"]["properties"]["scores"]["additionalProperties"],
        json!({"type": "integer", "minimum": 0})
    );
    let config = &sent[0]["generationConfig"];
    assert_eq!(config.get("responseSchema"), None);
    assert_eq!(config["responseMimeType"], json!("application/json"));
    assert_eq!(
        config["responseJsonSchema"]["additionalProperties"]["type"],
        json!("integer")
    );
}

#[tokio::test]
async fn safety_stops_and_blocked_prompts_are_content_filter_errors_with_the_verdict_kept() {
    let ratings = json!([{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": true}]);
    let mut stopped = generated("resp-1", json!([{"text": "Step one"}]), "SAFETY", 12, 2);
    stopped["candidates"][0]["safetyRatings"] = ratings.clone();
    let blocked = json!({
        "promptFeedback": {"blockReason": "PROHIBITED_CONTENT", "blockReasonMessage": "The prompt was blocked."},
        "usageMetadata": {"promptTokenCount": 7, "totalTokenCount": 7},
        "modelVersion": "gemini-2.5-flash",
        "responseId": "resp-2"
    });
    let server = serve_checked(vec![stopped, blocked.clone()]).await;
    let agent = Agent::<(), String>::builder(model(&server))
        .build()
        .unwrap();

    for verdict in [
        json!({"safetyRatings": ratings, "finishReason": "SAFETY"}),
        json!({"promptFeedback": blocked["promptFeedback"]}),
    ] {
        let error = agent.run("How do I ...", ()).await.unwrap_err();
        assert_eq!(error.stage(), Stage::Model);
        assert!(
            matches!(error.model_error(), Some(ModelError::ContentFilter)),
            "{error:?}"
        );
        let response = error.messages()[1].as_response().unwrap();
        assert_eq!(response.finish_reason, Some(FinishReason::ContentFilter));
        assert_eq!(
            response.parts.last(),
            Some(&ResponsePart::Provider(ProviderPart::new(
                "gemini",
                json!({ "safetyVerdict": verdict })
            )))
        );
    }
}

#[tokio::test]
async fn the_verdict_is_never_sent_back() {
    let server = serve_checked(vec![generated(
        "resp-1",
        json!([{"text": "ok"}]),
        "STOP",
        1,
        1,
    )])
    .await;
    let messages = [
        request(vec![user("Hi")]),
        golem::model::Message::from(golem::model::ModelResponse::new(vec![
            text("Step one"),
            ResponsePart::Provider(ProviderPart::new(
                "gemini",
                json!({"safetyVerdict": {"finishReason": "SAFETY"}}),
            )),
            ResponsePart::Provider(ProviderPart::new(
                "gemini",
                json!({"executableCode": {"language": "PYTHON", "code": "print(1)"}}),
            )),
        ])),
        request(vec![user("Go on")]),
    ];
    model(&server)
        .request(&messages, &RequestParams::text(Vec::new()))
        .await
        .unwrap();
    let sent = bodies(&server).await;
    validate(&sent, &[]);
    assert_eq!(
        sent[0]["contents"][1],
        json!({"role": "model", "parts": [
            {"text": "Step one"},
            {"executableCode": {"language": "PYTHON", "code": "print(1)"}}
        ]})
    );
}

#[tokio::test]
async fn usage_metadata_fills_the_usage_detail() {
    let mut body = generated("resp-1", json!([{"text": "hi"}]), "STOP", 1000, 20);
    body["usageMetadata"] = json!({
        "promptTokenCount": 1000,
        "cachedContentTokenCount": 600,
        "candidatesTokenCount": 20,
        "thoughtsTokenCount": 80,
        "toolUsePromptTokenCount": 5,
        "totalTokenCount": 1105,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 900}, {"modality": "AUDIO", "tokenCount": 100}],
        "candidatesTokensDetails": [{"modality": "AUDIO", "tokenCount": 4}, {"modality": "TEXT", "tokenCount": 16}]
    });
    let server = serve_checked(vec![body]).await;
    let response = model(&server)
        .request(
            &[request(vec![user("Hi")])],
            &RequestParams::text(Vec::new()),
        )
        .await
        .unwrap();
    assert_eq!(
        response.usage,
        RequestUsage {
            cache_read_tokens: 600,
            reasoning_tokens: 80,
            audio_input_tokens: 100,
            audio_output_tokens: 4,
            ..RequestUsage::new(1005, 100)
        }
    );
}

#[tokio::test]
async fn settings_tool_choice_and_extra_body_shape_the_request() {
    let server = serve_checked(vec![generated(
        "resp-1",
        json!([{"text": "ok"}]),
        "STOP",
        1,
        1,
    )])
    .await;
    let settings = ModelSettings::default()
        .temperature(0.2)
        .top_p(0.9)
        .seed(7)
        .stop_sequences(["END"])
        .parallel_tool_calls(false)
        .tool_choice(ToolChoice::Tool("roll_dice".into()))
        .extra(
            "generationConfig",
            json!({"thinkingConfig": {"includeThoughts": true, "thinkingBudget": 512}}),
        )
        .extra(
            "safetySettings",
            json!([{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_ONLY_HIGH"}]),
        );
    let agent = Agent::<Game, String>::builder(model(&server))
        .tool(roll_dice())
        .model_settings(settings)
        .build()
        .unwrap();

    agent.run("Roll.", Game).await.unwrap();

    let sent = bodies(&server).await;
    validate(&sent, &[]);
    assert_eq!(
        sent[0]["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["roll_dice"]}})
    );
    assert_eq!(
        sent[0]["generationConfig"],
        json!({
            "maxOutputTokens": 1024,
            "temperature": 0.2,
            "topP": 0.9,
            "stopSequences": ["END"],
            "seed": 7,
            "thinkingConfig": {"includeThoughts": true, "thinkingBudget": 512}
        })
    );
    assert_eq!(
        sent[0]["safetySettings"],
        json!([{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_ONLY_HIGH"}])
    );
}

#[tokio::test]
async fn statuses_are_retried_and_errors_carry_googles_message() {
    let server = serve(
        ROUTE,
        vec![
            ResponseTemplate::new(503).set_body_json(
                json!({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}),
            ),
            json_ok(generated("resp-1", json!([{"text": "hi"}]), "STOP", 1, 1)),
        ],
    )
    .await;
    let agent = Agent::<(), String>::builder(model(&server))
        .build()
        .unwrap();
    assert_eq!(agent.run("Hi", ()).await.unwrap().output, "hi");
    assert_eq!(server.received_requests().await.unwrap().len(), 2);

    let server = serve(
        ROUTE,
        vec![ResponseTemplate::new(400).set_body_json(
            json!({"error": {"code": 400, "message": "Invalid JSON payload received.", "status": "INVALID_ARGUMENT"}}),
        )],
    )
    .await;
    let error = Agent::<(), String>::builder(model(&server))
        .build()
        .unwrap()
        .run("Hi", ())
        .await
        .unwrap_err();
    assert_eq!(
        error.source().unwrap().to_string(),
        "gemini answered HTTP 400 after 1 attempt(s): Invalid JSON payload received."
    );

    let server = serve(
        ROUTE,
        vec![ResponseTemplate::new(403).set_body_json(
            json!({"error": {"code": 403, "message": format!("API key {KEY} not valid."), "status": "PERMISSION_DENIED"}}),
        )],
    )
    .await;
    let error = Agent::<(), String>::builder(model(&server))
        .build()
        .unwrap()
        .run("Hi", ())
        .await
        .unwrap_err();
    assert_eq!(
        error.source().unwrap().to_string(),
        "gemini refused the credentials (HTTP 403): API key [redacted] not valid.; check GEMINI_API_KEY"
    );
    assert!(!format!("{error:?} {:?}", model(&server)).contains(KEY));

    // A wrong key, as Gemini answers it: a 400 whose reason says so.
    let server = serve(
        ROUTE,
        vec![ResponseTemplate::new(400).set_body_json(json!({"error": {
            "code": 400,
            "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT",
            "details": [{
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com"
            }]
        }}))],
    )
    .await;
    let error = model(&server)
        .request(
            &[request(vec![user("Hi")])],
            &RequestParams::text(Vec::new()),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(error, ModelError::Auth { status: 400, .. }),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "gemini refused the credentials (HTTP 400): API key not valid. Please pass a valid API key.; check GEMINI_API_KEY"
    );
}

#[tokio::test]
async fn max_tokens_stops_are_truncation_errors_and_odd_bodies_are_invalid_responses() {
    let server = serve(
        ROUTE,
        vec![
            json_ok(generated(
                "resp-1",
                json!([{"text": "Once"}]),
                "MAX_TOKENS",
                5,
                1024,
            )),
            json_ok(
                json!({"candidates": [{"content": {"parts": [{"functionCall": {"args": {}}}]}}]}),
            ),
        ],
    )
    .await;
    let agent = Agent::<(), String>::builder(model(&server))
        .build()
        .unwrap();

    let error = agent.run("Tell a story", ()).await.unwrap_err();
    assert!(matches!(error.model_error(), Some(ModelError::Truncated)));

    let error = agent.run("Tell a story", ()).await.unwrap_err();
    assert_eq!(
        error.source().unwrap().to_string(),
        "gemini sent a response golem cannot read: a `functionCall` part cannot be read: missing field `name`"
    );
}

#[tokio::test]
async fn why_a_response_stopped_short_is_kept_for_the_user_and_never_sent_back() {
    let malformed = json!({
        "candidates": [{
            "content": {"role": "model", "parts": []},
            "finishReason": "MALFORMED_FUNCTION_CALL",
            "finishMessage": "Malformed function call: print(roll_dice(n=two))"
        }],
        "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 0}
    });
    let server = serve_checked(vec![
        malformed,
        generated("resp-2", json!([{"text": "Six."}]), "STOP", 12, 2),
    ])
    .await;
    let model = model(&server);
    let params = RequestParams::text(Vec::new());
    let mut history = vec![request(vec![user("Roll two")])];

    let stopped = model.request(&history, &params).await.unwrap();
    assert_eq!(stopped.finish_reason, Some(FinishReason::Error));
    assert_eq!(
        stopped.parts,
        [ResponsePart::Provider(ProviderPart::new(
            "gemini",
            json!({"stopped": {
                "finishReason": "MALFORMED_FUNCTION_CALL",
                "finishMessage": "Malformed function call: print(roll_dice(n=two))"
            }})
        ))]
    );
    history.push(golem::model::Message::from(stopped));
    history.push(request(vec![retry("Call the tool with a number.")]));
    model.request(&history, &params).await.unwrap();

    // The model's turn holds nothing to send back: the two requests join.
    let sent = bodies(&server).await;
    assert_eq!(sent[1]["contents"].as_array().map(Vec::len), Some(1));
}

#[test]
fn a_missing_key_is_a_clear_error_and_the_presets_name_gemini() {
    let error = GeminiModel::builder("gemini-2.5-flash")
        .build()
        .unwrap_err();
    assert!(matches!(
        error,
        ProviderError::MissingApiKey {
            provider: "gemini",
            env_var: "GEMINI_API_KEY"
        }
    ));
    // Another server (a proxy, a local emulator) needs no key.
    let model = GeminiModel::builder("models/gemini-2.5-flash")
        .base_url("http://127.0.0.1:9/v1beta")
        .build()
        .unwrap();
    assert_eq!(model.name(), "models/gemini-2.5-flash");
    assert_eq!(model.system(), "gemini");
    for preset in ["gemini:gemini-2.5-flash", "google:gemini-2.5-flash"] {
        match golem::model::infer(preset) {
            Ok(model) => assert_eq!(
                (model.name(), model.system()),
                ("gemini-2.5-flash", "gemini")
            ),
            // Without GEMINI_API_KEY or GOOGLE_API_KEY in the environment.
            Err(error) => assert!(
                matches!(
                    error,
                    ProviderError::MissingApiKey {
                        env_var: "GEMINI_API_KEY",
                        ..
                    }
                ),
                "{error}"
            ),
        }
    }
}

/// Marks the child process that [`from_env_reads_google_api_key_else_gemini_api_key`] starts
/// with the environment of one case (a test cannot set variables in its own process:
/// `unsafe_code` is forbidden).
const CHILD: &str = "GOLEM_TEST_GEMINI_FROM_ENV";

#[tokio::test]
async fn from_env_reads_google_api_key_else_gemini_api_key() {
    if std::env::var_os(CHILD).is_some() {
        // The child: one request with what the environment gives.
        let model = GeminiModel::from_env("gemini-2.5-flash").expect("a key in the environment");
        model
            .request(
                &[request(vec![user("Hi")])],
                &RequestParams::text(Vec::new()),
            )
            .await
            .unwrap_or_else(|error| panic!("{error}"));
        return;
    }
    let (gemini, google) = (Some("AIza-from-gemini-0123"), Some("AIza-from-google-0123"));
    // What each variable gives, the key sent, and the variable a refusal names.
    let cases = [
        // Both set: GOOGLE_API_KEY, as Google's SDKs read them.
        (gemini, google, "AIza-from-google-0123", None),
        (None, google, "AIza-from-google-0123", None),
        (gemini, None, "AIza-from-gemini-0123", None),
        // An empty variable is not a key.
        (gemini, Some(" "), "AIza-from-gemini-0123", None),
        (
            gemini,
            google,
            "AIza-from-google-0123",
            Some("GOOGLE_API_KEY"),
        ),
        (
            gemini,
            None,
            "AIza-from-gemini-0123",
            Some("GEMINI_API_KEY"),
        ),
    ];
    for (gemini, google, sent, refused) in cases {
        let server = if refused.is_some() {
            let refusal = json!({"error": {
                "code": 403,
                "message": "API key not valid.",
                "status": "PERMISSION_DENIED"
            }});
            serve(
                ROUTE,
                vec![ResponseTemplate::new(403).set_body_json(refusal)],
            )
            .await
        } else {
            let answer = generated("resp-1", json!([{"text": "hi"}]), "STOP", 1, 1);
            serve_checked(vec![answer]).await
        };
        let mut child = std::process::Command::new(std::env::current_exe().unwrap());
        child
            .args([
                "--exact",
                "gemini::from_env_reads_google_api_key_else_gemini_api_key",
            ])
            .env(CHILD, "1")
            .env("GEMINI_BASE_URL", format!("{}/v1beta", server.uri()))
            .env_remove("GEMINI_API_KEY")
            .env_remove("GOOGLE_API_KEY");
        for (name, value) in [("GEMINI_API_KEY", gemini), ("GOOGLE_API_KEY", google)] {
            if let Some(value) = value {
                child.env(name, value);
            }
        }
        let output = tokio::task::spawn_blocking(move || child.output())
            .await
            .unwrap()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        match refused {
            None => assert!(
                output.status.success() && stdout.contains("1 passed"),
                "{stdout}"
            ),
            Some(env_var) => assert!(
                !output.status.success()
                    && stdout.contains(&format!(
                        "gemini refused the credentials (HTTP 403): API key not valid.; check {env_var}"
                    )),
                "{stdout}"
            ),
        }
        assert_eq!(
            first_header(&server, "x-goog-api-key").await.as_deref(),
            Some(sent)
        );
    }
}

#[tokio::test]
async fn the_request_limit_counts_with_geminis_endpoint_and_refuses_before_sending() {
    let server = MockServer::start().await;
    wiremock::Mock::given(wiremock::matchers::method("POST"))
        .and(wiremock::matchers::path(
            "/v1beta/models/gemini-2.5-flash:countTokens",
        ))
        .respond_with(json_ok(json!({"totalTokens": 1200})))
        .mount(&server)
        .await;
    let agent = Agent::<Game, String>::builder(model(&server))
        .instructions("You referee dice games.")
        .tool(roll_dice())
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
    // Only the count was asked for, about the request golem would have sent.
    let sent = bodies(&server).await;
    assert_eq!(sent.len(), 1);
    let mut request = sent[0]["generateContentRequest"].clone();
    assert_eq!(request["model"].take(), json!("models/gemini-2.5-flash"));
    request.as_object_mut().unwrap().remove("model");
    validate(&[request.clone()], &[]);
    assert_eq!(
        request,
        json!({
            "systemInstruction": {"parts": [{"text": "You referee dice games."}]},
            "contents": [{"role": "user", "parts": [{"text": "Roll two dice"}]}],
            "tools": [{"functionDeclarations": [{
                "name": "roll_dice",
                "description": "Roll `n` dice and return their total.",
                "parameters": request["tools"][0]["functionDeclarations"][0]["parameters"].clone()
            }]}],
            "generationConfig": {"maxOutputTokens": 1024}
        })
    );
    assert_eq!(
        first_header(&server, "x-goog-api-key").await.as_deref(),
        Some(KEY)
    );
    assert_eq!(error.usage().requests, 0);
}
