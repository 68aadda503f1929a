//! A chat page in the browser: golem-ui's `ChatServer` serves an agent that books restaurant
//! tables, with its threads in a SQLite file, and a page (one HTML file and one plain
//! JavaScript file, no build step) that speaks the AI SDK UI message stream. The page
//! streams the assistant's text as it arrives, shows each tool call with its input and
//! output, shows a rejected call with the feedback the model got, fills in the structured
//! answer as it streams, and asks the user to approve or deny the booking.
//!
//! ```text
//! cargo run --example chat-web                         # offline, a scripted model
//! cargo run --example chat-web -- --port 3000          # a fixed port (0, the default: any)
//! OPENAI_API_KEY=sk-... cargo run --example chat-web   # a real model
//! ```
//!
//! It prints the address it listens on (`listening on http://127.0.0.1:PORT`); open it in a
//! browser. The port comes from `--port` or `PORT`, the thread database from `--db` or
//! `CHAT_WEB_DB` (default: `golem-chat-web.db` in the OS temp dir). With `OPENAI_API_KEY` or
//! `OPENAI_BASE_URL` set, the model is `openai:$GOLEM_MODEL` (default `gpt-4o-mini`) through
//! `golem::model::infer`; otherwise a scripted model plays the part, at a reading pace.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::header;
use axum::routing::get;
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use golem::model::function::FunctionModel;
use golem::model::{
    Message, Model, ModelError, ModelResponse, ModelSettings, ModelStream, RequestParams,
    RequestPart, ResponseDelta, ResponsePart, StreamEvent,
};
use golem::{Agent, ModelRetry};
use golem_ui::server::ChatServer;
use golem_ui::thread::SqliteThreadStore;

/// The page, and its script.
const PAGE: &str = include_str!("page.html");
const SCRIPT: &str = include_str!("chat.js");

/// The structured answer: the booking, or why there is none. Its partial twin
/// (`BookingPartial`) is sent to the page as the JSON that has arrived, while it streams.
#[golem::output]
#[derive(Debug, serde::Serialize)]
pub(crate) struct Booking {
    /// The restaurant.
    pub(crate) restaurant: String,
    /// The time of the booking, 24-hour `HH:MM`.
    pub(crate) time: String,
    /// How many people.
    pub(crate) people: u32,
    /// The booking's confirmation code; none when nothing was booked.
    pub(crate) confirmation: Option<String>,
    /// One line for the user.
    pub(crate) note: String,
}

/// Check whether a restaurant has a free table.
///
/// # Arguments
/// * `restaurant` - the restaurant's name
/// * `people` - how many people
/// * `time` - the time, 24-hour `HH:MM` (e.g. `19:30`)
#[golem::tool]
async fn find_table(restaurant: String, people: u32, time: String) -> Result<String, ModelRetry> {
    let valid = matches!(time.split_once(':'), Some((h, m))
        if h.len() == 2 && m.len() == 2
            && h.parse::<u8>().is_ok_and(|h| h < 24)
            && m.parse::<u8>().is_ok_and(|m| m < 60));
    if !valid {
        return Err(ModelRetry::new(format!(
            "time must be 24-hour HH:MM, like 19:30; got `{time}`"
        )));
    }
    Ok(format!("{restaurant} has a table for {people} at {time}"))
}

/// Book a table. The user approves every booking.
///
/// # Arguments
/// * `restaurant` - the restaurant's name
/// * `people` - how many people
/// * `time` - the time, 24-hour `HH:MM`
#[golem::tool(requires_approval)]
async fn book_table(restaurant: String, people: u32, time: String) -> String {
    let code = time.replace(':', "");
    format!("booked {restaurant} for {people} at {time}: confirmation CG-{code}")
}

/// The agent the page talks to.
pub(crate) fn agent(model: impl Model) -> Result<Agent<(), Booking>, golem::BuildError> {
    Agent::<(), Booking>::builder(model)
        // A model that never stops cannot fill its context (golem sets no limit of its own
        // for OpenAI and compatible servers).
        .model_settings(ModelSettings::default().max_tokens(1024))
        .instructions(
            "You book restaurant tables. Check with find_table first (times are 24-hour \
             HH:MM), then book with book_table, then answer with the booking.",
        )
        .tool(FindTable)
        .tool(BookTable) // every booking waits for the user's approval
        .tool_retries(1)
        .build()
}

