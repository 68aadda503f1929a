//! An OpenAI-compatible HTTP/1.1 server on loopback that answers the scenario's recorded
//! chat completions.
//!
//! It runs on its own thread with its own current-thread runtime, so the client being
//! measured never does its work. Which completion it answers is read from the request: the
//! number of tool messages in the history (0, 1 or 2) is the model turn. Connections are kept
//! alive; the answers are rendered once, before the first request.

use std::io::{self, BufRead, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::oneshot;

use crate::scenario::{self, TURNS};

/// The environment variable that makes a bench binary serve instead of measure (see
/// [`ChildServer`]).
pub const ROLE_ENV: &str = "GOLEM_BENCH_ROLE";
/// The environment variable that passes [`ChildServer::holding`]'s count to the child.
const HOLD_ENV: &str = "GOLEM_BENCH_HOLD";

const PATH: &[u8] = b"/v1/chat/completions";

/// How many request bodies a recording server keeps.
const RECORDED: usize = TURNS as usize;

/// A loopback server on its own thread; stops when dropped.
#[derive(Debug)]
pub struct Server {
    addr: SocketAddr,
    recorded: Arc<Mutex<Vec<Bytes>>>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Starts a server on `127.0.0.1` at a free port. It keeps the first three request
    /// bodies it receives (see [`recorded`](Self::recorded)).
    ///
    /// # Panics
    /// If the port cannot be bound or the thread not started.
    pub fn start() -> Server {
        Server::start_holding(None)
    }

    /// As [`start`](Self::start); with `Some(runs)`, the answers to the last model turn are
    /// held back until `runs` such requests have arrived, then all are answered (once: later
    /// requests are answered at once). Every one of `runs` runs is then in flight together,
    /// each with its connection open and its history at its longest.
    ///
    /// # Panics
    /// If the port cannot be bound or the thread not started.
    pub fn start_holding(runs: Option<usize>) -> Server {
        let hold = runs.map(|runs| Arc::new(Hold::new(runs)));
        let recorded = Arc::new(Mutex::new(Vec::new()));
        let (shutdown, stop) = oneshot::channel();
        let (ready, addr) = std::sync::mpsc::channel();
        let record = Arc::clone(&recorded);
        let thread = std::thread::Builder::new()
            .name("loopback-server".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("the server's runtime starts");
                runtime.block_on(serve(ready, stop, record, hold));
            })
            .expect("the server's thread starts");
        let addr = addr.recv().expect("the server binds");
        Server {
            addr,
            recorded,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    /// The server's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL a client is configured with: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        base_url(self.addr)
    }

    /// The first three request bodies received.
    ///
    /// # Panics
    /// If a connection task panicked while recording.
    pub fn recorded(&self) -> Vec<Bytes> {
        self.recorded.lock().expect("not poisoned").clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// `http://{addr}/v1`.
pub fn base_url(addr: SocketAddr) -> String {
    format!("http://{addr}/v1")
}

/// The three request bodies golem sends in the scenario, recorded by a server of its own:
/// what the floor replays.
///
/// # Panics
/// If golem's run fails or does not end as scripted.
pub fn record_bodies() -> Vec<Bytes> {
    let server = Server::start();
    let agent = scenario::agent(scenario::openai_model(&server.base_url()));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime starts");
    let result = runtime
        .block_on(agent.run(scenario::PROMPT, scenario::Table { face: 3 }))
        .expect("golem's run succeeds");
    assert!(
        scenario::is_expected(&result),
        "golem's run ends as scripted"
    );
    let bodies = server.recorded();
    assert_eq!(bodies.len(), RECORDED, "three requests were recorded");
    bodies
}

/// A server in a child process: the bench binary started again with [`ROLE_ENV`] set to
/// `server`, which calls [`serve_until_stdin_closes`]. Used where one process cannot hold
/// both ends of every connection (10,000 connections need 20,000 descriptors) and where the
/// client's memory must be measured alone. Stops when dropped.
#[derive(Debug)]
pub struct ChildServer {
    child: Child,
    stdin: Option<ChildStdin>,
    addr: SocketAddr,
}

impl ChildServer {
    /// Starts the current executable as a server and waits for its address.
    ///
    /// # Panics
    /// If the child does not start or does not report an address.
    pub fn start() -> ChildServer {
        ChildServer::spawn(None)
    }

    /// A server that holds back the last turn's answers until `runs` requests wait (see
    /// [`Server::start_holding`]).
    ///
    /// # Panics
    /// If the child does not start or does not report an address.
    pub fn holding(runs: usize) -> ChildServer {
        ChildServer::spawn(Some(runs))
    }

    fn spawn(hold: Option<usize>) -> ChildServer {
        let exe = std::env::current_exe().expect("the bench binary's path");
        let mut command = Command::new(exe);
        if let Some(runs) = hold {
            command.env(HOLD_ENV, runs.to_string());
        }
        let mut child = command
            .env(ROLE_ENV, "server")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the server process starts");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        io::BufReader::new(stdout)
            .read_line(&mut line)
            .expect("the server reports its address");
        let addr = line.trim().parse().expect("an address");
        ChildServer {
            stdin: child.stdin.take(),
            child,
            addr,
        }
    }

    /// The server's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL a client is configured with.
    pub fn base_url(&self) -> String {
        base_url(self.addr)
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        // Closing its stdin stops the server.
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// Serves until standard input closes; the server side of [`ChildServer`]. Prints the
/// address on the first line of standard output.
///
/// # Panics
/// If the server does not start.
pub fn serve_until_stdin_closes() {
    crate::sys::raise_fd_limit();
    let hold = std::env::var(HOLD_ENV)
        .ok()
        .and_then(|runs| runs.parse().ok());
    let server = Server::start_holding(hold);
    let mut stdout = io::stdout();
    writeln!(stdout, "{}", server.addr()).expect("stdout");
    stdout.flush().expect("stdout");
    let mut sink = Vec::new();
    let _ = io::Read::read_to_end(&mut io::stdin(), &mut sink);
    drop(server);
}

async fn serve(
    ready: std::sync::mpsc::Sender<SocketAddr>,
    mut stop: oneshot::Receiver<()>,
    record: Arc<Mutex<Vec<Bytes>>>,
    hold: Option<Arc<Hold>>,
) {
    let socket = TcpSocket::new_v4().expect("a socket");
    socket.set_reuseaddr(true).expect("SO_REUSEADDR");
    socket
        .bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
        .expect("a free loopback port");
    // A deep accept queue: 10,000 clients may connect at once.
    let listener = socket.listen(16_384).expect("listen");
    ready
        .send(listener.local_addr().expect("bound"))
        .expect("the starter waits");
    let answers: Arc<[Vec<u8>]> = (0..TURNS as usize).map(render).collect();
    loop {
        tokio::select! {
            _ = &mut stop => return,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                let answers = Arc::clone(&answers);
                let record = Arc::clone(&record);
                let hold = hold.clone();
                tokio::spawn(async move {
                    let _ = connection(stream, &answers, &record, hold.as_deref()).await;
                });
            }
        }
    }
}

/// The full HTTP response to model turn `turn`.
fn render(turn: usize) -> Vec<u8> {
    let body = serde_json::to_vec(&scenario::completion(turn)).expect("json");
    let mut response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    response.extend_from_slice(&body);
    response
}

const NOT_FOUND: &[u8] = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n";

async fn connection(
    mut stream: TcpStream,
    answers: &[Vec<u8>],
    record: &Mutex<Vec<Bytes>>,
    hold: Option<&Hold>,
) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut buf = Vec::with_capacity(4096);
    loop {
        let head_len = loop {
            if let Some(end) = find(&buf, b"\r\n\r\n") {
                break end + 4;
            }
            if stream.read_buf(&mut buf).await? == 0 {
                return Ok(());
            }
        };
        let head = &buf[..head_len];
        let body_len = content_length(head).unwrap_or(0);
        let is_chat = head.starts_with(b"POST ") && head[5..].starts_with(PATH);
        while buf.len() < head_len + body_len {
            if stream.read_buf(&mut buf).await? == 0 {
                return Ok(());
            }
        }
        let body = &buf[head_len..head_len + body_len];
        if is_chat {
            {
                let mut recorded = record.lock().expect("not poisoned");
                if recorded.len() < RECORDED {
                    recorded.push(Bytes::copy_from_slice(body));
                }
            }
            let turn = count(body, br#""role":"tool""#).min(answers.len() - 1);
            if let Some(hold) = hold
                && turn == answers.len() - 1
            {
                hold.wait().await;
            }
            stream.write_all(&answers[turn]).await?;
        } else {
            stream.write_all(NOT_FOUND).await?;
        }
        buf.drain(..head_len + body_len);
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|window| *window == needle)
        .count()
}

fn content_length(head: &[u8]) -> Option<usize> {
    head.split(|&byte| byte == b'\n').find_map(|line| {
        let (name, value) = line.split_at(line.iter().position(|&byte| byte == b':')?);
        if !name.eq_ignore_ascii_case(b"content-length") {
            return None;
        }
        std::str::from_utf8(&value[1..]).ok()?.trim().parse().ok()
    })
}

/// Answers to the last turn held back until a number of them wait.
struct Hold {
    runs: usize,
    arrived: std::sync::atomic::AtomicUsize,
    open: tokio::sync::watch::Sender<bool>,
}

impl Hold {
    fn new(runs: usize) -> Self {
        Hold {
            runs,
            arrived: std::sync::atomic::AtomicUsize::new(0),
            open: tokio::sync::watch::Sender::new(false),
        }
    }

    async fn wait(&self) {
        let mut open = self.open.subscribe();
        let arrived = self
            .arrived
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
            + 1;
        if arrived >= self.runs {
            self.open.send_replace(true);
        }
        let _ = open.wait_for(|open| *open).await;
    }
}
