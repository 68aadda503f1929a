//! (12) golem-ui's mappings: one run event turned into its protocol's event and written as
//! an SSE line, for the AI SDK UI message stream and for AG-UI. Target: ≤ 1 µs per event.
//!
//! Measured per event kind that a chat streams most: a text delta (the bulk of every
//! answer), a tool call's argument fragment, and a tool call's result.

use std::hint::black_box;
use std::time::Duration;

use criterion::Criterion;
use golem::RunEvent;
use golem::model::{ResponseDelta, ToolCallPart};
use golem::run::ToolOutcome;
use golem_ui::{ag_ui, ai_sdk};

fn text(turn: u32) -> RunEvent<String> {
    RunEvent::Delta {
        turn,
        delta: ResponseDelta::Text {
            part: 0,
            text: "a token ".into(),
        },
    }
}

fn main() {
    let events: [(&str, RunEvent<String>); 3] = [
        ("text_delta", text(1)),
        (
            "tool_args",
            RunEvent::Delta {
                turn: 1,
                delta: ResponseDelta::ToolCallArgs {
                    part: 1,
                    args: r#"{"path": "a."#.into(),
                },
            },
        ),
        (
            "tool_result",
            RunEvent::ToolCallFinished {
                turn: 1,
                call: ToolCallPart::new("read", r#"{"path":"a.txt"}"#, "c1").into(),
                outcome: ToolOutcome::Returned(serde_json::json!({"size": 42})),
            },
        ),
    ];

    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let mut group = criterion.benchmark_group("ui_mapping");
    for (name, event) in &events {
        group.bench_function(format!("ai_sdk/{name}"), |b| {
            let mut encoder = ai_sdk::Encoder::<String>::new("m1");
            let mut chunks = Vec::new();
            encoder.start(&mut chunks);
            encoder.event(&RunEvent::RequestSent { turn: 1 }, &mut chunks);
            // The tool call whose arguments stream, shown as the model started it.
            encoder.event(
                &RunEvent::Delta {
                    turn: 1,
                    delta: ResponseDelta::ToolCallStart {
                        part: 1,
                        tool_name: "read".into(),
                        tool_call_id: "c1".into(),
                    },
                },
                &mut chunks,
            );
            let mut lines = String::new();
            b.iter(|| {
                chunks.clear();
                lines.clear();
                encoder.event(black_box(event), &mut chunks);
                for chunk in &chunks {
                    lines.push_str(&ai_sdk::sse(chunk));
                }
                black_box(&lines);
            });
        });
        group.bench_function(format!("ag_ui/{name}"), |b| {
            let mut encoder = ag_ui::Encoder::<String>::new("t1", "r1");
            let mut out = Vec::new();
            encoder.start(&mut out);
            encoder.event(&RunEvent::RequestSent { turn: 1 }, &mut out);
            encoder.event(
                &RunEvent::Delta {
                    turn: 1,
                    delta: ResponseDelta::ToolCallStart {
                        part: 1,
                        tool_name: "read".into(),
                        tool_call_id: "c1".into(),
                    },
                },
                &mut out,
            );
            let mut lines = String::new();
            b.iter(|| {
                out.clear();
                lines.clear();
                encoder.event(black_box(event), &mut out);
                for event in &out {
                    lines.push_str(&ag_ui::sse(event));
                }
                black_box(&lines);
            });
        });
    }
    group.finish();
    criterion.final_summary();
}