/// The server: the page at `/`, its script at `/chat.js`, and golem-ui's routes under
/// `/api` (the page posts to `/api/ai-sdk`), with threads in the SQLite file `db`.
///
/// # Errors
/// When the thread database cannot be opened.
pub(crate) async fn app(
    agent: Agent<(), Booking>,
    db: &Path,
) -> Result<Router, Box<dyn std::error::Error>> {
    let store = SqliteThreadStore::open(db).await?;
    let chat = ChatServer::new(agent, (), store)
        .with_partial_output()
        .with_output();
    Ok(Router::new()
        .route(
            "/",
            get(|| async { ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], PAGE) }),
        )
        .route(
            "/chat.js",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
                    SCRIPT,
                )
            }),
        )
        .nest("/api", chat.router()))
}

/// What a [`Paced`] model waits on before it passes a streamed delta on.
pub(crate) type Pace = Arc<dyn Fn(&ResponseDelta) -> BoxFuture<'static, ()> + Send + Sync>;

/// A model whose streamed deltas each wait for a [`Pace`]: the scripted model's text arrives
/// at a reading pace instead of all at once.
pub(crate) struct Paced<M> {
    model: M,
    pace: Pace,
}

impl<M: Model> Model for Paced<M> {
    fn request<'a>(
        &'a self,
        messages: &'a [Message],
        params: &'a RequestParams,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        self.model.request(messages, params)
    }

    fn request_stream<'a>(
        &'a self,
        messages: &'a [Message],
        params: &'a RequestParams,
    ) -> ModelStream<'a> {
        let pace = Arc::clone(&self.pace);
        Box::pin(
            self.model
                .request_stream(messages, params)
                .then(move |item| {
                    let wait = match &item {
                        Ok(StreamEvent::Delta(delta)) => Some(pace(delta)),
                        _ => None,
                    };
                    async move {
                        if let Some(wait) = wait {
                            wait.await;
                        }
                        item
                    }
                }),
        )
    }

    fn name(&self) -> &str {
        self.model.name()
    }

    fn system(&self) -> &str {
        self.model.system()
    }
}

/// A reading pace: each text delta after 150 ms, each fragment of a call's input after 250 ms.
pub(crate) fn reading_pace() -> Pace {
    Arc::new(|delta| {
        let wait = match delta {
            ResponseDelta::Text { .. } => Duration::from_millis(150),
            _ => Duration::from_millis(250),
        };
        Box::pin(tokio::time::sleep(wait))
    })
}

/// The fragments the scripted model streams the booking in.
pub(crate) const BOOKING: [&str; 3] = [
    r#"{"restaurant": "Chez Golem", "time": "20:00", "#,
    r#""people": 2, "confirmation": "CG-2000", "#,
    r#""note": "A table for 2 at 20:00, booked."}"#,
];

/// Plays the model offline, at `pace`: it says what it does, checks for a table at "8pm"
/// (rejected: the tool wants 24-hour times), checks again at 20:00, asks to book (the user
/// approves or denies), then streams the booking, or why there is none, as its structured
/// answer.
pub(crate) fn scripted_model(pace: Pace) -> Paced<FunctionModel> {
    const AT_8PM: &str = r#"{"restaurant": "Chez Golem", "people": 2, "time": "8pm"}"#;
    const AT_20: &str = r#"{"restaurant": "Chez Golem", "people": 2, "time": "20:00"}"#;
    let model = FunctionModel::new_stream(|messages: &[Message], _| {
        let Some(Message::Request(last)) = messages.last() else {
            return streamed(&["…"], None);
        };
        let returned = |tool: &str| {
            last.parts.iter().find_map(|part| match part {
                RequestPart::ToolReturn(part) if part.tool_name == tool => {
                    Some(part.model_text().into_owned())
                }
                _ => None,
            })
        };
        let rejected = || {
            last.parts
                .iter()
                .any(|part| matches!(part, RequestPart::RetryPrompt(_)))
        };
        let output = golem::DEFAULT_OUTPUT_TOOL_NAME;
        match returned("book_table") {
            Some(booked) if booked.starts_with("booked ") => {
                return streamed(&[], Some((output, &BOOKING, "call_4")));
            }
            // Denied: the model is told so, with the user's reason.
            Some(denied) => {
                let reason = denied
                    .strip_prefix("This call was denied and did not run: ")
                    .unwrap_or(&denied);
                let answer = format!(
                    r#"{{"restaurant": "Chez Golem", "time": "20:00", "people": 2, "confirmation": null, "note": {}}}"#,
                    serde_json::to_string(&format!("Not booked: {reason}")).expect("a string")
                );
                return streamed(&[], Some((output, &[&answer], "call_4")));
            }
            None => {}
        }
        if rejected() {
            return streamed(&[], Some(("find_table", &[AT_20], "call_2")));
        }
        if returned("find_table").is_some() {
            let text = ["Found a table. ", "Booking it needs ", "your approval."];
            return streamed(&text, Some(("book_table", &[AT_20], "call_3")));
        }
        if messages.len() == 1 {
            let text = ["Let me ", "look for ", "a table."];
            return streamed(&text, Some(("find_table", &[AT_8PM], "call_1")));
        }
        streamed(&["This scripted model ", "books one table ", "per chat."], None)
    })
    .with_name("scripted");
    Paced { model, pace }
}

