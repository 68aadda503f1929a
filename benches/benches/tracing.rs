//! Tracing with the OTLP exporter: what golem's spans cost per model turn when golem-otel's
//! exporter is installed (spans built, recorded, converted and queued for export; sent in
//! batches from the exporter's own thread to a loopback sink), against no subscriber at all,
//! on the three-turn scenario with `FunctionModel` (no other I/O). Also with content
//! capture on, which renders each request's history as JSON.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use golem::Agent;
use golem_benches::scenario::{self, PROMPT, TURNS, Table, Verdict};
use golem_benches::sys::CpuTime;
use tracing::Dispatch;
use tracing_subscriber::layer::SubscriberExt;

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let exports = Arc::new(AtomicUsize::new(0));
    let exporter = golem_otel::Exporter::builder()
        .endpoint(sink(Arc::clone(&exports)))
        .build()
        .expect("the exporter builds");
    let exported = Dispatch::new(tracing_subscriber::registry().with(exporter.layer()));

    let agent = scenario::agent(scenario::function_model());
    let capturing: Agent<Table, Verdict> = golem::Agent::builder(scenario::function_model())
        .instructions(scenario::INSTRUCTIONS)
        .tool(scenario::RollDice)
        .capture_content(true)
        .build()
        .expect("the agent builds");
    let run = |agent: &Agent<Table, Verdict>| {
        runtime
            .block_on(agent.run(PROMPT, Table { face: 3 }))
            .expect("the scenario succeeds")
    };
    let plain = || run(&agent);
    let traced = || tracing::dispatcher::with_default(&exported, || run(&agent));
    let captured = || tracing::dispatcher::with_default(&exported, || run(&capturing));
    // A traced run first: `tracing` caches whether a callsite is wanted when it is first
    // reached, and a run with no subscriber anywhere would cache "never" for every later
    // scoped subscriber too. The plain runs below thus run with golem's callsites enabled,
    // as in any program that has a subscriber.
    assert!(scenario::is_expected(&traced()));
    exporter.flush().expect("the sink takes the batch");
    assert_eq!(
        exports.load(Ordering::Relaxed),
        1,
        "the traced run was exported"
    );
    assert!(scenario::is_expected(&plain()));
    assert!(scenario::is_expected(&captured()));

    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let mut group = criterion.benchmark_group("tracing");
    group.throughput(Throughput::Elements(TURNS));
    group.bench_function("no_subscriber", |b| b.iter(plain));
    group.bench_function("otlp_exporter", |b| b.iter(traced));
    group.bench_function("otlp_exporter_with_content", |b| b.iter(captured));
    group.finish();
    criterion.final_summary();

    if golem_benches::is_bench_run() {
        summary("no subscriber", &plain);
        summary("golem-otel's exporter installed", &traced);
        summary("golem-otel's exporter, content captured", &captured);
    }
    exporter.shutdown().expect("the sink takes every batch");
}

/// Times 20,000 runs of `drive`.
fn summary<R>(how: &str, drive: &dyn Fn() -> R) {
    const RUNS: u32 = 20_000;
    for _ in 0..1_000 {
        drive();
    }
    let cpu = CpuTime::thread();
    let start = Instant::now();
    for _ in 0..RUNS {
        drive();
    }
    let wall = start.elapsed() / RUNS;
    let cpu = (CpuTime::thread() - cpu).total() / RUNS;
    println!("\ntracing summary, {how} ({RUNS} runs, FunctionModel, current-thread runtime)");
    println!(
        "  per turn: {:>8.2} µs wall  {:>8.2} µs cpu (the run's thread)",
        wall.as_secs_f64() * 1e6 / TURNS as f64,
        cpu.as_secs_f64() * 1e6 / TURNS as f64
    );
}

/// A loopback OTLP/HTTP endpoint that answers every export with 200 and drops it: the
/// exporter's sending is measured on its own thread, not the run's.
fn sink(exports: Arc<AtomicUsize>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let port = listener.local_addr().expect("an address").port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let exports = Arc::clone(&exports);
            std::thread::spawn(move || drain(stream, &exports));
        }
    });
    format!("http://127.0.0.1:{port}")
}

fn drain(stream: TcpStream, exports: &AtomicUsize) {
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    loop {
        let mut length = 0;
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line == "\r\n" {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        exports.fetch_add(1, Ordering::Relaxed);
        if reader.read_exact(&mut body).is_err()
            || writer
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                .is_err()
        {
            return;
        }
    }
}
