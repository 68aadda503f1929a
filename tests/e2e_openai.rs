//! End to end: a macro-generated tool and output over the OpenAI path, against a scripted
//! OpenAI-compatible server on loopback. Bad arguments → rejection → corrected call →
//! final structured output.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::Duration;

use golem::model::http::{HttpSettings, RetryPolicy};
use golem::model::openai::OpenAiModel;
use golem::model::{Message, ModelRequest, RequestPart, ResponsePart};
use golem::{Agent, ModelRetry, RunContext};
use serde_json::{Value, json};
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

struct Table {
    face: i64,
}

/// Roll `n` six-sided dice and return their total.
///
/// # Arguments
/// * `n` - how many dice to roll, 1 to 10
#[golem::tool(max_retries = 1)]
async fn roll_dice(ctx: &RunContext<Table>, n: i64) -> Result<i64, ModelRetry> {
    if !(1..=10).contains(&n) {
        return Err(ModelRetry::new(format!(
            "n must be between 1 and 10, got {n}"
        )));
    }
    Ok(n * ctx.deps().face)
}

/// A verdict on the game.
#[golem::output]
#[derive(Debug)]
struct Verdict {
    /// Who won.
    winner: String,
    /// Their total.
    score: u32,
}

struct Script(Mutex<VecDeque<Value>>);

impl Respond for Script {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        match self.0.lock().expect("not poisoned").pop_front() {
            Some(body) => ResponseTemplate::new(200).set_body_json(body),
            None => ResponseTemplate::new(500).set_body_string("the script ran out"),
        }
    }
}

fn completion(id: &str, tool: &str, arguments: &str, prompt: u64, output: u64) -> Value {
    json!({
        "id": id,
        "object": "chat.completion",
        "created": 1_732_960_000,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{
            "index": 0,
            "message": {
                "role": "assistant",
                "content": null,
                "tool_calls": [{"id": format!("call_{id}"), "type": "function", "function": {"name": tool, "arguments": arguments}}],
                "refusal": null
            },
            "logprobs": null,
            "finish_reason": "tool_calls"
        }],
        "usage": {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output}
    })
}

#[tokio::test]
async fn a_macro_tool_corrects_itself_over_the_openai_path() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", "Bearer sk-e2e"))
        .respond_with(Script(Mutex::new(VecDeque::from([
            completion("1", "roll_dice", r#"{"n": -1}"#, 90, 18),
            completion("2", "roll_dice", r#"{"n": 2}"#, 140, 18),
            completion(
                "3",
                "final_result",
                r#"{"winner": "Ann", "score": 6}"#,
                170,
                24,
            ),
        ]))))
        .mount(&server)
        .await;
    let model = OpenAiModel::builder("gpt-4o-mini")
        .api_key("sk-e2e")
        .base_url(format!("{}/v1", server.uri()))
        .http(HttpSettings::default().retry(
            RetryPolicy::default().backoff(Duration::from_millis(1), Duration::from_millis(1)),
        ))
        .build()
        .expect("valid model");
    let agent = Agent::<Table, Verdict>::builder(model)
        .instructions("You referee dice games.")
        .tool(RollDice)
        .build()
        .expect("valid agent");

    let result = agent
        .run("Roll two dice for Ann.", Table { face: 3 })
        .await
        .expect("the model corrects itself");

    assert_eq!(result.output.winner, "Ann");
    assert_eq!(result.output.score, 6);
    let transcript: Vec<Vec<String>> = result
        .messages
        .iter()
        .map(|message| match message {
            Message::Request(ModelRequest { parts, .. }) => parts
                .iter()
                .map(|part| match part {
                    RequestPart::SystemPrompt(p) => format!("system: {}", p.content),
                    RequestPart::UserPrompt(p) => format!("user: {}", p.text()),
                    RequestPart::ToolReturn(p) => {
                        format!(
                            "return {} {}: {}",
                            p.tool_name,
                            p.tool_call_id,
                            p.model_text()
                        )
                    }
                    RequestPart::RetryPrompt(p) => format!(
                        "rejected {} {}: {}",
                        p.tool_name.as_deref().unwrap_or("output"),
                        p.tool_call_id.as_deref().unwrap_or("-"),
                        p.content
                    ),
                    other => format!("{other:?}"),
                })
                .collect(),
            Message::Response(response) => response
                .parts
                .iter()
                .map(|part| match part {
                    ResponsePart::Text(p) => format!("model: {}", p.content),
                    ResponsePart::ToolCall(c) => {
                        format!("call {} {}: {}", c.tool_name, c.tool_call_id, c.args)
                    }
                    other => format!("other: {other:?}"),
                })
                .collect(),
        })
        .collect();
    assert_eq!(
        transcript,
        [
            vec!["user: Roll two dice for Ann."],
            vec![r#"call roll_dice call_1: {"n": -1}"#],
            vec!["rejected roll_dice call_1: n must be between 1 and 10, got -1"],
            vec![r#"call roll_dice call_2: {"n": 2}"#],
            vec!["return roll_dice call_2: 6"],
            vec![r#"call final_result call_3: {"winner": "Ann", "score": 6}"#],
            vec!["return final_result call_3: Final result processed."],
        ]
    );
    assert_eq!(result.usage.requests, 3);
    assert_eq!(result.usage.input_tokens, 90 + 140 + 170);
    assert_eq!(result.usage.output_tokens, 18 + 18 + 24);
    assert_eq!(result.usage.tool_calls, 2);
    assert_eq!(result.usage.rejected.tools["roll_dice"].requests, 1);
    assert_eq!(result.usage.rejected.tools["roll_dice"].input_tokens, 90);

    let sent = server.received_requests().await.expect("recorded");
    // The instructions are not in the history, but every request is sent with them first.
    for request in &sent {
        let body: Value = serde_json::from_slice(&request.body).expect("json");
        assert_eq!(
            body["messages"][0],
            json!({"role": "system", "content": "You referee dice games."})
        );
    }
    let first: Value = serde_json::from_slice(&sent[0].body).expect("json");
    assert_eq!(
        first["tools"][0]["function"],
        json!({
            "name": "roll_dice",
            "description": "Roll `n` six-sided dice and return their total.",
            "parameters": {
                "type": "object",
                "properties": {"n": {"type": "integer", "description": "how many dice to roll, 1 to 10"}},
                "required": ["n"],
                "additionalProperties": false
            }
        })
    );
    let second: Value = serde_json::from_slice(&sent[1].body).expect("json");
    assert_eq!(
        second["messages"][3],
        json!({
            "role": "tool",
            "tool_call_id": "call_1",
            "content": "Automated validation feedback (not from the user):\nn must be between 1 and 10, got -1\n\nFix the errors and try again."
        })
    );
}
