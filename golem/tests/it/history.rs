//! History processors and the token budget before sending: what each request sends of the
//! history, checked before it goes, while the run keeps the whole history (ADR 0025).

use crate::common;

use std::error::Error as _;

use common::*;
use golem::history::{self, FitTokens, HistoryError, KeepLastTurns, Summarize, TrimToolOutputs};
use golem::model::Message;
use golem::run::MemoryJournal;
use golem::tool::{FunctionTool, Tool};
use golem::usage::{LimitExceeded, UsageLimits};
use golem::{Agent, ModelRetry, RunContext, Stage, Step};
use serde_json::json;

#[golem::args]
struct Nothing {}

/// A tool that returns `length` characters.
fn echo(length: usize) -> impl Tool<()> {
    FunctionTool::new("echo", move |_ctx: RunContext<()>, _: Nothing| {
        futures_util::future::ready(Ok::<_, ModelRetry>("x".repeat(length)))
    })
}

/// A finished three-turn conversation: a system prompt, then "one", "two" and "three",
/// each answered with text.
fn three_turns() -> Vec<Message> {
    vec![
        request(vec![system("You count."), user("one")]),
        response(vec![text("1")], 1, 1),
        request(vec![user("two")]),
        response(vec![text("2")], 1, 1),
        request(vec![user("three")]),
        response(vec![text("3")], 1, 1),
    ]
}

#[tokio::test]
async fn a_processor_changes_what_is_sent_and_the_run_keeps_the_whole_history() {
    let script = script(vec![reply(vec![text("4")], 1, 1)]);
    let agent = Agent::<(), String>::builder(script.model.clone())
        .history_processor(KeepLastTurns::new(2))
        .build()
        .unwrap();

    let result = agent
        .run_with_history(three_turns(), "four", ())
        .await
        .unwrap();

    // The last two turns were sent, with the system prompt the conversation opened with.
    assert_eq!(
        script.seen.lock().unwrap()[0],
        [
            request(vec![system("You count."), user("three")]),
            response(vec![text("3")], 1, 1),
            request(vec![user("four")]),
        ]
    );
    let mut whole = three_turns();
    whole.push(request(vec![user("four")]));
    whole.push(response(vec![text("4")], 1, 1));
    assert_eq!(result.messages, whole);
    assert_eq!(result.new_messages(), &whole[6..]);
}

#[tokio::test]
async fn keeping_the_last_turns_drops_the_answers_to_calls_it_left_out() {
    // The first turn ends with an output call, answered in the request of the second.
    let history = vec![
        request(vec![user("one")]),
        response(vec![call("final_result", "{}", "c1")], 1, 1),
        request(vec![
            tool_return("final_result", "c1", json!("Final result processed.")),
            user("two"),
        ]),
        response(vec![text("2")], 1, 1),
    ];
    let script = script(vec![reply(vec![text("3")], 1, 1)]);
    let agent = Agent::<(), String>::builder(script.model.clone())
        .history_processor(KeepLastTurns::new(2))
        .build()
        .unwrap();

    agent.run_with_history(history, "three", ()).await.unwrap();

    assert_eq!(
        script.seen.lock().unwrap()[0],
        [
            request(vec![user("two")]),
            response(vec![text("2")], 1, 1),
            request(vec![user("three")]),
        ]
    );
}

#[tokio::test]
async fn a_processor_that_splits_a_call_from_its_answer_fails_typed_before_sending() {
    let script = script(vec![
        reply(vec![call("echo", "{}", "c1")], 10, 5),
        reply(vec![text("never")], 1, 1),
    ]);
    // Drops every response with a tool call: their answers are left without them.
    let drop_calls = history::from_fn(
        "drop_calls",
        |_ctx: &RunContext<()>, mut messages: Vec<Message>| {
            messages.retain(|message| match message {
                Message::Response(response) => response.tool_calls().next().is_none(),
                Message::Request(_) => true,
            });
            messages
        },
    );
    let agent = Agent::<(), String>::builder(script.model.clone())
        .tool(echo(2))
        .history_processor(drop_calls)
        .build()
        .unwrap();

    let error = agent.run("Echo", ()).await.unwrap_err();

    assert_eq!(error.stage(), Stage::Input);
    let cause = error
        .source()
        .and_then(|cause| cause.downcast_ref::<HistoryError>())
        .expect("a history error");
    assert!(matches!(
        cause,
        HistoryError::Invalid { processor, problem }
            if processor == "drop_calls"
                && problem == "message 1 answers the call `c1`, which the response before it does not make"
    ));
    assert_eq!(
        cause.to_string(),
        "history processor `drop_calls` returned a history that cannot be sent: message 1 \
         answers the call `c1`, which the response before it does not make"
    );
    // Nothing more was sent; the history holds what was exchanged, every call answered.
    assert_eq!(script.requests(), 1);
    assert_eq!(
        error.messages(),
        [
            request(vec![user("Echo")]),
            response(vec![call("echo", "{}", "c1")], 10, 5),
            request(vec![tool_return("echo", "c1", json!("xx"))]),
        ]
    );
    assert_eq!((error.usage().requests, error.usage().tool_calls), (1, 1));
}

