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

#[path = "../human-in-the-loop/main.rs"]
mod human_in_the_loop;

#[path = "../streaming/main.rs"]
mod streaming;

#[path = "../long-chat/main.rs"]
mod long_chat;

#[path = "../multi-agent/main.rs"]
mod multi_agent;

#[path = "../vision/main.rs"]
mod vision;

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

#[tokio::test]
async fn human_in_the_loop_denies_one_deletion_and_approves_the_next() {
    let output = human_in_the_loop::run(human_in_the_loop::scripted_model())
        .await
        .unwrap();

    assert_eq!(
        output,
        "\
approval │ delete_file({\"path\": \"old-report.pdf\"}) → denied: reports are kept for a year
approval │ delete_file({\"path\": \"build.log\"}) → approved
user     │ Tidy up the drive.
model    │ calls list_files({})
tool     │ list_files → old-report.pdf, build.log, notes.md
model    │ calls delete_file({\"path\": \"old-report.pdf\"})
tool     │ delete_file → This call was denied and did not run: reports are kept for a year
model    │ calls delete_file({\"path\": \"build.log\"})
tool     │ delete_file → deleted build.log
model    │ Deleted build.log; kept old-report.pdf, which is still needed.
usage    │ 4 requests, 740 input + 61 output tokens, 2 tool calls; rounds that ended in a rejection: 0 requests, 0 tokens
answer: Deleted build.log; kept old-report.pdf, which is still needed.
files left: old-report.pdf, notes.md
"
    );
}

#[tokio::test]
async fn streaming_prints_text_as_it_arrives_then_the_plan_field_by_field() {
    let output = streaming::run(streaming::scripted_model()).await.unwrap();
    assert_eq!(
        output,
        "\
model    │ Checking the forecast first.
tool     │ forecast({\"city\": \"Lisbon\"}) → Lisbon: sunny, then rain on day 2
partial  │ \"Two days in Lis\", 0 day(s): []
partial  │ \"Two days in Lisbon\", 1 day(s): [\"Walk Alfama and\"]
partial  │ \"Two days in Lisbon\", 2 day(s): [\"Walk Alfama and the castle\", \"Museums while it r\"]
partial  │ \"Two days in Lisbon\", 2 day(s): [\"Walk Alfama and the castle\", \"Museums while it rains\"]
usage    │ 2 requests, 230 input + 65 output tokens, 1 tool calls; rounds that ended in a rejection: 0 requests, 0 tokens
plan: Two days in Lisbon
  day 1: Walk Alfama and the castle
  day 2: Museums while it rains
"
    );
}

#[tokio::test]
async fn long_chat_sends_the_latest_turns_that_fit_and_keeps_them_all() {
    let output = long_chat::run(long_chat::scripted_model()).await.unwrap();

    assert_eq!(
        output,
        "\
turn 1 │ sent 1 of 1 messages, ~11 tokens
user   │ Which planet is the largest?
model  │ Jupiter is the largest planet in the solar system.
turn 2 │ sent 3 of 3 messages, ~39 tokens
user   │ How many moons does it have?
model  │ Jupiter has 95 officially recognised moons.
turn 3 │ sent 5 of 5 messages, ~66 tokens
user   │ Which of them is the biggest?
model  │ Ganymede is the biggest of Jupiter's moons.
turn 4 │ sent 5 of 7 messages, ~64 tokens
user   │ Is it bigger than Mercury?
model  │ Yes, Ganymede is larger than Mercury, though less massive.
turn 5 │ sent 5 of 9 messages, ~66 tokens
user   │ Who discovered it?
model  │ Galileo Galilei discovered Ganymede in 1610.
turn 6 │ sent 5 of 11 messages, ~66 tokens
user   │ What did we talk about first?
model  │ The first question I can see is: Is it bigger than Mercury?
kept   │ 12 messages in the history, all of them
"
    );
}

#[tokio::test]
async fn multi_agent_delegates_and_shows_the_usage_tree() {
    let output = multi_agent::run(
        multi_agent::scripted_router(),
        multi_agent::scripted_dice(),
        multi_agent::scripted_rules(),
    )
    .await
    .unwrap();

    assert_eq!(
        output,
        "\
user     │ Roll two dice for Ann and tell her how to win.
model    │ calls rules({\"task\": \"How does one win at dice?\"})
tool     │ rules → The highest total wins.
model    │ calls dice({\"task\": \"Roll two dice for Ann.\"})
tool     │ dice → Ann rolled 6.
model    │ Ann rolled 6; the highest total wins, so she leads.
usage tree
  router: 7 requests, 1025 tokens; rejected rounds: 1 requests, 102 tokens
    dice: 3 requests, 399 tokens; rejected rounds: 1 requests, 102 tokens
    rules: 1 requests, 66 tokens; rejected rounds: 0 requests, 0 tokens
answer: Ann rolled 6; the highest total wins, so she leads.
"
    );
}

#[tokio::test]
async fn vision_sends_the_image_and_prints_the_description() {
    let output = vision::run(vision::scripted_model()).await.unwrap();

    assert_eq!(
        output,
        "\
user     │ What is in this picture? [image/png bytes (73 bytes)]
model    │ A solid red square, 4 by 4 pixels, with nothing else in it.
usage    │ 1 requests, 290 input + 16 output tokens, 0 tool calls; rounds that ended in a rejection: 0 requests, 0 tokens
"
    );
}