/// A streamed response: `text` in deltas, then, when given, a call (the tool, its arguments
/// in the fragments they stream in, its id).
fn streamed(text: &[&str], call: Option<(&str, &[&str], &str)>) -> Vec<StreamEvent> {
    let mut items: Vec<StreamEvent> = text
        .iter()
        .map(|text| {
            StreamEvent::Delta(ResponseDelta::Text {
                part: 0,
                text: (*text).into(),
            })
        })
        .collect();
    let mut parts = Vec::new();
    if !text.is_empty() {
        parts.push(ResponsePart::text(text.concat()));
    }
    if let Some((tool, args, id)) = call {
        let part = parts.len();
        items.push(StreamEvent::Delta(ResponseDelta::ToolCallStart {
            part,
            tool_name: tool.into(),
            tool_call_id: id.into(),
        }));
        items.extend(args.iter().map(|args| {
            StreamEvent::Delta(ResponseDelta::ToolCallArgs {
                part,
                args: (*args).into(),
            })
        }));
        parts.extend(ModelResponse::tool_call(tool, args.concat(), id).parts);
    }
    items.push(StreamEvent::Done(ModelResponse::new(parts)));
    items
}

/// The real model when `OPENAI_API_KEY` or `OPENAI_BASE_URL` is set: `openai:$GOLEM_MODEL`
/// (default `gpt-4o-mini`), configured from the environment; `None` when neither is set.
///
/// # Errors
/// When the variables are set but the model cannot be configured (a bad base URL, say).
fn real_model() -> Result<Option<Box<dyn Model>>, golem::model::ProviderError> {
    let set = |name: &str| std::env::var(name).is_ok_and(|value| !value.trim().is_empty());
    if !set("OPENAI_API_KEY") && !set("OPENAI_BASE_URL") {
        return Ok(None);
    }
    let name = std::env::var("GOLEM_MODEL").unwrap_or_else(|_| "gpt-4o-mini".to_owned());
    golem::model::infer(&format!("openai:{name}")).map(Some)
}

/// The value of `--name VALUE` (or `--name=VALUE`), else of the environment variable `env`.
fn option(name: &str, env: &str) -> Option<String> {
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        if arg == name {
            return args.next();
        }
        if let Some(value) = arg
            .strip_prefix(name)
            .and_then(|rest| rest.strip_prefix('='))
        {
            return Some(value.to_owned());
        }
    }
    std::env::var(env).ok().filter(|value| !value.is_empty())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port: u16 = match option("--port", "PORT") {
        Some(port) => port.parse().map_err(|_| format!("not a port: {port}"))?,
        None => 0,
    };
    let db = option("--db", "CHAT_WEB_DB")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("golem-chat-web.db"));
    let agent = match real_model()? {
        Some(model) => agent(model)?,
        None => {
            println!(
                "OPENAI_API_KEY and OPENAI_BASE_URL are not set: a scripted model plays the part."
            );
            agent(scripted_model(reading_pace()))?
        }
    };
    let app = app(agent, &db).await?;
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port))).await?;
    println!("threads in {}", db.display());
    println!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}