#[tokio::test]
async fn a_processors_own_error_fails_the_run_with_its_name_and_cause() {
    let script = script(vec![reply(vec![text("never")], 1, 1)]);
    let failing = history::from_async_fn(
        "summary_store",
        |_ctx: RunContext<()>, _messages: Vec<Message>| async {
            Err::<Vec<Message>, _>(std::io::Error::other("the store is down"))
        },
    );
    let agent = Agent::<(), String>::builder(script.model.clone())
        .history_processor(failing)
        .build()
        .unwrap();

    let error = agent.run("Hi", ()).await.unwrap_err();

    assert_eq!(error.stage(), Stage::Input);
    let cause = error.source().expect("a cause");
    assert_eq!(
        cause.to_string(),
        "history processor `summary_store` failed"
    );
    assert_eq!(
        cause.source().map(ToString::to_string),
        Some("the store is down".to_owned())
    );
    assert_eq!(script.requests(), 0);
    assert_eq!(error.messages(), [] as [Message; 0]);
    assert_eq!(
        error.pending().cloned().map(Message::Request),
        Some(request(vec![user("Hi")]))
    );
}

#[tokio::test]
async fn tool_outputs_the_model_has_read_are_cut_and_new_ones_sent_whole() {
    let script = script(vec![
        reply(vec![call("echo", "{}", "c1")], 1, 1),
        reply(vec![call("echo", "{}", "c2")], 1, 1),
        reply(vec![text("done")], 1, 1),
    ]);
    let agent = Agent::<(), String>::builder(script.model.clone())
        .tool(echo(50))
        .history_processor(TrimToolOutputs::new(20))
        .build()
        .unwrap();

    let result = agent.run("Echo twice", ()).await.unwrap();

    let seen = script.seen.lock().unwrap();
    let long = json!("x".repeat(50));
    assert_eq!(
        seen[1][2],
        request(vec![tool_return("echo", "c1", long.clone())])
    );
    assert_eq!(
        seen[2][2],
        request(vec![tool_return(
            "echo",
            "c1",
            json!(
                "[The output of `echo` was 50 characters; it was removed to save context. Call \
                 the tool again if you need it.]"
            )
        )])
    );
    assert_eq!(
        seen[2][4],
        request(vec![tool_return("echo", "c2", long.clone())])
    );
    // The history keeps both outputs whole.
    assert_eq!(
        result.messages[2],
        request(vec![tool_return("echo", "c1", long)])
    );
}

#[tokio::test]
async fn a_token_budget_keeps_the_latest_turns_that_fit() {
    let script = script(vec![reply(vec![text("4")], 1, 1)]);
    // Each turn here is about 10 estimated tokens: the last two fit in 25.
    let agent = Agent::<(), String>::builder(script.model.clone())
        .history_processor(FitTokens::new(25))
        .build()
        .unwrap();

    agent
        .run_with_history(three_turns(), "four", ())
        .await
        .unwrap();

    let seen = script.seen.lock().unwrap();
    assert_eq!(
        seen[0],
        [
            request(vec![system("You count."), user("three")]),
            response(vec![text("3")], 1, 1),
            request(vec![user("four")]),
        ]
    );
    assert!(history::estimate_tokens(&seen[0]) <= 25);
}

#[tokio::test]
async fn a_request_over_the_token_limit_is_not_sent() {
    let script = script(vec![reply(vec![text("never")], 1, 1)]);
    let agent = Agent::<(), String>::builder(script.model.clone())
        .instructions("Answer briefly.")
        .usage_limits(UsageLimits::new().request_tokens_limit(50))
        .build()
        .unwrap();

    let error = agent.run("x".repeat(400), ()).await.unwrap_err();

    assert_eq!(error.stage(), Stage::Limit);
    // 100 for the prompt, 4 for its message, 4 for the instructions.
    assert_eq!(
        error.limit(),
        Some(&LimitExceeded::RequestTokens {
            limit: 50,
            tokens: 108
        })
    );
    assert_eq!(script.requests(), 0);
    assert_eq!(error.usage().requests, 0);
    assert_eq!(
        error.pending().cloned().map(Message::Request),
        Some(request(vec![user(&"x".repeat(400))]))
    );
}

