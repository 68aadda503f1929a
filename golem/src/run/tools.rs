//! One response's function-tool calls: each settled in the transcript as it ends
//! (concurrently, or in call order for a journal), denials, panics caught, rejections booked
//! once every call has settled, graceful stops honoured.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::future::BoxFuture;
use futures_util::stream::FuturesUnordered;
use futures_util::{FutureExt, StreamExt};
use serde_json::Value;
use smallvec::SmallVec;

use super::SharedCall;
use super::budget::Culprits;
use super::error::InterruptedCall;
use super::event::{Rejection, RunEvent, ToolOutcome, emit};
use super::failure::Failure;
use super::journal::{self, Journal, NestedJournal, RecordedFailure};
use super::scope::Turn;
use super::state::{Approval, Retries};
use super::stop::{StepStopped, StopSignals, Stopped, step_stop};
use super::telemetry::in_span;
use super::transcript::{Handling, Settled};
use crate::context::RunContext;
use crate::error::{BoxError, Exhausted, Stage, ToolPanicked};
use crate::model::{ModelRetry, ToolCallPart};
use crate::output::{Output, OutputMode};
use crate::tool::Tool;
use crate::toolbox::ToolKey;
use crate::toolset::ToolsetError;
use crate::usage::Usage;

/// How one call ended, with the error itself when it is at hand.
pub(crate) enum CallOutcome {
    Returned(Value),
    Rejected { reason: String, error: BoxError },
    Failed(BoxError),
}

impl CallOutcome {
    /// What the transcript keeps of it, and the error, kept apart for the run's failure.
    fn settle(self) -> (Settled, Option<BoxError>) {
        match self {
            CallOutcome::Returned(value) => (Settled::Returned(value), None),
            CallOutcome::Rejected { reason, error } => (Settled::Rejected(reason), Some(error)),
            CallOutcome::Failed(error) => (Settled::Failed(error.to_string()), Some(error)),
        }
    }
}

/// The errors of the calls that were rejected or failed in this step, by call id: the
/// causes of the run's failure. A call settled in an earlier, dropped step has only its
/// message. A response has few calls, so a list beats a map, and one fits inline.
#[derive(Default)]
pub(crate) struct LiveErrors<'c>(SmallVec<[(&'c str, BoxError); 1]>);

impl<'c> LiveErrors<'c> {
    pub(crate) fn new() -> Self {
        LiveErrors::default()
    }

    fn insert(&mut self, tool_call_id: &'c str, error: BoxError) {
        match self.0.iter_mut().find(|(id, _)| *id == tool_call_id) {
            Some((_, live)) => *live = error,
            None => self.0.push((tool_call_id, error)),
        }
    }

    fn remove(&mut self, tool_call_id: &str) -> Option<BoxError> {
        let index = self.0.iter().position(|(id, _)| *id == tool_call_id)?;
        Some(self.0.swap_remove(index).1)
    }
}

/// How a response's function-tool calls went, for the output handling after them.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ToolsVerdict {
    pub(crate) rejected: bool,
    pub(crate) denied: bool,
    pub(crate) failed: bool,
}

impl ToolsVerdict {
    /// How the settled `calls` went.
    pub(crate) fn of(calls: &[&ToolCallPart], handling: &Handling<'_>) -> Self {
        let mut verdict = ToolsVerdict::default();
        for call in calls {
            match handling.settled(&call.tool_call_id) {
                Some(Settled::Rejected(_)) => verdict.rejected = true,
                Some(Settled::Denied(_)) => verdict.denied = true,
                Some(Settled::Failed(_)) => verdict.failed = true,
                Some(Settled::Returned(_) | Settled::Repeated(_)) | None => {}
            }
        }
        verdict
    }
}

/// The event for a call that ended as `settled`.
fn outcome_event(settled: &Settled) -> ToolOutcome {
    match settled {
        Settled::Returned(value) => ToolOutcome::Returned(value.clone()),
        Settled::Rejected(feedback) | Settled::Repeated(feedback) => ToolOutcome::Rejected {
            feedback: feedback.clone(),
        },
        Settled::Failed(error) => ToolOutcome::Failed {
            error: error.clone(),
        },
        Settled::Denied(reason) => ToolOutcome::Denied {
            reason: reason.clone(),
        },
    }
}

