//! Attribute macros for [golem](https://docs.rs/golem): `#[golem::tool]` and `#[golem::output]`.
//!
//! Use them through the `golem` crate, which re-exports them.
