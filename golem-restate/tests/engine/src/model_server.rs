//! A scripted OpenAI-compatible model server on loopback that counts the requests of each
//! turn, records the tools each request offered, and can hold one turn's first request
//! unanswered (the moment the tests crash the service). Two scripts: the notes agent's
//! ([`crate::agent`]) and the remote toolset agent's ([`crate::remote`]).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// How many turns the script has; the last one answers with the output.
pub const TURNS: u32 = 4;

/// How many turns the remote toolset agent's script has: call `remote_note`, then answer.
pub const REMOTE_TURNS: u32 = 2;

/// The scripted model server.
#[derive(Debug)]
pub struct ModelServer {
    server: MockServer,
    log: Arc<Mutex<Log>>,
    offered: Arc<Mutex<Vec<Offered>>>,
}

/// The tools one request offered the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offered {
    /// The request's turn.
    pub turn: u32,
    /// The names of the function tools it offered, in order.
    pub tools: Vec<String>,
}

/// Which agent the server answers for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scenario {
    /// The notes agent: save a note, look up the wrong key, the right one, answer.
    Notes,
    /// The remote toolset agent: call `remote_note`, answer.
    Remote,
    /// The approval agent: two calls of `save_note` that wait for approval, answer.
    Approvals,
}

/// What the server saw.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Log {
    /// The turn of each request, in the order they arrived.
    pub received: Vec<u32>,
    /// The turn of each request that was answered, in order.
    pub answered: Vec<u32>,
}

impl ModelServer {
    /// Starts the server. With `hold`, the first request of that turn is never answered,
    /// and its turn is sent on the returned channel when it arrives.
    pub async fn start(hold: Option<u32>) -> (ModelServer, mpsc::UnboundedReceiver<u32>) {
        Self::with(Scenario::Notes, hold, None).await
    }

    /// Starts a server with the remote toolset agent's script, which answers every request.
    pub async fn remote() -> ModelServer {
        Self::with(Scenario::Remote, None, None).await.0
    }

    /// A server for the approval agent: two `save_note` calls at turn 1 (`call_a` saves
    /// "keep", `call_b` saves "drop"), then the answer.
    pub async fn approvals() -> ModelServer {
        Self::with(Scenario::Approvals, None, None).await.0
    }

    /// Starts a server that refuses every request with HTTP `status`, and logs it.
    pub async fn refusing(status: u16) -> ModelServer {
        Self::with(Scenario::Notes, None, Some((status, usize::MAX)))
            .await
            .0
    }

    /// Starts a server that refuses its first `count` requests with HTTP `status` (asking
    /// for a retry after 1 ms), then follows the script.
    pub async fn failing_first(count: usize, status: u16) -> ModelServer {
        Self::with(Scenario::Notes, None, Some((status, count)))
            .await
            .0
    }

    async fn with(
        scenario: Scenario,
        hold: Option<u32>,
        refuse: Option<(u16, usize)>,
    ) -> (ModelServer, mpsc::UnboundedReceiver<u32>) {
        let server = MockServer::start().await;
        let log = Arc::new(Mutex::new(Log::default()));
        let offered = Arc::default();
        let (held, held_rx) = mpsc::unbounded_channel();
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(Script {
                scenario,
                log: Arc::clone(&log),
                offered: Arc::clone(&offered),
                hold,
                refuse,
                held,
            })
            .mount(&server)
            .await;
        (
            ModelServer {
                server,
                log,
                offered,
            },
            held_rx,
        )
    }

