//! A loopback HTTP/1.1 server on a raw tokio socket, for byte-level control of streamed
//! answers: event streams sent a few bytes at a time with pauses (as chunked transfer
//! encoding, so a clean end and a cut connection differ), cut mid-event, stalled, or held
//! open until the client closes the connection (which the server then reports).
//!
//! One request per connection; answers are given in order, then HTTP 500.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;

/// What the server does, in order, to answer one request.
#[derive(Debug, Clone)]
pub enum Piece {
    /// Writes raw bytes (the status line and headers).
    Raw(Vec<u8>),
    /// Writes one chunk of the chunked body.
    Chunk(Vec<u8>),
    /// Waits.
    Pause(Duration),
    /// Ends the body cleanly (the last, empty chunk) and closes the connection.
    End,
    /// Ends the body cleanly and keeps the connection for the next request.
    EndKeepAlive,
    /// Closes the connection without ending the body.
    Cut,
    /// Waits until the client closes the connection, then reports it (see
    /// [`SseServer::wait_closed`]).
    Hold,
}

/// One answer.
#[derive(Debug, Clone)]
pub struct Reply(pub Vec<Piece>);

const SSE_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
const SSE_HEAD_KEEP_ALIVE: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n";

impl Reply {
    /// The head of an event stream.
    pub fn sse_head() -> Piece {
        Piece::Raw(SSE_HEAD.as_bytes().to_vec())
    }

    /// `body` as pieces of `split` bytes with `pause` between them, after the head;
    /// without an end.
    pub fn sse_open(body: &str, split: usize, pause: Duration) -> Reply {
        let mut pieces = vec![Reply::sse_head()];
        for (i, piece) in body.as_bytes().chunks(split.max(1)).enumerate() {
            if i > 0 && !pause.is_zero() {
                pieces.push(Piece::Pause(pause));
            }
            pieces.push(Piece::Chunk(piece.to_vec()));
        }
        Reply(pieces)
    }

    /// An event stream sent `split` bytes at a time with `pause` between them, ended
    /// cleanly.
    pub fn sse(body: &str, split: usize, pause: Duration) -> Reply {
        Reply::sse_open(body, split, pause).then(Piece::End)
    }

    /// An event stream sent whole on a connection that is kept for the next request; the
    /// body's last chunk follows `end_after` later.
    pub fn sse_keep_alive(body: &str, end_after: Duration) -> Reply {
        Reply(vec![
            Piece::Raw(SSE_HEAD_KEEP_ALIVE.as_bytes().to_vec()),
            Piece::Chunk(body.as_bytes().to_vec()),
            Piece::Pause(end_after),
            Piece::EndKeepAlive,
        ])
    }

    /// An event stream sent whole, ended cleanly.
    pub fn sse_whole(body: &str) -> Reply {
        Reply::sse(body, usize::MAX, Duration::ZERO)
    }

    /// A whole answer with `status`, `content_type` and `body`.
    pub fn whole(status: u16, content_type: &str, body: &str) -> Reply {
        Reply(vec![Piece::Raw(
            format!(
                "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            )
            .into_bytes(),
        )])
    }

    /// A JSON 200.
    pub fn json(body: &Value) -> Reply {
        Reply::whole(200, "application/json", &body.to_string())
    }

    /// This answer, then `piece`.
    pub fn then(mut self, piece: Piece) -> Reply {
        self.0.push(piece);
        self
    }
}

/// The server; stops accepting when dropped.
pub struct SseServer {
    addr: SocketAddr,
    bodies: Arc<Mutex<Vec<Value>>>,
    closed: Arc<Notify>,
    connections: Arc<std::sync::atomic::AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for SseServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl SseServer {
    /// `http://127.0.0.1:PORT` (add `/v1` for a provider's base URL).
    pub fn uri(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The JSON bodies received, in order.
    pub fn bodies(&self) -> Vec<Value> {
        self.bodies.lock().unwrap().clone()
    }

    /// How many connections were accepted.
    pub fn connections(&self) -> usize {
        self.connections.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// How many requests arrived.
    pub fn requests(&self) -> usize {
        self.bodies.lock().unwrap().len()
    }

    /// Waits until a [`Piece::Hold`] saw its connection closed by the client; `false`
    /// when that did not happen within `within`.
    pub async fn wait_closed(&self, within: Duration) -> bool {
        tokio::time::timeout(within, self.closed.notified())
            .await
            .is_ok()
    }
}

/// A server answering with `replies`, in order.
pub async fn serve(replies: Vec<Reply>) -> SseServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let closed = Arc::new(Notify::new());
    let connections = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let replies = Arc::new(Mutex::new(VecDeque::from(replies)));
    let task = {
        let (bodies, closed) = (Arc::clone(&bodies), Arc::clone(&closed));
        let accepted = Arc::clone(&connections);
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                accepted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let (bodies, closed, replies) = (
                    Arc::clone(&bodies),
                    Arc::clone(&closed),
                    Arc::clone(&replies),
                );
                tokio::spawn(async move {
                    let _ = answer(stream, &bodies, &closed, &replies).await;
                });
            }
        })
    };
    SseServer {
        addr,
        bodies,
        closed,
        connections,
        task,
    }
}

async fn answer(
    mut stream: TcpStream,
    bodies: &Mutex<Vec<Value>>,
    closed: &Notify,
    replies: &Mutex<VecDeque<Reply>>,
) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut buf = Vec::new();
    while answer_one(&mut stream, &mut buf, bodies, closed, replies).await? {}
    Ok(())
}

/// Answers one request; whether the connection is kept for the next.
async fn answer_one(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    bodies: &Mutex<Vec<Value>>,
    closed: &Notify,
    replies: &Mutex<VecDeque<Reply>>,
) -> std::io::Result<bool> {
    let head_len = loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        if stream.read_buf(buf).await? == 0 {
            return Ok(false);
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_len]).to_lowercase();
    let length = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|value| value.trim().parse::<usize>().ok())
        .unwrap_or(0);
    while buf.len() < head_len + length {
        if stream.read_buf(buf).await? == 0 {
            return Ok(false);
        }
    }
    let body = serde_json::from_slice(&buf[head_len..head_len + length]).unwrap_or(Value::Null);
    buf.drain(..head_len + length);
    bodies.lock().unwrap().push(body);
    let reply = replies.lock().unwrap().pop_front().unwrap_or_else(|| {
        Reply::whole(
            500,
            "application/json",
            r#"{"error":{"message":"the script ran out"}}"#,
        )
    });
    for piece in reply.0 {
        match piece {
            Piece::Raw(bytes) => stream.write_all(&bytes).await?,
            Piece::Chunk(bytes) => {
                let mut chunk = format!("{:x}\r\n", bytes.len()).into_bytes();
                chunk.extend_from_slice(&bytes);
                chunk.extend_from_slice(b"\r\n");
                stream.write_all(&chunk).await?;
            }
            Piece::Pause(pause) => tokio::time::sleep(pause).await,
            Piece::End => {
                stream.write_all(b"0\r\n\r\n").await?;
                stream.flush().await?;
                return Ok(false);
            }
            Piece::EndKeepAlive => {
                stream.write_all(b"0\r\n\r\n").await?;
                stream.flush().await?;
                return Ok(true);
            }
            Piece::Cut => return Ok(false),
            Piece::Hold => {
                let mut sink = [0_u8; 256];
                loop {
                    match stream.read(&mut sink).await {
                        Ok(0) | Err(_) => break,
                        Ok(_) => {}
                    }
                }
                closed.notify_one();
                return Ok(false);
            }
        }
        stream.flush().await?;
    }
    Ok(false)
}
