//! golem's behaviour tests, one module per subject, in one test binary: each binary links
//! golem and its whole dependency tree, so one binary instead of one per file keeps a build
//! after a change in golem short. `secrets` and `tracing` have binaries of their own, because
//! they install tracing subscribers that would capture, or race, the events of the others.

#[path = "../common/mod.rs"]
mod common;

mod agent;
mod anthropic;
mod anthropic_stream;
mod between_steps;
mod compatible;
mod compose;
mod fallback;
mod gemini;
mod gemini_stream;
mod history;
mod journal;
mod journal_tools;
mod limits;
mod media;
mod openai;
mod openai_stream;
mod output_functions;
mod output_retries;
mod partial_output;
mod repeated_calls;
mod responses;
mod responses_types;
mod run;
mod stream_faults;
mod streaming;
mod tool_retries;
mod toolsets;
mod transport;
