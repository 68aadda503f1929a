//! The engine-neutral journal: each model request and each tool call of a run is a named
//! step whose result a durable engine records, so a replayed run returns the recorded result
//! instead of doing the I/O again.

use std::collections::HashMap;
use std::error::Error as StdError;
use std::fmt::{self, Write as _};
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::future::BoxFuture;
use serde_json::Value;

use super::stop::{StepStopped, StopSignals, step_stop};
use crate::error::BoxError;
use crate::model::ModelError;
use crate::toolset::ToolsetError;

/// One step of a run, ready to execute: owned, so an engine can run it wherever it runs
/// steps, and resolving to the JSON the journal records.
pub type JournalStep = BoxFuture<'static, Result<Value, BoxError>>;

/// Executes a run's steps and records their results.
///
/// The run names each step, and the names are a compatibility promise — a journal written by
/// one golem 0.x is replayed by every later 0.x, but for a step added later for what an agent
/// already did (`count:{turn}` and `history:{turn}`, a hand-off's `output:{turn}/…`): a
/// journal written before it, of an agent that makes it now, does not replay on an engine
/// that matches steps by position. The steps:
///
/// - `model:{turn}`: the model request of that turn (from 1); its result is the
///   [`ModelResponse`](crate::model::ModelResponse), usage included.
/// - `tool:{turn}:{call_id}`: one tool call; its result is how the call ended: returned a
///   value, rejected with feedback for the model, or failed.
/// - `tool:{turn}:{call_id}/…`: the steps of a call that is itself a run — an
///   [agent as a tool](crate::Agent::as_tool) — named as that run names them, under the
///   call's name (`tool:3:c7/model:1`, `tool:3:c7/tool:1:c1`, deeper for a grandchild). Such
///   a call runs outside a step (an engine cannot nest steps), its own steps recorded as they
///   end, and `tool:{turn}:{call_id}` records how it ended once it has; a replay runs the
///   child again from its recorded steps.
/// - `tools:{turn}`: the listing of the run's toolsets, before the request of turn
///   `turn + 1` (`tools:0` at the start); its result is each listed tool's definition,
///   budget and approval setting. A replay uses the recorded list, and lists a tool's
///   toolset again only when a call of that tool that was not recorded must run. A listing that fails is
///   the step's error, which an engine may retry.
/// - `output:{turn}`: the validation of the answer in the response of that turn, when the
///   answer runs code (an output function, output validators: they may do I/O); its result
///   is the verdict: accepted, rejected with feedback, or failed. A replay takes a rejection
///   or failure from the journal; a recorded acceptance runs the validators again to
///   rebuild the value.
/// - `output:{turn}/…`: the steps of a [hand-off](crate::Agent::hand_off)'s agent, named as
///   that run names them, under the answer's name; the answer's verdict follows them once
///   the agent has ended, and a replay runs the agent again from its recorded steps.
/// - `summary:{turn}`: the request for a summary of older turns, before the request of that
///   turn, when the agent summarises its history
///   ([`Summarize`](crate::history::Summarize)); its result is the summary model's
///   [`ModelResponse`](crate::model::ModelResponse).
/// - `count:{turn}`: the input tokens of the request of that turn, as the run's limit on them
///   ([`UsageLimits::request_tokens_limit`](crate::usage::UsageLimits::request_tokens_limit))
///   was checked, when the provider counts them
///   ([`UsageLimits::count_request_tokens`](crate::usage::UsageLimits::count_request_tokens))
///   or the agent has instruction functions; its result is the provider's count, else
///   golem's estimate (`null`, from an earlier golem, when the provider gave none).
/// - `history:{turn}`: what the history processors send in the request of that turn, when
///   one of the agent's processors is not
///   [deterministic](crate::history::HistoryProcessor::deterministic); its result is the
///   messages sent, each message of the history sent unchanged as its index (`{"kept": 3}`),
///   or `null` when they are the history unchanged. A processor's failure is the step's.
/// - `deadline`: when the run must have finished, recorded at its first step when it has a
///   timeout, so a replay keeps the deadline of the first execution.
///
/// Rejections, their budget charges and the usage are derived from these results, so a
/// replayed run has the same history, counters and usage as one that never stopped. What a
/// journal records for a step must be returned, unchanged, for the same name on replay.
///
/// [`Direct`] runs every step where it stands (no journal; what `step()` and `run()` use);
/// [`MemoryJournal`] records in memory, for tests; an engine integration (Restate) records
/// in the engine.
pub trait Journal: Sync {
    /// Whether the run goes through this journal at all. `false` only for [`Direct`]: the run
    /// then does its I/O in place and builds no step.
    fn records(&self) -> bool {
        true
    }

