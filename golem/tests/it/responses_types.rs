//! The Responses API bodies golem sends, and the recorded responses and events its tests
//! answer with, validated against the `openai` Python SDK's own types
//! (`ResponseCreateParams`, `Response`, `ResponseStreamEvent`), so the wire follows
//! OpenAI's published shapes and not only golem's reading of them.
//!
//! The SDK is installed, pinned, by `tests/openai-types/install.sh` under the cargo target
//! directory; a test that cannot install or run it fails.

#![cfg(feature = "openai")]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::dice::*;
use common::sse::{Reply, serve};
use common::streams::*;
use common::*;
use golem::Agent;
use golem::model::openai::responses::OpenAiResponsesModel;
use golem::model::{
    BinaryContent, Message, Model, ModelResponse, ModelSettings, OutputSchema, RequestParams,
    ResponsePart, TextPart, ThinkingPart, ToolCallPart, ToolChoice, ToolContent, UserContent,
};
use golem::output::{Json, OutputMode};
use golem::tool::ToolDefinition;
use serde_json::{Value, json};

/// The first bytes of a PNG file.
const PNG: &[u8] = &[0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A];

/// The repository's root, which holds `tests/openai-types/`.
fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("golem/ is inside the repository")
        .to_path_buf()
}

/// The cargo target directory these tests were built in.
fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is inside the target directory")
        .to_path_buf()
}

