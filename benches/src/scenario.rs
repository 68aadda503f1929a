//! The scenario every benchmark runs: the three-turn self-correction of
//! `tests/e2e_openai.rs`. The model calls `roll_dice` with a bad argument, the tool rejects
//! it, the model calls again correctly, then answers through the `final_result` output tool.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use golem::model::function::FunctionModel;
use golem::model::http::{HttpSettings, RetryPolicy};
use golem::model::openai::OpenAiModel;
use golem::model::{Message, Model, ModelError, ModelResponse, RequestParams};
use golem::{Agent, ModelRetry, RunContext, RunResult};
use serde_json::{Value, json};
use tokio::sync::Semaphore;

/// The instructions every run starts with.
pub const INSTRUCTIONS: &str = "You referee dice games.";
/// The prompt every run starts with.
pub const PROMPT: &str = "Roll two dice for Ann.";
/// The API key the agent sends and the loopback server ignores.
pub const API_KEY: &str = "sk-bench";
/// Model turns in one run.
pub const TURNS: u64 = 3;

/// The dependencies the tool reads.
#[derive(Debug)]
pub struct Table {
    /// What every die shows.
    pub face: i64,
}

/// Roll `n` six-sided dice and return their total.
///
/// # Arguments
/// * `n` - how many dice to roll, 1 to 10
#[golem::tool(max_retries = 1)]
pub async fn roll_dice(ctx: &RunContext<Table>, n: i64) -> Result<i64, ModelRetry> {
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
pub struct Verdict {
    /// Who won.
    pub winner: String,
    /// Their total.
    pub score: u32,
}

/// The scripted model turns: (call id, tool, arguments, prompt tokens, completion tokens).
const SCRIPT: [(&str, &str, &str, u64, u64); 3] = [
    ("call_1", "roll_dice", r#"{"n": -1}"#, 90, 18),
    ("call_2", "roll_dice", r#"{"n": 2}"#, 140, 18),
    (
        "call_3",
        "final_result",
        r#"{"winner": "Ann", "score": 6}"#,
        170,
        24,
    ),
];

/// The agent of the scenario over `model`.
///
/// # Panics
/// If the agent does not build.
pub fn agent(model: impl golem::model::Model) -> Agent<Table, Verdict> {
    Agent::<Table, Verdict>::builder(model)
        .instructions(INSTRUCTIONS)
        .tool(RollDice)
        .build()
        .expect("the scenario's agent builds")
}

/// The agent of the scenario over `model`, with one history processor: the last ten
/// turns, which keeps the scenario's single turn whole, so the run is the same and what it
/// costs is the processing itself (the history cloned for it, and the check of what it
/// returns).
///
/// # Panics
/// If the agent does not build.
pub fn agent_with_processor(model: impl golem::model::Model) -> Agent<Table, Verdict> {
    Agent::<Table, Verdict>::builder(model)
        .instructions(INSTRUCTIONS)
        .tool(RollDice)
        .history_processor(golem::history::KeepLastTurns::new(10))
        .build()
        .expect("the scenario's agent builds")
}

/// A [`FunctionModel`] that plays the script from the history's length.
pub fn function_model() -> FunctionModel {
    FunctionModel::new(|messages: &[Message], _params| scripted(messages))
}

/// The scripted response to `messages`: the model turn is read from the history's length.
fn scripted(messages: &[Message]) -> ModelResponse {
    let turn = messages.len() / 2;
    let (id, tool, args, prompt, completion) = SCRIPT[turn.min(SCRIPT.len() - 1)];
    ModelResponse::tool_call(tool, args, id).with_usage(prompt, completion)
}

/// A model that plays the script but holds every run at its last turn until released: so
/// that a whole batch of runs is in flight at once, with the longest history, and no
/// transport. What it holds then is golem's own memory per in-flight run.
#[derive(Debug, Clone)]
pub struct ParkedModel {
    gate: Arc<Semaphore>,
    parked: Arc<AtomicUsize>,
}

impl ParkedModel {
    /// A model with its gate closed.
    pub fn new() -> Self {
        ParkedModel {
            gate: Arc::new(Semaphore::new(0)),
            parked: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// How many runs wait at the last turn now.
    pub fn parked(&self) -> usize {
        self.parked.load(Ordering::SeqCst)
    }

    /// Lets `runs` waiting (or future) runs go on.
    pub fn release(&self, runs: usize) {
        self.gate.add_permits(runs);
    }
}

impl Default for ParkedModel {
    fn default() -> Self {
        ParkedModel::new()
    }
}

impl Model for ParkedModel {
    fn request<'a>(
        &'a self,
        messages: &'a [Message],
        _params: &'a RequestParams,
    ) -> Pin<Box<dyn Future<Output = Result<ModelResponse, ModelError>> + Send + 'a>> {
        Box::pin(async move {
            if messages.len() / 2 == SCRIPT.len() - 1 {
                self.parked.fetch_add(1, Ordering::SeqCst);
                self.gate
                    .acquire()
                    .await
                    .map_err(ModelError::other)?
                    .forget();
                self.parked.fetch_sub(1, Ordering::SeqCst);
            }
            Ok(scripted(messages))
        })
    }

    fn name(&self) -> &str {
        "parked"
    }

    fn system(&self) -> &str {
        "function"
    }
}

/// An [`OpenAiModel`] against `base_url` (`http://127.0.0.1:PORT/v1`), without transport
/// retries so that any failure shows.
///
/// # Panics
/// If the model does not build.
pub fn openai_model(base_url: &str) -> OpenAiModel {
    OpenAiModel::builder("gpt-4o-mini")
        .api_key(API_KEY)
        .base_url(base_url)
        .http(
            HttpSettings::default()
                .connect_timeout(Duration::from_secs(30))
                .retry(RetryPolicy::none()),
        )
        .build()
        .expect("the scenario's model builds")
}

/// Whether `result` is the scenario's expected ending.
pub fn is_expected(result: &RunResult<Verdict>) -> bool {
    result.output.winner == "Ann"
        && result.output.score == 6
        && result.usage.requests == TURNS
        && result.messages.len() == 2 * TURNS as usize + 1
}

/// The recorded chat completion the server answers to model turn `turn` (0, 1 or 2).
pub fn completion(turn: usize) -> Value {
    let (id, tool, arguments, prompt, output) = SCRIPT[turn];
    json!({
        "id": format!("chatcmpl-{turn}"),
        "object": "chat.completion",
        "created": 1_732_960_000,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{
            "index": 0,
            "message": {
                "role": "assistant",
                "content": null,
                "tool_calls": [{"id": id, "type": "function", "function": {"name": tool, "arguments": arguments}}],
                "refusal": null
            },
            "logprobs": null,
            "finish_reason": "tool_calls"
        }],
        "usage": {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output},
        "system_fingerprint": "fp_0ba0d124f1"
    })
}

/// The arguments of the delegation scenario's tool.
#[golem::args]
#[derive(Debug)]
pub struct Task {
    /// What to do.
    pub task: String,
}

/// A router whose model calls its `helper` tool once, then answers: the tool is a plain
/// function returning `"done"`, or (`child`) an agent whose model answers `"done"` at once.
/// What a child agent costs per call over a plain tool is the difference.
///
/// # Panics
/// If an agent does not build.
pub fn delegating_agent(child: bool) -> Agent<(), String> {
    let router = FunctionModel::new(|messages: &[Message], _params| match messages.len() {
        1 => ModelResponse::tool_call("helper", r#"{"task": "do it"}"#, "c1").with_usage(50, 5),
        _ => ModelResponse::text("finished").with_usage(60, 2),
    });
    let builder = Agent::<(), String>::builder(router);
    let builder = if child {
        let helper = Agent::<(), String>::builder(FunctionModel::new(|_: &[Message], _params| {
            ModelResponse::text("done").with_usage(20, 1)
        }))
        .build()
        .expect("the child builds");
        builder.tool(helper.as_tool(
            "helper",
            "Does a task.",
            |_ctx: &RunContext<()>, task: Task| (task.task, ()),
        ))
    } else {
        builder.tool(golem::tool::FunctionTool::new(
            "helper",
            |_ctx: RunContext<()>, _task: Task| async { Ok::<_, ModelRetry>("done") },
        ))
    };
    builder.build().expect("the router builds")
}
