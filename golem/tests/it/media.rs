//! Images, documents and audio on each wire, against a real HTTP server on loopback: the
//! exact JSON each provider gets for an image URL, image bytes, a PDF, audio where the API
//! takes it and a tool that returns an image; and the typed refusals, with nothing sent.

#![cfg(all(feature = "openai", feature = "anthropic", feature = "gemini"))]

use crate::common;

use common::gemini::validate as validate_gemini;
use common::http::{bodies, json_ok, serve};
use common::*;
use golem::model::anthropic::AnthropicModel;
use golem::model::gemini::GeminiModel;
use golem::model::openai::OpenAiModel;
use golem::model::openai::responses::OpenAiResponsesModel;
use golem::model::{
    BinaryContent, DocumentUrl, ImageUrl, Message, Model, ModelError, ModelResponse, RequestParams,
    RequestPart, ToolContent, UserContent,
};
use golem::{Agent, RunContext};
use serde_json::{Value, json};
use wiremock::MockServer;

/// The first bytes of a PNG file, and their base64.
const PNG: &[u8] = &[0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A];
const PNG_B64: &str = "iVBORw0KGgo=";
/// A PDF's first bytes, and their base64.
const PDF: &[u8] = b"%PDF-1.4";
const PDF_B64: &str = "JVBERi0xLjQ=";
/// A WAV file's first bytes, and their base64.
const WAV: &[u8] = b"RIFF";
const WAV_B64: &str = "UklGRg==";

fn png() -> UserContent {
    BinaryContent::new(PNG.to_vec(), "image/png").into()
}

fn pdf() -> UserContent {
    BinaryContent::new(PDF.to_vec(), "application/pdf").into()
}

fn wav() -> UserContent {
    BinaryContent::new(WAV.to_vec(), "audio/wav").into()
}

/// A prompt with `media` after its text, a call to `chart`, and the chart's answer: an
/// image beside its text.
fn history(media: Vec<UserContent>) -> Vec<Message> {
    let mut prompt = vec![UserContent::text("What do these show?")];
    prompt.extend(media);
    vec![
        request(vec![RequestPart::user_prompt(prompt)]),
        response(vec![call("chart", "{}", "call_1")], 10, 2),
        request(vec![RequestPart::tool_return(
            "chart",
            "call_1",
            ToolContent::new("the chart of March").with(png()),
        )]),
    ]
}

fn params() -> RequestParams {
    RequestParams::text(Vec::new())
}

/// `model`'s refusal of the history whose prompt carries `media`.
async fn refusal(model: &impl Model, media: Vec<UserContent>) -> ModelError {
    model
        .request(&history(media), &params())
        .await
        .expect_err("refused")
}

/// Asserts that `error` is the typed refusal of `content` in message `message`, part
/// `part`, for `reason`.
fn assert_refused(error: ModelError, provider: &str, message: usize, content: &str, reason: &str) {
    let ModelError::UnsupportedContent {
        provider: got_provider,
        message: got_message,
        part,
        content: got_content,
        reason: got_reason,
    } = &error
    else {
        panic!("an UnsupportedContent refusal: {error:?}");
    };
    assert_eq!(
        (
            got_provider.as_str(),
            *got_message,
            *part,
            got_content.as_str(),
            got_reason.as_str()
        ),
        (provider, message, 0, content, reason)
    );
}

// ---------------------------------------------------------------------------------------
// OpenAI Chat Completions

fn openai(server: &MockServer) -> OpenAiModel {
    OpenAiModel::builder("gpt-4o-mini")
        .api_key("sk-test-0123456789abcdef")
        .base_url(format!("{}/v1", server.uri()))
        .build()
        .expect("valid model")
}

fn completion(text: &str) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_732_960_000,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 900, "completion_tokens": 5, "total_tokens": 905}
    })
}