    /// Whether several tool calls of one response may run at once. A journal whose engine
    /// needs its steps one at a time (Restate) says `false`, and the calls run in call order.
    fn concurrent(&self) -> bool {
        false
    }

    /// Why a run with a timeout cannot run under this journal, or `None` (the default) when
    /// it can: its deadline is then recorded as the step `deadline`, and the run races it
    /// with a tokio timer. An engine whose code may not use tokio timers (Temporal's
    /// workflows) returns the error such a run fails with, at
    /// [`Stage::Input`](crate::Stage::Input).
    ///
    /// Asked once per run with a timeout, at its first step, when the journal
    /// [records](Self::records); an agent called as a tool asks its caller's journal
    /// (through [`NestedJournal`]).
    fn deadline_refusal(&self) -> Option<BoxError> {
        None
    }

    /// Executes `step` as the step `name` and records its result, or returns the result
    /// recorded for `name` without executing it.
    ///
    /// # Errors
    /// The step's own error (a failed model request: a [`ModelError`](crate::model::ModelError)),
    /// or the engine's.
    fn step(
        &self,
        name: String,
        step: JournalStep,
    ) -> impl Future<Output = Result<Value, BoxError>> + Send;
}

/// A journal behind a reference, for what cannot be generic over it: a tool whose call is
/// a run of its own.
pub(crate) trait DynJournal: Sync {
    fn records(&self) -> bool;

    fn deadline_refusal(&self) -> Option<BoxError>;

    fn step_boxed(&self, name: String, step: JournalStep)
    -> BoxFuture<'_, Result<Value, BoxError>>;
}

impl<J: Journal> DynJournal for J {
    fn records(&self) -> bool {
        Journal::records(self)
    }

    fn deadline_refusal(&self) -> Option<BoxError> {
        Journal::deadline_refusal(self)
    }

    fn step_boxed(
        &self,
        name: String,
        step: JournalStep,
    ) -> BoxFuture<'_, Result<Value, BoxError>> {
        Box::pin(Journal::step(self, name, step))
    }
}

/// The journal of a run that is a tool call of a journaled run (an
/// [agent as a tool](crate::Agent::as_tool)): its steps are the parent journal's, named
/// under the call's step (`tool:3:c7/model:1`).
///
/// golem hands it to [`Tool::call_in`](crate::tool::Tool::call_in); a tool that runs an agent
/// finishes that agent's run in it ([`AgentRun::finish_in`](crate::AgentRun::finish_in)).
pub struct NestedJournal<'a> {
    parent: &'a dyn DynJournal,
    prefix: String,
    /// The parent run's signals: its deadline stops the run's steps as they run, as it
    /// stops the parent's own.
    stop: StopSignals,
}

impl<'a> NestedJournal<'a> {
    pub(crate) fn new(parent: &'a dyn DynJournal, prefix: String, stop: StopSignals) -> Self {
        NestedJournal {
            parent,
            prefix,
            stop,
        }
    }

    /// The name of the call's step, which prefixes the names of the run's steps.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }
}

impl fmt::Debug for NestedJournal<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NestedJournal")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl Journal for NestedJournal<'_> {
    fn records(&self) -> bool {
        self.parent.records()
    }

    fn deadline_refusal(&self) -> Option<BoxError> {
        self.parent.deadline_refusal()
    }

    fn step(
        &self,
        name: String,
        step: JournalStep,
    ) -> impl Future<Output = Result<Value, BoxError>> + Send {
        self.parent
            .step_boxed(format!("{}/{name}", self.prefix), self.stop.guard(step))
    }
}

/// No journal: every step runs where it stands. What [`AgentRun::step`](crate::AgentRun::step)
/// and [`Agent::run`](crate::Agent::run) use.
#[derive(Debug, Clone, Copy, Default)]
pub struct Direct;

impl Journal for Direct {
    fn records(&self) -> bool {
        false
    }

    fn concurrent(&self) -> bool {
        true
    }