/// Validates `items` with the SDK's types, from the file `name` under the target
/// directory: what the validator printed.
fn validate(name: &str, items: &Value) -> String {
    let script = repository().join("tests/openai-types/install.sh");
    let install = Command::new("bash")
        .arg(&script)
        .arg(target_dir())
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", script.display()));
    assert!(
        install.status.success(),
        "{} failed ({}); these tests need python3 with venv and the PyPI registry:\n{}",
        script.display(),
        install.status,
        String::from_utf8_lossy(&install.stderr)
    );
    let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.json"));
    std::fs::write(&file, items.to_string()).expect("the bodies are written");
    let checked = Command::new(target_dir().join("openai-types-venv/bin/python"))
        .arg(repository().join("tests/openai-types/validate.py"))
        .arg(&file)
        .stdin(Stdio::null())
        .output()
        .expect("the SDK's python runs");
    assert!(
        checked.status.success(),
        "golem's Responses JSON does not fit the openai SDK's types:\n{}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
    String::from_utf8_lossy(&checked.stdout).trim().to_owned()
}

/// Every history shape golem sends: prompts, a system prompt, reasoning (encrypted, and
/// by id), the text and calls after it with their item ids, calls and their outputs,
/// rejections of a call and of text, an empty response,
/// media in a prompt (image and PDF, by URL and as bytes) and an image in a call's output.
fn history() -> Vec<Message> {
    vec![
        request(vec![system("Be brief."), user("Roll for Ann and Bob")]),
        Message::from(ModelResponse::new(vec![
            ResponsePart::Thinking(
                ThinkingPart::new("Two rolls.")
                    .with_signature("gAAAAABpLzK1")
                    .with_provider("openai")
                    .with_id("rs_1"),
            ),
            ResponsePart::Text(TextPart::new("Rolling.").with_id("msg_1")),
            ResponsePart::ToolCall(
                ToolCallPart::new("roll_dice", r#"{"n":2}"#, "call_ann").with_id("fc_1"),
            ),
            call("roll_dice", r#"{"n":-1}"#, "call_bob"),
        ])),
        request(vec![
            golem::model::RequestPart::tool_return(
                "roll_dice",
                "call_ann",
                ToolContent::new(6).with(BinaryContent::new(PNG.to_vec(), "image/png")),
            ),
            tool_retry("roll_dice", "call_bob", "n must be positive, got -1"),
        ]),
        response(vec![text("Ann 6.")], 1, 1),
        request(vec![retry("Answer with the verdict.")]),
        Message::from(ModelResponse::default()),
        request(vec![golem::model::RequestPart::user_prompt([
            UserContent::text("Go on, with these"),
            UserContent::image_url("https://example.com/table.png"),
            BinaryContent::new(PNG.to_vec(), "image/png").into(),
            UserContent::document_url("https://example.com/rules.pdf"),
            BinaryContent::new(b"%PDF-1.4".to_vec(), "application/pdf").into(),
        ])]),
    ]
}

fn params() -> RequestParams {
    let mut params = RequestParams::text(vec![ToolDefinition {
        name: "roll_dice".into(),
        description: Some("Roll `n` dice.".into()),
        parameters: json!({
            "type": "object",
            "properties": {"n": {"type": "integer"}, "sides": {"type": "integer", "default": 6}},
            "required": ["n"],
            "additionalProperties": false
        }),
    }]);
    params.instructions = Some("You referee dice games.".into());
    params
}

#[tokio::test]
async fn request_bodies_responses_and_events_fit_the_openai_sdk_types() {
    let answer = json_fixture("responses/text.json");
    let server = serve(vec![
        Reply::json(&answer),
        Reply::json(&answer),
        Reply::json(&answer),
        Reply::json(&answer),
        Reply::sse(&fixture("responses/text.sse"), 256, Duration::ZERO),
    ])
    .await;
    let builder = || {
        OpenAiResponsesModel::builder("o4-mini")
            .api_key("sk-test")
            .base_url(format!("{}/v1", server.uri()))
    };
    let history = history();

    // Stateless, with every setting the API takes and an output tool forced.
    let mut forced = params();
    forced.settings = ModelSettings::default()
        .temperature(0.2)
        .top_p(0.9)
        .max_tokens(512)
        .parallel_tool_calls(false)
        .tool_choice(ToolChoice::Required);
    forced.output_tools.push(ToolDefinition {
        name: "final_result".into(),
        description: None,
        parameters: json!({"type": "object", "properties": {"winner": {"type": "string"}}}),
    });
    forced.allow_text_output = false;
    builder()
        .build()
        .unwrap()
        .request(&history, &forced)
        .await
        .unwrap();
    // Stored, with reasoning settings, strict tools and a named tool.
    let mut named = params();
    named.settings = ModelSettings::default().tool_choice(ToolChoice::Tool("roll_dice".into()));
    builder()
        .store(true)
        .strict_tools(true)
        .reasoning_effort("low")
        .reasoning_summary("auto")
        .build()
        .unwrap()
        .request(&history[..1], &named)
        .await
        .unwrap();
    // Native structured output, tools off.
    let mut native = params();
    native.output_mode = OutputMode::Native;
    native.allow_text_output = false;
    native.output_schema = Some(OutputSchema {
        name: "verdict".into(),
        description: Some("Who won.".into()),
        schema: json!({
            "type": "object",
            "properties": {"winner": {"type": "string"}, "score": {"type": "integer"}},
            "required": ["winner", "score"],
            "additionalProperties": false
        }),
    });
    native.settings = ModelSettings::default().tool_choice(ToolChoice::None);
    builder()
        .build()
        .unwrap()
        .request(&history, &native)
        .await
        .unwrap();
    // An agent's own request, and a streamed one.
    let agent = Agent::<Game, Json<Verdict>>::builder(builder().build().unwrap())
        .tool(roll_dice())
        .build()
        .unwrap();
    let _ = agent.run("Who won?", Game).await;
    let streamed = drive(
        &builder().build().unwrap(),
        &history,
        &RequestParams::text(Vec::new()),
    )
    .await;
    assert!(streamed.end.is_ok());

    let requests = server.bodies();
    assert_eq!(requests.len(), 5);
    assert_eq!(requests[4]["stream"], json!(true));
    let mut responses = Vec::new();
    let mut events = Vec::new();
    for name in ["text", "tools", "incomplete"] {
        responses.push(json_fixture(&format!("responses/{name}.json")));
        for line in fixture(&format!("responses/{name}.sse")).lines() {
            if let Some(data) = line.strip_prefix("data: ") {
                events.push(serde_json::from_str::<Value>(data).unwrap());
            }
        }
    }
    let events_count = events.len();

    let report = validate(
        "responses-sdk-fit",
        &json!({
            "requests": requests,
            "responses": responses,
            "events": events,
        }),
    );

    assert_eq!(
        report,
        format!("5 requests, 3 responses, {events_count} events checked; 0 did not fit")
    );
}

#[tokio::test]
async fn the_validator_refuses_a_body_the_sdk_types_do_not_allow() {
    // A key the API does not have, a reasoning item without its id, a message from a role
    // the API does not know: the check must be able to fail.
    let report = std::panic::catch_unwind(|| {
        validate(
            "responses-sdk-misfit",
            &json!({"requests": [
                {"model": "o4-mini", "input": "Hi", "stop": ["END"]},
                {"model": "o4-mini", "input": [{"type": "reasoning", "summary": []}]},
                {"model": "o4-mini", "input": [{"type": "message", "role": "robot", "content": "Hi"}]}
            ]}),
        )
    });
    let message = *report
        .expect_err("the validator refuses them")
        .downcast::<String>()
        .expect("an assertion message");
    assert!(
        message.contains("3 requests, 0 responses, 0 events checked; 3 did not fit"),
        "{message}"
    );
    assert!(message.contains("request[0]"), "{message}");
    assert!(
        message.contains("stop\n  Extra inputs are not permitted"),
        "{message}"
    );
}
