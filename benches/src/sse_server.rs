//! An OpenAI-compatible HTTP/1.1 server on loopback that answers every chat completion
//! request with one answer rendered once, before the first request: by default a streamed
//! response of `CHUNKS` text chunks, the finish reason, the usage and `[DONE]`, each event
//! written as its own HTTP chunk (chunked transfer encoding, the connection kept alive);
//! or one event of a few MiB cut into small HTTP chunks ([`big_event`]), the same text as
//! one JSON body ([`big_json`]), or a stream that stalls after its first event
//! ([`stalled`]).
//!
//! Like [`server`](crate::server), it runs on its own thread with its own current-thread
//! runtime, so the client being measured never does its work.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

/// The text of chunk `index`, as the server sends it: a few tokens' worth.
pub fn chunk_text(index: usize) -> String {
    format!(" token{index}")
}

/// A streaming loopback server on its own thread; stops when dropped.
#[derive(Debug)]
pub struct SseServer {
    addr: SocketAddr,
    connections: Arc<AtomicUsize>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl SseServer {
    /// Starts a server on `127.0.0.1` at a free port answering with `chunks` text chunks.
    ///
    /// # Panics
    /// If the port cannot be bound or the thread not started.
    pub fn start(chunks: usize) -> SseServer {
        SseServer::answering(render(chunks))
    }

    /// Starts a server answering every request with `answer`: the head, then the pieces
    /// written one by one (an answer without the last chunk `0\r\n\r\n` stalls).
    ///
    /// # Panics
    /// If the port cannot be bound or the thread not started.
    pub fn answering(answer: Vec<Vec<u8>>) -> SseServer {
        let (shutdown, stop) = oneshot::channel();
        let (ready, addr) = std::sync::mpsc::channel();
        let connections = Arc::new(AtomicUsize::new(0));
        let accepted = Arc::clone(&connections);
        let thread = std::thread::Builder::new()
            .name("sse-server".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("the server's runtime starts");
                runtime.block_on(serve(ready, stop, answer, &accepted));
            })
            .expect("the server's thread starts");
        let addr = addr.recv().expect("the server binds");
        SseServer {
            addr,
            connections,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    /// How many connections the server accepted: one per client when connections are
    /// reused.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::Relaxed)
    }

    /// The base URL a client is configured with: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        crate::server::base_url(self.addr)
    }
}

impl Drop for SseServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The head of a chunked event stream.
const SSE_HEAD: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";

/// `bytes` as one HTTP chunk.
fn http_chunk(bytes: &[u8]) -> Vec<u8> {
    let mut chunk = format!("{:x}\r\n", bytes.len()).into_bytes();
    chunk.extend_from_slice(bytes);
    chunk.extend_from_slice(b"\r\n");
    chunk
}

/// The text of the big answers: `bytes` bytes of ASCII.
pub fn big_text(bytes: usize) -> String {
    "golem streams ".repeat(bytes / 14 + 1)[..bytes].to_owned()
}

