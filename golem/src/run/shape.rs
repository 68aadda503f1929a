//! What a request sends of the history: the pending request staged in it, older turns
//! summarised, the history processors run, and the request's tokens checked against the
//! run's limit, each through the journal where it decides what the run does.

use std::borrow::Cow;
use std::pin::pin;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::failure::Failure;
use super::journal::{self, Journal, JournalStep};
use super::scope::StepScope;
use super::state::RunState;
use super::stop::StepStopped;
use crate::context::RunContext;
use crate::error::Stage;
use crate::history::{self, Plan, Summarize, Summary};
use crate::model::{Message, ModelError, ModelResponse, RequestParams};
use crate::output::Output;
use crate::usage::Usage;

/// What the request sends of the history (the pending request staged in it): summarised,
/// then as the history processors leave it, and checked against the limit on one request's
/// tokens; `None` when that is the history as it is.
pub(super) async fn shape<Deps, O, J>(
    step: &StepScope<'_, Deps, O, J>,
    state: &mut RunState,
    params: &RequestParams,
) -> Result<Option<Vec<Message>>, Failure>
where
    Deps: Send + Sync + 'static,
    O: Output,
    J: Journal,
{
    let next_turn = state.turns + 1;
    let RunState {
        transcript,
        usage,
        summary,
        ..
    } = state;
    let mut view = transcript.sendable();
    if let Some(summarize) = &step.agent.summarize {
        view = summarized(step, usage, summary, next_turn, summarize, view).await?;
    }
    let processors = &step.agent.history_processors;
    let ctx;
    if !processors.is_empty() {
        ctx = RunContext::from_parts(Arc::clone(step.deps), usage.clone(), next_turn);
        if step.journal.records() && !processors.iter().all(|p| p.deterministic()) {
            view = Box::pin(processed_in(step, ctx.clone(), view, next_turn)).await?;
        } else {
            let processing = history::process(processors, &ctx, view);
            let processed = step
                .stop
                .race(pin!(processing))
                .await
                .map_err(Failure::stopped)?;
            view = processed.map_err(|error| Failure::new(Stage::Input, error))?;
        }
    }
    let limits = step.usage_limits();
    if limits.request_tokens().is_some() {
        let ask = limits.counts_request_tokens();
        // The count decides whether the request goes. Under a journal it is a step when it
        // may come out otherwise on replay: the provider's, or an estimate over instructions
        // that functions made, which may say something else on replay.
        let counted = if step.journal.records() && (ask || !step.agent.instructions_fns.is_empty())
        {
            Box::pin(count_in(step, &view, params, next_turn, ask)).await?
        } else if !ask {
            None
        } else {
            let counting = step.model().count_tokens(&view, params);
            let counted = step
                .stop
                .race(pin!(counting))
                .await
                .map_err(Failure::stopped)?;
            counted.map_err(|error| Failure::new(Stage::Model, error))?
        };
        let tokens = counted.unwrap_or_else(|| history::estimate_request_tokens(&view, params));
        limits
            .check_request_tokens(tokens)
            .map_err(Failure::limit)?;
    }
    let whole = transcript.messages();
    Ok(match view {
        Cow::Borrowed(sent) if std::ptr::eq(sent, whole) => None,
        view => Some(view.into_owned()),
    })
}

/// The input tokens of `view` with `params`, as the journal step of `turn`'s count: made
/// now (the provider's count when `ask`, else or when it gives none the estimate), or read
/// from the journal on replay.
async fn count_in<Deps, O, J>(
    step: &StepScope<'_, Deps, O, J>,
    view: &[Message],
    params: &RequestParams,
    turn: u32,
    ask: bool,
) -> Result<Option<u64>, Failure>
where
    Deps: Send + Sync + 'static,
    O: Output,
    J: Journal,
{
    // An owned step, so the journal's engine can run it wherever it runs steps.
    let (model, view, params) = (Arc::clone(step.model()), view.to_vec(), params.clone());
    let count = async move {
        let counted = if ask {
            model.count_tokens(&view, &params).await?
        } else {
            None
        };
        let tokens = counted.unwrap_or_else(|| history::estimate_request_tokens(&view, &params));
        Ok(serde_json::to_value(tokens)?)
    };
    let recorded = journaled(
        step,
        journal::count_step(turn),
        Box::pin(count),
        Stage::Model,
    )
    .await?;
    serde_json::from_value(recorded)
        .map_err(|error| Failure::new(Stage::Model, ModelError::other(error)))
}

