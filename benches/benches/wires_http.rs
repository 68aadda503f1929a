//! The HTTP path of the newer wires — Gemini's `generateContent` and OpenAI's Responses
//! API: the scenario through golem's model against a loopback server answering the wire's
//! responses, side by side with the floor, a raw reqwest client sending the same three
//! request bodies to the same server with the same key header. The same targets as `http`:
//! golem's wall time per run ≤ 1.1× the floor's. Beside them, golem's model alone (the run's
//! three requests sent again through `Model::request`, without the run: what the wire
//! itself costs) and the JSON floor (the floor that also writes and reads the JSON).
//!
//! The server, on its own thread and runtime, reads the model turn from the request: the
//! number of tool results in the history (`functionResponse` parts, `function_call_output`
//! items).

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use criterion::Criterion;
use futures_util::future::BoxFuture;
use golem::Agent;
use golem::model::gemini::GeminiModel;
use golem::model::http::{HttpSettings, RetryPolicy};
use golem::model::openai::responses::OpenAiResponsesModel;
use golem::model::{Message, Model, ModelError, ModelResponse, RequestParams};
use golem_benches::scenario::{self, API_KEY, PROMPT, TURNS, Table, Verdict};
use golem_benches::sys::CpuTime;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;

/// One wire under test.
#[derive(Clone, Copy)]
struct Wire {
    name: &'static str,
    /// The request path, after the base URL's path.
    path: &'static str,
    /// What marks a tool result in a request body: the turn is their count.
    result_marker: &'static [u8],
    /// The header the key travels in, and its prefix.
    key_header: (&'static str, &'static str),
    /// The response of a turn: (tool, arguments, prompt tokens, output tokens).
    response: fn(usize, &str, &Value, u64, u64) -> Value,
    /// How the JSON floor reads a response: into the least that any client must read (the
    /// call's name and arguments, the usage), with serde_json; the number of calls.
    read: Reader,
}

/// Reads a response body as the JSON floor does; returns the number of calls in it.
type Reader = fn(&[u8]) -> usize;

const WIRES: [Wire; 2] = [
    Wire {
        name: "gemini",
        path: "/v1beta/models/gemini-2.5-flash:generateContent",
        result_marker: b"\"functionResponse\"",
        key_header: ("x-goog-api-key", ""),
        response: gemini_response,
        read: read::gemini,
    },
    Wire {
        name: "responses",
        path: "/v1/responses",
        result_marker: b"\"function_call_output\"",
        key_header: ("authorization", "Bearer "),
        response: responses_response,
        read: read::responses,
    },
];

fn gemini_response(turn: usize, tool: &str, args: &Value, prompt: u64, output: u64) -> Value {
    json!({
        "candidates": [{
            "content": {"role": "model", "parts": [{"functionCall": {"name": tool, "args": args}}]},
            "finishReason": "STOP",
            "index": 0
        }],
        "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": output, "totalTokenCount": prompt + output},
        "modelVersion": "gemini-2.5-flash",
        "responseId": format!("resp-{turn}")
    })
}

fn responses_response(turn: usize, tool: &str, args: &Value, prompt: u64, output: u64) -> Value {
    json!({
        "id": format!("resp_{turn}"),
        "object": "response",
        "created_at": 1_764_547_200,
        "status": "completed",
        "model": "gpt-4.1-mini",
        "output": [{
            "id": format!("fc_{turn}"),
            "type": "function_call",
            "status": "completed",
            "call_id": format!("call_{turn}"),
            "name": tool,
            "arguments": args.to_string()
        }],
        "usage": {"input_tokens": prompt, "output_tokens": output, "total_tokens": prompt + output}
    })
}

/// The HTTP response of `wire`'s scripted turn `turn`.
fn answer(wire: Wire, turn: usize) -> Vec<u8> {
    let (tool, args, prompt, output) = [
        ("roll_dice", json!({"n": -1}), 90, 18),
        ("roll_dice", json!({"n": 2}), 140, 18),
        (
            "final_result",
            json!({"winner": "Ann", "score": 6}),
            170,
            24,
        ),
    ][turn]
        .clone();
    let body =
        serde_json::to_vec(&(wire.response)(turn, tool, &args, prompt, output)).expect("json");
    let mut response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    response.extend_from_slice(&body);
    response
}

