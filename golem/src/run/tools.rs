//! One response's function-tool calls: approvals, concurrent calls in call order, panics
//! caught, rejections booked, graceful stops honoured.

use std::any::Any;
use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::FutureExt;
use futures_util::future::join_all;
use serde_json::Value;
use tracing::Instrument;

use super::budget::Culprits;
use super::event::{EventSink, Rejection, RunEvent, ToolOutcome, emit};
use super::failure::{Failure, NOT_RUN};
use super::journal::{self, Journal, RecordedFailure};
use super::state::{Approval, Retries};
use super::stop::StopSignals;
use crate::agent::AgentInner;
use crate::context::RunContext;
use crate::error::{BoxError, Exhausted, Stage, ToolPanicked};
use crate::model::{ModelResponse, ModelRetry, RequestPart, ToolCallPart};
use crate::output::Output;
use crate::tool::Tool;
use crate::toolbox::{ToolKey, Toolbox};
use crate::usage::{RoundCost, Usage};

const TOOL_FAILED: &str = "The tool failed; the run stopped.";
const STOPPED_DURING_CALL: &str = "Not finished: the run was stopped during this call.";

/// What a turn's handling sees of the run besides the counters it changes.
pub(crate) struct TurnScope<'a, Deps, O: Output, J> {
    pub(crate) ctx: &'a RunContext<Deps>,
    pub(crate) tools: &'a Toolbox<Deps>,
    pub(crate) journal: &'a J,
    pub(crate) approvals: &'a BTreeMap<String, Approval>,
    pub(crate) events: Option<&'a EventSink<O>>,
    pub(crate) stop: &'a StopSignals,
    pub(crate) turn: u32,
    /// What this round's request and response cost.
    pub(crate) cost: RoundCost,
}

/// The tool-call and output handling of one response.
pub(crate) struct Handled<O> {
    /// The answers and feedback for the next request.
    pub(crate) parts: Vec<RequestPart>,
    pub(crate) culprits: Culprits,
    pub(crate) result: Result<Option<O>, Failure>,
}

/// How a response's function-tool calls went, for the output handling after them.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ToolsVerdict {
    pub(crate) rejected: bool,
    pub(crate) denied: bool,
}

/// How one call ended.
enum CallOutcome {
    Returned(Value),
    Rejected { reason: String, error: BoxError },
    Failed(BoxError),
    Denied(String),
}

impl CallOutcome {
    fn event(&self) -> ToolOutcome {
        match self {
            CallOutcome::Returned(value) => ToolOutcome::Returned(value.clone()),
            CallOutcome::Rejected { reason, .. } => ToolOutcome::Rejected {
                feedback: reason.clone(),
            },
            CallOutcome::Failed(error) => ToolOutcome::Failed {
                error: error.to_string(),
            },
            CallOutcome::Denied(reason) => ToolOutcome::Denied {
                reason: reason.clone(),
            },
        }
    }

    /// The call's answer in the next request.
    fn answer(&self, call: &ToolCallPart) -> RequestPart {
        match self {
            CallOutcome::Returned(value) => call.answer(value.clone()),
            CallOutcome::Rejected { reason, .. } => call.reject(reason.clone()),
            CallOutcome::Failed(_) => call.answer(TOOL_FAILED),
            CallOutcome::Denied(reason) => call.answer(denial_text(reason)),
        }
    }
}

fn denial_text(reason: &str) -> String {
    format!("This call was denied and did not run: {reason}")
}

