//! The agent under test: two tools, one with a side effect (a line appended to a file), one
//! that rejects its first call with [`ModelRetry`], over golem's `openai` provider.

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use golem::model::openai::OpenAiModel;
use golem::model::{Message, RequestPart};
use golem::tool::{FunctionTool, Tool};
use golem::usage::Usage;
use golem::{Agent, ModelRetry, RunContext};
use serde::{Deserialize, Serialize};

/// The prompt the tests send.
pub const PROMPT: &str = "Save a note, then look up the answer.";

/// The run's final output, with the scripted model.
pub const OUTPUT: &str = "The answer is 42.";

/// What the tools need: the file `save_note` appends to, one line per call.
#[derive(Debug, Clone)]
pub struct Effects {
    /// The side-effect file.
    pub path: PathBuf,
}

impl Effects {
    /// A side-effect file of its own, empty, for the test `name` of the `engine`'s tests,
    /// in `dir` (the tests' `CARGO_TARGET_TMPDIR`).
    pub fn fresh(dir: &Path, engine: &str, name: &str) -> Self {
        let path = dir.join(format!(
            "golem-{engine}-{name}-{}.effects",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&path);
        Effects { path }
    }

    /// The lines `save_note` wrote, one per side effect.
    pub fn lines(&self) -> Vec<String> {
        std::fs::read_to_string(&self.path)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Note {
    text: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Key {
    key: String,
}

/// The agent, on an OpenAI-compatible server at `base_url` (`http://127.0.0.1:PORT/v1`).
///
/// # Panics
/// If the model or the agent cannot be built.
pub fn agent(base_url: &str) -> Agent<Effects, String> {
    let lookup = FunctionTool::new("lookup", |_ctx: RunContext<Effects>, key: Key| async move {
        if key.key != "answer" {
            return Err(ModelRetry::new(format!(
                "no entry for `{}`; the key is `answer`",
                key.key
            )));
        }
        Ok(42)
    });
    Agent::builder(scripted(base_url))
        .instructions("Use the tools.")
        .tool(save_note(false))
        .tool(lookup)
        .tool_retries(1)
        .build()
        .expect("a valid agent")
}

/// The approval run's final output, with the scripted model.
pub const APPROVED_OUTPUT: &str = "Saved the note you allowed.";

/// An agent whose `save_note` waits for approval before each call.
///
/// # Panics
/// If the model or the agent cannot be built.
pub fn approval_agent(base_url: &str) -> Agent<Effects, String> {
    Agent::builder(scripted(base_url))
        .tool(save_note(true))
        .build()
        .expect("a valid agent")
}

/// The calls the approval agent's run waits for: `call_a` saves "keep", `call_b` "drop".
pub fn awaiting_calls() -> [golem::run::AwaitingCall; 2] {
    [("call_a", "keep"), ("call_b", "drop")].map(|(id, text)| golem::run::AwaitingCall {
        tool_call_id: id.into(),
        tool_name: "save_note".into(),
        args: format!(r#"{{"text": "{text}"}}"#),
    })
}

/// golem's OpenAI provider on the scripted server at `base_url`.
fn scripted(base_url: &str) -> OpenAiModel {
    OpenAiModel::builder("scripted")
        .base_url(base_url)
        .api_key("test-key")
        .build()
        .expect("a valid model")
}

/// `save_note`: appends `{call id} {text}` to the side-effect file; each call waits for
/// approval when `requires_approval`.
fn save_note(requires_approval: bool) -> impl Tool<Effects> {
    FunctionTool::new(
        "save_note",
        |ctx: RunContext<Effects>, note: Note| async move {
            let mut file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&ctx.deps().path)?;
            let call = ctx.tool_call_id().unwrap_or("?");
            writeln!(file, "{call} {}", note.text)?;
            Ok::<_, std::io::Error>("saved")
        },
    )
    .requires_approval(requires_approval)
}

/// The delegating run's final output: the child's answer, passed on.
pub const DELEGATED_OUTPUT: &str = "Done: The answer is 42.";

#[derive(Deserialize, schemars::JsonSchema)]
struct Task {
    /// What to ask the notes agent.
    task: String,
}

/// An agent whose one tool is [`agent`] (`notes`): a scripted model asks it `PROMPT` as call
/// `d1`, then answers with what it returned. Inside a durable run the child's steps are
/// journaled under `tool:1:d1`.
///
/// # Panics
/// If the agent cannot be built.
pub fn delegating_agent(base_url: &str) -> Agent<Effects, String> {
    let model = golem::model::function::FunctionModel::new(|messages: &[Message], _| {
        let returned = messages.iter().rev().find_map(|message| match message {
            Message::Request(request) => request.parts.iter().find_map(|part| match part {
                RequestPart::ToolReturn(returned) => Some(returned.content.clone()),
                _ => None,
            }),
            Message::Response(_) => None,
        });
        match returned {
            None => golem::model::ModelResponse::tool_call(
                "notes",
                serde_json::json!({ "task": PROMPT }).to_string(),
                "d1",
            )
            .with_usage(50, 5),
            Some(answer) => golem::model::ModelResponse::text(format!(
                "Done: {}",
                answer.as_str().unwrap_or_default()
            ))
            .with_usage(60, 6),
        }
    });
    let notes = agent(base_url).as_tool(
        "notes",
        "Saves notes and looks up answers.",
        |ctx: &RunContext<Effects>, task: Task| (task.task, ctx.deps().clone()),
    );
    Agent::builder(model)
        .tool(notes)
        .build()
        .expect("a valid agent")
}

/// What a run produced, as the service returns it: compared between a crashed and an
/// uninterrupted run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The output.
    pub output: String,
    /// The usage, rejected rounds included.
    pub usage: Usage,
    /// Rejections sent back to the model (the retry counters' sum).
    pub rejections: usize,
    /// The whole history.
    pub messages: Vec<Message>,
}

impl Summary {
    /// The notes agent's run ([`agent`], [`PROMPT`]) in process, without a journal and without
    /// a crash, its side effects in `effects`: what a durable run must end with.
    ///
    /// # Panics
    /// If the run fails or its side effect is not the one expected.
    pub async fn uninterrupted(effects: &Effects) -> Summary {
        let (model, _) = crate::model_server::ModelServer::start(None).await;
        let result = agent(&model.base_url())
            .run(PROMPT, effects.clone())
            .await
            .expect("the run succeeds");
        assert_eq!(effects.lines(), ["call_1 hello"]);
        Summary::of(result)
    }

    /// Asserts what the approval agent's run ends with when `call_a` was approved and
    /// `call_b` denied with "Not that one.": the answer, each call's result, the usage.
    ///
    /// # Panics
    /// If it does not.
    pub fn assert_approved(&self) {
        assert_eq!(self.output, APPROVED_OUTPUT);
        let Message::Request(answers) = &self.messages[2] else {
            panic!("the calls are answered: {:#?}", self.messages);
        };
        let parts: Vec<(String, String)> = answers
            .parts
            .iter()
            .map(|part| match part {
                RequestPart::ToolReturn(returned) => {
                    (returned.tool_call_id.clone(), returned.content.to_string())
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(parts[0], ("call_a".to_owned(), "\"saved\"".to_owned()));
        assert_eq!(parts[1].0, "call_b");
        assert!(parts[1].1.contains("Not that one."), "{parts:?}");
        assert_eq!(self.usage.requests, 2);
        assert_eq!(self.usage.tool_calls, 1);
    }

    /// The summary of a finished run.
    pub fn of(result: golem::RunResult<String>) -> Self {
        let rejections = result
            .messages
            .iter()
            .filter_map(|message| match message {
                Message::Request(request) => Some(request),
                Message::Response(_) => None,
            })
            .flat_map(|request| &request.parts)
            .filter(|part| matches!(part, RequestPart::RetryPrompt(_)))
            .count();
        Summary {
            output: result.output,
            usage: result.usage,
            rejections,
            messages: result.messages,
        }
    }
}