/// The number of `calls` that will run: known tools, not denied, not repeated, not settled
/// yet.
pub(crate) fn to_run<Deps: 'static, O: Output, J>(
    turn: &Turn<'_, Deps, O, J>,
    calls: &[&ToolCallPart],
    handling: &Handling<'_>,
) -> u64 {
    calls
        .iter()
        .filter(|call| {
            turn.step.tools.index.contains_key(&call.tool_name)
                && denial(turn, call).is_none()
                && handling.settled(&call.tool_call_id).is_none()
                && repetition(turn, call, handling).is_none()
        })
        .count() as u64
}

fn denial<'t, Deps, O: Output, J>(
    turn: &Turn<'t, Deps, O, J>,
    call: &ToolCallPart,
) -> Option<&'t str> {
    match turn.approvals.get(&call.tool_call_id) {
        Some(Approval::Denied { reason }) => Some(reason.as_str()),
        _ => None,
    }
}

/// The feedback for `call` when the agent refuses repeated calls and the model already has
/// its result; `None` when it runs.
pub(crate) fn repetition<Deps: 'static, O: Output, J>(
    turn: &Turn<'_, Deps, O, J>,
    call: &ToolCallPart,
    handling: &Handling<'_>,
) -> Option<String> {
    let agent = turn.step.agent;
    if agent.repeated_calls == 0 {
        return None;
    }
    let ToolKey::Known(index) = turn.step.tools.key(&call.tool_name) else {
        return None;
    };
    if turn.step.tools.entries[index].repeatable {
        return None;
    }
    let result = handling.repeated(call, agent.repeated_calls)?;
    let output = &agent.output;
    let next = match (output.structured, output.mode) {
        (None, _) => "answer with text".to_owned(),
        (Some(_), OutputMode::Tool) => format!("call `{}` with your answer", output.tool_name),
        (Some(_), _) => "answer with JSON that matches the schema".to_owned(),
    };
    Some(format!(
        "`{}` already returned this for these arguments: {}. Calling it again with the same \
         arguments gives nothing new, so it was not run. Use that result; when you have what \
         you need, {next}.",
        call.tool_name,
        shown(result),
    ))
}

/// How many characters of an earlier result the repeated-call feedback shows.
const SHOWN_RESULT: usize = 400;

/// `result` as the repeated-call feedback shows it: text as it is, other JSON compact, cut
/// at [`SHOWN_RESULT`] characters.
fn shown(result: &Value) -> String {
    let text = match result {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    match text.char_indices().nth(SHOWN_RESULT) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text,
    }
}

