//! (7) Large events, fairness and connections of streams (issue 18).
//!
//! - **A 4 MiB event.** One streamed chat completion whose text (4 MiB) is a single SSE
//!   event, written by the loopback server in 16 KiB HTTP chunks, read through
//!   `OpenAiModel::request_stream` to its `Done`; beside it the same bytes written at once
//!   (one HTTP chunk: the unstreamed time of the same bytes), the same text answered as one
//!   JSON body through `request()`, and the stream in 16 KiB chunks read by reqwest with
//!   `eventsource-stream` (the parser golem used before). Target: the stream in 16 KiB
//!   chunks ≤ 1.5× the same bytes written at once.
//! - **Fairness.** On one current-thread runtime, three tasks stream 4 MiB events back to
//!   back while a fourth stream stalls after its first event, with an idle timeout of
//!   500 ms: how long until its `StreamFault::Idle`. Target: ≤ 2× the timeout (1 s).
//! - **Connections.** 100 streams at once, ten rounds, on a multi-threaded runtime against
//!   the 200-chunk server: how many connections golem opens, and how many a plain reqwest
//!   client reading each body to its end opens.
//!
//! The servers run on their own threads and runtimes.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use criterion::Criterion;
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use golem::model::http::HttpSettings;
use golem::model::openai::OpenAiModel;
use golem::model::{
    Message, Model, ModelError, ModelRequest, RequestParams, RequestPart, StreamEvent, StreamFault,
};
use golem_benches::sse_server::{SseServer, big_event, big_json, stalled};
use tokio::runtime::Runtime;

/// The size of the big event's text.
const BYTES: usize = 4 * 1024 * 1024;
/// The HTTP chunks the server writes it in.
const PIECE: usize = 16 * 1024;
const KEY: &str = "sk-bench-0123456789abcdef";

fn model(base_url: &str, http: HttpSettings) -> OpenAiModel {
    OpenAiModel::builder("gpt-4o-mini")
        .api_key(KEY)
        .base_url(base_url)
        .http(http)
        .build()
        .expect("a valid model")
}

fn messages() -> Vec<Message> {
    vec![Message::Request(ModelRequest::new(vec![
        RequestPart::user_prompt("Write a lot."),
    ]))]
}

/// One streamed response to its end; the length of its text.
async fn streamed(model: &OpenAiModel) -> Result<usize, ModelError> {
    let messages = messages();
    let params = RequestParams::text(Vec::new());
    let mut stream = model.request_stream(&messages, &params);
    while let Some(event) = stream.next().await {
        if let StreamEvent::Done(response) = event? {
            return Ok(response.text_content().len());
        }
    }
    Ok(0)
}

/// One whole response; the length of its text.
async fn whole(model: &OpenAiModel) -> usize {
    let messages = messages();
    let params = RequestParams::text(Vec::new());
    let response = model
        .request(&messages, &params)
        .await
        .expect("the whole request succeeds");
    response.text_content().len()
}

/// The stream read as golem read it before: reqwest's chunks into `eventsource-stream`,
/// each event's JSON decoded; the length of the text.
async fn eventsource_stream(client: &reqwest::Client, url: &str) -> usize {
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .expect("the request succeeds");
    let bytes = futures_util::stream::unfold(response, |mut response| async move {
        match response.chunk().await {
            Ok(Some(chunk)) => Some((Ok(chunk), response)),
            Ok(None) => None,
            Err(error) => Some((Err(error), response)),
        }
    });
    let mut events = Box::pin(bytes.eventsource());
    let mut length = 0;
    while let Some(event) = events.next().await {
        let event = event.expect("a valid stream");
        if event.data == "[DONE]" {
            continue;
        }
        let chunk: serde_json::Value = serde_json::from_str(&event.data).expect("a chunk");
        length += chunk["choices"][0]["delta"]["content"]
            .as_str()
            .map_or(0, str::len);
    }
    length
}

fn current_thread() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let stream_server = SseServer::answering(big_event(BYTES, PIECE));
    let at_once_server = SseServer::answering(big_event(BYTES, usize::MAX));
    let json_server = SseServer::answering(big_json(BYTES));
    let runtime = current_thread();
    let streaming = model(&stream_server.base_url(), HttpSettings::default());
    let at_once = model(&at_once_server.base_url(), HttpSettings::default());
    let unstreamed = model(&json_server.base_url(), HttpSettings::default());
    assert_eq!(runtime.block_on(streamed(&streaming)).ok(), Some(BYTES));
    assert_eq!(runtime.block_on(streamed(&at_once)).ok(), Some(BYTES));
    assert_eq!(runtime.block_on(whole(&unstreamed)), BYTES);

    let mut criterion = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    let mut group = criterion.benchmark_group("large_event");
    group.bench_function("4MiB/streamed", |b| {
        b.iter(|| runtime.block_on(streamed(&streaming)));
    });
    group.bench_function("4MiB/streamed_at_once", |b| {
        b.iter(|| runtime.block_on(streamed(&at_once)));
    });
    group.bench_function("4MiB/whole", |b| {
        b.iter(|| runtime.block_on(whole(&unstreamed)));
    });
    group.finish();
    criterion.final_summary();

    if !golem_benches::is_bench_run() {
        return;
    }
    large_event_summary(
        &runtime,
        [&streaming, &at_once],
        &unstreamed,
        &stream_server,
    );
    fairness_summary(&stream_server);
    connections_summary();
}

