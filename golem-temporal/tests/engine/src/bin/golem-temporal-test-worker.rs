//! The worker the crash tests kill and restart: the workflows of
//! `golem_temporal_engine_tests::workflows` on the task queue `$QUEUE` of the Temporal server
//! at `$TEMPORAL` (`127.0.0.1:PORT`), their agents on the model server at `$MODEL_URL`,
//! their side effects in `$EFFECTS`.

use std::path::PathBuf;

use golem_restate_engine_tests::agent::Effects;

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("${name} is not set"))
}

#[tokio::main]
async fn main() {
    let effects = Effects {
        path: PathBuf::from(var("EFFECTS")),
    };
    if let Err(error) = golem_temporal_engine_tests::worker::run(
        &var("TEMPORAL"),
        &var("QUEUE"),
        &var("MODEL_URL"),
        effects,
    )
    .await
    {
        eprintln!("the worker stopped: {error}");
        std::process::exit(1);
    }
}
