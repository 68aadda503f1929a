//! A durable agent on Restate: the `Assistant` service answers `ask` with a golem run whose
//! model requests and tool calls are steps of Restate's journal. Kill the service in the
//! middle of a run and start it again: Restate retries the invocation, the recorded steps are
//! answered from the journal, and the email goes out once.
//!
//! ```text
//! bash golem-restate/tests/restate/install.sh     # once: restate-server 1.7.12 under target/
//! target/restate-node/node_modules/@restatedev/restate-server-linux-x64/bin/restate-server \
//!     --no-logo --listen-mode tcp --bind-ip 127.0.0.1 --advertised-host 127.0.0.1 \
//!     --base-dir /tmp/restate-data                # ingress :8080, admin :9070
//! cargo run --example durable-restate             # the service on 127.0.0.1:9080
//! curl -X POST http://127.0.0.1:9070/deployments \
//!     -H 'content-type: application/json' -d '{"uri": "http://127.0.0.1:9080"}'
//! curl -X POST http://127.0.0.1:8080/Assistant/ask \
//!     -H 'content-type: application/json' -d '"Remind Ann about invoice 17."'
//! ```
//!
//! Without `OPENAI_API_KEY` a scripted model plays the part. Without a Restate server,
//! `cargo run --example durable-restate -- --offline` runs the same agent through an
//! in-memory journal, with a crash in the middle (what `cargo test -p golem-example-durable-restate`
//! checks).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use golem::model::function::FunctionModel;
use golem::model::{Message, Model, ModelResponse};
use golem::run::MemoryJournal;
use golem::{Agent, RunContext, RunError};
use golem_examples::{Transcript, openai_from_env, usage_line};
use golem_restate::restate_sdk::prelude::*;
use golem_restate::{RestateJournal, handler_error};
use serde::Deserialize;

/// The mail service the tool sends through. Like a real provider's API, it takes an
/// idempotency key and sends once per key, so a tool call that runs again after a crash
/// (before Restate recorded its result) does not send twice.
#[derive(Debug, Clone, Default)]
pub(crate) struct Mailer {
    sent: Arc<Mutex<BTreeMap<String, String>>>,
}

impl Mailer {
    /// Sends `email` unless an email with `key` went out already.
    fn send(&self, key: String, email: String) {
        let mut sent = self.sent.lock().unwrap_or_else(PoisonError::into_inner);
        sent.entry(key).or_insert(email);
    }

    /// The emails sent, by idempotency key.
    pub(crate) fn sent(&self) -> BTreeMap<String, String> {
        self.sent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// What a run's tools get: the mailer, and the invocation the run belongs to.
#[derive(Debug, Clone)]
pub(crate) struct Deps {
    mailer: Mailer,
    invocation: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Email {
    /// Who gets the email.
    to: String,
    /// What it says.
    body: String,
}

/// The assistant: one tool, `send_email`, whose idempotency key is the invocation and the
/// tool call's id — both the same when Restate retries the invocation.
pub(crate) fn agent(model: impl Model + 'static) -> Agent<Deps, String> {
    let send_email = golem::tool::FunctionTool::new(
        "send_email",
        |ctx: RunContext<Deps>, email: Email| async move {
            let deps = ctx.deps();
            let key = format!("{}/{}", deps.invocation, ctx.tool_call_id().unwrap_or("-"));
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
pub(crate) fn scripted_model() -> FunctionModel {
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

/// The Restate service.
pub(crate) struct Assistant {
    agent: Agent<Deps, String>,
    mailer: Mailer,
}

#[restate_sdk::service]
impl Assistant {
    /// Runs the agent on `prompt`, each model request and tool call a journaled step.
    #[handler]
    async fn ask(&self, ctx: Context<'_>, prompt: String) -> Result<String, HandlerError> {
        let deps = Deps {
            mailer: self.mailer.clone(),
            invocation: ctx.invocation_id().to_owned(),
        };
        let result = self
            .agent
            .start(prompt, deps)
            .finish_in(&RestateJournal::new(&ctx))
            .await
            // A run that cannot succeed on a retry ends the invocation (TerminalError).
            .map_err(handler_error)?;
        Ok(result.output)
    }
}

/// The same run offline, through an in-memory journal: the process "dies" after the email
/// went out, and the run starts again from the prompt, as Restate would start it. Returns
/// what the example test prints.
pub(crate) async fn run(model: impl Model + 'static) -> Result<String, RunError> {
    let agent = agent(model);
    let mailer = Mailer::default();
    let deps = Deps {
        mailer: mailer.clone(),
        invocation: "inv_1".to_owned(),
    };
    let journal = MemoryJournal::new();
    let prompt = "Remind Ann about invoice 17.";

    let mut first = agent.start(prompt, deps.clone());
    first.step_in(&journal).await?; // model:1
    first.step_in(&journal).await?; // tool:1:call_1, the email
    drop(first); // the crash

    let result = agent.start(prompt, deps).finish_in(&journal).await?;
    let mut output = Transcript::new(0, 0).render(&result.messages);
    output.push_str(&usage_line(&result.usage));
    output.push('\n');
    output.push_str(&format!(
        "journal  │ {} (replayed {})\n",
        journal.names().join(", "),
        journal.replayed()
    ));
    for (key, email) in mailer.sent() {
        output.push_str(&format!("sent     │ {key}: {email}\n"));
    }
    Ok(output)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().any(|arg| arg == "--offline") {
        print!("{}", run(scripted_model()).await?);
        return Ok(());
    }
    let address: SocketAddr = std::env::var("BIND")
        .unwrap_or_else(|_| "127.0.0.1:9080".to_owned())
        .parse()?;
    let agent = match openai_from_env() {
        Some(model) => agent(model),
        None => {
            println!("OPENAI_API_KEY is not set: a scripted model plays the part.");
            agent(scripted_model())
        }
    };
    let assistant = Assistant {
        agent,
        mailer: Mailer::default(),
    };
    println!("serving the Assistant service on http://{address}");
    HttpServer::new(Endpoint::builder().bind(assistant).build())
        .listen_and_serve(address)
        .await;
    Ok(())
}
