//! Shared pieces of the runnable examples.