/// Interleaved rounds of the streamed and the whole response, and the old parser.
fn large_event_summary(
    runtime: &Runtime,
    streams: [&OpenAiModel; 2],
    unstreamed: &OpenAiModel,
    server: &SseServer,
) {
    const ROUNDS: usize = 9;
    let mut samples: [Vec<f64>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    for round in 0..ROUNDS {
        for index in [0, 1, 2].map(|index| (index + round) % 3) {
            let start = Instant::now();
            if index < 2 {
                runtime
                    .block_on(streamed(streams[index]))
                    .expect("the stream succeeds");
            } else {
                runtime.block_on(whole(unstreamed));
            }
            samples[index].push(start.elapsed().as_secs_f64() * 1e3);
        }
    }
    let [streamed_ms, at_once_ms, whole_ms] = samples;
    let client = reqwest::Client::new();
    let url = format!("{}/chat/completions", server.base_url());
    let old: Vec<f64> = (0..3)
        .map(|_| {
            let start = Instant::now();
            assert_eq!(runtime.block_on(eventsource_stream(&client, &url)), BYTES);
            start.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    let (streamed, at_once, whole, old) = (
        median(streamed_ms),
        median(at_once_ms),
        median(whole_ms),
        median(old),
    );
    println!(
        "\nlarge event summary: one 4 MiB event in {} KiB HTTP chunks, medians of {ROUNDS} interleaved rounds",
        PIECE / 1024
    );
    println!("  golem streamed, 16 KiB chunks  {streamed:>9.1} ms");
    println!("  golem streamed, written at once {at_once:>8.1} ms");
    println!("  golem whole (JSON)             {whole:>9.1} ms");
    println!("  reqwest + eventsource-stream   {old:>9.1} ms (16 KiB chunks, median of 3)");
    println!(
        "  16 KiB chunks / at once: {:.2}× (target ≤ 1.5×); / whole JSON: {:.2}×; eventsource-stream / at once: {:.0}×",
        streamed / at_once,
        streamed / whole,
        old / at_once
    );
}

/// How late an idle timeout fires while other streams on the same thread carry 4 MiB
/// events.
fn fairness_summary(big: &SseServer) {
    const IDLE: Duration = Duration::from_millis(500);
    let stalled_server = SseServer::answering(stalled());
    let mut fired = Vec::new();
    for _ in 0..5 {
        let runtime = current_thread();
        let stop = Arc::new(AtomicBool::new(false));
        let loaded = runtime.block_on(async {
            let busy: Vec<_> = (0..3)
                .map(|_| {
                    let model = model(&big.base_url(), HttpSettings::default());
                    let stop = Arc::clone(&stop);
                    tokio::spawn(async move {
                        let mut streams = 0;
                        while !stop.load(Ordering::Relaxed) {
                            streamed(&model).await.expect("the stream succeeds");
                            streams += 1;
                        }
                        streams
                    })
                })
                .collect();
            // Let the busy streams get going.
            tokio::time::sleep(Duration::from_millis(200)).await;
            let idle = model(
                &stalled_server.base_url(),
                HttpSettings::default().idle_timeout(Some(IDLE)),
            );
            let start = Instant::now();
            let error = streamed(&idle).await.expect_err("the stream stalls");
            let elapsed = start.elapsed();
            assert_eq!(error.stream_fault(), Some(StreamFault::Idle));
            stop.store(true, Ordering::Relaxed);
            let mut streams = 0;
            for task in busy {
                streams += task.await.expect("a busy task");
            }
            (elapsed, streams)
        });
        fired.push(loaded);
    }
    let times: Vec<f64> = fired
        .iter()
        .map(|(elapsed, _)| elapsed.as_secs_f64() * 1e3)
        .collect();
    let streams: Vec<usize> = fired.iter().map(|(_, streams)| *streams).collect();
    println!(
        "\nfairness summary: an idle timeout of {} ms beside 3 streams of 4 MiB events on one current-thread runtime, 5 runs",
        IDLE.as_millis()
    );
    println!(
        "  fired after (ms): {} (median {:.0}; target ≤ {} ms); 4 MiB streams read meanwhile: {streams:?}",
        times
            .iter()
            .map(|ms| format!("{ms:.0}"))
            .collect::<Vec<_>>()
            .join(", "),
        median(times.clone()),
        2 * IDLE.as_millis()
    );
}

/// Connections opened by 100 concurrent streams, ten rounds, golem against the floor.
fn connections_summary() {
    const CONCURRENT: usize = 100;
    const ROUNDS: usize = 10;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    println!(
        "\nconnections summary: {CONCURRENT} streams of 200 chunks at once, {ROUNDS} rounds, multi-threaded runtime"
    );
    for client in ["golem", "floor"] {
        let server = SseServer::start(200);
        let golem = model(&server.base_url(), HttpSettings::default());
        let floor = reqwest::Client::new();
        let url = format!("{}/chat/completions", server.base_url());
        runtime.block_on(async {
            for _ in 0..ROUNDS {
                let tasks: Vec<_> = (0..CONCURRENT)
                    .map(|_| {
                        let (golem, floor, url) = (golem.clone(), floor.clone(), url.clone());
                        tokio::spawn(async move {
                            if client == "golem" {
                                streamed(&golem).await.expect("the stream succeeds");
                            } else {
                                let mut response = floor
                                    .post(&url)
                                    .header("content-type", "application/json")
                                    .body("{}")
                                    .send()
                                    .await
                                    .expect("the request succeeds");
                                while response.chunk().await.expect("a chunk").is_some() {}
                            }
                        })
                    })
                    .collect();
                for task in tasks {
                    task.await.expect("a stream");
                }
            }
        });
        println!(
            "  {client:<6} {} connections for {} streams (at least {CONCURRENT})",
            server.connections(),
            CONCURRENT * ROUNDS
        );
    }
}
