//! golem-ui's tests, one module per subject, in one test binary: each binary links golem,
//! axum and sqlx, so one binary instead of one per file keeps a build after a change short.

#[path = "../common/mod.rs"]
mod common;
#[cfg(feature = "postgres")]
#[path = "../postgres/mod.rs"]
mod postgres;

mod clients;
mod mapping;
mod requests;
mod server;
mod threads;
