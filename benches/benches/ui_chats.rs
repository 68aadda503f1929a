//! (14) 1,000 concurrent streamed chats through golem-ui's `ChatServer` in one process:
//! chats per second, SSE events per second, and memory per chat in flight (issue 22).
//!
//! Each chat is one HTTP request over loopback to the axum `ChatServer` (`POST /ai-sdk` or
//! `POST /ag-ui`) on a new thread, read to the end by a reqwest client in the same
//! process: the handler parses the body, takes the thread in the store, runs the agent
//! (a scripted model: a streamed call of `add`, then a streamed 32-delta answer), encodes
//! every event and streams it as SSE, then saves the thread. Loopback HTTP rather than the
//! handlers without sockets: what a chat costs a server includes hyper's connection, the
//! streamed response body and its framing, which a socket-free call would leave out. The
//! threads live in an in-memory `ThreadStore` defined here, so the numbers are golem-ui's
//! and not a database's.
//!
//! Memory: a batch in which the model holds every chat after its first answer delta until
//! all 1,000 are held: at that moment every chat is in flight, its connection open, its
//! response streaming and its run at its longest. The peak live heap and the resident
//! growth (VmHWM reset before) are divided by the chats in flight. Client and server share
//! the process, so the figures include the client's side of each connection.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use futures_util::StreamExt;
use golem::model::{
    Message, Model, ModelError, ModelResponse, ModelStream, RequestParams, ResponseDelta,
    StreamEvent,
};
use golem::tool::FunctionTool;
use golem::{Agent, ModelRetry, RunContext, RunState};
use golem_benches::alloc::{self, Counting};
use golem_benches::sys;
use golem_ui::server::ChatServer;
use golem_ui::thread::{Lease, ThreadError, ThreadStore};
use tokio::runtime::Runtime;
use tokio::sync::Semaphore;

#[global_allocator]
static ALLOC: Counting = Counting;

/// Overrides the number of concurrent chats (1,000).
const CHATS_ENV: &str = "GOLEM_BENCH_CHATS";
/// The answer's deltas.
const DELTAS: usize = 32;

/// Threads in memory: each thread's state and the token of the request that holds it.
#[derive(Debug, Default)]
struct MemoryStore {
    threads: Mutex<HashMap<String, Thread>>,
    tokens: AtomicU64,
}

/// A thread's stored state, and the token of the request that holds it.
type Thread = (Option<RunState>, Option<String>);

impl ThreadStore for MemoryStore {
    async fn lock(&self, thread_id: &str, create: bool) -> Result<Lease, ThreadError> {
        let token = self.tokens.fetch_add(1, Ordering::Relaxed).to_string();
        let mut threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        let thread = match threads.get_mut(thread_id) {
            Some(thread) => thread,
            None if create => threads.entry(thread_id.to_owned()).or_default(),
            None => {
                return Err(ThreadError::NotFound {
                    thread_id: thread_id.to_owned(),
                });
            }
        };
        if thread.1.is_some() {
            return Err(ThreadError::Busy {
                thread_id: thread_id.to_owned(),
            });
        }
        thread.1 = Some(token.clone());
        Ok(Lease::new(thread_id, token, thread.0.clone()))
    }

    async fn save(&self, lease: Lease, state: &RunState) -> Result<(), ThreadError> {
        let mut threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        match threads.get_mut(lease.thread_id()) {
            Some(thread) if thread.1.as_deref() == Some(lease.token()) => {
                *thread = (Some(state.clone()), None);
                Ok(())
            }
            _ => Err(ThreadError::LeaseLost {
                thread_id: lease.thread_id().to_owned(),
            }),
        }
    }

    async fn release(&self, lease: Lease) -> Result<(), ThreadError> {
        let mut threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(thread) = threads.get_mut(lease.thread_id())
            && thread.1.as_deref() == Some(lease.token())
        {
            thread.1 = None;
        }
        Ok(())
    }

    async fn load(&self, thread_id: &str) -> Result<Option<RunState>, ThreadError> {
        let threads = self.threads.lock().unwrap_or_else(|e| e.into_inner());
        match threads.get(thread_id) {
            Some(thread) => Ok(thread.0.clone()),
            None => Err(ThreadError::NotFound {
                thread_id: thread_id.to_owned(),
            }),
        }
    }
}

/// A scripted model that streams: a call of `add` (its arguments in two fragments), then an
/// answer in [`DELTAS`] deltas. While `hold` is above zero, each answer waits after its
/// first delta until that many answers wait, then all go on.
#[derive(Debug, Clone)]
struct ChatModel {
    hold: Arc<AtomicUsize>,
    held: Arc<AtomicUsize>,
    gate: Arc<Semaphore>,
}

