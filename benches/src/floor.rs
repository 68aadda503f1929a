//! The floor: a raw reqwest client sending the scenario's three request bodies, as golem
//! sent them, and reading the three response bodies. No serialisation, no parsing, no agent
//! loop: what any client of the API pays for the same exchange.

use std::time::Duration;

use bytes::Bytes;
use reqwest::Client;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};

use crate::scenario::API_KEY;

/// A raw reqwest client replaying recorded request bodies.
#[derive(Debug, Clone)]
pub struct Floor {
    client: Client,
    url: String,
    bodies: Vec<Bytes>,
}

impl Floor {
    /// A client for `{base_url}/chat/completions` that sends `bodies` in turn. It is set up
    /// as golem's transport is (the same headers and timeouts, one connection pool), so the
    /// difference between the two is golem's own work.
    ///
    /// # Panics
    /// If the client does not build.
    pub fn new(base_url: &str, bodies: Vec<Bytes>) -> Self {
        let mut headers = HeaderMap::new();
        let mut auth = HeaderValue::from_str(&format!("Bearer {API_KEY}")).expect("ascii key");
        auth.set_sensitive(true);
        headers.insert(AUTHORIZATION, auth);
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let client = Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .timeout(Duration::from_secs(600))
            .default_headers(headers)
            .user_agent("golem-bench-floor/0.1.0")
            .build()
            .expect("the floor's client builds");
        Floor {
            client,
            url: format!("{base_url}/chat/completions"),
            bodies,
        }
    }

    /// Sends the bodies one after the other; returns the bytes received.
    ///
    /// # Errors
    /// A transport error or an error status.
    pub async fn run(&self) -> Result<usize, reqwest::Error> {
        let mut received = 0;
        for body in &self.bodies {
            let response = self
                .client
                .post(&self.url)
                .body(body.clone())
                .send()
                .await?
                .error_for_status()?;
            received += response.bytes().await?.len();
        }
        Ok(received)
    }
}