    fn step(
        &self,
        _name: String,
        step: JournalStep,
    ) -> impl Future<Output = Result<Value, BoxError>> + Send {
        step
    }
}

/// A journal in memory: records each step's result by name and returns it on replay. For
/// tests of durable runs, and to see what a durable engine would record.
///
/// A step that fails is recorded as the engines record it: a failure that may pass when the
/// step runs again ([`is_transient_failure`]) is not recorded, so the step runs again on
/// replay, as an engine would retry it; any other failure is, and a replay gets it back as a
/// [`RecordedFailure`] with its message (a stop by the run's deadline, as that stop). Like an
/// engine's, a replay through it always ends where the recorded failure ended the run: to go
/// on from a failed run, resume its state ([`RunError::into_state`](crate::RunError::into_state))
/// with a new journal.
///
/// ```
/// use golem::model::function::FunctionModel;
/// use golem::model::ModelResponse;
/// use golem::run::MemoryJournal;
/// use golem::Agent;
///
/// let model = FunctionModel::new(|_, _| ModelResponse::text("Hello!"));
/// let agent = Agent::<(), String>::builder(model).build()?;
/// let journal = MemoryJournal::new();
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let result = agent.start("Hi", ()).finish_in(&journal).await?;
/// assert_eq!(result.output, "Hello!");
/// assert_eq!(journal.names(), ["model:1"]);
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Default)]
pub struct MemoryJournal {
    entries: Arc<Mutex<Entries>>,
}

#[derive(Default)]
struct Entries {
    order: Vec<String>,
    results: HashMap<String, Value>,
    failures: HashMap<String, String>,
    replayed: usize,
}

impl MemoryJournal {
    /// An empty journal.
    pub fn new() -> Self {
        MemoryJournal::default()
    }

    /// The names of the recorded steps, in the order they were recorded.
    pub fn names(&self) -> Vec<String> {
        self.lock().order.clone()
    }

    /// The result recorded for `name`.
    pub fn result(&self, name: &str) -> Option<Value> {
        self.lock().results.get(name).cloned()
    }

    /// The failure recorded for `name`: its message, as a replay gets it back.
    pub fn failure(&self, name: &str) -> Option<String> {
        self.lock().failures.get(name).cloned()
    }

    /// How many steps were answered from the journal instead of executed.
    pub fn replayed(&self) -> usize {
        self.lock().replayed
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for MemoryJournal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryJournal")
            .field("steps", &self.names())
            .finish_non_exhaustive()
    }
}

impl Journal for MemoryJournal {
    fn concurrent(&self) -> bool {
        false
    }

    async fn step(&self, name: String, step: JournalStep) -> Result<Value, BoxError> {
        {
            let mut entries = self.lock();
            if let Some(value) = entries.results.get(&name).cloned() {
                entries.replayed += 1;
                return Ok(value);
            }
            if let Some(message) = entries.failures.get(&name).cloned() {
                entries.replayed += 1;
                return Err(Box::new(RecordedFailure { message }));
            }
        }
        let done = step.await;
        let mut entries = self.lock();
        match &done {
            Ok(value) => {
                entries.results.insert(name.clone(), value.clone());
            }
            Err(error) if is_transient_failure(&**error) => return done,
            Err(error) => {
                let message = RecordedFailure::of(&**error).message;
                entries.failures.insert(name.clone(), message);
            }
        }
        entries.order.push(name);
        done
    }
}

/// A tool's terminal failure as a journal recorded it: on replay, the cause of the
/// [`RunError`](crate::RunError) in place of the original error, with its message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct RecordedFailure {
    /// The original error's message.
    pub message: String,
}