impl ChatModel {
    fn new() -> Self {
        ChatModel {
            hold: Arc::new(AtomicUsize::new(0)),
            held: Arc::new(AtomicUsize::new(0)),
            gate: Arc::new(Semaphore::new(0)),
        }
    }
}

impl Model for ChatModel {
    fn request<'a>(
        &'a self,
        _messages: &'a [Message],
        _params: &'a RequestParams,
    ) -> Pin<Box<dyn Future<Output = Result<ModelResponse, ModelError>> + Send + 'a>> {
        Box::pin(async { Ok(ModelResponse::text("streamed only")) })
    }

    fn request_stream<'a>(
        &'a self,
        messages: &'a [Message],
        _params: &'a RequestParams,
    ) -> ModelStream<'a> {
        let delta = |delta: ResponseDelta| Ok(StreamEvent::Delta(delta));
        if messages.len() == 1 {
            let args = |args: &str| {
                delta(ResponseDelta::ToolCallArgs {
                    part: 0,
                    args: args.into(),
                })
            };
            return Box::pin(futures_util::stream::iter([
                delta(ResponseDelta::ToolCallStart {
                    part: 0,
                    tool_name: "add".into(),
                    tool_call_id: "c1".into(),
                }),
                args(r#"{"a":2,"#),
                args(r#""b":3}"#),
                Ok(StreamEvent::Done(ModelResponse::tool_call(
                    "add",
                    r#"{"a":2,"b":3}"#,
                    "c1",
                ))),
            ]));
        }
        let text = |index: usize| {
            Ok(StreamEvent::Delta(ResponseDelta::Text {
                part: 0,
                text: format!("token {index:02} "),
            }))
        };
        let answer: String = (0..DELTAS)
            .map(|index| format!("token {index:02} "))
            .collect();
        let model = self.clone();
        let wait = futures_util::stream::once(async move {
            let hold = model.hold.load(Ordering::SeqCst);
            if hold > 0 {
                if model.held.fetch_add(1, Ordering::SeqCst) + 1 == hold {
                    model.gate.add_permits(hold);
                }
                if let Ok(permit) = model.gate.acquire().await {
                    permit.forget();
                }
            }
        })
        .filter_map(|()| async { None });
        Box::pin(
            futures_util::stream::iter([text(0)])
                .chain(wait)
                .chain(futures_util::stream::iter((1..DELTAS).map(text)))
                .chain(futures_util::stream::iter([Ok(StreamEvent::Done(
                    ModelResponse::text(answer),
                ))])),
        )
    }

    fn name(&self) -> &str {
        "chat"
    }

    fn system(&self) -> &str {
        "function"
    }
}

#[golem::args]
struct Add {
    a: i64,
    b: i64,
}

fn agent(model: ChatModel) -> Agent<(), String> {
    let add = FunctionTool::new("add", |_ctx: RunContext<()>, args: Add| async move {
        Ok::<_, ModelRetry>(args.a + args.b)
    });
    Agent::builder(model)
        .tool(add)
        .build()
        .expect("the agent builds")
}

/// The server on loopback and a client for it.
struct Chats {
    url: String,
    client: reqwest::Client,
    threads: AtomicU64,
}

#[derive(Clone, Copy)]
enum Protocol {
    AiSdk,
    AgUi,
}

impl Chats {
    async fn start(model: ChatModel) -> Chats {
        let app = ChatServer::new(agent(model), (), MemoryStore::default()).router();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("a loopback port");
        let url = format!("http://{}", listener.local_addr().expect("an address"));
        tokio::spawn(async move { axum::serve(listener, app).await });
        Chats {
            url,
            client: reqwest::Client::new(),
            threads: AtomicU64::new(0),
        }
    }