/// One streamed chat completion whose text, `bytes` bytes long, is one event, written in
/// HTTP chunks of `piece` bytes; then the finish reason, the usage and `[DONE]`.
pub fn big_event(bytes: usize, piece: usize) -> Vec<Vec<u8>> {
    let text = big_text(bytes);
    let event = format!(
        "data: {}\n\n",
        serde_json::json!({"id": "chatcmpl-big", "object": "chat.completion.chunk", "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": null}]})
    );
    let mut out = vec![SSE_HEAD.to_vec()];
    out.extend(event.as_bytes().chunks(piece).map(http_chunk));
    let end = format!(
        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        serde_json::json!({"id": "chatcmpl-big", "object": "chat.completion.chunk", "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
        serde_json::json!({"id": "chatcmpl-big", "object": "chat.completion.chunk", "model": "gpt-4o-mini",
            "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 1000, "total_tokens": 1012}}),
    );
    out.push(http_chunk(end.as_bytes()));
    out.push(b"0\r\n\r\n".to_vec());
    out
}

/// The chat completion [`big_event`] streams, as one JSON body.
pub fn big_json(bytes: usize) -> Vec<Vec<u8>> {
    let body = serde_json::json!({
        "id": "chatcmpl-big", "object": "chat.completion", "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": big_text(bytes)}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 1000, "total_tokens": 1012},
    })
    .to_string();
    vec![
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes(),
        body.into_bytes(),
    ]
}

/// A stream that sends its first event and then nothing, keeping the connection open.
pub fn stalled() -> Vec<Vec<u8>> {
    let event = format!(
        "data: {}\n\n",
        serde_json::json!({"id": "chatcmpl-stalled", "object": "chat.completion.chunk", "model": "gpt-4o-mini",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hel"}, "finish_reason": null}]})
    );
    vec![SSE_HEAD.to_vec(), http_chunk(event.as_bytes())]
}

/// The events of the response, each as one HTTP chunk, after the head; then the last chunk.
fn render(chunks: usize) -> Vec<Vec<u8>> {
    let event = |data: &str| {
        let event = format!("data: {data}\n\n");
        format!("{:x}\r\n{event}\r\n", event.len()).into_bytes()
    };
    let chunk = |choices: serde_json::Value, usage: serde_json::Value| {
        serde_json::json!({
            "id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1_741_570_283,
            "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_eb9dce56a8",
            "choices": choices, "usage": usage,
        })
        .to_string()
    };
    let mut out = vec![
        b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
            .to_vec(),
    ];
    out.push(event(&chunk(
        serde_json::json!([{"index": 0, "delta": {"role": "assistant", "content": "", "refusal": null}, "logprobs": null, "finish_reason": null}]),
        serde_json::Value::Null,
    )));
    for index in 0..chunks {
        out.push(event(&chunk(
            serde_json::json!([{"index": 0, "delta": {"content": chunk_text(index)}, "logprobs": null, "finish_reason": null}]),
            serde_json::Value::Null,
        )));
    }
    out.push(event(&chunk(
        serde_json::json!([{"index": 0, "delta": {}, "logprobs": null, "finish_reason": "stop"}]),
        serde_json::Value::Null,
    )));
    out.push(event(&chunk(
        serde_json::json!([]),
        serde_json::json!({"prompt_tokens": 12, "completion_tokens": chunks, "total_tokens": 12 + chunks}),
    )));
    out.push(event("[DONE]"));
    out.push(b"0\r\n\r\n".to_vec());
    out
}

async fn serve(
    ready: std::sync::mpsc::Sender<SocketAddr>,
    mut stop: oneshot::Receiver<()>,
    answer: Vec<Vec<u8>>,
    counter: &AtomicUsize,
) {
    let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .await
        .expect("a free loopback port");
    ready
        .send(listener.local_addr().expect("bound"))
        .expect("the starter waits");
    let answer: Arc<[Vec<u8>]> = answer.into();
    loop {
        tokio::select! {
            _ = &mut stop => return,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                counter.fetch_add(1, Ordering::Relaxed);
                let answer = Arc::clone(&answer);
                tokio::spawn(async move {
                    let _ = connection(stream, &answer).await;
                });
            }
        }
    }
}

async fn connection(mut stream: TcpStream, answer: &[Vec<u8>]) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut buf = Vec::with_capacity(4096);
    loop {
        let head_len = loop {
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break end + 4;
            }
            if stream.read_buf(&mut buf).await? == 0 {
                return Ok(());
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_len]).to_ascii_lowercase();
        let body_len = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .and_then(|value| value.trim().parse::<usize>().ok())
            .unwrap_or(0);
        while buf.len() < head_len + body_len {
            if stream.read_buf(&mut buf).await? == 0 {
                return Ok(());
            }
        }
        // One write per event, as a provider flushes each one.
        for piece in answer {
            stream.write_all(piece).await?;
        }
        buf.drain(..head_len + body_len);
    }
}
