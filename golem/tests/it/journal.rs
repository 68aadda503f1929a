//! The engine-neutral journal (DESIGN §7 "Durability"): named steps, replay without I/O,
//! the same counters and usage after a crash.

use crate::common;

use std::error::Error as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use golem::model::function::FunctionModel;
use golem::model::{Message, ModelResponse};
use golem::run::{MemoryJournal, RecordedFailure, StepStopped, Stopped};
use golem::tool::{FunctionTool, Tool};
use golem::{Agent, ModelRetry, RunContext, Stage, Step};
use serde_json::json;

#[golem::args]
struct Amount {
    cents: i64,
}

/// A payment tool with a side effect it counts; it rejects amounts that are not positive.
fn pay(paid: Arc<AtomicUsize>) -> impl Tool<()> {
    FunctionTool::new("pay", move |_ctx: RunContext<()>, amount: Amount| {
        let paid = Arc::clone(&paid);
        async move {
            if amount.cents <= 0 {
                return Err(ModelRetry::new("cents must be positive"));
            }
            paid.fetch_add(1, Ordering::SeqCst);
            Ok(format!("paid {}", amount.cents))
        }
    })
}

/// A model that answers from the history's length and counts its requests.
fn model(requests: Arc<AtomicUsize>) -> FunctionModel {
    FunctionModel::new(move |messages: &[Message], _| {
        requests.fetch_add(1, Ordering::SeqCst);
        match messages.len() {
            1 => ModelResponse::tool_call("pay", r#"{"cents": -5}"#, "c1").with_usage(10, 2),
            3 => ModelResponse::tool_call("pay", r#"{"cents": 500}"#, "c2").with_usage(20, 2),
            _ => ModelResponse::text("Paid 5.00.").with_usage(30, 3),
        }
    })
}

fn agent(requests: &Arc<AtomicUsize>, paid: &Arc<AtomicUsize>) -> Agent<(), String> {
    Agent::<(), String>::builder(model(Arc::clone(requests)))
        .tool(pay(Arc::clone(paid)))
        .tool_retries(1)
        .build()
        .expect("a valid agent")
}

#[tokio::test]
async fn steps_are_named_model_turn_and_tool_turn_call_id() {
    let (requests, paid) = (Arc::default(), Arc::default());
    let journal = MemoryJournal::new();

    agent(&requests, &paid)
        .start("Pay Bob", ())
        .finish_in(&journal)
        .await
        .unwrap();

    // The names are a compatibility promise: a journal is replayed by later versions.
    assert_eq!(
        journal.names(),
        ["model:1", "tool:1:c1", "model:2", "tool:2:c2", "model:3"]
    );
    assert_eq!(
        journal.result("tool:1:c1"),
        Some(json!({"rejected": "cents must be positive"}))
    );
    assert_eq!(
        journal.result("tool:2:c2"),
        Some(json!({"returned": "paid 500"}))
    );
    assert_eq!(
        journal.result("model:3").unwrap()["parts"][0]["content"],
        "Paid 5.00."
    );
    assert_eq!(journal.replayed(), 0);
}

#[tokio::test]
async fn a_run_replayed_after_a_crash_repeats_no_request_and_no_side_effect() {
    // The uninterrupted run, for comparison.
    let (requests, paid) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let expected = agent(&requests, &paid).run("Pay Bob", ()).await.unwrap();
    assert_eq!(
        (requests.load(Ordering::SeqCst), paid.load(Ordering::SeqCst)),
        (3, 1)
    );

    // A process runs the agent until the payment was made, then dies.
    let (requests, paid) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let journal = MemoryJournal::new();
    let mut run = agent(&requests, &paid).start("Pay Bob", ());
    for _ in 0..4 {
        run.step_in(&journal).await.unwrap();
    }
    assert_eq!(paid.load(Ordering::SeqCst), 1);
    drop(run);

    // The engine runs the handler again from the start, with the journal so far.
    let result = agent(&requests, &paid)
        .start("Pay Bob", ())
        .finish_in(&journal)
        .await
        .unwrap();

    assert_eq!(result.output, expected.output);
    assert_eq!(result.messages, expected.messages);
    assert_eq!(result.usage, expected.usage);
    assert_eq!(
        requests.load(Ordering::SeqCst),
        3,
        "each request was made once"
    );
    assert_eq!(paid.load(Ordering::SeqCst), 1, "the payment was made once");
    assert_eq!(journal.replayed(), 4);
    assert_eq!(result.usage.rejected.tools["pay"].requests, 1);
}

#[tokio::test]
async fn a_replay_needs_neither_the_model_nor_the_tools() {
    let (requests, paid) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let journal = MemoryJournal::new();
    let first = agent(&requests, &paid)
        .start("Pay Bob", ())
        .finish_in(&journal)
        .await
        .unwrap();

    let unreachable = FunctionModel::new(|_: &[Message], _| -> ModelResponse {
        panic!("a replay sends no request")
    });
    let replayed = Agent::<(), String>::builder(unreachable)
        .tool(pay(Arc::new(AtomicUsize::new(0))))
        .tool_retries(1)
        .build()
        .unwrap()
        .start("Pay Bob", ())
        .finish_in(&journal)
        .await
        .unwrap();

    assert_eq!(replayed.messages, first.messages);
    assert_eq!(replayed.usage, first.usage);
    assert_eq!(journal.replayed(), 5);
}

#[tokio::test]
async fn a_recorded_failure_fails_the_replay_the_same_way() {
    let broken = || {
        FunctionTool::new("pay", |_ctx: RunContext<()>, _amount: Amount| async {
            Err::<String, _>(std::io::Error::other("card declined"))
        })
    };
    let script = script(vec![reply(
        vec![call("pay", r#"{"cents": 5}"#, "c1")],
        1,
        1,
    )]);
    let journal = MemoryJournal::new();
    let first = Agent::<(), String>::builder(script.model.clone())
        .tool(broken())
        .build()
        .unwrap()
        .start("Pay", ())
        .finish_in(&journal)
        .await
        .unwrap_err();
    assert!(
        first
            .source()
            .unwrap()
            .downcast_ref::<std::io::Error>()
            .is_some()
    );
    assert_eq!(
        journal.result("tool:1:c1"),
        Some(json!({"failed": "card declined"}))
    );

    let replay = Agent::<(), String>::builder(script.model.clone())
        .tool(broken())
        .build()
        .unwrap()
        .start("Pay", ())
        .finish_in(&journal)
        .await
        .unwrap_err();

    assert_eq!(replay.stage(), Stage::Tool);
    assert_eq!(replay.tool_name(), Some("pay"));
    let cause = replay
        .source()
        .unwrap()
        .downcast_ref::<RecordedFailure>()
        .unwrap();
    assert_eq!(cause.message, "card declined");
    assert_eq!(replay.messages(), first.messages());
    assert_eq!(script.requests(), 1, "the replay sent nothing");
}

#[tokio::test]
async fn under_a_journal_the_calls_of_one_response_run_one_at_a_time_in_call_order() {
    let order = Arc::new(Mutex::new(Vec::new()));
    let tool = |name: &'static str, delay: u64| {
        let order = Arc::clone(&order);
        FunctionTool::new(name, move |_ctx: RunContext<()>, (): ()| {
            let order = Arc::clone(&order);
            async move {
                order.lock().unwrap().push(format!("{name} starts"));
                tokio::time::sleep(Duration::from_millis(delay)).await;
                order.lock().unwrap().push(format!("{name} ends"));
                Ok::<_, ModelRetry>(name)
            }
        })
    };
    let script = script(vec![
        reply(
            vec![call("slow", "{}", "c1"), call("fast", "{}", "c2")],
            1,
            1,
        ),
        reply(vec![text("done")], 1, 1),
    ]);
    let agent = Agent::<(), String>::builder(script.model.clone())
        .tool(tool("slow", 30))
        .tool(tool("fast", 0))
        .build()
        .unwrap();
    let journal = MemoryJournal::new();

    let mut run = agent.start("Go", ());
    assert!(matches!(
        run.step_in(&journal).await.unwrap(),
        Step::Responded
    ));
    assert!(matches!(
        run.step_in(&journal).await.unwrap(),
        Step::Handled
    ));

    assert_eq!(
        *order.lock().unwrap(),
        ["slow starts", "slow ends", "fast starts", "fast ends"]
    );
    assert_eq!(journal.names(), ["model:1", "tool:1:c1", "tool:1:c2"]);

    // Without a journal they run at once.
    order.lock().unwrap().clear();
    let again = script_with_two_calls();
    Agent::<(), String>::builder(again.model.clone())
        .tool(tool("slow", 30))
        .tool(tool("fast", 0))
        .build()
        .unwrap()
        .run("Go", ())
        .await
        .unwrap();
    assert_eq!(order.lock().unwrap()[..2], ["slow starts", "fast starts"]);
}

/// Calls made one at a time: a stop during the first leaves the second never started. It
/// is answered as not run, and not counted as made.
#[tokio::test]
async fn a_stop_during_the_first_of_calls_run_one_at_a_time_leaves_the_others_not_run() {
    let never = FunctionTool::new("never", |_ctx: RunContext<()>, (): ()| async move {
        std::future::pending::<()>().await;
        Ok::<_, ModelRetry>("never")
    });
    let fast = FunctionTool::new("fast", |_ctx: RunContext<()>, (): ()| async move {
        Ok::<_, ModelRetry>("fast")
    });
    let script = script(vec![reply(
        vec![call("never", "{}", "c1"), call("fast", "{}", "c2")],
        1,
        1,
    )]);
    let agent = Agent::<(), String>::builder(script.model.clone())
        .tool(never)
        .tool(fast)
        .build()
        .unwrap();
    let journal = MemoryJournal::new();
    let token = golem::run::CancellationToken::new();
    let mut run = agent.start("Go", ()).with_cancellation(token.clone());
    assert!(matches!(
        run.step_in(&journal).await.unwrap(),
        Step::Responded
    ));
    let cancel = async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        token.cancel();
    };
    let (_, handled) = futures_util::join!(cancel, run.step_in(&journal));
    let error = handled.expect_err("the run stopped");
    assert!(error.is_stopped());
    assert_eq!(error.usage().tool_calls, 1);
    assert_eq!(
        error.messages()[2],
        request(vec![
            tool_return(
                "never",
                "c1",
                json!("Not finished: the run was stopped during this call.")
            ),
            tool_return(
                "fast",
                "c2",
                json!("Not run: the run stopped before this call.")
            ),
        ])
    );
}

fn script_with_two_calls() -> Script {
    script(vec![
        reply(
            vec![call("slow", "{}", "c1"), call("fast", "{}", "c2")],
            1,
            1,
        ),
        reply(vec![text("done")], 1, 1),
    ])
}

#[tokio::test]
async fn output_validation_is_a_step_whose_recorded_rejection_a_replay_does_not_repeat() {
    let checks = Arc::new(AtomicUsize::new(0));
    let agent_with = |checks: &Arc<AtomicUsize>| {
        let checks = Arc::clone(checks);
        let model = FunctionModel::new(|messages: &[Message], _| {
            ModelResponse::text(if messages.len() < 3 { "maybe" } else { "yes" })
        });
        Agent::<(), String>::builder(model)
            .output_retries(1)
            .output_validator(move |_ctx, answer: String| {
                checks.fetch_add(1, Ordering::SeqCst);
                async move {
                    if answer == "maybe" {
                        return Err(ModelRetry::new("answer yes or no"));
                    }
                    Ok(answer)
                }
            })
            .build()
            .expect("a valid agent")
    };
    let journal = MemoryJournal::new();

    let first = agent_with(&checks)
        .start("Is water wet?", ())
        .finish_in(&journal)
        .await
        .unwrap();
    assert_eq!(
        journal.names(),
        ["model:1", "output:1", "model:2", "output:2"]
    );
    assert_eq!(
        journal.result("output:1"),
        Some(json!({"rejected": "answer yes or no"}))
    );
    assert_eq!(journal.result("output:2"), Some(json!("accepted")));
    assert_eq!(checks.load(Ordering::SeqCst), 2);

    let replayed = agent_with(&checks)
        .start("Is water wet?", ())
        .finish_in(&journal)
        .await
        .unwrap();

    assert_eq!(replayed.output, "yes");
    assert_eq!(replayed.messages, first.messages);
    assert_eq!(replayed.usage, first.usage);
    // The recorded rejection stood in for the validator; the acceptance ran it again to
    // rebuild the output.
    assert_eq!(checks.load(Ordering::SeqCst), 3);
}

/// A validator that refuses on replay what it accepted when the run was recorded (it reads
/// something that changed since): the replay fails at decode, typed, instead of asking the
/// model again as if the answer had been rejected.
#[tokio::test]
async fn an_accepted_answer_that_its_validator_refuses_on_replay_fails_the_replay_typed() {
    let checks = Arc::new(AtomicUsize::new(0));
    let requests = Arc::new(AtomicUsize::new(0));
    let agent = {
        let (checks, requests) = (Arc::clone(&checks), Arc::clone(&requests));
        let model = FunctionModel::new(move |_: &[Message], _| {
            requests.fetch_add(1, Ordering::SeqCst);
            ModelResponse::text("table 4")
        });
        Agent::<(), String>::builder(model)
            .output_retries(3)
            .output_validator(move |_ctx, answer: String| {
                let check = checks.fetch_add(1, Ordering::SeqCst);
                async move {
                    if check > 0 {
                        return Err(ModelRetry::new("table 4 is taken"));
                    }
                    Ok(answer)
                }
            })
            .build()
            .expect("a valid agent")
    };
    let journal = MemoryJournal::new();
    let first = agent.start("Book a table", ()).finish_in(&journal).await;
    assert_eq!(first.unwrap().output, "table 4");

    let error = agent
        .start("Book a table", ())
        .finish_in(&journal)
        .await
        .unwrap_err();

    assert_eq!(error.stage(), Stage::Decode);
    assert_eq!(
        error
            .source()
            .and_then(|cause| cause.downcast_ref::<golem::run::ReplayDiverged>()),
        Some(&golem::run::ReplayDiverged::new(
            "output:1",
            "table 4 is taken"
        ))
    );
    assert!(error.model_retry().is_none());
    assert_eq!(requests.load(Ordering::SeqCst), 1);
    assert_eq!(journal.names(), ["model:1", "output:1"]);
    assert_eq!(error.usage().requests, 1);
}

/// A journal that runs every step, then refuses to record the one named `refused` (as an
/// engine refuses a result over its size limit).
struct Refusing {
    refused: &'static str,
}

impl golem::run::Journal for Refusing {
    async fn step(
        &self,
        name: String,
        step: golem::run::JournalStep,
    ) -> Result<serde_json::Value, golem::BoxError> {
        let value = step.await?;
        if name == self.refused {
            return Err(Box::new(RecordedFailure {
                message: format!("`{name}` was not recorded"),
            }));
        }
        Ok(value)
    }
}

#[tokio::test]
async fn a_step_the_journal_does_not_record_fails_the_run_as_a_replay_would() {
    let (requests, paid) = (Arc::default(), Arc::default());
    let error = agent(&requests, &paid)
        .start("Pay Bob", ())
        .finish_in(&Refusing {
            refused: "tool:2:c2",
        })
        .await
        .unwrap_err();

    // The call ran, but what it returned was not recorded: the run does not go on with it.
    assert_eq!(paid.load(Ordering::SeqCst), 1);
    assert_eq!(error.stage(), Stage::Tool);
    assert_eq!(error.tool_name(), Some("pay"));
    let cause = error
        .source()
        .unwrap()
        .downcast_ref::<RecordedFailure>()
        .unwrap();
    assert_eq!(cause.message, "`tool:2:c2` was not recorded");
    assert_eq!(requests.load(Ordering::SeqCst), 2, "no request after it");

    // The same for an output validation the journal does not record.
    let validated =
        Agent::<(), String>::builder(FunctionModel::new(|_, _| ModelResponse::text("Paid.")))
            .output_validator(|_ctx, text: String| async move { Ok::<_, ModelRetry>(text) })
            .build()
            .unwrap();
    let error = validated
        .start("Pay", ())
        .finish_in(&Refusing {
            refused: "output:1",
        })
        .await
        .unwrap_err();
    assert_eq!(error.stage(), Stage::Decode);
    assert_eq!(
        error.source().unwrap().to_string(),
        "`output:1` was not recorded"
    );
}

#[tokio::test]
async fn a_deadline_the_journal_cannot_record_fails_the_run_before_its_first_request() {
    let requests = Arc::new(AtomicUsize::new(0));
    let error = Agent::<(), String>::builder(model(Arc::clone(&requests)))
        .run_timeout(Duration::from_secs(60))
        .build()
        .unwrap()
        .start("Pay", ())
        .finish_in(&Refusing {
            refused: "deadline",
        })
        .await
        .unwrap_err();

    assert_eq!(error.stage(), Stage::Input);
    assert_eq!(
        error.source().unwrap().to_string(),
        "`deadline` was not recorded"
    );
    assert_eq!(requests.load(Ordering::SeqCst), 0);
    assert!(error.messages().is_empty(), "nothing was sent");
}

/// A journal whose engine cannot keep a deadline (as Temporal's workflows cannot use tokio
/// timers): it records every step, and says so.
pub(crate) struct NoDeadlines {
    pub(crate) steps: Mutex<Vec<String>>,
}

impl golem::run::Journal for NoDeadlines {
    fn deadline_refusal(&self) -> Option<golem::BoxError> {
        Some("this engine keeps no deadline".into())
    }

    async fn step(
        &self,
        name: String,
        step: golem::run::JournalStep,
    ) -> Result<serde_json::Value, golem::BoxError> {
        self.steps.lock().expect("not poisoned").push(name);
        step.await
    }
}

#[tokio::test]
async fn a_journal_that_keeps_no_deadline_refuses_a_run_timeout_before_any_step() {
    let requests = Arc::new(AtomicUsize::new(0));
    let journal = NoDeadlines {
        steps: Mutex::default(),
    };
    let timed = Agent::<(), String>::builder(model(Arc::clone(&requests)))
        .run_timeout(Duration::from_secs(60))
        .build()
        .unwrap();

    let error = timed
        .start("Pay", ())
        .finish_in(&journal)
        .await
        .unwrap_err();

    assert_eq!(error.stage(), Stage::Input);
    assert_eq!(
        error.source().unwrap().to_string(),
        "this engine keeps no deadline"
    );
    assert_eq!(requests.load(Ordering::SeqCst), 0);
    assert!(journal.steps.lock().unwrap().is_empty(), "no step was made");

    // Without a timeout, the same journal runs the run.
    let untimed =
        Agent::<(), String>::builder(FunctionModel::new(|_, _| ModelResponse::text("Paid.")))
            .build()
            .unwrap();
    let result = untimed.start("Pay", ()).finish_in(&journal).await.unwrap();
    assert_eq!(result.output, "Paid.");
    assert_eq!(*journal.steps.lock().unwrap(), ["model:1"]);
}

/// A model whose provider counts tokens: `tokens` for every request, each count counted.
struct Counting {
    model: FunctionModel,
    tokens: Arc<Mutex<u64>>,
    counts: Arc<AtomicUsize>,
}

impl golem::model::Model for Counting {
    fn request<'a>(
        &'a self,
        messages: &'a [Message],
        params: &'a golem::model::RequestParams,
    ) -> futures_util::future::BoxFuture<'a, Result<ModelResponse, golem::model::ModelError>> {
        self.model.request(messages, params)
    }

    fn count_tokens<'a>(
        &'a self,
        _messages: &'a [Message],
        _params: &'a golem::model::RequestParams,
    ) -> futures_util::future::BoxFuture<'a, Result<Option<u64>, golem::model::ModelError>> {
        self.counts.fetch_add(1, Ordering::SeqCst);
        let tokens = *self
            .tokens
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        Box::pin(async move { Ok(Some(tokens)) })
    }

    fn name(&self) -> &str {
        "counting"
    }

    fn system(&self) -> &str {
        "function"
    }
}