#[tokio::test]
async fn a_processor_sees_the_run_context_of_the_request_it_shapes() {
    let script = script(vec![
        reply(vec![call("echo", "{}", "c1")], 7, 3),
        reply(vec![text("done")], 1, 1),
    ]);
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = std::sync::Arc::clone(&seen);
    let watcher = history::from_fn(
        "watcher",
        move |ctx: &RunContext<()>, messages: Vec<Message>| {
            log.lock()
                .unwrap()
                .push((ctx.turn(), ctx.usage().input_tokens, messages.len()));
            messages
        },
    );
    let agent = Agent::<(), String>::builder(script.model.clone())
        .tool(echo(1))
        .history_processor(watcher)
        .build()
        .unwrap();

    agent.run("Echo", ()).await.unwrap();

    assert_eq!(*seen.lock().unwrap(), [(1, 0, 1), (2, 7, 3)]);
}

/// A processor that works forever on the request of turn 2, or fails it.
fn stalling_at_turn_two(fail: bool) -> impl history::HistoryProcessor<()> {
    history::from_async_fn(
        "stalling",
        move |ctx: RunContext<()>, messages: Vec<Message>| async move {
            if ctx.turn() == 2 {
                if fail {
                    return Err(std::io::Error::other("the store is down"));
                }
                std::future::pending::<()>().await;
            }
            Ok(messages)
        },
    )
}

/// A step dropped while its processor works, or whose processor fails, leaves the run as it
/// was: its usage, and its pending request, which is staged in the history while the
/// processor reads it.
#[tokio::test]
async fn a_step_dropped_or_failed_while_its_processor_works_leaves_the_run_as_it_was() {
    let stalling = |fail| {
        let script = script(vec![
            reply(vec![call("echo", "{}", "c1")], 7, 3),
            reply(vec![text("done")], 1, 1),
        ]);
        Agent::<(), String>::builder(script.model.clone())
            .tool(echo(1))
            .history_processor(stalling_at_turn_two(fail))
            .build()
            .unwrap()
    };
    let stalled = stalling(false);
    let mut run = stalled.start("Echo", ());
    assert!(matches!(run.step().await.unwrap(), Step::Responded));
    assert!(matches!(run.step().await.unwrap(), Step::Handled));
    let usage = run.usage().clone();
    assert_eq!(
        (usage.requests, usage.input_tokens, usage.tool_calls),
        (1, 7, 1)
    );

    let dropped = tokio::time::timeout(std::time::Duration::from_millis(50), run.step()).await;

    assert!(dropped.is_err(), "the processor never finishes");
    assert_eq!(*run.usage(), usage);
    // The request the dropped step was shaping was not sent: it is pending, not history.
    assert_eq!(run.state().messages().len(), 2);
    assert_eq!(
        run.state().pending().cloned().map(Message::Request),
        Some(request(vec![tool_return("echo", "c1", json!("x"))]))
    );

    let failing = stalling(true);
    let mut run = failing.start("Echo", ());
    run.step().await.unwrap();
    run.step().await.unwrap();
    let error = run.step().await.unwrap_err();
    assert_eq!(error.stage(), Stage::Input);
    assert_eq!(*error.usage(), usage);
}

/// What the main model is sent in place of the summarised turns.
fn summary_part(text: &str) -> golem::model::RequestPart {
    user(&format!("A summary of the earlier conversation:\n\n{text}"))
}

fn summarizing_agent(model: &Script, summarizer: &Script) -> Agent<(), String> {
    Agent::<(), String>::builder(model.model.clone())
        .tool(echo(1))
        .summarize_history(Summarize::new(summarizer.model.clone(), 36).keep_last_turns(1))
        .build()
        .expect("a valid agent")
}

/// The summary is a request of the run's: with room for one request only, neither the
/// summary nor the request it is made for is sent.
#[tokio::test]
async fn a_summary_and_its_request_must_both_fit_under_the_request_limit() {
    let summarizer = script(vec![reply(vec![text("They counted to three.")], 50, 10)]);
    let model = script(vec![reply(vec![text("4")], 30, 1)]);
    let agent = summarizing_agent(&model, &summarizer);

    let error = agent
        .start_with_history(three_turns(), "four", ())
        .with_usage_limits(golem::usage::UsageLimits::new().request_limit(1))
        .finish()
        .await
        .unwrap_err();

    assert_eq!(error.stage(), golem::Stage::Limit);
    assert_eq!(
        error.limit(),
        Some(&golem::usage::LimitExceeded::Requests { limit: 1 })
    );
    assert_eq!((summarizer.requests(), model.requests()), (0, 0));
    assert_eq!(error.usage().requests, 0);
    let mut kept = three_turns();
    kept.push(request(vec![user("four")]));
    assert_eq!(error.messages(), &kept[..]);

    // With room for both, both go.
    let result = agent
        .start_with_history(three_turns(), "four", ())
        .with_usage_limits(golem::usage::UsageLimits::new().request_limit(2))
        .finish()
        .await
        .unwrap();
    assert_eq!(result.output, "4");
    assert_eq!(result.usage.requests, 2);
}

