//! The service the crash test kills and restarts: `Durable` on `127.0.0.1:$PORT`, its agent
//! on the model server at `$MODEL_URL`, its side effects in `$EFFECTS`.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use golem_restate_engine_tests::agent::Effects;
use golem_restate_engine_tests::service::{Durable, serve};
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
    let endpoint = Endpoint::builder()
        .bind(Durable::new(&var("MODEL_URL"), effects))
        .build();
    serve(endpoint, SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await;
}