/// The provider's count of a request's tokens decides whether it goes: a step, so a replay
/// takes the count from the journal, and decides alike even if the provider now counts
/// otherwise.
#[tokio::test]
async fn a_token_count_is_a_step_and_a_replay_does_not_count_again() {
    let tokens = Arc::new(Mutex::new(100));
    let counts = Arc::new(AtomicUsize::new(0));
    let model = Counting {
        model: FunctionModel::new(|_, _| ModelResponse::text("hi").with_usage(100, 1)),
        tokens: Arc::clone(&tokens),
        counts: Arc::clone(&counts),
    };
    let agent = Agent::<(), String>::builder(model)
        .usage_limits(
            golem::usage::UsageLimits::new()
                .request_tokens_limit(500)
                .count_request_tokens(true),
        )
        .build()
        .unwrap();
    let journal = MemoryJournal::new();
    let first = agent.start("Hi", ()).finish_in(&journal).await.unwrap();
    assert_eq!(journal.names(), ["count:1", "model:1"]);
    assert_eq!(counts.load(Ordering::SeqCst), 1);

    // The provider would now count over the limit; the replay keeps the recorded count.
    *tokens.lock().unwrap() = 1_000;
    let replayed = agent.start("Hi", ()).finish_in(&journal).await.unwrap();
    assert_eq!(counts.load(Ordering::SeqCst), 1);
    assert_eq!(replayed.messages, first.messages);
    assert_eq!(replayed.usage, first.usage);
}

