//! A loopback provider: a real HTTP server (wiremock) that answers with recorded bodies in
//! order and keeps every request it got.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// Answers with the queued responses in order, then with HTTP 500.
pub struct Sequence(Mutex<VecDeque<ResponseTemplate>>);

impl Respond for Sequence {
    fn respond(&self, _request: &Request) -> ResponseTemplate {
        self.0
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| ResponseTemplate::new(500).set_body_string("the script ran out"))
    }
}

/// A JSON 200 response.
pub fn json_ok(body: Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(body)
}

/// A server answering POSTs to `route` with `responses`, in order.
pub async fn serve(route: &str, responses: Vec<ResponseTemplate>) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(route))
        .respond_with(Sequence(Mutex::new(responses.into())))
        .mount(&server)
        .await;
    server
}

/// The JSON bodies the server received, in order.
pub async fn bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|request| serde_json::from_slice(&request.body).unwrap())
        .collect()
}

/// A header of the first request the server received.
pub async fn first_header(server: &MockServer, name: &str) -> Option<String> {
    let requests = server.received_requests().await.unwrap_or_default();
    requests
        .first()?
        .headers
        .get(name)
        .map(|value| value.to_str().unwrap().to_owned())
}
