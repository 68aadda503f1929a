//! (2) The HTTP path: the scenario through golem's `OpenAiModel` against a loopback server,
//! side by side with the floor, a raw reqwest client sending the same three request bodies
//! to the same server.
//!
//! Both clients run on the bench thread's current-thread runtime and keep one pooled
//! connection alive; the server runs on its own thread, so `getrusage(RUSAGE_THREAD)` on the
//! bench thread is the client's CPU time alone. Targets: golem's client CPU per run ≤ 1.3×
//! the floor's, wall time ≤ 1.1×.

use std::time::{Duration, Instant};

use criterion::Criterion;
use golem::Agent;
use golem_benches::alloc::{self, Counting};
use golem_benches::floor::Floor;
use golem_benches::scenario::{self, PROMPT, Table, Verdict};
use golem_benches::server::Server;
use golem_benches::sys::CpuTime;
use tokio::runtime::Runtime;

// Counts only while the summary asks it to; otherwise one relaxed load per allocation.
#[global_allocator]
static ALLOC: Counting = Counting;

struct Clients {
    runtime: Runtime,
    golem: Agent<Table, Verdict>,
    floor: Floor,
}

impl Clients {
    fn golem(&self, runs: u64) {
        self.runtime.block_on(async {
            for _ in 0..runs {
                let result = self
                    .golem
                    .run(PROMPT, Table { face: 3 })
                    .await
                    .expect("golem's run succeeds");
                debug_assert!(scenario::is_expected(&result));
            }
        });
    }

    fn floor(&self, runs: u64) {
        self.runtime.block_on(async {
            for _ in 0..runs {
                self.floor.run().await.expect("the floor's run succeeds");
            }
        });
    }

    fn run(&self, client: Client, runs: u64) {
        match client {
            Client::Golem => self.golem(runs),
            Client::Floor => self.floor(runs),
        }
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

fn main() {
    let server = Server::start();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let golem = scenario::agent(scenario::openai_model(&server.base_url()));
    let result = runtime
        .block_on(golem.run(PROMPT, Table { face: 3 }))
        .expect("golem's run succeeds");
    assert!(
        scenario::is_expected(&result),
        "the scenario ends as scripted"
    );
    let floor = Floor::new(&server.base_url(), server.recorded());
    let clients = Clients {
        runtime,
        golem,
        floor,
    };
    clients.floor(1);

    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let mut group = criterion.benchmark_group("http");
    for client in [Client::Golem, Client::Floor] {
        group.bench_function(format!("wall/{}", client.name()), |b| {
            b.iter_custom(|runs| {
                let start = Instant::now();
                clients.run(client, runs);
                start.elapsed()
            });
        });
    }
    // The "time" criterion reports here is the client thread's CPU time (user + sys).
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
        // `HTTP_PROFILE=golem|floor` runs that client alone, 2,000 runs, e.g. under callgrind
        // with `--bench none`.
        if let Ok(only) = std::env::var("HTTP_PROFILE") {
            for client in [Client::Golem, Client::Floor] {
                if only == client.name() {
                    clients.run(client, 2_000);
                }
            }
            return;
        }
        summary(&clients);
    }
}

/// Interleaved rounds of both clients, so drift on a shared machine hits both alike (which
/// goes first alternates); the medians of the rounds, and the spread of the per-round ratios.
fn summary(clients: &Clients) {
    const ROUNDS: usize = 31;
    const RUNS: u32 = 500;
    let mut samples = [Vec::new(), Vec::new()];
    for round in 0..ROUNDS {
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for index in order {
            let client = [Client::Golem, Client::Floor][index];
            let cpu = CpuTime::thread();
            let start = Instant::now();
            clients.run(client, u64::from(RUNS));
            let wall = start.elapsed() / RUNS;
            let cpu = CpuTime::thread() - cpu;
            samples[index].push((wall, cpu.user / RUNS, cpu.system / RUNS));
        }
    }
    let median = |values: &mut Vec<Duration>| {
        values.sort();
        values[values.len() / 2]
    };
    let stats: Vec<[Duration; 4]> = samples
        .iter()
        .map(|rounds| {
            let mut wall: Vec<_> = rounds.iter().map(|s| s.0).collect();
            let mut user: Vec<_> = rounds.iter().map(|s| s.1).collect();
            let mut system: Vec<_> = rounds.iter().map(|s| s.2).collect();
            let mut total: Vec<_> = rounds.iter().map(|s| s.1 + s.2).collect();
            [
                median(&mut wall),
                median(&mut user),
                median(&mut system),
                median(&mut total),
            ]
        })
        .collect();
    println!(
        "\nhttp summary: medians of {ROUNDS} interleaved rounds of {RUNS} runs (3 requests each), per run"
    );
    println!(
        "  {:<6} {:>10} {:>10} {:>10} {:>10}",
        "client", "wall µs", "user µs", "sys µs", "cpu µs"
    );
    for (client, stat) in ["golem", "floor"].iter().zip(&stats) {
        println!(
            "  {:<6} {:>10.1} {:>10.1} {:>10.1} {:>10.1}",
            client,
            micros(stat[0]),
            micros(stat[1]),
            micros(stat[2]),
            micros(stat[3])
        );
    }
    for client in [Client::Golem, Client::Floor] {
        alloc::start();
        clients.run(client, u64::from(RUNS));
        let counts = alloc::stop();
        println!(
            "  {:<6} allocations per run: {:.0} ({:.1} KB)",
            client.name(),
            counts.allocations as f64 / f64::from(RUNS),
            counts.allocated as f64 / f64::from(RUNS) / 1024.0
        );
    }
    let ratio = |index: usize| micros(stats[0][index]) / micros(stats[1][index]);
    println!(
        "  golem/floor: wall {:.3}× (target ≤ 1.1×), cpu {:.3}× (target ≤ 1.3×)",
        ratio(0),
        ratio(3)
    );
    // The same ratio round by round: its quartiles show how much the verdict depends on noise.
    let quartiles = |value: fn(&(Duration, Duration, Duration)) -> Duration| {
        let mut ratios: Vec<f64> = samples[0]
            .iter()
            .zip(&samples[1])
            .map(|(golem, floor)| value(golem).as_secs_f64() / value(floor).as_secs_f64())
            .collect();
        ratios.sort_by(f64::total_cmp);
        let at = |q: usize| ratios[(ratios.len() - 1) * q / 4];
        (at(1), at(2), at(3))
    };
    let (w1, w2, w3) = quartiles(|sample| sample.0);
    let (c1, c2, c3) = quartiles(|sample| sample.1 + sample.2);
    println!(
        "  per-round ratios, quartiles: wall {w1:.3} / {w2:.3} / {w3:.3}, cpu {c1:.3} / {c2:.3} / {c3:.3}"
    );
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}