/// Instructions made by a function may read something that changes, and the estimate of a
/// request's tokens counts them: under a request-token limit the estimate is a step too, so
/// a replay whose instructions grew decides as the first execution did.
#[tokio::test]
async fn instructions_from_a_function_are_counted_in_a_step_under_a_token_limit() {
    let calls = Arc::new(AtomicUsize::new(0));
    let agent = {
        let calls = Arc::clone(&calls);
        Agent::<(), String>::builder(FunctionModel::new(|_, _| ModelResponse::text("hi")))
            .instructions_fn_async(move |_ctx: RunContext<()>| {
                let call = calls.fetch_add(1, Ordering::SeqCst);
                // Short the first time, far over the limit after.
                async move { "Be brief. ".repeat(if call == 0 { 1 } else { 1_000 }) }
            })
            .usage_limits(golem::usage::UsageLimits::new().request_tokens_limit(500))
            .build()
            .unwrap()
    };
    let journal = MemoryJournal::new();
    let first = agent.start("Hi", ()).finish_in(&journal).await.unwrap();
    assert_eq!(journal.names(), ["count:1", "model:1"]);
    let counted = journal.result("count:1").and_then(|count| count.as_u64());
    assert!(counted.is_some_and(|tokens| tokens < 500), "{counted:?}");

    let replayed = agent.start("Hi", ()).finish_in(&journal).await.unwrap();

    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(replayed.messages, first.messages);
    assert_eq!(replayed.usage, first.usage);
}