/// Runs the calls that have not settled (concurrently, or one at a time in call order for a
/// journal that needs it) and settles each in the transcript the moment it ends, so a step
/// dropped midway keeps every outcome that came in. Denied calls settle without running.
///
/// # Errors
/// [`StoppedDuring`] when the run is stopped first: the calls that ended with the stop in an
/// error (agents the calls run stop gracefully with the run), and the errors of those that
/// ended before it, for them to be booked; the calls still running are dropped.
pub(crate) async fn settle<'c, Deps, O, J>(
    turn: &Turn<'_, Deps, O, J>,
    calls: &[&'c ToolCallPart],
    handling: &mut Handling<'_>,
    retries: &Retries,
    usage: &mut Usage,
) -> Result<LiveErrors<'c>, StoppedDuring<'c>>
where
    Deps: Send + Sync + 'static,
    O: Output,
    J: Journal,
{
    // A journal that needs its steps in order runs the calls one at a time: each is
    // announced as it starts, and those after a stop never start.
    let one_by_one = !turn.step.journal.concurrent();
    // Each call that does not start settles here; so the calls still unsettled after this
    // loop are those that start, with no list of them kept.
    for &call in calls {
        if handling.settled(&call.tool_call_id).is_some() {
            continue;
        }
        if let Some(reason) = denial(turn, call) {
            let settled = Settled::Denied(reason.to_owned());
            emit_finished(turn, call, &settled);
            handling.settle(&call.tool_call_id, settled);
            continue;
        }
        if let Some(feedback) = repetition(turn, call, handling) {
            let settled = Settled::Repeated(feedback);
            emit_finished(turn, call, &settled);
            handling.settle(&call.tool_call_id, settled);
            continue;
        }
        if !one_by_one {
            emit_started(turn, call);
        }
    }
    let unsettled = |handling: &Handling<'_>, call: &ToolCallPart| {
        handling.settled(&call.tool_call_id).is_none()
    };
    let (started, mut running_known) = calls
        .iter()
        .filter(|call| unsettled(handling, call))
        .fold((0_usize, 0_u64), |(started, known), call| {
            (started + 1, known + u64::from(is_known(turn, call)))
        });
    let mut settled = Settling {
        handling,
        live: LiveErrors::new(),
    };
    // One call, or a journal that needs its steps in order, runs without the set of futures.
    let calls_token = turn.ctx().cancellation();
    let mut interrupted = Vec::new();
    let mut not_started = Vec::new();
    let stopped = if !one_by_one && started > 1 {
        let mut running = FuturesUnordered::new();
        for &call in calls {
            if unsettled(settled.handling, call) {
                running.push(run_call(call, turn, retries));
            }
        }
        loop {
            let ended = match turn.step.stop.race(running.next()).await {
                Ok(Some((call, outcome))) => match stopped_with(turn, &outcome) {
                    None => {
                        running_known -= settled.record(turn, call, outcome, usage);
                        continue;
                    }
                    Some(stop) => {
                        running_known -=
                            settled.record_stopped(turn, call, outcome, usage, &mut interrupted);
                        Err(stop.stopped)
                    }
                },
                Ok(None) => Ok(()),
                Err(stopped) => Err(stopped),
            };
            match ended {
                Ok(()) => break None,
                Err(stopped) => {
                    // The agents the calls run stop with the run: once told, they end at
                    // once, with their state.
                    if let Some(token) = calls_token {
                        token.cancel();
                    }
                    while let Some(Some((call, outcome))) = running.next().now_or_never() {
                        running_known -=
                            settled.record_stopped(turn, call, outcome, usage, &mut interrupted);
                    }
                    break Some(stopped);
                }
            }
        }
    } else {
        // One at a time, in call order.
        let mut stopped = None;
        for &call in calls {
            // Only a call that started is unsettled: each one run settles as it ends.
            if !unsettled(settled.handling, call) {
                continue;
            }
            if stopped.is_some() {
                // After the stop: never made, so neither counted nor announced.
                running_known -= u64::from(is_known(turn, call));
                not_started.push(call);
                continue;
            }
            if one_by_one {
                emit_started(turn, call);
            }
            let mut running = std::pin::pin!(run_call(call, turn, retries));
            match turn
                .step
                .stop
                .race_graceful(&mut running, calls_token)
                .await
            {
                Ok((call, outcome)) => {
                    if let Some(stop) = stopped_with(turn, &outcome) {
                        if stop.began {
                            running_known -= settled.record_stopped(
                                turn,
                                call,
                                outcome,
                                usage,
                                &mut interrupted,
                            );
                        } else {
                            // Stopped before its step began: never made, so not counted.
                            running_known -= u64::from(is_known(turn, call));
                            not_started.push(call);
                        }
                        stopped = Some(stop.stopped);
                        continue;
                    }
                    running_known -= settled.record(turn, call, outcome, usage);
                }
                Err((stop, ended)) => {
                    if let Some((call, outcome)) = ended {
                        running_known -=
                            settled.record_stopped(turn, call, outcome, usage, &mut interrupted);
                    }
                    stopped = Some(stop);
                }
            }
        }
        stopped
    };
    match stopped {
        None => Ok(settled.live),
        Some(stopped) => {
            // The calls that were running were made, though they did not finish.
            usage.tool_calls += running_known;
            Err(StoppedDuring {
                stopped,
                interrupted,
                not_started,
                live: settled.live,
            })
        }
    }
}

