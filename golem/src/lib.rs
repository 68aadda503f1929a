//! golem builds LLM agents out of plain Rust, and lets the model correct its own mistakes
//! under explicit retry budgets.
//!
//! An [`Agent`] asks a [`Model`](model::Model) for the next turn, runs the
//! [tools](tool::Tool) it calls and decodes its [output](output::Output). When a tool or
//! the output decoder rejects what the model produced with an error wrapping
//! [`ModelRetry`], the reason goes back to the model as feedback and it tries again —
//! within [`tool_retries`](AgentBuilder::tool_retries),
//! [`output_retries`](AgentBuilder::output_retries) and per-tool
//! [`RetryLimit`](tool::RetryLimit)s, all off by default. Anything else fails the run with a
//! [`RunError`] that keeps the cause, the messages and the usage.
//!
//! ```
//! use golem::model::function::FunctionModel;
//! use golem::model::{Message, ModelResponse};
//! use golem::Agent;
//!
//! let model = FunctionModel::new(|_: &[Message], _| ModelResponse::text("Hello!"));
//! let agent = Agent::<(), String>::builder(model)
//!     .instructions("Greet the user.")
//!     .build()?;
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! let result = agent.run("Hi", ()).await?;
//! assert_eq!(result.output, "Hello!");
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod agent;
mod context;
mod error;
pub mod history;
pub mod model;
pub mod output;
mod private;
pub mod run;
pub mod schema;
pub mod tool;
mod toolbox;
pub mod toolset;
pub mod usage;

pub use agent::{
    Agent, AgentBuilder, BuildError, DEFAULT_MAX_TURNS, DEFAULT_OUTPUT_TOOL_NAME, RunResult,
};
pub use context::RunContext;
pub use error::{BoxError, Exhausted, OutputPanicked, Stage, ToolPanicked};
pub use futures_util::future::BoxFuture;
pub use model::ModelRetry;
pub use run::{AgentRun, RunError, RunEvent, RunEvents, RunState, Step};
pub use usage::Usage;

pub use golem_macros::{args, output, tool};

/// Guides: longer reads on how golem works.
pub mod guide {
    /// The self-correction guide.
    #[doc = include_str!("../../docs/self-correction.md")]
    pub mod self_correction {}

    /// Runs you drive, watch, save and stop: steps, events, saved state, stops, approvals.
    #[doc = include_str!("../../docs/runs.md")]
    pub mod runs {}

    /// Streaming: deltas, typed partial output, stopping mid-stream, faults.
    #[doc = include_str!("../../docs/streaming.md")]
    pub mod streaming {}

    /// Context and small models: instructions, bounded output, repeated calls, prompted
    /// output, history processors, a token budget before sending.
    #[doc = include_str!("../../docs/context.md")]
    pub mod context {}

    /// Agents that compose: an agent as a tool, usage rolled up, limits across parent and
    /// child, failures as rejections or terminal, stops, output functions and hand-offs.
    #[doc = include_str!("../../docs/multi-agent.md")]
    pub mod multi_agent {}

    /// Durable runs: the journal, what is journaled, and tools' side effects.
    #[doc = include_str!("../../docs/durability.md")]
    pub mod durability {}

    /// Debugging tool errors, at compile time and at run time.
    #[doc = include_str!("../../docs/debugging-tool-errors.md")]
    pub mod debugging_tool_errors {}

    /// Providers: OpenAI, compatible servers (llama.cpp, vLLM, Ollama, ...) and Anthropic;
    /// headers, settings, tool choice, strict mode, the transport.
    #[cfg(all(feature = "openai", feature = "anthropic", feature = "gemini"))]
    #[doc = include_str!("../../docs/providers.md")]
    pub mod providers {}

    /// What a run cost, in money (the `prices` feature), and what it did, in traces (spans,
    /// attributes, content capture, the OTLP export with golem-otel).
    #[cfg(feature = "prices")]
    #[doc = include_str!("../../docs/observability.md")]
    pub mod observability {}

    /// Every compile error of the macros.
    #[doc = include_str!("../../docs/diagnostics.md")]
    pub mod diagnostics {}
}

/// Paths used by code the macros generate. Not public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::private::*;
}

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
