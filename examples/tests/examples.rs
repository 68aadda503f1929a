//! Every example, run offline with its scripted model: what it prints is checked line by
//! line, so a newcomer sees exactly this.

#![allow(dead_code)]

#[path = "../self-correction/main.rs"]
mod self_correction;

#[path = "../output-validation/main.rs"]
mod output_validation;

#[path = "../deps-injection/main.rs"]
mod deps_injection;

#[path = "../anthropic/main.rs"]
mod anthropic;

fn rejections(output: &str) -> usize {
    output
        .lines()
        .filter(|line| line.starts_with("rejected"))
        .count()
}

#[tokio::test]
async fn self_correction_shows_one_rejection_then_the_answer() {
    let output = self_correction::run(self_correction::scripted_model())
        .await
        .unwrap();

    assert_eq!(rejections(&output), 1);
    assert_eq!(
        output,
        "\
system   │ You referee dice games. Roll with the roll_dice tool, then give the verdict.
user     │ Roll two dice for Ann; she wins with whatever she rolls.
model    │ calls roll_dice({\"n\": -1})
rejected │ roll_dice, retry 1 of 1: n must be between 1 and 10, got -1
model    │ calls roll_dice({\"n\": 2})
tool     │ roll_dice → 6
model    │ calls final_result({\"winner\": \"Ann\", \"score\": 6})
tool     │ final_result → Final result processed.
usage    │ 3 requests, 427 input + 58 output tokens, 2 tool calls; rounds that ended in a rejection: 1 requests, 113 tokens
verdict: Ann wins with 6
"
    );
}

#[tokio::test]
async fn output_validation_shows_the_rejected_note_and_the_fixed_one() {
    let output = output_validation::run(output_validation::scripted_model())
        .await
        .unwrap();

    assert_eq!(rejections(&output), 1);
    assert!(output.contains(
        "rejected │ output, retry 1 of 2: the title has 72 characters; keep it to 60; \
         audience must be users, operators or developers, not `everyone`\n"
    ));
    assert!(output.ends_with("note: Count tool retries per run (for developers)\n"));
}

#[tokio::test]
async fn deps_injection_reads_the_database_it_was_given() {
    let output = deps_injection::run(deps_injection::scripted_model())
        .await
        .unwrap();

    assert_eq!(rejections(&output), 1);
    assert!(output.contains(
        "rejected │ customer_info, retry 1 of 2: no customer 1024; known ids: [1042, 1043]\n"
    ));
    assert!(output.contains(
        "tool     │ customer_info → Ann Lee is on the team plan with a balance of -19.99 USD\n"
    ));
    assert!(output.contains("tool     │ send_reminder → payment reminder sent to customer 1042\n"));
}

#[tokio::test]
async fn anthropic_runs_offline_with_its_scripted_model() {
    let output = anthropic::run(anthropic::scripted_model()).await.unwrap();

    assert_eq!(rejections(&output), 1);
    assert!(output.contains("tool     │ capital → Oslo\n"));
    assert!(output.contains("model    │ The capital of Norway is Oslo.\n"));
}