/// A stop while a response's calls ran: see [`settle`].
pub(crate) struct StoppedDuring<'c> {
    pub(crate) stopped: Stopped,
    /// The calls that ended in an error with the stop.
    pub(crate) interrupted: Vec<InterruptedCall>,
    /// The calls that never started (one at a time, after the stop): not run.
    pub(crate) not_started: Vec<&'c ToolCallPart>,
    /// The errors of the calls that settled before the stop.
    pub(crate) live: LiveErrors<'c>,
}

/// The stop a call ended with, and whether the call had begun: an error when the run is
/// stopped is the error of an agent the call ran, which stopped with the run (and may have
/// been polled before the stop's signal). Only a journaled call whose step the deadline or
/// the engine stopped before it began had not.
fn stopped_with<Deps: 'static, O: Output, J>(
    turn: &Turn<'_, Deps, O, J>,
    called: &Called,
) -> Option<StepStopped> {
    if let Some(stopped) = &called.stopped {
        return Some(StepStopped::new(stopped.clone(), true));
    }
    match &called.outcome {
        CallOutcome::Returned(_) => None,
        // A journaled call that the deadline or the engine stopped, now or as recorded.
        CallOutcome::Failed(error) if let Some(stop) = step_stop(&**error) => Some(stop),
        CallOutcome::Rejected { .. } | CallOutcome::Failed(_) => {
            let stopped = turn.step.stop.check().err()?;
            Some(StepStopped::new(stopped, true))
        }
    }
}

/// Where the calls of one step settle.
struct Settling<'h, 'a, 'c> {
    handling: &'h mut Handling<'a>,
    live: LiveErrors<'c>,
}

impl<'c> Settling<'_, '_, 'c> {
    /// Settles `call` as `called` ended it, booking what it spent through other agents;
    /// returns 1 when it was a call to a known tool, counted in the usage.
    fn record<Deps: 'static, O: Output, J>(
        &mut self,
        turn: &Turn<'_, Deps, O, J>,
        call: &'c ToolCallPart,
        called: Called,
        usage: &mut Usage,
    ) -> u64 {
        if let Some(delegated) = &called.delegated {
            *usage += &**delegated;
        }
        let (settled, error) = called.outcome.settle();
        emit_finished(turn, call, &settled);
        self.handling.settle(&call.tool_call_id, settled);
        if let Some(error) = error {
            self.live.insert(&call.tool_call_id, error);
        }
        if is_known(turn, call) {
            usage.tool_calls += 1;
            1
        } else {
            0
        }
    }
}

impl<'c> Settling<'_, '_, 'c> {
    /// Books `call`, which ended as the run was stopped: what it spent through other
    /// agents, and its result if it returned; an error (a stopped agent's) is kept in
    /// `interrupted` and the call left unsettled, answered as not finished. Returns 1 when
    /// it was a call to a known tool, counted in the usage.
    fn record_stopped<Deps: 'static, O: Output, J>(
        &mut self,
        turn: &Turn<'_, Deps, O, J>,
        call: &'c ToolCallPart,
        called: Called,
        usage: &mut Usage,
        interrupted: &mut Vec<InterruptedCall>,
    ) -> u64 {
        match called.outcome {
            CallOutcome::Returned(_) => self.record(turn, call, called, usage),
            CallOutcome::Rejected { error, .. } | CallOutcome::Failed(error) => {
                if let Some(delegated) = &called.delegated {
                    *usage += &**delegated;
                }
                interrupted.push(InterruptedCall {
                    tool_name: call.tool_name.clone(),
                    tool_call_id: call.tool_call_id.clone(),
                    error,
                });
                if is_known(turn, call) {
                    usage.tool_calls += 1;
                    1
                } else {
                    0
                }
            }
        }
    }
}

fn is_known<Deps: 'static, O: Output, J>(turn: &Turn<'_, Deps, O, J>, call: &ToolCallPart) -> bool {
    turn.step.tools.index.contains_key(&call.tool_name)
}

