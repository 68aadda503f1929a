//! Credentials never show: in errors, histories, events, `Debug` and logs. One binary for
//! both subjects, apart from golem's other tests, because it installs a global tracing
//! subscriber that captures every log line of the process.

#[path = "../common/mod.rs"]
mod common;

mod secrets;
mod stream_secrets;