#[tokio::test]
async fn openai_chat_sends_images_pdfs_and_audio_as_content_parts_and_tool_images_after() {
    let server = serve("/v1/chat/completions", vec![json_ok(completion("Dice."))]).await;
    let media = vec![
        UserContent::image_url("https://example.com/table.png"),
        png(),
        pdf(),
        wav(),
    ];
    openai(&server)
        .request(&history(media), &params())
        .await
        .expect("answers");
    let sent = bodies(&server).await;
    assert_eq!(
        sent[0]["messages"],
        json!([
            {"role": "user", "content": [
                {"type": "text", "text": "What do these show?"},
                {"type": "image_url", "image_url": {"url": "https://example.com/table.png"}},
                {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG_B64}")}},
                {"type": "file", "file": {"filename": "document.pdf", "file_data": format!("data:application/pdf;base64,{PDF_B64}")}},
                {"type": "input_audio", "input_audio": {"data": WAV_B64, "format": "wav"}},
            ]},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "chart", "arguments": "{}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "the chart of March"},
            {"role": "user", "content": [
                {"type": "text", "text": "The tool `chart` returned this for the call call_1:"},
                {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG_B64}")}},
            ]},
        ])
    );
}

#[tokio::test]
async fn openai_chat_sends_a_tools_image_after_the_last_tool_message_a_rejected_calls_included() {
    let server = serve("/v1/chat/completions", vec![json_ok(completion("Dice."))]).await;
    // Two calls in one response: the first returns an image, the second is rejected.
    let history = vec![
        request(vec![RequestPart::user_prompt("Chart it, then roll.")]),
        response(
            vec![call("chart", "{}", "call_1"), call("roll", "{}", "call_2")],
            10,
            2,
        ),
        request(vec![
            RequestPart::tool_return(
                "chart",
                "call_1",
                ToolContent::new("the chart of March").with(png()),
            ),
            RequestPart::tool_retry("roll", "call_2", "n must be positive"),
        ]),
    ];
    openai(&server)
        .request(&history, &params())
        .await
        .expect("answers");
    let sent = bodies(&server).await;
    let shape: Vec<(&str, Option<&str>)> = sent[0]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .map(|message| {
            (
                message["role"].as_str().expect("a role"),
                message["tool_call_id"].as_str(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            ("user", None),
            ("assistant", None),
            ("tool", Some("call_1")),
            ("tool", Some("call_2")),
            ("user", None),
        ]
    );
    assert_eq!(
        sent[0]["messages"][4]["content"][1],
        json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG_B64}")}})
    );
}

#[tokio::test]
async fn openai_chat_refuses_a_document_url_and_an_unknown_image_type_before_sending() {
    let server = serve("/v1/chat/completions", vec![json_ok(completion("Dice."))]).await;
    let model = openai(&server);
    let error = model
        .request(
            &history(vec![UserContent::document_url(
                "https://example.com/rules.pdf",
            )]),
            &params(),
        )
        .await
        .expect_err("refused");
    assert_refused(
        error,
        "openai",
        0,
        "a document URL (https://example.com/rules.pdf)",
        "openai Chat Completions takes documents as bytes only: load the file and send it as \
         BinaryContent",
    );
    let error = refusal(
        &model,
        vec![BinaryContent::new(vec![0u8; 4], "image/tiff").into()],
    )
    .await;
    assert_refused(
        error,
        "openai",
        0,
        "image/tiff bytes (4 bytes)",
        "openai takes images of the types image/png, image/jpeg, image/gif, image/webp in a message",
    );
    assert!(bodies(&server).await.is_empty(), "nothing was sent");
}

/// Draws the chart of a month.
#[golem::tool]
async fn chart(_ctx: &RunContext<()>, month: String) -> ToolContent {
    ToolContent::new(format!("the chart of {month}"))
        .with(BinaryContent::new(PNG.to_vec(), "image/png"))
}

#[tokio::test]
async fn a_tool_returning_an_image_reaches_the_model_through_an_agent() {
    let server = serve(
        "/v1/chat/completions",
        vec![
            json_ok(json!({
                "id": "chatcmpl-0",
                "object": "chat.completion",
                "created": 1_732_960_000,
                "model": "gpt-4o-mini-2024-07-18",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "chart", "arguments": "{\"month\":\"March\"}"}}
                ]}, "finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}
            })),
            json_ok(completion("Sales went up.")),
        ],
    )
    .await;
    let agent = Agent::<(), String>::builder(openai(&server))
        .tool(Chart)
        .build()
        .expect("builds");
    let result = agent.run("How did March go?", ()).await.expect("answers");
    assert_eq!(result.output, "Sales went up.");
    let Message::Request(answer) = &result.messages[2] else {
        panic!("the tool's answer: {:?}", result.messages[2]);
    };
    let RequestPart::ToolReturn(part) = &answer.parts[0] else {
        panic!("a tool return: {:?}", answer.parts);
    };
    assert_eq!(part.content, json!("the chart of March"));
    assert_eq!(part.media, [png()]);
    let sent = bodies(&server).await;
    assert_eq!(
        sent[1]["messages"].as_array().expect("messages")[2..],
        [
            json!({"role": "tool", "tool_call_id": "call_1", "content": "the chart of March"}),
            json!({"role": "user", "content": [
                {"type": "text", "text": "The tool `chart` returned this for the call call_1:"},
                {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{PNG_B64}")}},
            ]}),
        ]
    );
}

