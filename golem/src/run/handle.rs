//! The handling step: the last response's calls that wait for approval, its function-tool
//! calls, then its output; what they cost is booked once all of it is known, and the
//! transcript's pending request answers every call.

use std::collections::BTreeMap;
use std::mem;
use std::sync::Arc;

use super::budget::Culprits;
use super::event::{EventSink, RunEvent, emit};
use super::failure::Failure;
use super::journal::Journal;
use super::output::{self, Answer, is_output_call};
use super::scope::{StepScope, Turn};
use super::state::{Approval, RunState};
use super::tools::{self, ToolsVerdict};
use super::transcript::{NOT_RUN, STOPPED_DURING_CALL};
use super::{RunResult, Step};
use crate::context::RunContext;
use crate::model::ToolCallPart;
use crate::output::Output;

/// Handles the last response of `state`'s transcript.
///
/// Its calls settle in the transcript as each ends, so a step dropped midway loses none of
/// them; the rejections, the output's verdict and what the round cost are booked after the
/// last await, all at once, so a dropped step books nothing twice.
pub(crate) async fn handle<Deps, O, J>(
    step: &StepScope<'_, Deps, O, J>,
    state: &mut RunState,
) -> Result<Step<O>, Failure>
where
    Deps: Send + Sync + 'static,
    O: Output,
    J: Journal,
{
    // The state's fields are named where they are used, rather than bound here: each
    // binding kept past an await would be one more pointer in this future.
    let turn = state.turns;
    let mut handling = state
        .transcript
        .handling()
        .expect("handle runs only when the history ends in a response");
    let response = handling.response;

    // The calls, output calls first, each kind in call order: without an allocation for a
    // response with one call.
    let is_output = |call: &ToolCallPart| is_output_call(&step.agent.output, call);
    let one: [&ToolCallPart; 1];
    let mut many: Vec<&ToolCallPart> = Vec::new();
    let calls: &[&ToolCallPart] = {
        let mut calls = response.tool_calls();
        match (calls.next(), calls.next()) {
            (None, _) => &[],
            (Some(call), None) => {
                one = [call];
                &one
            }
            (Some(_), Some(_)) => {
                many.extend(response.tool_calls());
                many.sort_by_key(|call| !is_output(call));
                &many
            }
        }
    };
    let (output_calls, function_calls) =
        calls.split_at(calls.iter().take_while(|call| is_output(call)).count());
    // The context the tools, the output function and the validators see, as of the
    // response: made only when one of them is there to see it.
    let output = &step.agent.output;
    let function_call = output_calls
        .first()
        .filter(|call| output.function(&call.tool_name).is_some());
    let ctx = (!function_calls.is_empty() || output::sees_context(output, function_call.is_some()))
        .then(|| {
            let ctx = RunContext::from_parts(Arc::clone(step.deps), state.usage.clone(), turn)
                .with_limits(*step.usage_limits())
                .with_events(step.events.map(EventSink::forward));
            match step.stop.calls_token() {
                Some(token) => ctx.with_cancellation(token),
                None => ctx,
            }
        });
    let scope = Turn {
        step,
        ctx: ctx.as_ref(),
        approvals: &state.approvals,
        turn,
        response,
    };

    // A call refused as a repeat does not run, so it waits for no one's approval.
    {
        let awaiting = step.tools.awaiting_approval(response, |call| {
            scope.approvals.contains_key(&call.tool_call_id)
                || tools::repetition(&scope, call, &handling).is_some()
        });
        if !awaiting.is_empty() {
            emit(step.events, || RunEvent::ApprovalRequired {
                turn,
                calls: awaiting.clone(),
            });
            state.awaiting_approval = awaiting;
            return Ok(Step::Paused);
        }
    }
    let not_run = || -> Vec<_> {
        output_calls
            .iter()
            .map(|call| call.answer(NOT_RUN))
            .collect()
    };
    // The output calls of a response whose function-tool calls fail the run, answered so
    // the history can be resumed (providers require every call to be answered): declined
    // when a budget ran out, not run otherwise.
    let answer_outputs = |failure: &Failure, verdict: ToolsVerdict, parts: &mut Vec<_>| {
        if failure.exhausted.is_some() {
            output::decline(output_calls, verdict, parts);
        } else {
            parts.extend(not_run());
        }
    };

    let live = if function_calls.is_empty() {
        tools::LiveErrors::new()
    } else {
        let calls = tools::to_run(&scope, function_calls, &handling);
        if let Err(limit) = step.usage_limits().check_tool_calls(&state.usage, calls) {
            handling.close(Vec::new(), NOT_RUN);
            clear(&mut state.approvals);
            return Err(Failure::limit(limit));
        }
        match tools::settle(
            &scope,
            function_calls,
            &mut handling,
            &state.retries,
            &mut state.usage,
        )
        .await
        {
            Ok(errors) => errors,
            Err(during) => {
                // What finished is kept and booked as it would have been without the stop:
                // a rejection costs its tool a retry (a stop and a resume buy no free
                // ones), and one beyond the budget, or a call that failed, fails the run
                // at the tool stage as it would have.
                let mut culprits = Culprits::default();
                let booked = tools::book(
                    &scope,
                    function_calls,
                    &handling,
                    &mut state.retries,
                    &mut culprits,
                    during.live,
                );
                culprits.book(scope.cost(), &mut state.usage);
                let mut parts: Vec<_> = during
                    .not_started
                    .iter()
                    .map(|call| call.answer(NOT_RUN))
                    .collect();
                let failure = match booked {
                    Some(failure) => {
                        let verdict = ToolsVerdict::of(function_calls, &handling);
                        answer_outputs(&failure, verdict, &mut parts);
                        Failure {
                            interrupted: during.interrupted,
                            ..failure
                        }
                    }
                    None => {
                        parts.extend(not_run());
                        Failure::interrupted(during.stopped, during.interrupted)
                    }
                };
                handling.close(parts, STOPPED_DURING_CALL);
                clear(&mut state.approvals);
                return Err(failure);
            }
        }
    };
    let verdict = ToolsVerdict::of(function_calls, &handling);
    let answer = if verdict.failed {
        Answer::None
    } else {
        // An output function sees the conversation so far, its call answered as accepted.
        let output_ctx = function_call.zip(ctx.as_ref()).map(|(call, ctx)| {
            let messages = handling.conversation(call, output::FINAL_RESULT_PROCESSED, |other| {
                if is_output_call(&step.agent.output, other) {
                    other.answer(output::OUTPUT_NOT_USED)
                } else {
                    other.answer(NOT_RUN)
                }
            });
            ctx.clone().with_messages(Arc::from(messages))
        });
        let output_scope = Turn {
            step,
            ctx: output_ctx.as_ref().or(ctx.as_ref()),
            approvals: scope.approvals,
            turn,
            response,
        };
        let evaluated = output::evaluate(
            &output_scope,
            response,
            output_calls,
            !function_calls.is_empty(),
            verdict,
            &state.retries,
        )
        .await;
        // What an output function spent through other agents.
        let delegated = function_call
            .zip(ctx.as_ref())
            .and_then(|(call, ctx)| ctx.take_delegated(&call.tool_call_id));
        if let Some(spent) = delegated {
            state.usage += &spent;
        }
        match evaluated {
            Ok(answer) => answer,
            Err((stopped, interrupted)) => {
                handling.close(not_run(), STOPPED_DURING_CALL);
                clear(&mut state.approvals);
                return Err(Failure::interrupted(
                    stopped,
                    interrupted.into_iter().collect(),
                ));
            }
        }
    };

    // Everything below is booked at once: no await until the transcript is closed.
    let mut culprits = Culprits::default();
    let mut parts = Vec::new();
    let booked = tools::book(
        &scope,
        function_calls,
        &handling,
        &mut state.retries,
        &mut culprits,
        live,
    );
    // A refused repeat over its budget does not fail a run whose answer in the same response
    // was accepted (ADR 0023): the model did what the refusal would have asked.
    let answered = !verdict.rejected && matches!(answer, Answer::Decoded { result: Ok(_), .. });
    let result = match booked {
        Some(failure) if !(failure.exhausted.is_some() && answered) => {
            answer_outputs(&failure, verdict, &mut parts);
            Err(failure)
        }
        Some(_) | None => output::book(
            &scope,
            answer,
            output_calls,
            &mut state.retries,
            &mut culprits,
            &mut parts,
        ),
    };
    culprits.book(scope.cost(), &mut state.usage);
    handling.close(parts, NOT_RUN);
    clear(&mut state.approvals);
    match result? {
        Some(output) => {
            emit(step.events, || RunEvent::OutputAccepted { turn });
            let (messages, new_from) = mem::take(&mut state.transcript).into_messages();
            Ok(Step::Finished(RunResult::new(
                output,
                messages,
                mem::take(&mut state.usage),
                new_from,
            )))
        }
        None => Ok(Step::Handled),
    }
}

/// Clears the decisions on the last response's calls; an empty map, the common case, is left
/// as it is without the cost of clearing it.
fn clear(approvals: &mut BTreeMap<String, Approval>) {
    if !approvals.is_empty() {
        approvals.clear();
    }
}
