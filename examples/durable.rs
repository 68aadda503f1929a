//! The durable examples' agent (`durable-restate`, `durable-temporal`): an assistant that
//! sends reminders by email through a mailer that takes an idempotency key, its scripted
//! model, and the offline run through an in-memory journal with a crash in the middle.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError};

use golem::model::function::FunctionModel;
use golem::model::{Message, Model, ModelResponse};
use golem::run::MemoryJournal;
use golem::{Agent, RunContext, RunError};

use crate::{Transcript, usage_line};

/// The prompt the examples send.
pub const PROMPT: &str = "Remind Ann about invoice 17.";

/// The mail service the tool sends through. Like a real provider's API, it takes an
/// idempotency key and sends once per key, so a tool call that runs again after a crash
/// (before the engine recorded its result) does not send twice.
#[derive(Debug, Clone, Default)]
pub struct Mailer {
    sent: Arc<Mutex<BTreeMap<String, String>>>,
}

impl Mailer {
    /// Sends `email` unless an email with `key` went out already.
    pub fn send(&self, key: String, email: String) {
        let mut sent = self.sent.lock().unwrap_or_else(PoisonError::into_inner);
        sent.entry(key).or_insert(email);
    }

    /// The emails sent, by idempotency key.
    pub fn sent(&self) -> BTreeMap<String, String> {
        self.sent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// What a run's tools get: the mailer, and the engine's id for the run (Restate's invocation
/// id, Temporal's workflow id), stable when the engine runs it again.
#[derive(Debug, Clone)]
pub struct Deps {
    /// Where the emails go.
    pub mailer: Mailer,
    /// The engine's id for the run.
    pub run_id: String,
}

/// An email to send.
#[golem::args]
struct Email {
    /// Who gets the email.
    to: String,
    /// What it says.
    body: String,
}

/// The assistant: one tool, `send_email`, whose idempotency key is the engine's run id and
/// the tool call's id — both the same when the engine runs the call again.
///
/// # Panics
/// Never: the agent is valid.
pub fn agent(model: impl Model + 'static) -> Agent<Deps, String> {
    let send_email = golem::tool::FunctionTool::new(
        "send_email",
        |ctx: RunContext<Deps>, email: Email| async move {
            let deps = ctx.deps();
            let key = format!("{}/{}", deps.run_id, ctx.tool_call_id().unwrap_or("-"));
            deps.mailer
                .send(key, format!("to {}: {}", email.to, email.body));
            Ok::<_, golem::ModelRetry>(format!("sent to {}", email.to))
        },
    );
    Agent::builder(model)
        .instructions("You send reminders by email, then confirm in one line.")
        .tool(send_email)
        .build()
        .expect("a valid agent")
}

/// Plays the model offline: send the reminder, then confirm.
pub fn scripted_model() -> FunctionModel {
    FunctionModel::new(|messages: &[Message], _| match messages.len() {
        1 => ModelResponse::tool_call(
            "send_email",
            r#"{"to": "ann@example.com", "body": "Invoice 17 is due on Friday."}"#,
            "call_1",
        )
        .with_usage(180, 30),
        _ => ModelResponse::text("Reminded Ann that invoice 17 is due on Friday.")
            .with_usage(230, 12),
    })
    .with_name("scripted")
}

/// The run offline, through an in-memory journal: the process "dies" after the email went
/// out, and the run starts again from the prompt, as an engine would start it, with the
/// same `run_id`. Returns the transcript, the usage, the journal's steps and the emails
/// sent.
///
/// # Errors
/// The run's.
pub async fn offline(model: impl Model + 'static, run_id: &str) -> Result<String, RunError> {
    let agent = agent(model);
    let mailer = Mailer::default();
    let deps = Deps {
        mailer: mailer.clone(),
        run_id: run_id.to_owned(),
    };
    let journal = MemoryJournal::new();

    let mut first = agent.start(PROMPT, deps.clone());
    first.step_in(&journal).await?; // model:1
    first.step_in(&journal).await?; // tool:1:call_1, the email
    drop(first); // the crash

    let result = agent.start(PROMPT, deps).finish_in(&journal).await?;
    let mut output = Transcript::new(0, 0).render(&result.messages);
    output.push_str(&usage_line(&result.usage));
    output.push('\n');
    let _ = writeln!(
        output,
        "journal  │ {} (replayed {})",
        journal.names().join(", "),
        journal.replayed()
    );
    for (key, email) in mailer.sent() {
        let _ = writeln!(output, "sent     │ {key}: {email}");
    }
    Ok(output)
}
