//! A loopback server for the remote toolset ([`crate::remote`]): `GET /tools` lists its tools
//! (or answers 503 while it is down, or lists a changed set), and `POST /calls` runs one tool
//! call, holding the first one unanswered when asked to (the moment the tests kill the
//! service). It logs what it answered.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::mpsc;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// What `GET /tools` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    /// `remote_note` and `remote_archive`.
    Up,
    /// HTTP 503: the server is down.
    Down,
    /// `remote_note` and `remote_search`: `remote_archive` removed, `remote_search` added.
    Changed,
}

impl Listing {
    /// The names this listing gives, in order.
    pub fn names(self) -> Vec<&'static str> {
        match self {
            Listing::Up => vec!["remote_note", "remote_archive"],
            Listing::Down => vec![],
            Listing::Changed => vec!["remote_note", "remote_search"],
        }
    }
}

/// What the server saw.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ToolsetLog {
    /// What each `GET /tools` was answered with, in order.
    pub listings: Vec<Listing>,
    /// When each `GET /tools` was answered, in order.
    pub listed_at: Vec<Instant>,
    /// The tool calls received, by call id, in order.
    pub calls_received: Vec<String>,
    /// The tool calls answered, by call id, in order.
    pub calls_answered: Vec<String>,
}

/// The toolset's server.
#[derive(Debug)]
pub struct ToolsetServer {
    server: MockServer,
    state: Arc<Mutex<State>>,
}

#[derive(Debug)]
struct State {
    listing: Listing,
    log: ToolsetLog,
}

impl ToolsetServer {
    /// Starts the server, listing [`Listing::Up`]. With `hold_first_call`, the first tool
    /// call is never answered, and its call id is sent on the returned channel when it
    /// arrives.
    pub async fn start(hold_first_call: bool) -> (ToolsetServer, mpsc::UnboundedReceiver<String>) {
        let server = MockServer::start().await;
        let state = Arc::new(Mutex::new(State {
            listing: Listing::Up,
            log: ToolsetLog::default(),
        }));
        let (held, held_rx) = mpsc::unbounded_channel();
        Mock::given(method("GET"))
            .and(path("/tools"))
            .respond_with(Tools {
                state: Arc::clone(&state),
            })
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/calls"))
            .respond_with(Calls {
                state: Arc::clone(&state),
                hold: hold_first_call,
                held,
            })
            .mount(&server)
            .await;
        (ToolsetServer { server, state }, held_rx)
    }

    /// The server's URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        self.server.uri()
    }

    /// Makes `GET /tools` answer `listing` from now on.
    pub fn set_listing(&self, listing: Listing) {
        self.lock().listing = listing;
    }

    /// What the server saw so far.
    pub fn log(&self) -> ToolsetLog {
        self.lock().log.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

struct Tools {
    state: Arc<Mutex<State>>,
}

impl Respond for Tools {
    fn respond(&self, _request: &Request) -> ResponseTemplate {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let listing = state.listing;
        state.log.listings.push(listing);
        state.log.listed_at.push(Instant::now());
        match listing {
            Listing::Down => ResponseTemplate::new(503).set_body_string("down for maintenance"),
            Listing::Up | Listing::Changed => {
                let tools: Vec<Value> = listing.names().into_iter().map(definition).collect();
                ResponseTemplate::new(200).set_body_json(tools)
            }
        }
    }
}

/// The definition `GET /tools` gives for `name`: each tool takes a `text`.
fn definition(name: &str) -> Value {
    let description = match name {
        "remote_note" => "Save a note on the remote server.",
        "remote_archive" => "Archive the notes.",
        _ => "Search the notes.",
    };
    json!({
        "name": name,
        "description": description,
        "parameters": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
            "additionalProperties": false
        }
    })
}

struct Calls {
    state: Arc<Mutex<State>>,
    hold: bool,
    held: mpsc::UnboundedSender<String>,
}

impl Respond for Calls {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let call = body["call"].as_str().unwrap_or("?").to_owned();
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let first = state.log.calls_received.is_empty();
        state.log.calls_received.push(call.clone());
        if first && self.hold {
            let _ = self.held.send(call);
            return ResponseTemplate::new(200)
                .set_body_json(json!("saved"))
                .set_delay(Duration::from_secs(3600));
        }
        state.log.calls_answered.push(call);
        ResponseTemplate::new(200).set_body_json(json!("saved"))
    }
}