/// What the history processors send of `view`, as the journal step `history:{turn}`:
/// processed now and recorded, or read from the journal on replay. The record holds no
/// message of the history again: `null` when the processors send `view` as it is, else each
/// message sent, as the index of a message of `view` sent unchanged (`{"kept": 3}`) or whole
/// when it is new.
async fn processed_in<'v, Deps, O, J>(
    step: &StepScope<'_, Deps, O, J>,
    ctx: RunContext<Deps>,
    view: Cow<'v, [Message]>,
    turn: u32,
) -> Result<Cow<'v, [Message]>, Failure>
where
    Deps: Send + Sync + 'static,
    O: Output,
    J: Journal,
{
    // An owned step, so the journal's engine can run it wherever it runs steps.
    let (agent, messages) = (Arc::clone(step.agent), view.to_vec());
    let processing = async move {
        let given = Cow::Borrowed(&messages[..]);
        let processed = history::process(&agent.history_processors, &ctx, given).await?;
        Ok(if processed[..] == messages[..] {
            serde_json::Value::Null
        } else {
            serde_json::to_value(Sent::record(&messages, &processed))?
        })
    };
    let name = journal::history_step(turn);
    let recorded = journaled(step, name, Box::pin(processing), Stage::Input).await?;
    if recorded.is_null() {
        return Ok(view);
    }
    let sent = serde_json::from_value::<Vec<Sent<'_>>>(recorded)
        .map_err(|error| Failure::new(Stage::Input, error))?;
    sent.into_iter()
        .map(|sent| sent.read(&view))
        .collect::<Result<Vec<_>, _>>()
        .map(Cow::Owned)
        .map_err(|error| Failure::new(Stage::Input, error))
}

/// What the journal step `name` gave: `run` made now and recorded, or its record on
/// replay; the run stopped when the step was, and failed at `stage` when it failed.
async fn journaled<Deps, O, J>(
    step: &StepScope<'_, Deps, O, J>,
    name: String,
    run: JournalStep,
    stage: Stage,
) -> Result<serde_json::Value, Failure>
where
    O: Output,
    J: Journal,
{
    journal::step_until(step.journal, step.stop, name, run)
        .await
        .map_err(|stop| Failure::stopped(stop.stopped))?
        .map_err(|error| Failure::new(stage, error))
}

/// One message the history processors sent, as `history:{turn}` records it.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Sent<'m> {
    /// A message of the history, sent as it is.
    Kept(Kept),
    /// A message of the processors' own.
    New(Cow<'m, Message>),
}

/// The index of a message of the history.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Kept {
    kept: usize,
}

impl<'m> Sent<'m> {
    /// `sent` as references into `given` where its messages are `given`'s, in order.
    fn record(given: &[Message], sent: &'m [Message]) -> Vec<Self> {
        let mut from = 0;
        sent.iter()
            .map(
                |message| match given[from..].iter().position(|m| m == message) {
                    Some(at) => {
                        from += at + 1;
                        Sent::Kept(Kept { kept: from - 1 })
                    }
                    None => Sent::New(Cow::Borrowed(message)),
                },
            )
            .collect()
    }

    /// The message this record stands for, `given` being the history it was made from.
    fn read(self, given: &[Message]) -> Result<Message, String> {
        match self {
            Sent::Kept(Kept { kept }) => given.get(kept).cloned().ok_or_else(|| {
                format!(
                    "the journal's history step keeps message {kept} of a history of {}",
                    given.len()
                )
            }),
            Sent::New(message) => Ok(message.into_owned()),
        }
    }
}

/// The pending request staged in the history while the request is shaped: taken back out
/// when dropped, unless [kept](Self::keep) because the request goes out.
pub(super) struct Staging<'s> {
    state: Option<&'s mut RunState>,
    staged: bool,
}

impl<'s> Staging<'s> {
    pub(super) fn new(state: &'s mut RunState) -> Self {
        let staged = state.transcript.stage();
        Staging {
            state: Some(state),
            staged,
        }
    }

    pub(super) fn state(&mut self) -> &mut RunState {
        self.state
            .as_deref_mut()
            .expect("staged until kept or dropped")
    }

