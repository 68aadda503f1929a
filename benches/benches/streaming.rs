//! (5) Streaming: one response of `CHUNKS` text chunks through golem's
//! `OpenAiModel::request_stream` (SSE parsed by golem's incremental parser, each chunk
//! decoded, a delta per chunk, the response rebuilt and decoded at the end), side by side
//! with the floor: a raw reqwest client reading the same stream from the same loopback
//! server with `eventsource-stream` (the SSE parser golem used before issue 18), decoding
//! each chunk into a borrowed struct and appending its text.
//!
//! Both clients run on the bench thread's current-thread runtime and keep one pooled
//! connection alive; the server runs on its own thread, so `getrusage(RUSAGE_THREAD)` on the
//! bench thread is the client's CPU time alone. Target: golem's CPU per chunk ≤ 1.2× the
//! floor's.

use std::borrow::Cow;
use std::time::{Duration, Instant};

use criterion::Criterion;
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use golem::model::openai::OpenAiModel;
use golem::model::{Message, Model, ModelRequest, RequestParams, RequestPart, StreamEvent};
use golem_benches::sse_server::{SseServer, chunk_text};
use golem_benches::sys::CpuTime;
use tokio::runtime::Runtime;

/// Text chunks per response.
const CHUNKS: usize = 200;

struct Clients {
    runtime: Runtime,
    golem: OpenAiModel,
    messages: Vec<Message>,
    params: RequestParams,
    floor: reqwest::Client,
    url: String,
    body: Vec<u8>,
}

#[derive(serde::Deserialize)]
struct FloorChunk<'a> {
    #[serde(borrow)]
    choices: Vec<FloorChoice<'a>>,
}

#[derive(serde::Deserialize)]
struct FloorChoice<'a> {
    #[serde(borrow)]
    delta: FloorDelta<'a>,
}

#[derive(serde::Deserialize)]
struct FloorDelta<'a> {
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
}

impl Clients {
    /// One streamed response through golem; the number of deltas.
    async fn golem_once(&self) -> usize {
        let mut stream = self.golem.request_stream(&self.messages, &self.params);
        let mut deltas = 0;
        while let Some(event) = stream.next().await {
            match event.expect("golem's stream succeeds") {
                StreamEvent::Delta(_) => deltas += 1,
                StreamEvent::Done(response) => {
                    debug_assert_eq!(response.usage.output_tokens, CHUNKS as u64);
                    break;
                }
                _ => {}
            }
        }
        deltas
    }

    /// One streamed response through the floor, read to the end of its body; the number of
    /// text chunks.
    async fn floor_once(&self) -> usize {
        let response = self
            .floor
            .post(&self.url)
            .header("content-type", "application/json")
            .body(self.body.clone())
            .send()
            .await
            .expect("the floor's request succeeds");
        let bytes = futures_util::stream::unfold(response, |mut response| async move {
            match response.chunk().await {
                Ok(Some(chunk)) => Some((Ok(chunk), response)),
                Ok(None) => None,
                Err(error) => Some((Err(error), response)),
            }
        });
        let mut events = Box::pin(bytes.eventsource());
        let mut text = String::new();
        let mut chunks = 0;
        while let Some(event) = events.next().await {
            let event = event.expect("the floor's stream succeeds");
            // Read on to the body's end, so the connection is always reused.
            if event.data == "[DONE]" {
                continue;
            }
            let chunk: FloorChunk<'_> = serde_json::from_str(&event.data).expect("a chunk");
            for choice in chunk.choices {
                if let Some(content) = choice.delta.content.filter(|c| !c.is_empty()) {
                    text.push_str(&content);
                    chunks += 1;
                }
            }
        }
        debug_assert!(text.ends_with(&chunk_text(CHUNKS - 1)));
        chunks
    }

    fn run(&self, client: Client, runs: u64) {
        self.runtime.block_on(async {
            for _ in 0..runs {
                let chunks = match client {
                    Client::Golem => self.golem_once().await,
                    Client::Floor => self.floor_once().await,
                };
                debug_assert_eq!(chunks, CHUNKS);
            }
        });
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Client {
    Golem,
    Floor,
}

impl Client {
    fn name(self) -> &'static str {
        match self {
            Client::Golem => "golem",
            Client::Floor => "floor",
        }
    }
}

/// A client configured as golem's transport is: the same key header, the same connect and
/// request timeouts (so both keep a request timer), one connection pool. It has no idle
/// timeout: that is golem's own.
fn floor_client() -> reqwest::Client {
    let mut headers = reqwest::header::HeaderMap::new();
    let mut auth = reqwest::header::HeaderValue::from_static("Bearer sk-bench-0123456789abcdef");
    auth.set_sensitive(true);
    headers.insert(reqwest::header::AUTHORIZATION, auth);
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(600))
        .default_headers(headers)
        .build()
        .expect("a client")
}