#[tokio::test]
async fn older_turns_are_summarised_once_counted_apart_and_journaled() {
    let summarizer = script(vec![reply(vec![text("They counted to three.")], 50, 10)]);
    let model = script(vec![
        reply(vec![call("echo", "{}", "c1")], 20, 2),
        reply(vec![text("4")], 30, 1),
    ]);
    let agent = summarizing_agent(&model, &summarizer);
    let journal = MemoryJournal::new();

    let result = agent
        .start_with_history(three_turns(), "four", ())
        .finish_in(&journal)
        .await
        .unwrap();

    // One summary, of the turns before the last, sent in their place with every request.
    assert_eq!(summarizer.requests(), 1);
    let asked = summarizer.seen.lock().unwrap()[0].clone();
    let Message::Request(asked) = &asked[0] else {
        panic!("a request")
    };
    let golem::model::RequestPart::UserPrompt(asked) = &asked.parts[0] else {
        panic!("a prompt")
    };
    assert!(asked.text().ends_with(
        "The conversation:\nUser: one\nAssistant: 1\nUser: two\nAssistant: 2\nUser: three\nAssistant: 3\n"
    ));
    let opening = request(vec![
        system("You count."),
        summary_part("They counted to three."),
        user("four"),
    ]);
    let seen = model.seen.lock().unwrap().clone();
    assert_eq!(seen[0], std::slice::from_ref(&opening));
    assert_eq!(seen[1][0], opening);
    assert_eq!(seen[1].len(), 3);
    // The history is whole; the summary's cost is in the usage, and shown apart.
    let mut whole = three_turns();
    whole.extend([
        request(vec![user("four")]),
        response(vec![call("echo", "{}", "c1")], 20, 2),
        request(vec![tool_return("echo", "c1", json!("x"))]),
        response(vec![text("4")], 30, 1),
    ]);
    assert_eq!(result.messages, whole);
    assert_eq!(
        (
            result.usage.requests,
            result.usage.input_tokens,
            result.usage.output_tokens
        ),
        (3, 100, 13)
    );
    assert_eq!(result.usage.summaries, cost(1, 50, 10));
    assert_eq!(
        journal.names(),
        ["summary:1", "model:1", "tool:1:c1", "model:2"]
    );

    // A replay takes the summary from the journal: neither model is asked again.
    let replayed = agent
        .start_with_history(three_turns(), "four", ())
        .finish_in(&journal)
        .await
        .unwrap();
    assert_eq!((summarizer.requests(), model.requests()), (1, 2));
    assert_eq!(replayed.messages, result.messages);
    assert_eq!(replayed.usage, result.usage);
}

#[tokio::test]
async fn the_run_state_records_the_summary_and_a_later_run_reuses_what_the_agent_remembers() {
    let summarizer = script(vec![reply(vec![text("They counted to three.")], 50, 10)]);
    let model = script(vec![
        reply(vec![text("4")], 1, 1),
        reply(vec![text("5")], 1, 1),
    ]);
    let agent = summarizing_agent(&model, &summarizer);

    let mut run = agent.start_with_history(three_turns(), "four", ());
    let Step::Responded = run.step().await.unwrap() else {
        panic!("a response")
    };
    let saved = serde_json::to_value(run.state()).unwrap();
    assert_eq!(saved["summary"]["text"], json!("They counted to three."));
    assert_eq!(saved["summary"]["covers"], json!(6));
    let first = run.finish().await.unwrap();

    let second = agent
        .run_with_history(first.messages, "five", ())
        .await
        .unwrap();

    assert_eq!(summarizer.requests(), 1);
    assert_eq!(
        model.seen.lock().unwrap()[1],
        [
            request(vec![
                system("You count."),
                summary_part("They counted to three."),
                user("four"),
            ]),
            response(vec![text("4")], 1, 1),
            request(vec![user("five")]),
        ]
    );
    assert!(second.usage.summaries.is_zero());
}