impl<Deps, O> AgentInner<Deps, O>
where
    Deps: Send + Sync + 'static,
    O: Output,
{
    /// Runs the response's function-tool calls, then handles its output.
    pub(crate) async fn handle_response<J: Journal>(
        &self,
        response: &ModelResponse,
        scope: TurnScope<'_, Deps, O, J>,
        retries: &mut Retries,
        usage: &mut Usage,
    ) -> Handled<O> {
        let mut handled = Handled {
            parts: Vec::new(),
            culprits: Culprits::default(),
            result: Ok(None),
        };
        let (output_calls, function_calls): (Vec<&ToolCallPart>, Vec<&ToolCallPart>) = response
            .tool_calls()
            .partition(|call| self.is_output_call(call));

        let mut verdict = ToolsVerdict::default();
        if !function_calls.is_empty() {
            match self
                .run_tools(&function_calls, &scope, retries, usage, &mut handled)
                .await
            {
                Ok(tools) => verdict = tools,
                Err(failure) => {
                    // Answer the output calls too, so the history can be resumed: providers
                    // require every call to be answered.
                    if failure.exhausted.is_some() {
                        self.decline_output_calls(&output_calls, verdict, &mut handled);
                    } else {
                        handled
                            .parts
                            .extend(output_calls.iter().map(|call| call.answer(NOT_RUN)));
                    }
                    handled.result = Err(failure);
                    return handled;
                }
            }
        }
        self.handle_output(
            response,
            &output_calls,
            !function_calls.is_empty(),
            verdict,
            &scope,
            retries,
            &mut handled,
        )
        .await;
        handled
    }

    /// Runs the turn's function-tool calls concurrently and books their rejections.
    async fn run_tools<J: Journal>(
        &self,
        calls: &[&ToolCallPart],
        scope: &TurnScope<'_, Deps, O, J>,
        retries: &mut Retries,
        usage: &mut Usage,
        handled: &mut Handled<O>,
    ) -> Result<ToolsVerdict, Failure> {
        let denial = |call: &ToolCallPart| match scope.approvals.get(&call.tool_call_id) {
            Some(Approval::Denied { reason }) => Some(reason.as_str()),
            _ => None,
        };
        let known = calls
            .iter()
            .filter(|call| {
                scope.tools.index.contains_key(&call.tool_name) && denial(call).is_none()
            })
            .count() as u64;
        if let Err(limit) = self.usage_limits.check_tool_calls(usage, known) {
            handled
                .parts
                .extend(calls.iter().map(|call| call.answer(NOT_RUN)));
            return Err(Failure::limit(limit));
        }
        usage.tool_calls += known;

        // Each call writes its outcome into its own slot as it finishes, so a stop keeps
        // what finished before it.
        let mut outcomes: Vec<Option<CallOutcome>> = Vec::with_capacity(calls.len());
        let mut verdict = ToolsVerdict::default();
        for &call in calls {
            outcomes.push(denial(call).map(|reason| {
                verdict.denied = true;
                let outcome = CallOutcome::Denied(reason.to_owned());
                self.emit_finished(scope, call, &outcome);
                outcome
            }));
        }
        let retries_now = &*retries;
        let calls_to_run: Vec<_> = calls
            .iter()
            .zip(outcomes.iter_mut())
            .filter_map(|(&call, slot)| {
                if slot.is_some() {
                    return None;
                }
                emit(scope.events, || RunEvent::ToolCallStarted {
                    turn: scope.turn,
                    call: call.clone(),
                });
                Some(async move {
                    let outcome = self.call_tool(call, scope, retries_now).await;
                    self.emit_finished(scope, call, &outcome);
                    *slot = Some(outcome);
                })
            })
            .collect();
        let running = async {
            if scope.journal.concurrent() {
                join_all(calls_to_run).await;
            } else {
                // One at a time, in call order, for engines that journal steps in sequence.
                for call in calls_to_run {
                    call.await;
                }
            }
        };
        let stopped = scope.stop.race(running).await.err();
        if let Some(stopped) = stopped {
            // Keep what finished; nothing is booked for a round the caller stopped.
            handled.parts.extend(calls.iter().zip(&outcomes).map(
                |(call, outcome)| match outcome {
                    Some(outcome) => outcome.answer(call),
                    None => call.answer(STOPPED_DURING_CALL),
                },
            ));
            return Err(Failure::stopped(stopped));
        }

        let mut terminal = None;
        let mut rejected: Vec<(ToolKey, &ToolCallPart, String, BoxError)> = Vec::new();
        for (&call, outcome) in calls.iter().zip(outcomes) {
            let Some(outcome) = outcome else {
                unreachable!("every call ran to the end")
            };
            handled.parts.push(outcome.answer(call));
            match outcome {
                CallOutcome::Returned(_) | CallOutcome::Denied(_) => {}
                CallOutcome::Rejected { reason, error } => {
                    let key = scope.tools.key(&call.tool_name);
                    if !rejected.iter().any(|(seen, ..)| *seen == key) {
                        rejected.push((key, call, reason, error));
                    }
                }
                CallOutcome::Failed(error) => {
                    if terminal.is_none() {
                        terminal = Some(Failure {
                            stage: Stage::Tool,
                            tool_name: Some(call.tool_name.clone()),
                            exhausted: None,
                            source: error,
                        });
                    }
                }
            }
        }
        // Rejections are booked even when another call failed, so every one is counted
        // and traced.
        verdict.rejected = !rejected.is_empty();
        let mut exhausted = None;
        for (key, call, reason, error) in rejected {
            let rejections = retries.charge_tool(key, &call.tool_name);
            let limit = scope.tools.limit(key);
            match key {
                ToolKey::Known(_) => handled.culprits.tools.push(call.tool_name.clone()),
                ToolKey::Unknown => handled.culprits.unknown_tools = true,
            }
            tracing::warn!(
                "golem.retry.stage" = "tool",
                "gen_ai.tool.name" = call.tool_name.as_str(),
                "gen_ai.tool.call.id" = call.tool_call_id.as_str(),
                "golem.retry.attempt" = rejections,
                "golem.retry.max" = limit,
                "golem.retry.reason" = reason.as_str(),
                "tool call rejected"
            );
            emit(scope.events, || {
                RunEvent::Rejected(Rejection {
                    turn: scope.turn,
                    stage: Stage::Tool,
                    tool_name: Some(call.tool_name.clone()),
                    tool_call_id: Some(call.tool_call_id.clone()),
                    retry: rejections,
                    max_retries: limit,
                    feedback: reason.clone(),
                    cost: scope.cost,
                })
            });
            if rejections > limit && exhausted.is_none() {
                exhausted = Some(Failure {
                    stage: Stage::Tool,
                    tool_name: Some(call.tool_name.clone()),
                    exhausted: Some(Exhausted { rejections, limit }),
                    source: error,
                });
            }
        }
        match terminal.or(exhausted) {
            Some(failure) => Err(failure),
            None => Ok(verdict),
        }
    }

    fn emit_finished<J>(
        &self,
        scope: &TurnScope<'_, Deps, O, J>,
        call: &ToolCallPart,
        outcome: &CallOutcome,
    ) {
        emit(scope.events, || RunEvent::ToolCallFinished {
            turn: scope.turn,
            call: call.clone(),
            outcome: outcome.event(),
        });
    }

    async fn call_tool<J: Journal>(
        &self,
        call: &ToolCallPart,
        scope: &TurnScope<'_, Deps, O, J>,
        retries: &Retries,
    ) -> CallOutcome {
        let tools = scope.tools;
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
            };
        };
        let entry = &tools.entries[index];
        let ctx = scope.ctx.for_attempt(
            Some(Arc::clone(&entry.name)),
            Some(Arc::from(call.tool_call_id.as_str())),
            retries.tool_rejections(ToolKey::Known(index), &entry.name),
            entry.max_retries,
        );
        if !scope.journal.records() {
            return invoke(&*entry.tool, &ctx, call).await;
        }
        // An owned step for the journal. When it runs now, its outcome is used as it is, so
        // the run keeps the error's own chain; on replay the recorded outcome stands in.
        let live = Arc::new(Mutex::new(None));
        let step = {
            let (tool, call, live) = (Arc::clone(&entry.tool), call.clone(), Arc::clone(&live));
            async move {
                let outcome = invoke(&*tool, &ctx, &call).await;
                let recorded = serde_json::to_value(Recorded::of(&outcome))?;
                *live.lock().unwrap_or_else(PoisonError::into_inner) = Some(outcome);
                Ok(recorded)
            }
        };
        let name = journal::tool_step(scope.turn, &call.tool_call_id);
        let recorded = scope.journal.step(name, Box::pin(step)).await;
        if let Some(outcome) = live.lock().unwrap_or_else(PoisonError::into_inner).take() {
            return outcome;
        }
        match recorded.and_then(|value| Ok(serde_json::from_value::<Recorded>(value)?)) {
            Ok(recorded) => recorded.into_outcome(),
            Err(error) => CallOutcome::Failed(error),
        }
    }
}