fn main() {
    let server = SseServer::start(CHUNKS);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let golem = OpenAiModel::builder("gpt-4o-mini")
        .api_key("sk-bench-0123456789abcdef")
        .base_url(server.base_url())
        .build()
        .expect("a valid model");
    let messages = vec![Message::Request(ModelRequest::new(vec![
        RequestPart::user_prompt("Count to two hundred."),
    ]))];
    let body = serde_json::to_vec(&serde_json::json!({
        "model": "gpt-4o-mini",
        "messages": [{"role": "user", "content": "Count to two hundred."}],
        "stream": true,
        "stream_options": {"include_usage": true},
    }))
    .expect("JSON");
    let clients = Clients {
        runtime,
        golem,
        messages,
        params: RequestParams::text(Vec::new()),
        floor: floor_client(),
        url: format!("{}/chat/completions", server.base_url()),
        body,
    };
    assert_eq!(clients.runtime.block_on(clients.golem_once()), CHUNKS);
    assert_eq!(clients.runtime.block_on(clients.floor_once()), CHUNKS);

    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let mut group = criterion.benchmark_group("streaming");
    // The "time" criterion reports is the client thread's CPU time (user + sys) per
    // response of CHUNKS chunks.
    for client in [Client::Golem, Client::Floor] {
        group.bench_function(format!("cpu/{}", client.name()), |b| {
            b.iter_custom(|runs| {
                let start = CpuTime::thread();
                clients.run(client, runs);
                (CpuTime::thread() - start).total()
            });
        });
    }
    group.finish();
    criterion.final_summary();

    if golem_benches::is_bench_run() {
        summary(&clients);
        // Whether each client's connection survives a stream: one per client when it does.
        for client in [Client::Golem, Client::Floor] {
            let before = server.connections();
            clients.run(client, 1000);
            println!(
                "  {:<6} connections opened for 1000 streamed responses: {}",
                client.name(),
                server.connections() - before
            );
        }
    }
}

/// Interleaved rounds of both clients, so drift on a shared machine hits both alike (which
/// goes first alternates); the medians of the rounds, per chunk, and the spread of the
/// per-round ratios.
fn summary(clients: &Clients) {
    const ROUNDS: usize = 21;
    const RUNS: u32 = 50;
    let per_chunk = f64::from(RUNS) * CHUNKS as f64;
    let mut samples: [Vec<(f64, f64)>; 2] = [Vec::new(), Vec::new()];
    for round in 0..ROUNDS {
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for index in order {
            let client = [Client::Golem, Client::Floor][index];
            let cpu = CpuTime::thread();
            let start = Instant::now();
            clients.run(client, u64::from(RUNS));
            let wall = start.elapsed().as_secs_f64() * 1e9 / per_chunk;
            let cpu = (CpuTime::thread() - cpu).total().as_secs_f64() * 1e9 / per_chunk;
            samples[index].push((wall, cpu));
        }
    }
    let median = |mut values: Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    println!(
        "\nstreaming summary: medians of {ROUNDS} interleaved rounds of {RUNS} responses of {CHUNKS} chunks, per chunk"
    );
    println!("  {:<6} {:>10} {:>10}", "client", "wall ns", "cpu ns");
    let mut stats = Vec::new();
    for (index, client) in ["golem", "floor"].iter().enumerate() {
        let wall = median(samples[index].iter().map(|s| s.0).collect());
        let cpu = median(samples[index].iter().map(|s| s.1).collect());
        println!("  {client:<6} {wall:>10.0} {cpu:>10.0}");
        stats.push((wall, cpu));
    }
    println!(
        "  golem/floor: cpu {:.3}× (target ≤ 1.2×), wall {:.3}×",
        stats[0].1 / stats[1].1,
        stats[0].0 / stats[1].0
    );
    let mut ratios: Vec<f64> = samples[0]
        .iter()
        .zip(&samples[1])
        .map(|(golem, floor)| golem.1 / floor.1)
        .collect();
    ratios.sort_by(f64::total_cmp);
    let at = |q: usize| ratios[(ratios.len() - 1) * q / 4];
    println!(
        "  per-round cpu ratios, quartiles: {:.3} / {:.3} / {:.3}",
        at(1),
        at(2),
        at(3)
    );
}
