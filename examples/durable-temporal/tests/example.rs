//! The durable Temporal example, run offline with its scripted model and an in-memory
//! journal with a crash in the middle: what it prints is checked line by line.

use golem_examples::durable::{offline, scripted_model};

#[tokio::test]
async fn durable_temporal_replays_the_email_instead_of_sending_it_again() {
    let output = offline(scripted_model(), "assistant-1").await.unwrap();

    assert_eq!(
        output,
        "\
user     │ Remind Ann about invoice 17.
model    │ calls send_email({\"to\": \"ann@example.com\", \"body\": \"Invoice 17 is due on Friday.\"})
tool     │ send_email → sent to ann@example.com
model    │ Reminded Ann that invoice 17 is due on Friday.
usage    │ 2 requests, 410 input + 42 output tokens, 1 tool calls; rounds that ended in a rejection: 0 requests, 0 tokens
journal  │ model:1, tool:1:call_1, model:2 (replayed 2)
sent     │ assistant-1/call_1: to ann@example.com: Invoice 17 is due on Friday.
"
    );
}