    /// One chat on a new thread, read to the end: its SSE events, or `None` if it failed.
    async fn chat(&self, protocol: Protocol) -> Option<usize> {
        let thread = format!("t{}", self.threads.fetch_add(1, Ordering::Relaxed));
        let (path, body) = match protocol {
            Protocol::AiSdk => (
                "ai-sdk",
                serde_json::json!({"id": thread, "messages": [
                    {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "2 + 3?"}]}
                ]}),
            ),
            Protocol::AgUi => (
                "ag-ui",
                serde_json::json!({"threadId": thread, "runId": "r1", "messages": [
                    {"id": "u1", "role": "user", "content": "2 + 3?"}
                ]}),
            ),
        };
        let mut response = self
            .client
            .post(format!("{}/{path}", self.url))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .ok()?;
        if !response.status().is_success() {
            return None;
        }
        let (mut events, mut finished) = (0, false);
        let mut tail = Vec::new();
        while let Some(chunk) = response.chunk().await.ok().flatten() {
            tail.extend_from_slice(&chunk);
            events += tail.windows(6).filter(|w| *w == b"data: ").count();
            finished |= tail
                .windows(8)
                .any(|w| w == b"\"finish\"" || w == b"FINISHED");
            // Keep the last bytes, where a marker may be cut.
            let keep = tail.len().saturating_sub(7);
            tail.drain(..keep);
        }
        finished.then_some(events)
    }

    /// `chats` chats at once, every one started before any goes on: (failures, events).
    async fn batch(self: &Arc<Self>, protocol: Protocol, chats: usize) -> (usize, usize) {
        let gate = Arc::new(Semaphore::new(0));
        let tasks: Vec<_> = (0..chats)
            .map(|_| {
                let (chats, gate) = (Arc::clone(self), Arc::clone(&gate));
                tokio::spawn(async move {
                    gate.acquire().await.expect("the gate stays open").forget();
                    chats.chat(protocol).await
                })
            })
            .collect();
        gate.add_permits(chats);
        let (mut failures, mut events) = (0, 0);
        for task in tasks {
            match task.await {
                Ok(Some(n)) => events += n,
                _ => failures += 1,
            }
        }
        (failures, events)
    }
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

fn main() {
    sys::raise_fd_limit();
    let chats = std::env::var(CHATS_ENV)
        .ok()
        .and_then(|chats| chats.parse().ok())
        .unwrap_or(1_000);
    let runtime = runtime();
    let model = ChatModel::new();
    let server = Arc::new(runtime.block_on(Chats::start(model.clone())));
    let protocols = [("ai_sdk", Protocol::AiSdk), ("ag_ui", Protocol::AgUi)];

    let mut criterion = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(10))
        .configure_from_args();
    let mut group = criterion.benchmark_group("ui_chats");
    // Elements are chats: criterion's throughput line reads as chats per second.
    group.throughput(Throughput::Elements(chats as u64));
    for (name, protocol) in protocols {
        group.bench_function(format!("{name}/{chats}_concurrent_chats"), |b| {
            b.iter_custom(|batches| {
                let start = Instant::now();
                for _ in 0..batches {
                    let (failures, _) = runtime.block_on(server.batch(protocol, chats));
                    assert_eq!(failures, 0, "{name}: every chat streams to its end");
                }
                start.elapsed()
            });
        });
    }
    group.finish();
    criterion.final_summary();

    if !golem_benches::is_bench_run() {
        return;
    }
    println!("\nui_chats summary: {chats} concurrent chats, server and client in one process");
    println!(
        "  {:<7} {:>8} {:>11} {:>8} {:>12} {:>12} {:>12}",
        "proto", "failures", "events/chat", "chats/s", "events/s", "RSS/chat KB", "heap/chat KB"
    );
    for (name, protocol) in protocols {
        // Throughput: three batches over warm connections.
        let start = Instant::now();
        let (mut failures, mut events) = (0, 0);
        for _ in 0..3 {
            let (f, e) = runtime.block_on(server.batch(protocol, chats));
            failures += f;
            events += e;
        }
        let seconds = start.elapsed().as_secs_f64();
        // Memory: every chat held after its first answer delta until all are.
        model.held.store(0, Ordering::SeqCst);
        model.hold.store(chats, Ordering::SeqCst);
        let base = sys::resident();
        let resets = sys::reset_peak_resident().is_ok();
        alloc::start();
        let (held_failures, _) = runtime.block_on(server.batch(protocol, chats));
        let counts = alloc::stop();
        model.hold.store(0, Ordering::SeqCst);
        let after = sys::resident();
        let peak = if resets {
            after.peak
        } else {
            after.peak.max(base.now)
        };
        let per_chat = |bytes: f64| bytes / chats as f64 / 1024.0;
        println!(
            "  {:<7} {:>8} {:>11} {:>8.0} {:>12.0} {:>12.1} {:>12.1}",
            name,
            failures + held_failures,
            events / (3 * chats),
            (3 * chats) as f64 / seconds,
            events as f64 / seconds,
            per_chat(peak.saturating_sub(base.now) as f64),
            per_chat(counts.peak as f64),
        );
    }
    println!(
        "  chats/s, events/s: 3 batches of {chats} at once over warm connections. RSS/chat: (VmHWM\n  while all {chats} are held mid-answer - VmRSS before) / {chats}; heap/chat: peak live heap\n  in that batch / {chats}. Both include the client's side of each connection."
    );
}
