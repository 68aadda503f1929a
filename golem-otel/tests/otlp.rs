//! golem's spans, exported by golem-otel, as a real OTLP receiver gets them: PyPI `oteltap`
//! (pinned; installed by tests/install.sh under the target directory), listening on
//! loopback and printing every span it decodes as a line of JSON.
//!
//! Each case runs an agent against a scripted model, with a tool rejection and an output
//! rejection, and checks the spans that arrived: names, the tree, attributes, the rejection
//! events, content only when the agent captures it, the API key nowhere.

#![allow(clippy::unwrap_used)]

mod receiver;

use std::collections::VecDeque;
use std::sync::Mutex;

use golem::model::function::FunctionModel;
use golem::model::{FinishReason, Message, ModelError, ModelResponse, RequestParams, ResponsePart};
use golem::{Agent, ModelRetry, RunContext, Usage};
use receiver::{Receiver, Span};
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt;

/// A key the run has and must never export.
const KEY: &str = "sk-golem-otel-test-key-0123456789";

#[golem::args]
struct Dice {
    n: i64,
}

/// A model that answers with `responses` in order.
fn scripted(responses: Vec<ModelResponse>) -> FunctionModel {
    let queue = Mutex::new(VecDeque::from(responses));
    FunctionModel::new(move |_: &[Message], _: &RequestParams| {
        queue
            .lock()
            .unwrap()
            .pop_front()
            .ok_or_else(|| ModelError::other("the script ran out of responses"))
    })
    .with_name("scripted")
}

fn reply(parts: Vec<ResponsePart>, input: u64, output: u64, reason: FinishReason) -> ModelResponse {
    let mut response = ModelResponse::new(parts).with_usage(input, output);
    response.finish_reason = Some(reason);
    response.model_name = Some("scripted-2026-12".to_owned());
    response
}