/// Starts the server on its own thread; returns its address and the first three bodies it
/// receives, once they have arrived.
fn start_server(wire: Wire) -> (SocketAddr, Arc<Mutex<Vec<Bytes>>>) {
    let recorded = Arc::new(Mutex::new(Vec::new()));
    let (ready, addr) = std::sync::mpsc::channel();
    let record = Arc::clone(&recorded);
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async move {
            let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
                .await
                .expect("a free loopback port");
            ready
                .send(listener.local_addr().expect("bound"))
                .expect("the starter waits");
            let answers: Arc<[Vec<u8>]> =
                (0..TURNS as usize).map(|turn| answer(wire, turn)).collect();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (answers, record) = (Arc::clone(&answers), Arc::clone(&record));
                tokio::spawn(async move {
                    let _ = connection(stream, wire, &answers, &record).await;
                });
            }
        });
    });
    (addr.recv().expect("the server starts"), recorded)
}

async fn connection(
    mut stream: TcpStream,
    wire: Wire,
    answers: &[Vec<u8>],
    record: &Mutex<Vec<Bytes>>,
) -> std::io::Result<()> {
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
        let is_generate = head.starts_with(b"POST ") && head[5..].starts_with(wire.path.as_bytes());
        while buf.len() < head_len + body_len {
            if stream.read_buf(&mut buf).await? == 0 {
                return Ok(());
            }
        }
        let body = &buf[head_len..head_len + body_len];
        if is_generate {
            {
                let mut recorded = record.lock().expect("not poisoned");
                if recorded.len() < TURNS as usize {
                    recorded.push(Bytes::copy_from_slice(body));
                }
            }
            let turn = count(body, wire.result_marker).min(answers.len() - 1);
            stream.write_all(&answers[turn]).await?;
        } else {
            stream
                .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                .await?;
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

/// A raw reqwest client replaying golem's recorded bodies, set up as golem's transport is.
/// With `json`, it is the JSON floor: it also writes each body from its JSON tree and reads
/// each response with serde_json, as any client of the API must, and nothing else.
struct Floor {
    client: reqwest::Client,
    url: String,
    bodies: Vec<Bytes>,
    /// The bodies as JSON trees, and how a response is read.
    json: Option<(Vec<Value>, Reader)>,
}

impl Floor {
    fn new(wire: Wire, url: String, bodies: Vec<Bytes>, json: bool) -> Self {
        let mut headers = HeaderMap::new();
        let (name, prefix) = wire.key_header;
        let mut key = HeaderValue::from_str(&format!("{prefix}{API_KEY}")).expect("a header");
        key.set_sensitive(true);
        headers.insert(HeaderName::from_static(name), key);
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .timeout(Duration::from_secs(600))
            .default_headers(headers)
            .user_agent("golem-bench-floor/0.1.0")
            .build()
            .expect("the floor's client builds");
        let json = json.then(|| {
            let trees = bodies
                .iter()
                .map(|body| serde_json::from_slice(body).expect("golem's bodies are JSON"))
                .collect();
            (trees, wire.read)
        });
        Floor {
            client,
            url,
            bodies,
            json,
        }
    }

    async fn run(&self) -> Result<usize, reqwest::Error> {
        let mut received = 0;
        for (turn, body) in self.bodies.iter().enumerate() {
            let body = match &self.json {
                Some((trees, _)) => Bytes::from(serde_json::to_vec(&trees[turn]).expect("json")),
                None => body.clone(),
            };
            let response = self
                .client
                .post(&self.url)
                .body(body)
                .send()
                .await?
                .error_for_status()?;
            let bytes = response.bytes().await?;
            received += match &self.json {
                Some((_, read)) => read(&bytes),
                None => bytes.len(),
            };
        }
        Ok(received)
    }
}

/// The JSON floor's readers: the least any client of each API reads from a response.
mod read {
    use serde::Deserialize;
    use serde_json::value::RawValue;

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Generated<'a> {
        #[serde(borrow)]
        candidates: Vec<Candidate<'a>>,
        usage_metadata: Option<GeminiUsage>,
        model_version: Option<String>,
        response_id: Option<String>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Candidate<'a> {
        #[serde(borrow)]
        content: Content<'a>,
        finish_reason: Option<String>,
    }

    #[derive(Deserialize)]
    struct Content<'a> {
        #[serde(borrow)]
        parts: Vec<Part<'a>>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Part<'a> {
        text: Option<String>,
        #[serde(borrow)]
        function_call: Option<Call<'a>>,
    }

    #[derive(Deserialize)]
    struct Call<'a> {
        name: String,
        #[serde(borrow)]
        args: Option<&'a RawValue>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct GeminiUsage {
        prompt_token_count: u64,
        candidates_token_count: u64,
    }

    pub(super) fn gemini(body: &[u8]) -> usize {
        let response: Generated<'_> = serde_json::from_slice(body).expect("a response");
        let usage = response.usage_metadata.map_or(0, |usage| {
            usage.prompt_token_count + usage.candidates_token_count
        });
        let calls = response
            .candidates
            .into_iter()
            .flat_map(|candidate| {
                std::hint::black_box(candidate.finish_reason);
                candidate.content.parts
            })
            .filter(|part| {
                std::hint::black_box(&part.text);
                part.function_call.as_ref().is_some_and(|call| {
                    std::hint::black_box((&call.name, call.args));
                    true
                })
            })
            .count();
        std::hint::black_box((usage, response.model_version, response.response_id));
        calls
    }

    #[derive(Deserialize)]
    struct Response {
        id: String,
        status: String,
        output: Vec<Item>,
        usage: Option<ResponsesUsage>,
    }

    #[derive(Deserialize)]
    struct Item {
        #[serde(rename = "type")]
        kind: String,
        call_id: Option<String>,
        name: Option<String>,
        arguments: Option<String>,
    }

    #[derive(Deserialize)]
    struct ResponsesUsage {
        input_tokens: u64,
        output_tokens: u64,
    }

    pub(super) fn responses(body: &[u8]) -> usize {
        let response: Response = serde_json::from_slice(body).expect("a response");
        let usage = response
            .usage
            .map_or(0, |usage| usage.input_tokens + usage.output_tokens);
        let calls = response
            .output
            .into_iter()
            .filter(|item| {
                std::hint::black_box((&item.call_id, &item.name, &item.arguments));
                item.kind == "function_call"
            })
            .count();
        std::hint::black_box((usage, response.id, response.status));
        calls
    }
}

