//! golem-temporal against a real Temporal server: the workflows the worker runs
//! (`golem-temporal-test-worker`, which the tests kill and restart), the worker itself, and
//! the Temporal server (the CLI's dev server, installed, pinned, by
//! `golem-temporal/tests/temporal/install.sh` under the target directory). The agent and the
//! scripted model server are the Restate engine tests', so both engines run the same run.

pub mod temporal;
pub mod worker;
pub mod workflows;