/// Calls the tool of `call`, and says which call it was and what it spent through other
/// agents. Not an `async fn`: its future is `call_tool`'s, with no layer of its own.
fn run_call<'c, Deps, O, J>(
    call: &'c ToolCallPart,
    turn: &Turn<'_, Deps, O, J>,
    retries: &Retries,
) -> impl Future<Output = (&'c ToolCallPart, Called)>
where
    Deps: Send + Sync + 'static,
    O: Output,
    J: Journal,
{
    call_tool(call, turn, retries).map(move |called| (call, called))
}

/// How a call ended, and the usage of the agents it ran on the run's behalf, if any.
pub(crate) struct Called {
    outcome: CallOutcome,
    /// Boxed: rare, and the futures that carry a call's end stay small.
    delegated: Option<Box<Usage>>,
    /// Under a journal, the stop the agent the call ran (an agent as a tool) ended with,
    /// when it is this run's too ([`StopSignals::agent_stop`]).
    stopped: Option<Stopped>,
}

impl Called {
    fn new(outcome: CallOutcome, delegated: Option<Box<Usage>>) -> Self {
        Called {
            outcome,
            delegated,
            stopped: None,
        }
    }
}

impl From<CallOutcome> for Called {
    fn from(outcome: CallOutcome) -> Self {
        Called::new(outcome, None)
    }
}

/// Books the rejections of the settled `calls` (each rejected tool charged once, however
/// many of its calls were rejected) and reports them; returns the run's failure, if a call
/// failed or a budget ran out. Rejections are booked even when another call failed, so every
/// one is counted and traced.
pub(crate) fn book<'c, Deps: 'static, O: Output, J>(
    turn: &Turn<'_, Deps, O, J>,
    calls: &[&'c ToolCallPart],
    handling: &Handling<'_>,
    retries: &mut Retries,
    culprits: &mut Culprits<'c>,
    mut live: LiveErrors<'_>,
) -> Option<Failure> {
    let tools = turn.step.tools;
    let mut terminal = None;
    for &call in calls {
        match handling.settled(&call.tool_call_id) {
            Some(Settled::Failed(message)) if terminal.is_none() => {
                let source = live.remove(&call.tool_call_id).unwrap_or_else(|| {
                    Box::new(RecordedFailure {
                        message: message.clone(),
                    })
                });
                terminal = Some(Failure {
                    stage: Stage::Tool,
                    tool_name: Some(call.tool_name.clone()),
                    exhausted: None,
                    source,
                    interrupted: Vec::new(),
                });
            }
            _ => {}
        }
    }
    let rejection = |call: &ToolCallPart| match handling.settled(&call.tool_call_id) {
        Some(Settled::Rejected(reason) | Settled::Repeated(reason)) => Some(reason.as_str()),
        _ => None,
    };
    let mut exhausted = None;
    // The first rejected call of each tool, in call order.
    for (index, &call) in calls.iter().enumerate() {
        let Some(reason) = rejection(call) else {
            continue;
        };
        let key = tools.key(&call.tool_name);
        let charged = calls[..index]
            .iter()
            .any(|earlier| rejection(earlier).is_some() && tools.key(&earlier.tool_name) == key);
        if charged {
            continue;
        }
        let rejections = retries.charge_tool(key, &call.tool_name);
        let limit = tools.limit(key);
        match key {
            ToolKey::Known(_) => culprits.tools.push(&call.tool_name),
            ToolKey::Unknown => culprits.unknown_tools = true,
        }
        tracing::warn!(
            "golem.retry.stage" = "tool",
            "gen_ai.tool.name" = call.tool_name.as_str(),
            "gen_ai.tool.call.id" = call.tool_call_id.as_str(),
            "golem.retry.attempt" = i64::from(rejections),
            "golem.retry.max" = i64::from(limit),
            // The feedback may quote what the model or the user said: content.
            "golem.retry.reason" = turn.step.agent.capture_content.then_some(reason),
            "tool call rejected"
        );
        emit(turn.step.events, || {
            RunEvent::Rejected(Rejection {
                turn: turn.turn,
                stage: Stage::Tool,
                call: Some(SharedCall::of(turn.response, call)),
                retry: rejections,
                max_retries: limit,
                feedback: reason.to_owned(),
                cost: turn.cost(),
            })
        });
        if rejections > limit && exhausted.is_none() {
            let source = live
                .remove(&call.tool_call_id)
                .unwrap_or_else(|| Box::new(ModelRetry::new(reason)));
            exhausted = Some(Failure {
                stage: Stage::Tool,
                tool_name: Some(call.tool_name.clone()),
                exhausted: Some(Exhausted { rejections, limit }),
                source,
                interrupted: Vec::new(),
            });
        }
    }
    terminal.or(exhausted)
}

fn emit_started<Deps, O: Output, J>(turn: &Turn<'_, Deps, O, J>, call: &ToolCallPart) {
    emit(turn.step.events, || RunEvent::ToolCallStarted {
        turn: turn.turn,
        call: SharedCall::of(turn.response, call),
    });
}

fn emit_finished<Deps, O: Output, J>(
    turn: &Turn<'_, Deps, O, J>,
    call: &ToolCallPart,
    settled: &Settled,
) {
    emit(turn.step.events, || RunEvent::ToolCallFinished {
        turn: turn.turn,
        call: SharedCall::of(turn.response, call),
        outcome: outcome_event(settled),
    });
}

async fn call_tool<Deps, O, J>(
    call: &ToolCallPart,
    turn: &Turn<'_, Deps, O, J>,
    retries: &Retries,
) -> Called
where
    Deps: Send + Sync + 'static,
    O: Output,
    J: Journal,
{
    let tools = turn.step.tools;
    let ToolKey::Known(index) = tools.key(&call.tool_name) else {
        let reason = if tools.available.is_empty() {
            format!(
                "Unknown tool name: `{}`. No tools are available.",
                call.tool_name
            )
        } else {
            format!(
                "Unknown tool name: `{}`. Available tools: {}.",
                call.tool_name, tools.available
            )
        };
        return CallOutcome::Rejected {
            error: Box::new(ModelRetry::new(reason.clone())),
            reason,
        }
        .into();
    };
    let entry = &tools.entries[index];
    let ctx = turn.ctx().for_attempt(
        Some(SharedCall::of(turn.response, call)),
        retries.tool_rejections(ToolKey::Known(index), &entry.name),
        entry.max_retries,
    );
    let journal = turn.step.journal;
    let capture = turn.step.agent.capture_content;
    if !journal.records() {
        let outcome = invoke(&*entry.tool, &ctx, call, capture).await;
        return Called::new(
            outcome,
            ctx.take_delegated(&call.tool_call_id).map(Box::new),
        );
    }
    // Boxed: a journaled call's future is large, and the common one stays small without it.
    Box::pin(call_journaled(
        entry,
        ctx,
        call,
        turn.turn,
        capture,
        journal,
        turn.step.stop,
    ))
    .await
}

/// Calls the tool of `entry` for `call` through `journal`, as the journal step of the call
/// in `turn`.
async fn call_journaled<Deps, J>(
    entry: &crate::toolbox::ToolEntry<Deps>,
    ctx: RunContext<Deps>,
    call: &ToolCallPart,
    turn: u32,
    capture: bool,
    journal: &J,
    stop: &StopSignals,
) -> Called
where
    Deps: Send + Sync + 'static,
    J: Journal,
{
    let name = journal::tool_step(turn, &call.tool_call_id);
    // A call that is a run of its own (an agent as a tool) runs outside a step, its steps
    // recorded under this call's name; how it ended is recorded once it has.
    if let Some(called) = call_nested(entry, &ctx, call, capture, journal, stop, &name).await {
        return called;
    }
    // An owned step for the journal. When it runs now, its outcome is used as it is, so
    // the run keeps the error's own chain; on replay the recorded outcome stands in.
    let live = Arc::new(Mutex::new(None));
    let step = {
        let (tool, call, live) = (Arc::clone(&entry.tool), call.clone(), Arc::clone(&live));
        async move {
            let outcome = match invoke(&*tool, &ctx, &call, capture).await {
                // A replayed run's toolset that cannot list its tools again fails the step,
                // for the engine to retry, instead of being recorded as the call's end.
                CallOutcome::Failed(error)
                    if matches!(
                        error.downcast_ref::<ToolsetError>(),
                        Some(ToolsetError::List { .. })
                    ) =>
                {
                    return Err(error);
                }
                outcome => outcome,
            };
            let delegated = ctx.take_delegated(&call.tool_call_id).map(Box::new);
            let recorded = record(&recorded(&outcome), delegated.as_deref())?;
            *live.lock().unwrap_or_else(PoisonError::into_inner) =
                Some(Called::new(outcome, delegated));
            Ok(recorded)
        }
    };
    let recorded = journal.step(name, stop.guard(Box::pin(step))).await;
    let called = live.lock().unwrap_or_else(PoisonError::into_inner).take();
    match (recorded, called) {
        (Ok(_), Some(called)) => called,
        (Ok(recorded), None) => replayed_call(recorded),
        // The journal did not record what the call returned (an engine's size limit): the
        // call fails as a replay would see it, not as it ran.
        (Err(error), _) => CallOutcome::Failed(error).into(),
    }
}

/// Calls a tool whose call is a run of its own ([`Tool::call_in`]) outside a step, its steps
/// recorded under `name`, and records how it ended as the step `name`; `None` when the tool
/// runs as one step.
async fn call_nested<Deps, J>(
    entry: &crate::toolbox::ToolEntry<Deps>,
    ctx: &RunContext<Deps>,
    call: &ToolCallPart,
    capture: bool,
    journal: &J,
    stop: &StopSignals,
    name: &str,
) -> Option<Called>
where
    Deps: Send + Sync + 'static,
    J: Journal,
{
    // The agent's steps are this run's, stopped by its deadline as they run.
    let nested = NestedJournal::new(journal, name.to_owned(), stop.clone());
    let started = catch_unwind(AssertUnwindSafe(|| {
        entry.tool.call_in(ctx, &call.args, &nested)
    }));
    let started = match started {
        Ok(None) => return None,
        Ok(Some(future)) => Ok(future),
        Err(panic) => Err(panic),
    };
    let outcome = instrumented(started, entry.tool.tool_type(), call, capture).await;
    let delegated = ctx.take_delegated(&call.tool_call_id).map(Box::new);
    let live = match record(&recorded(&outcome), delegated.as_deref()) {
        Ok(live) => live,
        Err(error) => return Some(Called::new(CallOutcome::Failed(error), delegated)),
    };
    let value = live.clone();
    Some(
        match journal
            .step(name.to_owned(), Box::pin(async move { Ok(value) }))
            .await
        {
            // The child's run replays from its recorded steps: the same end, with the
            // error's own chain when it failed now.
            Ok(value) if value == live => {
                // An agent stopped by this run's deadline, or by the engine, stops this run:
                // its steps say so now and on replay alike.
                let stopped = match &outcome {
                    CallOutcome::Rejected { error, .. } | CallOutcome::Failed(error) => {
                        stop.agent_stop(&**error)
                    }
                    CallOutcome::Returned(_) => None,
                };
                Called {
                    stopped,
                    ..Called::new(outcome, delegated)
                }
            }
            Ok(value) => replayed_call(value),
            Err(error) => Called::new(CallOutcome::Failed(error), delegated),
        },
    )
}

/// A call as the journal recorded it.
fn replayed_call(recorded: Value) -> Called {
    let (settled, delegated) = match read_record(recorded) {
        Ok(read) => read,
        Err(error) => return CallOutcome::Failed(error).into(),
    };
    let outcome = match settled {
        Settled::Returned(value) => CallOutcome::Returned(value),
        Settled::Rejected(reason) | Settled::Repeated(reason) => CallOutcome::Rejected {
            error: Box::new(ModelRetry::new(reason.clone())),
            reason,
        },
        Settled::Failed(message) | Settled::Denied(message) => {
            CallOutcome::Failed(Box::new(RecordedFailure { message }))
        }
    };
    Called::new(outcome, delegated)
}

/// What the journal records of a call: how it ended (`{"returned": value}`, ...) and, when
/// it ran other agents, their usage under `"delegated"`.
fn record(settled: &Settled, delegated: Option<&Usage>) -> Result<Value, BoxError> {
    let mut recorded = serde_json::to_value(settled)?;
    if let Some(delegated) = delegated
        && let Value::Object(fields) = &mut recorded
    {
        fields.insert("delegated".to_owned(), serde_json::to_value(delegated)?);
    }
    Ok(recorded)
}

/// Reads what [`record`] wrote (and what golem wrote before it: the outcome alone).
fn read_record(mut recorded: Value) -> Result<(Settled, Option<Box<Usage>>), BoxError> {
    let delegated = match &mut recorded {
        Value::Object(fields) => fields.remove("delegated"),
        _ => None,
    };
    let delegated = delegated.map(serde_json::from_value).transpose()?;
    Ok((serde_json::from_value(recorded)?, delegated.map(Box::new)))
}

/// How a call ended, as a journal records it: `{"returned": value}`, `{"rejected":
/// feedback}` or `{"failed": message}`.
fn recorded(outcome: &CallOutcome) -> Settled {
    match outcome {
        CallOutcome::Returned(value) => Settled::Returned(value.clone()),
        CallOutcome::Rejected { reason, .. } => Settled::Rejected(reason.clone()),
        CallOutcome::Failed(error) => Settled::Failed(error.to_string()),
    }
}

/// Calls `tool` for `call`, in its `execute_tool` span (with the arguments and the result
/// when `capture`). A panic, while the call is made or while it runs, fails this call, not
/// the whole process.
fn invoke<'a, Deps: Send + Sync + 'static>(
    tool: &'a dyn Tool<Deps>,
    ctx: &'a RunContext<Deps>,
    call: &'a ToolCallPart,
    capture: bool,
) -> impl Future<Output = CallOutcome> + 'a {
    let started = catch_unwind(AssertUnwindSafe(|| tool.call(ctx, &call.args)));
    instrumented(started, tool.tool_type(), call, capture)
}

/// Awaits a started call in its `execute_tool` span; `started` is the panic if starting it
/// panicked.
async fn instrumented(
    started: Result<BoxFuture<'_, Result<Value, BoxError>>, Box<dyn Any + Send>>,
    tool_type: &'static str,
    call: &ToolCallPart,
    capture: bool,
) -> CallOutcome {
    let span = tracing::info_span!(
        "execute_tool",
        otel.name = format!("execute_tool {}", call.tool_name),
        otel.kind = "internal",
        otel.status_code = tracing::field::Empty,
        "gen_ai.operation.name" = "execute_tool",
        "gen_ai.tool.type" = tool_type,
        "gen_ai.tool.name" = call.tool_name.as_str(),
        "gen_ai.tool.call.id" = call.tool_call_id.as_str(),
        "gen_ai.tool.call.arguments" = capture.then_some(call.args.as_str()),
        "gen_ai.tool.call.result" = tracing::field::Empty,
        "error.type" = tracing::field::Empty,
    );
    let result = match started {
        Ok(future) => in_span!(span, AssertUnwindSafe(future).catch_unwind()),
        Err(panic) => Err(panic),
    };
    // A rejection is the model's mistake, told back to it; a failure or a panic, the tool's.
    let error_type = match &result {
        Ok(Ok(value)) => {
            if capture && !span.is_disabled() {
                span.record(
                    "gen_ai.tool.call.result",
                    crate::model::media::loggable(value),
                );
            }
            None
        }
        Ok(Err(error)) if ModelRetry::find(&**error).is_some() => Some("golem.rejected"),
        Ok(Err(_)) => Some("golem.tool_failed"),
        Err(_) => Some("golem.tool_panicked"),
    };
    if let Some(error_type) = error_type {
        span.record("otel.status_code", "error");
        span.record("error.type", error_type);
    }
    match result {
        Ok(Ok(value)) => CallOutcome::Returned(value),
        Ok(Err(error)) => match ModelRetry::find(&*error) {
            Some(retry) => CallOutcome::Rejected {
                reason: retry.message().to_owned(),
                error,
            },
            None => CallOutcome::Failed(error),
        },
        Err(panic) => CallOutcome::Failed(Box::new(ToolPanicked {
            message: panic_message(&*panic),
        })),
    }
}

pub(crate) fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(message) = panic.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = panic.downcast_ref::<String>() {
        message.clone()
    } else {
        "a panic whose payload is not a string".to_owned()
    }
}