/// The clients the bench compares.
#[derive(Clone, Copy, PartialEq)]
enum Client {
    Golem,
    /// golem's model alone (see [`ModelOnly`]).
    ModelOnly,
    Floor,
    /// The floor that also writes and reads the JSON (see [`Floor`]).
    JsonFloor,
}

impl Client {
    const ALL: [Client; 4] = [
        Client::Golem,
        Client::ModelOnly,
        Client::Floor,
        Client::JsonFloor,
    ];

    fn name(self) -> &'static str {
        match self {
            Client::Golem => "golem",
            Client::ModelOnly => "model",
            Client::Floor => "floor",
            Client::JsonFloor => "json-floor",
        }
    }
}

struct Clients {
    runtime: Runtime,
    golem: Agent<Table, Verdict>,
    model_only: ModelOnly,
    floor: Floor,
    json_floor: Floor,
}

impl Clients {
    fn run(&self, client: Client, runs: u64) {
        self.runtime.block_on(async {
            for _ in 0..runs {
                match client {
                    Client::Golem => {
                        let result = self
                            .golem
                            .run(PROMPT, Table { face: 3 })
                            .await
                            .expect("golem's run succeeds");
                        debug_assert!(scenario::is_expected(&result));
                    }
                    Client::ModelOnly => {
                        let calls = self.model_only.run().await.expect("golem's model answers");
                        debug_assert_eq!(calls, TURNS as usize);
                    }
                    Client::Floor => {
                        self.floor.run().await.expect("the floor's run succeeds");
                    }
                    Client::JsonFloor => {
                        let calls = self
                            .json_floor
                            .run()
                            .await
                            .expect("the floor's run succeeds");
                        debug_assert_eq!(calls, TURNS as usize);
                    }
                }
            }
        });
    }
}

