//! A human in the loop: deleting a file needs approval. The run pauses before the call,
//! its state is saved (as if for a reviewer in another process), the reviewer denies the
//! first deletion and approves the second, and the restored run goes on.
//!
//! ```text
//! cargo run --example human-in-the-loop                       # offline, a scripted model
//! OPENAI_API_KEY=sk-... cargo run --example human-in-the-loop # a real model
//! ```

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use golem::model::function::FunctionModel;
use golem::model::{Message, Model, ModelResponse, ToolCallPart};
use golem::{Agent, ModelRetry, RunContext, RunState, Step};
use golem_examples::{Transcript, openai_from_env, usage_line};

/// The shared drive the agent tidies up; shared, so the process that goes on after a review
/// sees the same files.
#[derive(Debug, Clone)]
pub(crate) struct Drive {
    files: Arc<Mutex<Vec<String>>>,
}

/// List the files on the drive.
#[golem::tool]
async fn list_files(ctx: &RunContext<Drive>) -> String {
    ctx.deps().files.lock().expect("not poisoned").join(", ")
}

/// Delete one file from the drive.
///
/// # Arguments
/// * `path` - the file's path, as `list_files` shows it
#[golem::tool(requires_approval)]
async fn delete_file(ctx: &RunContext<Drive>, path: String) -> Result<String, ModelRetry> {
    let mut files = ctx.deps().files.lock().expect("not poisoned");
    let Some(index) = files.iter().position(|file| *file == path) else {
        return Err(ModelRetry::new(format!("no file `{path}`")));
    };
    files.remove(index);
    Ok(format!("deleted {path}"))
}

fn agent(model: impl Model) -> Result<Agent<Drive, String>, golem::BuildError> {
    Agent::<Drive, String>::builder(model)
        .instructions(
            "You tidy up a shared drive. List the files, then delete temporary and old ones, \
             one call at a time. Finish with a one-line summary.",
        )
        .tool(ListFiles)
        .tool(DeleteFile) // every call waits for a reviewer
        .tool_retries(1)
        .build()
}

/// Plays the model offline: list, delete the old report, then the log, then sum up.
pub(crate) fn scripted_model() -> FunctionModel {
    FunctionModel::new(|messages: &[Message], _| match messages.len() {
        1 => ModelResponse::tool_call("list_files", "{}", "call_1").with_usage(120, 12),
        3 => ModelResponse::tool_call("delete_file", r#"{"path": "old-report.pdf"}"#, "call_2")
            .with_usage(160, 18),
        5 => ModelResponse::tool_call("delete_file", r#"{"path": "build.log"}"#, "call_3")
            .with_usage(210, 16),
        _ => ModelResponse::text("Deleted build.log; kept old-report.pdf, which is still needed.")
            .with_usage(250, 15),
    })
    .with_name("scripted")
}

/// The reviewer's policy: reports stay, anything else may go.
fn review(call: &ToolCallPart) -> Result<(), String> {
    if call.args.contains(".pdf") {
        Err("reports are kept for a year".to_owned())
    } else {
        Ok(())
    }
}

/// Decides on every waiting call of a saved state, as a reviewer's process would, and
/// returns the state to go on with.
fn decide(saved: &str, log: &mut String) -> Result<RunState, Box<dyn std::error::Error>> {
    let mut state: RunState = serde_json::from_str(saved)?;
    for call in state.awaiting_approval().to_vec() {
        let what = format!("{}({})", call.tool_name, call.args);
        match review(&call) {
            Ok(()) => {
                writeln!(log, "approval │ {what} → approved")?;
                state.approve(&call.tool_call_id)?;
            }
            Err(reason) => {
                writeln!(log, "approval │ {what} → denied: {reason}")?;
                state.deny(&call.tool_call_id, reason)?;
            }
        }
    }
    Ok(state)
}

/// Runs the clean-up with `model` and returns what the example prints.
pub(crate) async fn run(model: impl Model) -> Result<String, Box<dyn std::error::Error>> {
    let drive = Drive {
        files: Arc::new(Mutex::new(vec![
            "old-report.pdf".into(),
            "build.log".into(),
            "notes.md".into(),
        ])),
    };
    let agent = agent(model)?;
    let mut log = String::new();
    let mut run = agent.start("Tidy up the drive.", drive.clone());
    let result = loop {
        match run.step().await? {
            Step::Finished(result) => break result,
            Step::Paused => {
                // The run waits: save its state (into a queue, a database), let a reviewer
                // decide, and go on from the decided state, in this process or another.
                let saved = serde_json::to_string(run.state())?;
                let state = decide(&saved, &mut log)?;
                run = agent.restore(state, drive.clone());
            }
            _ => {} // a request was made, or a response handled
        }
    };

    let transcript = Transcript::new(1, 0);
    let left = drive.files.lock().expect("not poisoned").join(", ");
    Ok(format!(
        "{log}{}{}\nanswer: {}\nfiles left: {left}\n",
        transcript.render(&result.messages),
        usage_line(&result.usage),
        result.output
    ))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let output = match openai_from_env() {
        Some(model) => run(model).await?,
        None => {
            println!("OPENAI_API_KEY is not set: a scripted model plays the part.\n");
            run(scripted_model()).await?
        }
    };
    print!("{output}");
    Ok(())
}