// ---------------------------------------------------------------------------------------
// OpenAI Responses

fn responses(server: &MockServer) -> OpenAiResponsesModel {
    OpenAiResponsesModel::builder("o4-mini")
        .api_key("sk-test-0123456789abcdef")
        .base_url(format!("{}/v1", server.uri()))
        .build()
        .expect("valid model")
}

fn responses_answer(text: &str) -> Value {
    json!({
        "id": "resp_1",
        "object": "response",
        "created_at": 1_764_720_000,
        "status": "completed",
        "model": "o4-mini-2025-04-16",
        "output": [{
            "id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}]
        }],
        "usage": {
            "input_tokens": 900, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 905
        }
    })
}

#[tokio::test]
async fn responses_sends_input_images_and_files_and_images_in_a_call_output() {
    let server = serve("/v1/responses", vec![json_ok(responses_answer("Dice."))]).await;
    let media = vec![
        UserContent::image_url("https://example.com/table.png"),
        png(),
        UserContent::document_url("https://example.com/rules.pdf"),
        pdf(),
        UserContent::document_url(format!("data:application/pdf;base64,{PDF_B64}")),
    ];
    responses(&server)
        .request(&history(media), &params())
        .await
        .expect("answers");
    let sent = bodies(&server).await;
    assert_eq!(
        sent[0]["input"],
        json!([
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "What do these show?"},
                {"type": "input_image", "image_url": "https://example.com/table.png", "detail": "auto"},
                {"type": "input_image", "image_url": format!("data:image/png;base64,{PNG_B64}"), "detail": "auto"},
                {"type": "input_file", "file_url": "https://example.com/rules.pdf"},
                {"type": "input_file", "filename": "document.pdf", "file_data": format!("data:application/pdf;base64,{PDF_B64}")},
                // A data: URL goes as the file's data too.
                {"type": "input_file", "filename": "document.pdf", "file_data": format!("data:application/pdf;base64,{PDF_B64}")},
            ]},
            {"type": "function_call", "call_id": "call_1", "name": "chart", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": [
                {"type": "input_text", "text": "the chart of March"},
                {"type": "input_image", "image_url": format!("data:image/png;base64,{PNG_B64}"), "detail": "auto"},
            ]},
        ])
    );
}