impl RecordedFailure {
    /// What a journal records for a step that failed with `error`: its message and its
    /// causes', `: `-separated (`the model request failed: openai answered HTTP 400 after 1
    /// attempt(s): …`).
    ///
    /// ```
    /// use golem::run::RecordedFailure;
    ///
    /// let error = std::io::Error::other("disk full");
    /// assert_eq!(RecordedFailure::of(&error).message, "disk full");
    /// ```
    pub fn of(error: &(dyn StdError + 'static)) -> Self {
        let mut message = error.to_string();
        let mut cause = error.source();
        while let Some(error) = cause {
            let _ = write!(message, ": {error}");
            cause = error.source();
        }
        RecordedFailure { message }
    }
}

/// A replay that cannot make what the journal recorded: the answer of step `step` was
/// accepted when the run was recorded, and its output function or validators refuse it when
/// the replay runs them again to rebuild the value (they read something that has changed
/// since). The run fails at the [`Stage::Decode`](crate::Stage::Decode) stage rather than
/// take a path the recorded run did not.
///
/// ```
/// use golem::run::ReplayDiverged;
///
/// let diverged = ReplayDiverged::new("output:2", "the table is taken");
/// assert_eq!(
///     diverged.to_string(),
///     "the journal recorded `output:2` as accepted, and the replay refuses it: the table is taken"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the journal recorded `{step}` as accepted, and the replay refuses it: {found}")]
#[non_exhaustive]
pub struct ReplayDiverged {
    /// The step's name.
    pub step: String,
    /// What the replay found instead: the error's message and its causes'.
    pub found: String,
}

impl ReplayDiverged {
    /// The step `step`, which the replay refuses with `found`.
    pub fn new(step: impl Into<String>, found: impl Into<String>) -> Self {
        ReplayDiverged {
            step: step.into(),
            found: found.into(),
        }
    }
}

/// Whether a step that failed with `error` may succeed when it runs again later, so a
/// durable engine should retry it rather than record the failure: a model request that failed
/// for a transient reason ([`ModelError::is_transient`]: the transport, HTTP 408, 429, 5xx),
/// or a toolset that could not list its tools (a server down for a moment). Any other failure
/// would fail the same way again.
///
/// ```
/// use golem::model::ModelError;
/// use golem::run::is_transient_failure;
///
/// let overloaded = ModelError::Http {
///     provider: "openai".into(),
///     status: 503,
///     message: "overloaded".into(),
///     attempts: 3,
/// };
/// assert!(is_transient_failure(&overloaded));
/// assert!(!is_transient_failure(&ModelError::Truncated));
/// ```
pub fn is_transient_failure(error: &(dyn StdError + 'static)) -> bool {
    error
        .downcast_ref::<ModelError>()
        .is_some_and(ModelError::is_transient)
        || matches!(
            error.downcast_ref::<ToolsetError>(),
            Some(ToolsetError::List { .. })
        )
}

/// The name of the step that records a run's deadline, so a replay keeps the first
/// execution's.
pub(crate) const DEADLINE_STEP: &str = "deadline";

/// The name of the listing of a run's toolsets before the request of `turn + 1`.
pub(crate) fn tools_step(turn: u32) -> String {
    format!("tools:{turn}")
}

/// The name of the validation of the answer of `turn`.
pub(crate) fn output_step(turn: u32) -> String {
    format!("output:{turn}")
}

/// The name of the summary request before the model request of `turn`.
pub(crate) fn summary_step(turn: u32) -> String {
    format!("summary:{turn}")
}

/// The name of what the history processors send in the request of `turn`.
pub(crate) fn history_step(turn: u32) -> String {
    format!("history:{turn}")
}

/// The name of the count of the input tokens of the request of `turn`, asked of the model's
/// provider.
pub(crate) fn count_step(turn: u32) -> String {
    format!("count:{turn}")
}

/// The name of the model request of `turn`.
pub(crate) fn model_step(turn: u32) -> String {
    format!("model:{turn}")
}

/// The name of the tool call `call_id` of `turn`.
pub(crate) fn tool_step(turn: u32, call_id: &str) -> String {
    format!("tool:{turn}:{call_id}")
}

/// `journal`'s step `name`, raced against the run's token and stopped by its deadline from
/// inside ([`StopSignals::guard`]): the step's result, or how it was stopped (by those, or by
/// the engine: [`StepStopped`]), now or, on replay, as it was recorded.
pub(crate) async fn step_until<J: Journal>(
    journal: &J,
    stop: &StopSignals,
    name: String,
    step: JournalStep,
) -> Result<Result<Value, BoxError>, StepStopped> {
    let raced = stop
        .race(std::pin::pin!(journal.step(name, stop.guard(step))))
        .await;
    match raced {
        Err(stopped) => Err(StepStopped::new(stopped, true)),
        Ok(Err(error)) => match step_stop(&*error) {
            Some(stopped) => Err(stopped),
            None => Ok(Err(error)),
        },
        Ok(done) => Ok(done),
    }
}
