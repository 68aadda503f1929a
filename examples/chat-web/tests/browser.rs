//! The chat-web example's page in headless Chromium: Debian's `chromium-headless-shell`
//! (installed by `tests/chromium.sh` when missing) driven by npm `puppeteer-core` (pinned
//! beside golem-ui's npm clients, installed under the target directory by
//! `golem-ui/tests/node/install.sh`) through `golem-ui/tests/node/chat_web.mjs`. The example's
//! server runs in this process, on loopback, with its scripted model; the model holds its
//! stream at two points until the browser script posts `/test/go`, so what the page showed
//! at those points is what it showed before the run ended. Fails (never skips) when the
//! browser or the clients cannot be installed or started. Saves a screenshot of the finished
//! chat as `target/chat-web/screenshot.png`.

#![allow(dead_code)]

#[path = "../main.rs"]
mod chat_web;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use axum::routing::post;
use golem::model::ResponseDelta;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

/// The cargo target directory.
fn target() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("CARGO_TARGET_TMPDIR is inside the target directory")
        .to_owned()
}

/// Runs an install script with the target directory; its standard output.
fn install(script: &Path) -> String {
    let output = Command::new(script)
        .arg(target())
        .stderr(std::process::Stdio::inherit())
        .output()
        .unwrap_or_else(|error| panic!("{} could not run: {error}", script.display()));
    assert!(
        output.status.success(),
        "{} failed: {}",
        script.display(),
        output.status
    );
    String::from_utf8(output.stdout).expect("the script prints text")
}

/// The deltas the scripted model holds until the browser script says go: its second words,
/// and the last fragment of its answer.
fn held(delta: &ResponseDelta) -> bool {
    match delta {
        ResponseDelta::Text { text, .. } => text == "look for ",
        ResponseDelta::ToolCallArgs { args, .. } => args == chat_web::BOOKING[2],
        _ => false,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_streams_shows_a_rejection_asks_for_approval_and_fills_in_the_answer() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let chromium = install(&manifest.join("tests/chromium.sh"));
    let chromium = chromium.trim();
    install(&manifest.join("../../golem-ui/tests/node/install.sh"));
    let clients = target().join("ui-node");

    // Each held delta waits for one `/test/go`.
    let gate = Arc::new(Semaphore::new(0));
    let pace: chat_web::Pace = {
        let gate = Arc::clone(&gate);
        Arc::new(move |delta| {
            let gate = Arc::clone(&gate);
            let hold = held(delta);
            Box::pin(async move {
                if hold {
                    gate.acquire().await.expect("the gate stays open").forget();
                }
            })
        })
    };
    let dir = tempfile::tempdir().expect("a temp dir");
    let agent = chat_web::agent(chat_web::scripted_model(pace)).expect("the agent builds");
    let app = chat_web::app(agent, &dir.path().join("threads.db"))
        .await
        .expect("the server starts")
        .route(
            "/test/go",
            post(move || {
                gate.add_permits(1);
                async {}
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let url = format!("http://{}", listener.local_addr().expect("an address"));
    tokio::spawn(async move { axum::serve(listener, app).await });

    let screenshot = target().join("chat-web/screenshot.png");
    std::fs::create_dir_all(screenshot.parent().expect("a parent")).expect("the folder");
    let _ = std::fs::remove_file(&screenshot);
    let output = tokio::process::Command::new("node")
        .arg(clients.join("chat_web.mjs"))
        .arg(&url)
        .arg(chromium)
        .arg(&screenshot)
        .current_dir(&clients)
        .output()
        .await
        .expect("node runs");
    assert!(
        output.status.success(),
        "chat_web.mjs failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let shown: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "chat_web.mjs printed no JSON ({error}):\n{}",
            String::from_utf8_lossy(&output.stdout)
        )
    });

    let user = json!({"role": "user", "parts": [
        {"kind": "text", "state": "done", "text": "Book a table for two at Chez Golem tonight at 8pm"},
    ]});
    let rejected = json!({"kind": "tool", "state": "output-error", "tool": "find_table", "lines": [
        r#"{"restaurant":"Chez Golem","people":2,"time":"8pm"}"#,
        "rejected (retry 1 of 1): time must be 24-hour HH:MM, like 19:30; got `8pm`",
    ]});
    let found = json!({"kind": "tool", "state": "output-available", "tool": "find_table", "lines": [
        r#"{"restaurant":"Chez Golem","people":2,"time":"20:00"}"#,
        "→ Chez Golem has a table for 2 at 20:00",
    ]});
    let asking = json!({"kind": "text", "state": "done",
        "text": "Found a table. Booking it needs your approval."});
    let booking_input = r#"{"restaurant":"Chez Golem","people":2,"time":"20:00"}"#;
    let booked = json!({"kind": "tool", "state": "output-available", "tool": "book_table", "lines": [
        booking_input,
        "→ booked Chez Golem for 2 at 20:00: confirmation CG-2000",
        "approved by you",
    ]});
    let fields = json!({"restaurant": "Chez Golem", "time": "20:00", "people": "2",
        "confirmation": "CG-2000"});
    let mut all_fields = fields.clone();
    all_fields["note"] = json!("A table for 2 at 20:00, booked.");
    let intro = json!({"kind": "text", "state": "done", "text": "Let me look for a table."});

    // Streamed text on the page while the run goes on.
    assert_eq!(
        shown["streaming"],
        json!({"status": "streaming", "messages": [
            user,
            {"role": "assistant", "parts": [
                {"kind": "text", "state": "streaming", "text": "Let me "},
            ]},
        ]})
    );
    // The rejected call with its feedback, the call that ran, and the one that waits.
    assert_eq!(
        shown["paused"],
        json!({"status": "approval", "messages": [
            user,
            {"role": "assistant", "parts": [
                intro, rejected, found, asking,
                {"kind": "tool", "state": "approval-requested", "tool": "book_table", "lines": [
                    booking_input,
                    "Needs your approval: [Approve] [Deny]",
                ]},
            ]},
        ]})
    );
    // Approved: the same message goes on, and the answer fills in.
    assert_eq!(
        shown["filling"],
        json!({"status": "streaming", "messages": [
            user,
            {"role": "assistant", "parts": [
                intro, rejected, found, asking, booked,
                {"kind": "answer", "state": "filling", "source": "partial", "title": "Answer (filling in…)",
                 "fields": fields},
            ]},
        ]})
    );
    assert_eq!(
        shown["done"],
        json!({"status": "done", "messages": [
            user,
            {"role": "assistant", "parts": [
                intro, rejected, found, asking, booked,
                {"kind": "answer", "state": "done", "source": "output", "title": "Answer", "fields": all_fields},
            ]},
        ]})
    );
    // Denied, with a reason: the call did not run, and the answer says why.
    assert_eq!(
        shown["denied"],
        json!({"status": "done", "messages": [
            user,
            {"role": "assistant", "parts": [
                intro, rejected, found, asking,
                {"kind": "tool", "state": "output-denied", "tool": "book_table", "lines": [
                    booking_input,
                    "denied: we eat at home tonight",
                ]},
                {"kind": "answer", "state": "done", "source": "output", "title": "Answer", "fields": {
                    "restaurant": "Chez Golem", "time": "20:00", "people": "2",
                    "confirmation": "—", "note": "Not booked: we eat at home tonight",
                }},
            ]},
        ]})
    );
    let png = std::fs::read(&screenshot).expect("the screenshot is saved");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
}