#[tokio::test]
async fn responses_refuses_audio_before_sending() {
    let server = serve("/v1/responses", vec![json_ok(responses_answer("Dice."))]).await;
    let error = responses(&server)
        .request(&history(vec![wav()]), &params())
        .await
        .expect_err("refused");
    assert_refused(
        error,
        "openai",
        0,
        "audio/wav bytes (4 bytes)",
        "openai takes no audio in a message",
    );
    assert!(bodies(&server).await.is_empty(), "nothing was sent");
}

// ---------------------------------------------------------------------------------------
// Anthropic Messages

fn anthropic(server: &MockServer) -> AnthropicModel {
    AnthropicModel::builder("claude-sonnet-4-5")
        .api_key("sk-ant-api03-test-0123456789")
        .base_url(format!("{}/v1", server.uri()))
        .build()
        .expect("valid model")
}

fn anthropic_answer(text: &str) -> Value {
    json!({
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": null,
        "usage": {"input_tokens": 900, "output_tokens": 5}
    })
}

#[tokio::test]
async fn anthropic_sends_image_and_document_blocks_and_images_inside_tool_results() {
    let server = serve("/v1/messages", vec![json_ok(anthropic_answer("Dice."))]).await;
    let media = vec![
        UserContent::image_url("https://example.com/table.png"),
        png(),
        UserContent::document_url("https://example.com/rules.pdf"),
        pdf(),
        BinaryContent::new(b"Roll high.".to_vec(), "text/plain").into(),
        // Plain text in a data: URL goes as text too ("Roll low.").
        UserContent::document_url("data:text/plain;base64,Um9sbCBsb3cu"),
    ];
    anthropic(&server)
        .request(&history(media), &params())
        .await
        .expect("answers");
    let sent = bodies(&server).await;
    assert_eq!(
        sent[0]["messages"],
        json!([
            {"role": "user", "content": [
                {"type": "text", "text": "What do these show?"},
                {"type": "image", "source": {"type": "url", "url": "https://example.com/table.png"}},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}},
                {"type": "document", "source": {"type": "url", "url": "https://example.com/rules.pdf"}},
                {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PDF_B64}},
                {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "Roll high."}},
                {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "Roll low."}},
            ]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "call_1", "name": "chart", "input": {}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": [
                    {"type": "text", "text": "the chart of March"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG_B64}},
                ]},
            ]},
        ])
    );
}

#[tokio::test]
async fn anthropic_refuses_audio_and_an_image_over_five_megabytes_before_sending() {
    let server = serve("/v1/messages", vec![json_ok(anthropic_answer("Dice."))]).await;
    let model = anthropic(&server);
    let error = refusal(&model, vec![wav()]).await;
    assert_refused(
        error,
        "anthropic",
        0,
        "audio/wav bytes (4 bytes)",
        "anthropic takes no audio in a message",
    );
    // The API measures an image's 5 MB on its base64 text: 4 MB of bytes are 5.3 MB sent.
    let big = BinaryContent::new(vec![0u8; 4 * 1024 * 1024], "image/png");
    let error = refusal(&model, vec![big.into()]).await;
    assert_refused(
        error,
        "anthropic",
        0,
        "image/png bytes (4.0 MB)",
        "anthropic takes images of up to 5.0 MB as base64 in a message",
    );
    // A data: URL that is not base64 is refused, not sent as a URL.
    let error = refusal(
        &model,
        vec![UserContent::image_url("data:image/png,%89PNG")],
    )
    .await;
    assert_refused(
        error,
        "anthropic",
        0,
        "an image URL (data:image/png,…)",
        "a `data:` URL must hold base64 (`data:<type>;base64,…`); give other bytes as `BinaryContent`",
    );
    assert!(bodies(&server).await.is_empty(), "nothing was sent");
    // 3.75 MB of bytes are exactly 5 MB of base64: sent.
    let largest = BinaryContent::new(vec![0u8; 5 * 1024 * 1024 / 4 * 3], "image/png");
    model
        .request(&history(vec![largest.into()]), &params())
        .await
        .expect("sent");
    assert_eq!(bodies(&server).await.len(), 1);
}

