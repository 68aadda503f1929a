//! Durable golem runs on [Restate](https://restate.dev): a run that survives a crash
//! without paying a model request twice or repeating a recorded tool call.
//!
//! Inside a Restate handler, drive the run through a [`RestateJournal`] on the handler's
//! context. Each model request and each tool call becomes one `ctx.run` step, named as golem
//! names it — `model:{turn}` and `tool:{turn}:{call_id}`, with `tools:{turn}` for the tool
//! list of the run's toolsets and `deadline` for a run with a timeout, a compatibility
//! promise (see [`golem::run::Journal`]). When the service dies mid-run, Restate invokes the handler again;
//! the run starts over from the same prompt, Restate answers the recorded steps from its
//! journal, and the run goes on from the first step it had not recorded, with the same
//! history, usage and retry counters as a run that never stopped.
//!
//! ```
//! use golem::model::function::FunctionModel;
//! use golem::model::ModelResponse;
//! use golem::Agent;
//! use golem_restate::{RestateJournal, handler_error};
//! use restate_sdk::prelude::*;
//!
//! struct Assistant {
//!     agent: Agent<(), String>,
//! }
//!
//! #[restate_sdk::service]
//! impl Assistant {
//!     #[handler]
//!     async fn ask(&self, ctx: Context<'_>, prompt: String) -> Result<String, HandlerError> {
//!         let result = self
//!             .agent
//!             .start(prompt, ())
//!             .finish_in(&RestateJournal::new(&ctx))
//!             .await
//!             .map_err(handler_error)?;
//!         Ok(result.output)
//!     }
//! }
//!
//! # fn serve() -> Result<(), Box<dyn std::error::Error>> {
//! let model = FunctionModel::new(|_, _| ModelResponse::text("Hello!"));
//! let agent = Agent::<(), String>::builder(model).build()?;
//! let endpoint = Endpoint::builder().bind(Assistant { agent }).build();
//! // HttpServer::new(endpoint).listen_and_serve("127.0.0.1:9080".parse()?).await;
//! # let _ = endpoint;
//! # Ok(())
//! # }
//! # serve().unwrap();
//! ```
//!
//! # What Restate does and does not retry
//!
//! A model step that fails for a transient reason (the transport, HTTP 408, 429, 5xx) is
//! retried by Restate under the journal's `RunRetryPolicy`, each attempt with golem's own
//! transport retries inside it; then it is recorded as failed. Everything else is recorded
//! at once, and [`handler_error`] makes the run's failure a `TerminalError`, so a run whose
//! retry budget ran out, or that hit a limit, ends instead of being retried forever. ADR 0019
//! gives the reasons.
//!
//! # Tools
//!
//! A tool call is recorded when it ends: if the service dies while a tool runs, Restate runs
//! that call again. Give side effects that must not repeat an idempotency key, such as
//! [`RunContext::tool_call_id`](golem::RunContext::tool_call_id), stable across retries.
//! The tool calls of one response run one after another, in call order, because Restate
//! takes one step at a time.
//!
//! # Versions
//!
//! golem-restate is built on `restate-sdk` 0.13 (re-exported as
//! `golem_restate::restate_sdk`), which speaks to Restate servers 1.6 and 1.7; the tests run
//! against `restate-server` 1.7.12.

#![deny(missing_docs)]

pub mod approval;
mod error;
mod journal;

pub use error::{RetriesExhausted, handler_error, is_terminal, is_transient, terminal_error};
pub use journal::{DEFAULT_RETRY_ATTEMPTS, RestateJournal};
pub use restate_sdk;
