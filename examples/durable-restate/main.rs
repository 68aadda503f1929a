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

use std::net::SocketAddr;

use golem::Agent;
use golem_examples::durable::{self, Deps, Mailer, scripted_model};
use golem_examples::openai_from_env;
use golem_restate::restate_sdk::prelude::*;
use golem_restate::{RestateJournal, handler_error};

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
            run_id: ctx.invocation_id().to_owned(),
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

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().any(|arg| arg == "--offline") {
        print!("{}", durable::offline(scripted_model(), "inv_1").await?);
        return Ok(());
    }
    let address: SocketAddr = std::env::var("BIND")
        .unwrap_or_else(|_| "127.0.0.1:9080".to_owned())
        .parse()?;
    let agent = match openai_from_env() {
        Some(model) => durable::agent(model),
        None => {
            println!("OPENAI_API_KEY is not set: a scripted model plays the part.");
            durable::agent(scripted_model())
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