#[tokio::test]
async fn a_stream_is_refused_the_same_way_before_sending() {
    use futures_util::StreamExt as _;

    let server = serve("/v1/messages", vec![json_ok(anthropic_answer("Dice."))]).await;
    let model = anthropic(&server);
    let history = history(vec![wav()]);
    let params = params();
    let mut stream = model.request_stream(&history, &params);
    let error = match stream.next().await {
        Some(Err(error)) => error,
        other => panic!("a refusal first: {other:?}"),
    };
    assert_refused(
        error,
        "anthropic",
        0,
        "audio/wav bytes (4 bytes)",
        "anthropic takes no audio in a message",
    );
    assert!(bodies(&server).await.is_empty(), "nothing was sent");
}

// ---------------------------------------------------------------------------------------
// Gemini

const GEMINI_ROUTE: &str = "/v1beta/models/gemini-2.5-flash:generateContent";

fn gemini(server: &MockServer) -> GeminiModel {
    GeminiModel::builder("gemini-2.5-flash")
        .api_key("AIzaSyTest-0123456789abcdefghijklmno")
        .base_url(format!("{}/v1beta", server.uri()))
        .build()
        .expect("valid model")
}

fn gemini_answer(text: &str) -> Value {
    json!({
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 900, "candidatesTokenCount": 5, "totalTokenCount": 905},
        "modelVersion": "gemini-2.5-flash",
        "responseId": "resp-1"
    })
}

#[tokio::test]
async fn gemini_sends_inline_and_file_data_and_images_inside_function_responses() {
    let server = serve(GEMINI_ROUTE, vec![json_ok(gemini_answer("Dice."))]).await;
    let media = vec![
        UserContent::image_url("https://example.com/table.png"),
        png(),
        DocumentUrl::new("https://example.com/rules").into(),
        pdf(),
        wav(),
    ];
    gemini(&server)
        .request(&history(media), &params())
        .await
        .expect("answers");
    let sent = bodies(&server).await;
    assert_eq!(
        sent[0]["contents"],
        json!([
            {"role": "user", "parts": [
                {"text": "What do these show?"},
                {"fileData": {"mimeType": "image/png", "fileUri": "https://example.com/table.png"}},
                {"inlineData": {"mimeType": "image/png", "data": PNG_B64}},
                {"fileData": {"mimeType": "application/pdf", "fileUri": "https://example.com/rules"}},
                {"inlineData": {"mimeType": "application/pdf", "data": PDF_B64}},
                {"inlineData": {"mimeType": "audio/wav", "data": WAV_B64}},
            ]},
            {"role": "model", "parts": [{"functionCall": {"name": "chart", "args": {}, "id": "call_1"}}]},
            {"role": "user", "parts": [
                {"functionResponse": {
                    "name": "chart",
                    "id": "call_1",
                    "response": {"result": "the chart of March"},
                    "parts": [{"inlineData": {"mimeType": "image/png", "data": PNG_B64}}],
                }},
            ]},
        ])
    );
    validate_gemini(&sent, &[]);
}

#[tokio::test]
async fn gemini_sends_a_tools_texts_after_the_function_responses() {
    let server = serve(GEMINI_ROUTE, vec![json_ok(gemini_answer("Dice."))]).await;
    let mut history = history(Vec::new());
    history[2] = request(vec![RequestPart::tool_return(
        "chart",
        "call_1",
        ToolContent::new("the chart of March")
            .with("Sales rose in March.")
            .with(png()),
    )]);
    gemini(&server)
        .request(&history, &params())
        .await
        .expect("answers");
    let sent = bodies(&server).await;
    assert_eq!(
        sent[0]["contents"][2],
        json!({"role": "user", "parts": [
            {"functionResponse": {
                "name": "chart",
                "id": "call_1",
                "response": {"result": "the chart of March"},
                "parts": [{"inlineData": {"mimeType": "image/png", "data": PNG_B64}}],
            }},
            {"text": "The tool `chart` returned this for the call call_1:"},
            {"text": "Sales rose in March."},
        ]})
    );
    validate_gemini(&sent, &[]);
}