/// The referee: a tool that rejects `n < 1`, and a validator that rejects "maybe". The
/// script makes it hit both once, then answer "2".
fn referee(capture: bool) -> Agent<(), String> {
    let script = scripted(vec![
        reply(
            vec![ResponsePart::tool_call("roll", r#"{"n": 0}"#, "c1")],
            10,
            2,
            FinishReason::ToolCall,
        ),
        reply(
            vec![ResponsePart::tool_call("roll", r#"{"n": 2}"#, "c2")],
            20,
            2,
            FinishReason::ToolCall,
        ),
        reply(vec![ResponsePart::text("maybe")], 30, 1, FinishReason::Stop),
        reply(vec![ResponsePart::text("2")], 40, 1, FinishReason::Stop),
    ]);
    let roll =
        golem::tool::FunctionTool::new("roll", |_ctx: RunContext<()>, dice: Dice| async move {
            if dice.n < 1 {
                return Err(ModelRetry::new("n must be at least 1"));
            }
            Ok(dice.n)
        });
    Agent::<(), String>::builder(script)
        .name("referee")
        .instructions("Roll dice.")
        .tool(roll)
        .tool_retries(1)
        .output_retries(1)
        .output_validator(|_ctx, text: String| async move {
            if text == "maybe" {
                return Err(ModelRetry::new("give a number"));
            }
            Ok(text)
        })
        .capture_content(capture)
        .build()
        .unwrap()
}

/// Runs `agent` on "Roll one die" with the exporter installed for this thread, and returns
/// the spans the receiver got (up to the run's own), the lines it printed, and the run's
/// usage.
fn run(
    agent: &Agent<(), String>,
    conversation: Option<&str>,
    root: &str,
) -> (Vec<Span>, Vec<String>, Usage) {
    let receiver = Receiver::start();
    let exporter = golem_otel::Exporter::builder()
        .endpoint(receiver.endpoint())
        .service_name("referee-service")
        .header("x-test", "golem")
        .build()
        .unwrap();
    let subscriber = tracing_subscriber::registry().with(exporter.layer());
    let usage = tracing::subscriber::with_default(subscriber, || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut run = agent.start("Roll one die", ());
        if let Some(id) = conversation {
            run = run.with_conversation_id(id);
        }
        runtime.block_on(run.finish()).unwrap().usage
    });
    exporter.shutdown().unwrap();
    let (spans, lines) = receiver.spans_until(root);
    (spans, lines, usage)
}

/// The names of the spans in the tree under the root, depth first, indented by depth.
fn tree(spans: &[Span]) -> Vec<String> {
    fn walk(spans: &[Span], parent: &str, depth: usize, out: &mut Vec<String>) {
        let mut children: Vec<&Span> = spans.iter().filter(|s| s.parent == parent).collect();
        children.sort_by_key(|span| span.start);
        for child in children {
            out.push(format!("{}{}", "  ".repeat(depth), child.name));
            walk(spans, &child.id, depth + 1, out);
        }
    }
    let mut out = Vec::new();
    walk(spans, "", 0, &mut out);
    out
}

fn assert_common(spans: &[Span], usage: &Usage) {
    assert_eq!(
        tree(spans),
        [
            "invoke_agent referee",
            "  chat scripted",
            "  execute_tool roll",
            "  chat scripted",
            "  execute_tool roll",
            "  chat scripted",
            "  chat scripted",
        ]
    );
    let trace = &spans[0].trace;
    assert!(spans.iter().all(|span| &span.trace == trace), "one trace");

    let agent = Span::named(spans, "invoke_agent referee");
    assert_eq!(agent.kind, "internal");
    assert_eq!(agent.attr("gen_ai.operation.name"), "invoke_agent");
    assert_eq!(agent.attr("gen_ai.agent.name"), "referee");
    assert_eq!(agent.attr("gen_ai.provider.name"), "function");
    assert_eq!(agent.attr("gen_ai.request.model"), "scripted");
    assert_eq!(usage.input_tokens, 100);
    assert_eq!(agent.int("gen_ai.usage.input_tokens"), 100);
    assert_eq!(agent.int("gen_ai.usage.output_tokens"), 6);
    // The rounds that ended in a rejection: the first (10 + 2) and the third (30 + 1).
    assert_eq!(agent.int("golem.usage.rejected.requests"), 2);
    assert_eq!(agent.int("golem.usage.rejected.input_tokens"), 40);
    assert_eq!(agent.int("golem.usage.rejected.output_tokens"), 3);
    assert!(!agent.has("error.type"));
    // One event per rejection, on the run's span, in order.
    let events: Vec<_> = agent
        .events
        .iter()
        .filter(|event| event.attrs.contains_key("golem.retry.stage"))
        .collect();
    assert_eq!(events.len(), 2);
    assert_eq!(events[0].name, "tool call rejected");
    assert_eq!(events[0].attrs["golem.retry.stage"], "tool");
    assert_eq!(events[0].attrs["gen_ai.tool.name"], "roll");
    assert_eq!(events[0].attrs["gen_ai.tool.call.id"], "c1");
    assert_eq!(events[0].ints["golem.retry.attempt"], 1);
    assert_eq!(events[0].ints["golem.retry.max"], 1);
    assert_eq!(events[1].name, "output rejected");
    assert_eq!(events[1].attrs["golem.retry.stage"], "decode");
    assert_eq!(events[1].ints["golem.retry.attempt"], 1);
    assert_eq!(events[1].ints["golem.retry.max"], 1);

    let chats: Vec<&Span> = spans.iter().filter(|s| s.name == "chat scripted").collect();
    let chat = chats[0];
    assert_eq!(chat.kind, "client");
    assert_eq!(chat.attr("gen_ai.operation.name"), "chat");
    assert_eq!(chat.attr("gen_ai.provider.name"), "function");
    assert_eq!(chat.attr("gen_ai.request.model"), "scripted");
    assert_eq!(chat.attr("gen_ai.request.stream"), "false");
    assert_eq!(chat.attr("gen_ai.response.model"), "scripted-2026-12");
    assert_eq!(chat.attr("gen_ai.response.finish_reasons"), "tool_call");
    assert_eq!(chat.int("gen_ai.usage.input_tokens"), 10);
    assert_eq!(chat.int("gen_ai.usage.output_tokens"), 2);
    assert_eq!(chats[3].attr("gen_ai.response.finish_reasons"), "stop");
    assert_eq!(chats[3].int("gen_ai.usage.input_tokens"), 40);

    let tools: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == "execute_tool roll")
        .collect();
    assert_eq!(tools[0].kind, "internal");
    assert_eq!(tools[0].attr("gen_ai.operation.name"), "execute_tool");
    assert_eq!(tools[0].attr("gen_ai.tool.name"), "roll");
    assert_eq!(tools[0].attr("gen_ai.tool.type"), "function");
    assert_eq!(tools[0].attr("gen_ai.tool.call.id"), "c1");
    // The rejected call is an error of that call, under golem's own error type.
    assert_eq!(tools[0].attr("error.type"), "golem.rejected");
    assert_eq!(tools[0].status, "error");
    assert_eq!(tools[1].attr("gen_ai.tool.call.id"), "c2");
    assert!(!tools[1].has("error.type"));
    assert_eq!(tools[1].status, "unset");
}

#[test]
fn spans_arrive_at_an_otlp_receiver_without_content_by_default() {
    let (spans, lines, usage) = run(&referee(false), None, "invoke_agent referee");
    assert_common(&spans, &usage);
    for name in [
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
        "gen_ai.conversation.id",
    ] {
        assert!(
            spans.iter().all(|span| !span.has(name)),
            "{name} is not exported"
        );
    }
    // Nor the feedback of a rejection, which may quote what was said.
    let agent = Span::named(&spans, "invoke_agent referee");
    assert!(
        agent
            .events
            .iter()
            .all(|event| !event.attrs.contains_key("golem.retry.reason"))
    );
    let everything = lines.join("\n");
    for said in [
        "Roll one die",
        "maybe",
        "Roll dice",
        "n must be at least 1",
        "give a number",
        KEY,
    ] {
        assert!(!everything.contains(said), "{said:?} is not exported");
    }
}

#[test]
fn content_and_the_conversation_arrive_when_asked_for() {
    let (spans, lines, usage) = run(&referee(true), Some("support-4711"), "invoke_agent referee");
    assert_common(&spans, &usage);
    let agent = Span::named(&spans, "invoke_agent referee");
    assert_eq!(agent.attr("gen_ai.conversation.id"), "support-4711");
    // Each rejection's event carries the feedback the model got.
    let reasons: Vec<&str> = agent
        .events
        .iter()
        .filter_map(|event| event.attrs.get("golem.retry.reason"))
        .map(String::as_str)
        .collect();
    assert_eq!(reasons, ["n must be at least 1", "give a number"]);
    let chats: Vec<&Span> = spans.iter().filter(|s| s.name == "chat scripted").collect();
    assert!(
        chats
            .iter()
            .all(|chat| chat.attr("gen_ai.conversation.id") == "support-4711")
    );
    let first = chats[0];
    let input: serde_json::Value =
        serde_json::from_str(first.attr("gen_ai.input.messages")).unwrap();
    assert_eq!(
        input,
        json!([{"role": "user", "parts": [{"type": "text", "content": "Roll one die"}]}])
    );
    let output: serde_json::Value =
        serde_json::from_str(first.attr("gen_ai.output.messages")).unwrap();
    assert_eq!(
        output,
        json!([{
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "c1", "name": "roll", "arguments": {"n": 0}}],
            "finish_reason": "tool_call",
        }])
    );
    // The third request carries the history so far, the rejection of the first call as
    // that call's answer.
    let third: serde_json::Value =
        serde_json::from_str(chats[2].attr("gen_ai.input.messages")).unwrap();
    assert_eq!(
        third[2],
        json!({"role": "tool", "parts": [{
            "type": "tool_call_response", "id": "c1", "response": "n must be at least 1",
        }]})
    );
    let tools: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == "execute_tool roll")
        .collect();
    assert_eq!(tools[0].attr("gen_ai.tool.call.arguments"), r#"{"n": 0}"#);
    assert!(!tools[0].has("gen_ai.tool.call.result"));
    assert_eq!(tools[1].attr("gen_ai.tool.call.arguments"), r#"{"n": 2}"#);
    assert_eq!(tools[1].attr("gen_ai.tool.call.result"), "2");
    let instructions: serde_json::Value =
        serde_json::from_str(first.attr("gen_ai.system_instructions")).unwrap();
    assert_eq!(
        instructions,
        json!([{"type": "text", "content": "Roll dice."}])
    );
    assert!(lines.iter().any(|line| line.contains("Roll one die")));
}

/// A provider's key travels in a header of each request, which no span records: not even
/// with content captured.
#[test]
fn a_providers_api_key_is_never_exported() {
    use golem::model::openai::OpenAiModel;
    use wiremock::matchers::{header, method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let server = runtime.block_on(async {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .and(header("authorization", format!("Bearer {KEY}").as_str()))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": "gpt-4o-mini-2024-07-18",
                "choices": [{"index": 0, "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "4"}}],
                "usage": {"prompt_tokens": 12, "completion_tokens": 1, "total_tokens": 13},
            })))
            .mount(&server)
            .await;
        server
    });
    let model = OpenAiModel::builder("gpt-4o-mini")
        .api_key(KEY)
        .base_url(format!("{}/v1", server.uri()))
        .build()
        .unwrap();
    let agent = Agent::<(), String>::builder(model)
        .name("dealer")
        .capture_content(true)
        .build()
        .unwrap();
    let (spans, lines, usage) = run(&agent, None, "invoke_agent dealer");
    assert_eq!(usage.input_tokens, 12);
    assert_eq!(tree(&spans), ["invoke_agent dealer", "  chat gpt-4o-mini"]);
    let chat = Span::named(&spans, "chat gpt-4o-mini");
    assert_eq!(chat.attr("gen_ai.provider.name"), "openai");
    assert_eq!(chat.attr("gen_ai.response.model"), "gpt-4o-mini-2024-07-18");
    assert_eq!(chat.attr("gen_ai.response.id"), "chatcmpl-1");
    assert_eq!(chat.attr("gen_ai.response.finish_reasons"), "stop");
    assert!(lines.iter().any(|line| line.contains("Roll one die")));
    assert!(lines.iter().all(|line| !line.contains(KEY)));
    assert_eq!(chat.int("gen_ai.usage.input_tokens"), 12);
    drop(server);
}

