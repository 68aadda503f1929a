//! The service the crash tests kill and restart: `Durable` and the `Approvals` workflow on
//! `127.0.0.1:$PORT`, their agents on the model server at `$MODEL_URL`, their side effects in
//! `$EFFECTS`; and, when
//! `$TOOLSET_URL` is set, `Toolsets`, its tools listed by the toolset server there.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use golem_restate_engine_tests::agent::Effects;
use golem_restate_engine_tests::service::{Approvals, Durable, Toolsets, serve};
use restate_sdk::prelude::Endpoint;

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| panic!("${name} is not set"))
}

#[tokio::main]
async fn main() {
    let port: u16 = var("PORT").parse().expect("$PORT is a port");
    let effects = Effects {
        path: PathBuf::from(var("EFFECTS")),
    };
    let model_url = var("MODEL_URL");
    let mut endpoint = Endpoint::builder()
        .bind(Durable::new(&model_url, effects.clone()))
        .bind(Approvals::new(&model_url, effects.clone()));
    if let Ok(toolset_url) = std::env::var("TOOLSET_URL") {
        endpoint = endpoint.bind(Toolsets::new(&model_url, &toolset_url, effects));
    }
    let endpoint = endpoint.build();
    serve(endpoint, SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await;
}