/// A run whose deadline passes while it is down (a crash, or an engine that suspended it)
/// replays its recorded steps as they were, the clock unread, and stops at the first step
/// it would make now: the steps a replay answers from the journal are never stopped, so the
/// replay follows the journal, and the stop is where a step would run.
#[tokio::test]
async fn a_replay_after_the_deadline_follows_the_journal_and_stops_at_the_first_new_step() {
    let (requests, paid) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let build = || {
        Agent::<(), String>::builder(model(Arc::clone(&requests)))
            .tool(pay(Arc::clone(&paid)))
            .tool_retries(1)
            .run_timeout(Duration::from_millis(300))
            .build()
            .unwrap()
    };
    let journal = MemoryJournal::new();
    let mut run = build().start("Pay Bob", ());
    for _ in 0..2 {
        run.step_in(&journal).await.unwrap();
    }
    drop(run);
    let recorded = journal.names();
    assert_eq!(recorded, ["deadline", "model:1", "tool:1:c1"]);
    let made = (requests.load(Ordering::SeqCst), paid.load(Ordering::SeqCst));

    // Back after the deadline.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let error = build()
        .start("Pay Bob", ())
        .finish_in(&journal)
        .await
        .unwrap_err();

    assert_eq!(
        error.stopped(),
        Some(&golem::run::Stopped::TimedOut {
            timeout: Duration::from_millis(300)
        })
    );
    // The recorded steps replayed; nothing was made again, and nothing new was made.
    assert_eq!(journal.replayed(), 3);
    assert_eq!(
        (requests.load(Ordering::SeqCst), paid.load(Ordering::SeqCst)),
        made
    );
    assert_eq!(error.messages().len(), 3);
    assert_eq!(error.usage().requests, 1);
    // The step the deadline stopped is recorded as it stopped, before it began.
    assert_eq!(journal.names()[..3], recorded);
    assert_eq!(journal.names()[3], "model:2");
    assert_eq!(
        journal.failure("model:2").as_deref(),
        Some("the run's timeout of 300 ms had passed when this step was to begin")
    );

    // A later replay reads that record: the same stop, the same messages and usage.
    let again = build()
        .start("Pay Bob", ())
        .finish_in(&journal)
        .await
        .unwrap_err();
    assert_eq!(again.stopped(), error.stopped());
    assert_eq!(again.messages(), error.messages());
    assert_eq!(again.usage(), error.usage());
    assert_eq!(journal.replayed(), 3 + 4);
}

