//! golem-restate against a real Restate server: the service the tests kill and restart
//! (`golem-restate-test-service`), the agent it runs, a scripted loopback model server that
//! counts requests, a remote toolset and its loopback server, and the Restate server itself (installed, pinned, by
//! `golem-restate/tests/restate/install.sh` under the target directory).

pub mod agent;
pub mod install;
pub mod model_server;
pub mod remote;
pub mod restate;
pub mod service;
pub mod toolset_server;