/// A processor that notes how many times it ran in a system prompt it adds to the request of
/// turn 2, and fails at turn 1 when `fail_first` and it has not run before.
fn noting_store(
    runs: &std::sync::Arc<std::sync::atomic::AtomicUsize>,
    fail_first: bool,
) -> impl history::HistoryProcessor<()> {
    let runs = std::sync::Arc::clone(runs);
    history::from_async_fn(
        "store",
        move |ctx: RunContext<()>, mut messages: Vec<Message>| {
            let before = runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async move {
                if fail_first && before == 0 {
                    return Err(std::io::Error::other("the store is down"));
                }
                if ctx.turn() == 2
                    && let Some(Message::Request(first)) = messages.first_mut()
                {
                    first
                        .parts
                        .insert(0, system(&format!("Notes: {}", before + 1)));
                }
                Ok(messages)
            }
        },
    )
}

/// A processor that may do I/O is a journal step: a replay sends what the first execution
/// sent, without running it again. A history left as it was is recorded as `null`.
#[tokio::test]
async fn what_a_processor_sends_is_journaled_and_a_replay_does_not_run_it_again() {
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let script = script(vec![
        reply(vec![call("echo", "{}", "c1")], 7, 3),
        reply(vec![text("done")], 1, 1),
    ]);
    let agent = Agent::<(), String>::builder(script.model.clone())
        .tool(echo(1))
        .history_processor(KeepLastTurns::new(4))
        .history_processor(noting_store(&runs, false))
        .build()
        .unwrap();
    let journal = MemoryJournal::new();

    let result = agent.start("Echo", ()).finish_in(&journal).await.unwrap();

    let sent = vec![
        request(vec![system("Notes: 2"), user("Echo")]),
        response(vec![call("echo", "{}", "c1")], 7, 3),
        request(vec![tool_return("echo", "c1", json!("x"))]),
    ];
    assert_eq!(script.seen.lock().unwrap()[1], sent);
    assert_eq!(
        journal.names(),
        ["history:1", "model:1", "tool:1:c1", "history:2", "model:2"]
    );
    assert_eq!(journal.result("history:1"), Some(serde_json::Value::Null));
    // What was sent, the history's own messages by their index.
    assert_eq!(
        journal.result("history:2"),
        Some(json!([sent[0], {"kept": 1}, {"kept": 2}]))
    );

    let replayed = agent.start("Echo", ()).finish_in(&journal).await.unwrap();

    assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 2);
    assert_eq!(script.requests(), 2);
    assert_eq!(replayed.messages, result.messages);
    assert_eq!(replayed.usage, result.usage);

    // Processors that are all deterministic (the built-in ones) are no step of their own.
    let script = crate::common::script(vec![reply(vec![text("done")], 1, 1)]);
    let pure = Agent::<(), String>::builder(script.model.clone())
        .history_processor(KeepLastTurns::new(4))
        .history_processor(TrimToolOutputs::new(10))
        .history_processor(FitTokens::new(1_000))
        .build()
        .unwrap();
    let journal = MemoryJournal::new();
    pure.start("Hi", ()).finish_in(&journal).await.unwrap();
    assert_eq!(journal.names(), ["model:1"]);
}

/// A processor's failure is recorded: a replay fails as the first execution did, with the
/// recorded message as the cause, though the processor would now succeed.
#[tokio::test]
async fn a_processors_failure_is_journaled_and_a_replay_fails_alike() {
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let script = script(vec![reply(vec![text("done")], 1, 1)]);
    let agent = Agent::<(), String>::builder(script.model.clone())
        .history_processor(noting_store(&runs, true))
        .build()
        .unwrap();
    let journal = MemoryJournal::new();

    let error = agent.start("Hi", ()).finish_in(&journal).await.unwrap_err();

    assert_eq!(error.stage(), Stage::Input);
    let cause = error.source().expect("a cause");
    assert!(matches!(
        cause.downcast_ref::<HistoryError>(),
        Some(HistoryError::Failed { processor, .. }) if processor == "store"
    ));
    assert_eq!(
        journal.failure("history:1").as_deref(),
        Some("history processor `store` failed: the store is down")
    );

    let replayed = agent.start("Hi", ()).finish_in(&journal).await.unwrap_err();

    assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(script.requests(), 0);
    assert_eq!(replayed.stage(), Stage::Input);
    assert_eq!(
        replayed.source().map(ToString::to_string).as_deref(),
        Some("history processor `store` failed: the store is down")
    );
    assert_eq!(replayed.messages(), error.messages());
    assert_eq!(
        replayed.pending().cloned().map(Message::Request),
        Some(request(vec![user("Hi")]))
    );
}