/// A journal that runs every step but `stopped`, which the engine stops, after the step began
/// or before (as a cancelled Temporal workflow stops its step in flight).
struct Stopping {
    stopped: &'static str,
    began: bool,
}

impl golem::run::Journal for Stopping {
    async fn step(
        &self,
        name: String,
        step: golem::run::JournalStep,
    ) -> Result<serde_json::Value, golem::BoxError> {
        if name == self.stopped {
            return Err(Box::new(StepStopped::new(Stopped::Cancelled, self.began)));
        }
        step.await
    }
}

#[tokio::test]
async fn a_step_the_engine_stops_stops_the_run_as_its_cancellation_would() {
    // The engine stops the second call while it runs.
    let (requests, paid) = (Arc::default(), Arc::default());
    let error = agent(&requests, &paid)
        .start("Pay Bob", ())
        .finish_in(&Stopping {
            stopped: "tool:2:c2",
            began: true,
        })
        .await
        .unwrap_err();
    assert_eq!(error.stage(), Stage::Stopped);
    assert_eq!(error.stopped(), Some(&Stopped::Cancelled));
    assert_eq!(paid.load(Ordering::SeqCst), 0);
    assert_eq!(error.messages().len(), 5);
    assert_eq!(
        error.messages().last(),
        Some(&request(vec![tool_return(
            "pay",
            "c2",
            json!("Not finished: the run was stopped during this call.")
        )]))
    );
    assert_eq!(error.usage().requests, 2);
    assert_eq!(error.usage().rejected.tools["pay"], cost(1, 10, 2));
    assert_eq!(error.usage().tool_calls, 2);

    // The engine stops the second call before its step began: it was not made.
    let (requests, paid) = (Arc::default(), Arc::default());
    let error = agent(&requests, &paid)
        .start("Pay Bob", ())
        .finish_in(&Stopping {
            stopped: "tool:2:c2",
            began: false,
        })
        .await
        .unwrap_err();
    assert_eq!(error.stopped(), Some(&Stopped::Cancelled));
    assert_eq!(
        error.messages().last(),
        Some(&request(vec![tool_return(
            "pay",
            "c2",
            json!("Not run: the run stopped before this call.")
        )]))
    );
    assert!(error.interrupted().is_empty());
    assert_eq!(error.usage().tool_calls, 1);

    // The engine stops a model request, before it was sent or after.
    for (began, requests_counted) in [(false, 1), (true, 2)] {
        let (requests, paid) = (Arc::default(), Arc::default());
        let error = agent(&requests, &paid)
            .start("Pay Bob", ())
            .finish_in(&Stopping {
                stopped: "model:2",
                began,
            })
            .await
            .unwrap_err();
        assert_eq!(error.stopped(), Some(&Stopped::Cancelled));
        assert_eq!(requests.load(Ordering::SeqCst), 1);
        assert_eq!(error.messages().len(), 3, "began: {began}");
        assert_eq!(error.usage().requests, requests_counted, "began: {began}");
    }
}