    /// The base URL for golem's `openai` provider.
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.server.uri())
    }

    /// What the server saw so far.
    pub fn log(&self) -> Log {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The tools each request offered so far, in the order the requests arrived.
    pub fn offered(&self) -> Vec<Offered> {
        self.offered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

struct Script {
    scenario: Scenario,
    log: Arc<Mutex<Log>>,
    offered: Arc<Mutex<Vec<Offered>>>,
    hold: Option<u32>,
    refuse: Option<(u16, usize)>,
    held: mpsc::UnboundedSender<u32>,
}

impl Respond for Script {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        // A request's turn is one more than the responses in its history.
        let responses = body["messages"].as_array().map_or(0, |messages| {
            messages
                .iter()
                .filter(|message| message["role"] == "assistant")
                .count()
        });
        let turn = u32::try_from(responses).unwrap_or(u32::MAX) + 1;
        let tools = body["tools"].as_array().map_or_else(Vec::new, |tools| {
            tools
                .iter()
                .filter_map(|tool| tool["function"]["name"].as_str().map(str::to_owned))
                .collect()
        });
        self.offered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Offered { turn, tools });
        let mut log = self.log.lock().unwrap_or_else(PoisonError::into_inner);
        let first = !log.received.contains(&turn);
        log.received.push(turn);
        if first && self.hold == Some(turn) {
            let _ = self.held.send(turn);
            return ResponseTemplate::new(200)
                .set_body_json(completion(turn))
                .set_delay(Duration::from_secs(3600));
        }
        log.answered.push(turn);
        if let Some((status, count)) = self.refuse
            && log.received.len() <= count
        {
            return ResponseTemplate::new(status)
                .insert_header("retry-after-ms", "1")
                .set_body_json(
                json!({"error": {"message": "scripted refusal", "type": "invalid_request_error"}}),
            );
        }
        match (self.scenario, turn) {
            (Scenario::Notes, 1..=TURNS) => {
                ResponseTemplate::new(200).set_body_json(completion(turn))
            }
            (Scenario::Remote, 1..=REMOTE_TURNS) => {
                ResponseTemplate::new(200).set_body_json(remote_completion(turn))
            }
            (Scenario::Approvals, 1..=2) => {
                ResponseTemplate::new(200).set_body_json(approval_completion(turn))
            }
            _ => ResponseTemplate::new(500).set_body_string("the script ran out"),
        }
    }
}

/// The scripted response of `turn`: save a note; look up the wrong key (rejected); look up
/// the right one; answer. Each with its own usage.
fn completion(turn: u32) -> Value {
    let prompt = 100 + 20 * u64::from(turn);
    let output = 10 + u64::from(turn);
    let message = match turn {
        1 => tool_call("save_note", r#"{"text": "hello"}"#, turn),
        2 => tool_call("lookup", r#"{"key": "question"}"#, turn),
        3 => tool_call("lookup", r#"{"key": "answer"}"#, turn),
        _ => json!({"role": "assistant", "content": crate::agent::OUTPUT}),
    };
    let finish_reason = if turn < TURNS { "tool_calls" } else { "stop" };
    chat_completion(turn, &message, finish_reason, prompt, output)
}

/// The remote toolset agent's scripted response of `turn`: save a note with the toolset's
/// `remote_note`; answer. Each with its own usage, as in [`completion`].
fn remote_completion(turn: u32) -> Value {
    let prompt = 100 + 20 * u64::from(turn);
    let output = 10 + u64::from(turn);
    let (message, finish_reason) = match turn {
        1 => (
            tool_call("remote_note", r#"{"text": "hello"}"#, turn),
            "tool_calls",
        ),
        _ => (
            json!({"role": "assistant", "content": crate::remote::REMOTE_OUTPUT}),
            "stop",
        ),
    };
    chat_completion(turn, &message, finish_reason, prompt, output)
}

/// The approval agent's scripted response of `turn`: two calls that wait for approval, then
/// the answer.
fn approval_completion(turn: u32) -> Value {
    let (message, finish_reason) = match turn {
        1 => (
            json!({
                "role": "assistant",
                "content": null,
                "tool_calls": [
                    {"id": "call_a", "type": "function", "function": {"name": "save_note", "arguments": r#"{"text": "keep"}"#}},
                    {"id": "call_b", "type": "function", "function": {"name": "save_note", "arguments": r#"{"text": "drop"}"#}}
                ]
            }),
            "tool_calls",
        ),
        _ => (
            json!({"role": "assistant", "content": crate::agent::APPROVED_OUTPUT}),
            "stop",
        ),
    };
    chat_completion(
        turn,
        &message,
        finish_reason,
        100 + 20 * u64::from(turn),
        10,
    )
}

fn chat_completion(
    turn: u32,
    message: &Value,
    finish_reason: &str,
    prompt: u64,
    output: u64,
) -> Value {
    json!({
        "id": format!("chatcmpl-{turn}"),
        "object": "chat.completion",
        "created": 1_764_547_200,
        "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output}
    })
}

fn tool_call(name: &str, arguments: &str, turn: u32) -> Value {
    json!({
        "role": "assistant",
        "content": null,
        "tool_calls": [{
            "id": format!("call_{turn}"),
            "type": "function",
            "function": {"name": name, "arguments": arguments}
        }]
    })
}