    pub(super) fn keep(mut self) {
        self.state = None;
    }
}

impl Drop for Staging<'_> {
    fn drop(&mut self) {
        if let Some(state) = self.state.take() {
            state.transcript.unstage(self.staged);
        }
    }
}

/// `view` with the older turns summarised, as `summarize` plans it: the summary the run
/// state records, one the agent remembers, or a new one asked of the summary model (the
/// journal step `summary:{turn}` in a durable run), counted in the usage and recorded in the
/// state.
async fn summarized<'v, Deps, O, J>(
    step: &StepScope<'_, Deps, O, J>,
    usage: &mut Usage,
    recorded: &mut Option<Summary>,
    turn: u32,
    summarize: &Summarize,
    view: Cow<'v, [Message]>,
) -> Result<Cow<'v, [Message]>, Failure>
where
    Deps: Send + Sync + 'static,
    O: Output,
    J: Journal,
{
    let summarized = match summarize.plan(&view, recorded.as_ref(), step.journal.records()) {
        Plan::Send(summarized) => summarized,
        Plan::Ask {
            covers,
            digest,
            request,
        } => {
            // The summary is a request of the run's, and so is the one it is made for: it is
            // asked only when both fit under the run's request limit.
            let both = Usage {
                requests: usage.requests.saturating_add(1),
                ..Usage::default()
            };
            step.usage_limits()
                .check_before_request(&both)
                .map_err(Failure::limit)?;
            let (messages, params) = *request;
            let model = Arc::clone(&summarize.model);
            let asked = if step.journal.records() {
                let ask = async move {
                    let response = model.request(&messages, &params).await?;
                    Ok(serde_json::to_value(response)?)
                };
                let name = journal::summary_step(turn);
                journal::step_until(step.journal, step.stop, name, Box::pin(ask))
                    .await
                    .map(|recorded| {
                        recorded
                            .and_then(|value| Ok(serde_json::from_value::<ModelResponse>(value)?))
                    })
            } else {
                step.stop
                    .race(model.request(&messages, &params))
                    .await
                    .map(|response| response.map_err(Into::into))
                    .map_err(|stopped| StepStopped::new(stopped, true))
            };
            let response = match asked {
                Ok(response) => response.map_err(|error| Failure::new(Stage::Model, error))?,
                Err(stop) => {
                    // A request that was sent counts, though nothing came back.
                    if stop.began {
                        usage.requests += 1;
                        usage.summaries.requests += 1;
                    }
                    return Err(Failure::stopped(stop.stopped));
                }
            };
            *usage += &response.usage;
            usage.summaries += response.usage.cost();
            let summary = Summary::of(covers, digest, &response);
            summarize.remember(&summary);
            let applied = summary.apply(&view);
            Some((summary, applied))
        }
    };
    Ok(match summarized {
        Some((summary, applied)) => {
            *recorded = Some(summary);
            Cow::Owned(applied)
        }
        None => view,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ModelRequest, ModelResponse};

    #[test]
    fn a_recorded_history_names_the_messages_it_kept_and_reads_back_whole() {
        let given = vec![
            Message::Request(ModelRequest::user_prompt("one")),
            Message::Response(ModelResponse::text("1").into()),
            Message::Request(ModelRequest::user_prompt("two")),
            Message::Response(ModelResponse::text("2").into()),
            Message::Request(ModelRequest::user_prompt("three")),
        ];
        let summary = Message::Request(ModelRequest::user_prompt("They counted to two."));
        let sent = vec![summary.clone(), given[3].clone(), given[4].clone()];

        let recorded = serde_json::to_value(Sent::record(&given, &sent)).expect("JSON");

        assert_eq!(
            recorded,
            serde_json::json!([summary, {"kept": 3}, {"kept": 4}])
        );
        let read = serde_json::from_value::<Vec<Sent<'_>>>(recorded)
            .expect("a record")
            .into_iter()
            .map(|sent| sent.read(&given))
            .collect::<Result<Vec<_>, _>>();
        assert_eq!(read, Ok(sent));
        assert_eq!(
            Sent::Kept(Kept { kept: 5 }).read(&given),
            Err("the journal's history step keeps message 5 of a history of 5".to_owned())
        );
    }
}