/// golem's model of `wire` at the server's `base` URL.
enum WireModel {
    Gemini(GeminiModel),
    Responses(OpenAiResponsesModel),
}

impl WireModel {
    fn new(wire: Wire, base: &str) -> Self {
        let http = HttpSettings::default()
            .connect_timeout(Duration::from_secs(30))
            .retry(RetryPolicy::none());
        match wire.name {
            "gemini" => WireModel::Gemini(
                GeminiModel::builder("gemini-2.5-flash")
                    .api_key(API_KEY)
                    .base_url(format!("{base}/v1beta"))
                    .http(http)
                    .build()
                    .expect("the scenario's model builds"),
            ),
            _ => WireModel::Responses(
                OpenAiResponsesModel::builder("gpt-4.1-mini")
                    .api_key(API_KEY)
                    .base_url(format!("{base}/v1"))
                    .http(http)
                    .build()
                    .expect("the scenario's model builds"),
            ),
        }
    }

    /// The scenario's agent on this model.
    fn agent(self) -> Agent<Table, Verdict> {
        match self {
            WireModel::Gemini(model) => scenario::agent(model),
            WireModel::Responses(model) => scenario::agent(model),
        }
    }

    /// The scenario's agent on this model, each request it makes kept in `requests`.
    fn recording_agent(self, requests: &Requests) -> Agent<Table, Verdict> {
        let requests = Arc::clone(requests);
        match self {
            WireModel::Gemini(inner) => scenario::agent(Recording { inner, requests }),
            WireModel::Responses(inner) => scenario::agent(Recording { inner, requests }),
        }
    }

    fn shared(self) -> Arc<dyn Model> {
        match self {
            WireModel::Gemini(model) => Arc::new(model),
            WireModel::Responses(model) => Arc::new(model),
        }
    }
}

/// The requests a run asked its model: each one's history and parameters.
type Requests = Arc<Mutex<Vec<(Vec<Message>, RequestParams)>>>;

/// A model that keeps each request it is asked before passing it on: how the bench learns
/// the requests the scenario's run makes, to send them again without the run.
struct Recording<M> {
    inner: M,
    requests: Requests,
}

impl<M: Model> Model for Recording<M> {
    fn request<'a>(
        &'a self,
        messages: &'a [Message],
        params: &'a RequestParams,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        self.requests
            .lock()
            .expect("not poisoned")
            .push((messages.to_vec(), params.clone()));
        self.inner.request(messages, params)
    }

    fn name(&self) -> &str {
        self.inner.name()
    }

    fn system(&self) -> &str {
        self.inner.system()
    }
}

/// golem's model alone: the three requests of the scenario's run, each sent with
/// [`Model::request`] as the run sent it (its history and parameters), and its response
/// read, without the run around them. What the wire itself costs per request.
struct ModelOnly {
    model: Arc<dyn Model>,
    requests: Vec<(Vec<Message>, RequestParams)>,
}

impl ModelOnly {
    /// The number of calls in the responses.
    async fn run(&self) -> Result<usize, ModelError> {
        let mut calls = 0;
        for (messages, params) in &self.requests {
            calls += self
                .model
                .request(messages, params)
                .await?
                .tool_calls()
                .count();
        }
        Ok(calls)
    }
}

/// golem and the floor for `wire`, each against its own server.
fn clients(wire: Wire) -> Clients {
    let (addr, recorded) = start_server(wire);
    let base = format!("http://{addr}");
    let requests = Requests::default();
    let recording = WireModel::new(wire, &base).recording_agent(&requests);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let result = runtime
        .block_on(recording.run(PROMPT, Table { face: 3 }))
        .expect("golem's run succeeds");
    assert!(
        scenario::is_expected(&result),
        "the scenario ends as scripted on {}",
        wire.name
    );
    let bodies = recorded.lock().expect("not poisoned").clone();
    assert_eq!(bodies.len(), TURNS as usize);
    let url = format!("{base}{}", wire.path);
    let floor = Floor::new(wire, url.clone(), bodies.clone(), false);
    let json_floor = Floor::new(wire, url, bodies, true);
    let requests = std::mem::take(&mut *requests.lock().expect("not poisoned"));
    assert_eq!(requests.len(), TURNS as usize);
    let clients = Clients {
        runtime,
        golem: WireModel::new(wire, &base).agent(),
        model_only: ModelOnly {
            model: WireModel::new(wire, &base).shared(),
            requests,
        },
        floor,
        json_floor,
    };
    for client in Client::ALL {
        clients.run(client, 1);
    }
    clients
}

