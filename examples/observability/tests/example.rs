//! The observability example, run offline with its scripted model: what it prints (the
//! transcript, the cost in dollars, the span tree its collector received) is checked line
//! by line.

#![allow(dead_code)]

#[path = "../main.rs"]
mod observability;

#[tokio::test]
async fn observability_prints_the_cost_and_the_span_tree_it_exported() {
    let output = observability::run(observability::scripted_model(), "openai", "gpt-4o-mini")
        .await
        .unwrap();

    assert_eq!(
        output,
        "\
user     │ Roll two dice for Ann.
model    │ calls roll_dice({\"n\": 0})
rejected │ roll_dice, retry 1 of 1: n must be between 1 and 10, got 0
model    │ calls roll_dice({\"n\": 2})
tool     │ roll_dice → 6
model    │ Ann rolled well.
rejected │ output, retry 1 of 1: say the total as a number
model    │ Ann rolled 6.
usage    │ 4 requests, 720 input + 49 output tokens, 2 tool calls; rounds that ended in a rejection: 2 requests, 344 tokens
cost     │ $0.000137 at gpt-4o-mini prices, of which rejected rounds $0.000062 (roll_dice $0.000029, output $0.000034)
span     │ invoke_agent referee: 720 + 49 tokens, 2 rejected rounds
span     │   event: tool call rejected (tool, retry 1 of 1)
span     │   event: output rejected (decode, retry 1 of 1)
span     │   chat scripted: 120 + 18 tokens
span     │   execute_tool roll_dice: error golem.rejected
span     │   chat scripted: 170 + 18 tokens
span     │   execute_tool roll_dice
span     │   chat scripted: 200 + 6 tokens
span     │   chat scripted: 230 + 7 tokens
"
    );
}