/// Calls `tool` for `call`, in its `execute_tool` span. A panic, while the call is made or
/// while it runs, fails this call, not the whole process.
async fn invoke<Deps: Send + Sync + 'static>(
    tool: &dyn Tool<Deps>,
    ctx: &RunContext<Deps>,
    call: &ToolCallPart,
) -> CallOutcome {
    let span = tracing::info_span!(
        "execute_tool",
        otel.name = format!("execute_tool {}", call.tool_name),
        otel.kind = "internal",
        "gen_ai.operation.name" = "execute_tool",
        "gen_ai.tool.type" = tool.tool_type(),
        "gen_ai.tool.name" = call.tool_name.as_str(),
        "gen_ai.tool.call.id" = call.tool_call_id.as_str(),
    );
    let result = match catch_unwind(AssertUnwindSafe(|| tool.call(ctx, &call.args))) {
        Ok(future) => {
            AssertUnwindSafe(future)
                .catch_unwind()
                .instrument(span)
                .await
        }
        Err(panic) => Err(panic),
    };
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

/// How a tool call ended, as a journal records it.
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum Recorded {
    Returned(Value),
    Rejected(String),
    Failed(String),
}

impl Recorded {
    fn of(outcome: &CallOutcome) -> Self {
        match outcome {
            CallOutcome::Returned(value) => Recorded::Returned(value.clone()),
            CallOutcome::Rejected { reason, .. } => Recorded::Rejected(reason.clone()),
            CallOutcome::Failed(error) => Recorded::Failed(error.to_string()),
            CallOutcome::Denied(reason) => Recorded::Returned(Value::String(denial_text(reason))),
        }
    }

    fn into_outcome(self) -> CallOutcome {
        match self {
            Recorded::Returned(value) => CallOutcome::Returned(value),
            Recorded::Rejected(reason) => CallOutcome::Rejected {
                error: Box::new(ModelRetry::new(reason.clone())),
                reason,
            },
            Recorded::Failed(message) => CallOutcome::Failed(Box::new(RecordedFailure { message })),
        }
    }
}

fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(message) = panic.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = panic.downcast_ref::<String>() {
        message.clone()
    } else {
        "a panic whose payload is not a string".to_owned()
    }
}