fn main() {
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let all: Vec<(Wire, Clients)> = WIRES.iter().map(|&wire| (wire, clients(wire))).collect();
    for (wire, clients) in &all {
        let mut group = criterion.benchmark_group(format!("wires_http/{}", wire.name));
        for client in Client::ALL {
            group.bench_function(format!("wall/{}", client.name()), |b| {
                b.iter_custom(|runs| {
                    let start = Instant::now();
                    clients.run(client, runs);
                    start.elapsed()
                });
            });
        }
        // The "time" criterion reports here is the client thread's CPU time (user + sys).
        for client in Client::ALL {
            group.bench_function(format!("cpu/{}", client.name()), |b| {
                b.iter_custom(|runs| {
                    let start = CpuTime::thread();
                    clients.run(client, runs);
                    (CpuTime::thread() - start).total()
                });
            });
        }
        group.finish();
    }
    criterion.final_summary();

    if golem_benches::is_bench_run() {
        // `WIRES_PROFILE=<wire>/<golem|model|floor|json-floor>` runs that client alone, 2,000 runs,
        // e.g. under callgrind with `--bench none`.
        if let Ok(only) = std::env::var("WIRES_PROFILE") {
            for (wire, clients) in &all {
                for client in Client::ALL {
                    if only == format!("{}/{}", wire.name, client.name()) {
                        clients.run(client, 2_000);
                    }
                }
            }
            return;
        }
        for (wire, clients) in &all {
            summary(wire.name, clients);
        }
    }
}

/// Interleaved rounds of the four clients (which goes first turns round), so drift on a
/// shared machine hits them alike; the medians of the per-round wall and client CPU times
/// per run, and their ratios. The CPU time (the bench thread's user + system time) tells
/// the regime: where the machine's idle cores halt between requests, wall time per run is
/// several times the CPU time, and the code run after each wake-up runs cold
/// (docs/benchmarks.md §10).
fn summary(wire: &str, clients: &Clients) {
    const ROUNDS: usize = 21;
    const RUNS: u32 = 300;
    let mut walls: [Vec<Duration>; 4] = Default::default();
    let mut cpus: [Vec<Duration>; 4] = Default::default();
    for round in 0..ROUNDS {
        for turn in 0..Client::ALL.len() {
            let index = (round + turn) % Client::ALL.len();
            let (start, cpu) = (Instant::now(), CpuTime::thread());
            clients.run(Client::ALL[index], u64::from(RUNS));
            walls[index].push(start.elapsed() / RUNS);
            cpus[index].push((CpuTime::thread() - cpu).total() / RUNS);
        }
    }
    let median = |mut rounds: Vec<Duration>| {
        rounds.sort();
        rounds[rounds.len() / 2].as_secs_f64() * 1e6
    };
    let [golem, model, floor, json] = walls.map(median);
    let [golem_cpu, model_cpu, floor_cpu, json_cpu] = cpus.map(median);
    println!(
        "\nwires_http summary for {wire}: medians of {ROUNDS} interleaved rounds of {RUNS} runs (3 requests each), per run"
    );
    println!(
        "  golem {golem:.1} µs, floor {floor:.1} µs: golem/floor wall {:.3}× (target ≤ 1.1×)",
        golem / floor
    );
    println!(
        "  client CPU: golem {golem_cpu:.1} µs, floor {floor_cpu:.1} µs: golem/floor {:.3}×",
        golem_cpu / floor_cpu
    );
    println!(
        "  golem's model alone (its three requests, without the run): wall {model:.1} µs, {:.3}× the floor (target ≤ 1.1×); CPU {model_cpu:.1} µs, {:.3}× the floor",
        model / floor,
        model_cpu / floor_cpu
    );
    println!(
        "  the JSON floor (the floor writing and reading the JSON): wall {json:.1} µs, {:.3}× the floor; CPU {json_cpu:.1} µs, {:.3}× the floor",
        json / floor,
        json_cpu / floor_cpu
    );
}