/// A program sets its exporter up, and shuts it down, inside its async runtime.
#[tokio::test]
async fn the_exporter_works_from_inside_an_async_runtime() {
    use tracing::instrument::WithSubscriber;

    let receiver = Receiver::start();
    let exporter = golem_otel::Exporter::builder()
        .endpoint(receiver.endpoint())
        .build()
        .unwrap();
    let subscriber = tracing_subscriber::registry().with(exporter.layer());
    let result = referee(false)
        .run("Roll one die", ())
        .with_subscriber(subscriber)
        .await
        .unwrap();
    assert_eq!(result.output, "2");
    exporter.shutdown().unwrap();
    let (spans, _) = receiver.spans_until("invoke_agent referee");
    assert_common(&spans, &result.usage);
}

/// A run that fails says so: its span and the failed call's carry `error.type` and an error
/// status, and the rejection that ran the budget out is an event as the others are.
#[test]
fn a_failed_run_arrives_with_its_error_type_and_status() {
    let script = scripted(vec![reply(
        vec![ResponsePart::tool_call("roll", r#"{"n": 0}"#, "c1")],
        10,
        2,
        FinishReason::ToolCall,
    )]);
    let roll =
        golem::tool::FunctionTool::new("roll", |_ctx: RunContext<()>, _dice: Dice| async move {
            Err::<i64, _>(ModelRetry::new("n must be at least 1"))
        });
    let agent = Agent::<(), String>::builder(script)
        .name("strict")
        .tool(roll)
        .build()
        .unwrap();
    let receiver = Receiver::start();
    let exporter = golem_otel::Exporter::builder()
        .endpoint(receiver.endpoint())
        .build()
        .unwrap();
    let subscriber = tracing_subscriber::registry().with(exporter.layer());
    let error = tracing::subscriber::with_default(subscriber, || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(agent.run("Roll one die", ())).unwrap_err()
    });
    assert_eq!(error.stage(), golem::Stage::Tool);
    exporter.shutdown().unwrap();
    let (spans, _) = receiver.spans_until("invoke_agent strict");
    assert_eq!(
        tree(&spans),
        [
            "invoke_agent strict",
            "  chat scripted",
            "  execute_tool roll"
        ]
    );
    let run = Span::named(&spans, "invoke_agent strict");
    assert_eq!(run.attr("error.type"), "tool");
    assert_eq!(run.status, "error");
    assert_eq!(run.int("gen_ai.usage.input_tokens"), 10);
    let events: Vec<_> = run
        .events
        .iter()
        .filter(|event| event.attrs.contains_key("golem.retry.stage"))
        .collect();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].ints["golem.retry.attempt"], 1);
    assert_eq!(events[0].ints["golem.retry.max"], 0);
    let call = Span::named(&spans, "execute_tool roll");
    assert_eq!(call.attr("error.type"), "golem.rejected");
    assert_eq!(call.status, "error");
    let chat = Span::named(&spans, "chat scripted");
    assert!(!chat.has("error.type"));
    assert_eq!(chat.status, "unset");
}

/// A collector that takes the connection and never answers: each export gives up after the
/// exporter's timeout, so a flush returns with an error at once rather than after the
/// batch processor's own 5 s, and the program is not held.
#[test]
fn an_export_to_a_collector_that_does_not_answer_ends_at_the_timeout() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    // Accepts and holds every connection, reading nothing and writing nothing.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    let exporter = golem_otel::Exporter::builder()
        .endpoint(endpoint)
        .timeout(std::time::Duration::from_millis(300))
        .build()
        .unwrap();
    let subscriber = tracing_subscriber::registry().with(exporter.layer());
    tracing::subscriber::with_default(subscriber, || {
        tracing::info_span!("work").in_scope(|| {});
    });
    let started = std::time::Instant::now();
    assert!(exporter.flush().is_err());
    assert!(
        started.elapsed() < std::time::Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
}