#[tokio::test]
async fn anthropic_and_gemini_name_a_media_type_without_its_parameters_in_lower_case() {
    // Media types are case-insensitive: this one is taken, and named as the APIs list it.
    let named = || -> UserContent {
        BinaryContent::new(PDF.to_vec(), "Application/PDF; name=rules.pdf").into()
    };
    let server = serve("/v1/messages", vec![json_ok(anthropic_answer("Dice."))]).await;
    anthropic(&server)
        .request(&history(vec![named()]), &params())
        .await
        .expect("answers");
    assert_eq!(
        bodies(&server).await[0]["messages"][0]["content"][1]["source"]["media_type"],
        json!("application/pdf")
    );
    let server = serve(GEMINI_ROUTE, vec![json_ok(gemini_answer("Dice."))]).await;
    gemini(&server)
        .request(&history(vec![named()]), &params())
        .await
        .expect("answers");
    assert_eq!(
        bodies(&server).await[0]["contents"][0]["parts"][1]["inlineData"]["mimeType"],
        json!("application/pdf")
    );
}

#[tokio::test]
async fn gemini_refuses_a_url_of_unknown_type_and_audio_in_a_function_response() {
    let server = serve(GEMINI_ROUTE, vec![json_ok(gemini_answer("Dice."))]).await;
    let model = gemini(&server);
    let error = refusal(
        &model,
        vec![ImageUrl::new("https://example.com/picture").into()],
    )
    .await;
    assert_refused(
        error,
        "gemini",
        0,
        "an image URL (https://example.com/picture)",
        "gemini needs a URL's media type: set it with `ImageUrl::with_media_type`",
    );
    // A URL's media type is checked as bytes' are: Gemini takes no GIF.
    let error = refusal(
        &model,
        vec![UserContent::image_url("https://example.com/dice.gif")],
    )
    .await;
    assert_refused(
        error,
        "gemini",
        0,
        "an image URL (https://example.com/dice.gif)",
        "gemini takes images of the types image/png, image/jpeg, image/webp, image/heic, image/heif in a message",
    );
    let mut with_audio = history(Vec::new());
    with_audio[2] = request(vec![RequestPart::tool_return(
        "chart",
        "call_1",
        ToolContent::new("the sound of March").with(wav()),
    )]);
    let error = model
        .request(&with_audio, &params())
        .await
        .expect_err("refused");
    assert_refused(
        error,
        "gemini",
        2,
        "audio/wav bytes (4 bytes)",
        "gemini takes no audio in a function response",
    );
    assert!(bodies(&server).await.is_empty(), "nothing was sent");
}

// ---------------------------------------------------------------------------------------
// The run: the prompt a caller builds, and the token estimate.

#[tokio::test]
async fn an_agent_takes_a_prompt_of_parts() {
    let model = golem::model::function::FunctionModel::new(|messages: &[Message], _| {
        let Message::Request(request) = &messages[0] else {
            unreachable!()
        };
        let RequestPart::UserPrompt(prompt) = &request.parts[0] else {
            unreachable!()
        };
        let kinds: Vec<String> = prompt.media().map(UserContent::describe).collect();
        ModelResponse::text(format!("{}: {}", prompt.text(), kinds.join(", ")))
    });
    let agent = Agent::<(), String>::builder(model).build().expect("builds");
    let result = agent
        .run([UserContent::text("Describe"), png(), pdf()], ())
        .await
        .expect("answers");
    assert_eq!(
        result.output,
        "Describe: image/png bytes (8 bytes), application/pdf bytes (8 bytes)"
    );
    assert_eq!(
        golem::history::estimate_tokens(&result.messages[..1]),
        4 + (8 + 2 * 4 * golem::history::MEDIA_PART_TOKENS).div_ceil(4)
    );
}
