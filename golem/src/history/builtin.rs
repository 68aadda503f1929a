//! The processors golem comes with: the last turns, old tool outputs cut, a token budget.

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::Value;

use super::HistoryProcessor;
use super::estimate::estimate_tokens;
use crate::context::RunContext;
use crate::error::BoxError;
use crate::model::{Message, ModelRequest, RequestPart, RetryPromptPart};

/// Sends only the last `n` turns of the conversation, a turn being a user prompt and
/// everything after it; the system prompt the conversation opened with is kept in front.
/// A conversation of `n` turns or fewer is sent whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeepLastTurns {
    turns: usize,
}

impl KeepLastTurns {
    /// Keeps the last `turns` turns (at least one).
    pub fn new(turns: usize) -> Self {
        KeepLastTurns {
            turns: turns.max(1),
        }
    }
}

impl<Deps: Send + Sync + 'static> HistoryProcessor<Deps> for KeepLastTurns {
    fn name(&self) -> &str {
        "keep_last_turns"
    }

    fn process<'a>(
        &'a self,
        _ctx: &'a RunContext<Deps>,
        messages: Vec<Message>,
    ) -> BoxFuture<'a, Result<Vec<Message>, BoxError>> {
        let starts = turn_starts(&messages);
        let kept = match starts.len().checked_sub(self.turns) {
            Some(first) if first > 0 => cut(messages, starts[first]),
            _ => messages,
        };
        futures_util::future::ready(Ok(kept)).boxed()
    }
}

/// Sends the outputs of tools the model has already read cut to a note, when they are
/// longer than `max_chars` characters (as text: a string's own, other JSON's compact form).
/// The results in the request being sent, which the model has not seen yet, are sent
/// whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrimToolOutputs {
    max_chars: usize,
}

impl TrimToolOutputs {
    /// Cuts earlier tool outputs longer than `max_chars` characters.
    pub fn new(max_chars: usize) -> Self {
        TrimToolOutputs { max_chars }
    }
}

impl<Deps: Send + Sync + 'static> HistoryProcessor<Deps> for TrimToolOutputs {
    fn name(&self) -> &str {
        "trim_tool_outputs"
    }

    fn process<'a>(
        &'a self,
        _ctx: &'a RunContext<Deps>,
        mut messages: Vec<Message>,
    ) -> BoxFuture<'a, Result<Vec<Message>, BoxError>> {
        let last = messages.len().saturating_sub(1);
        for message in &mut messages[..last] {
            let Message::Request(request) = message else {
                continue;
            };
            for part in &mut request.parts {
                if let RequestPart::ToolReturn(answer) = part {
                    let chars = match &answer.content {
                        Value::String(text) => text.chars().count(),
                        other => other.to_string().chars().count(),
                    };
                    if chars > self.max_chars {
                        answer.content = Value::String(format!(
                            "[The output of `{}` was {chars} characters; it was removed to \
                             save context. Call the tool again if you need it.]",
                            answer.tool_name
                        ));
                    }
                }
            }
        }
        futures_util::future::ready(Ok(messages)).boxed()
    }
}

/// Sends as many of the latest turns as fit in `budget` estimated tokens (see
/// [`estimate_tokens`]; the instructions and tool schemas are not counted), dropping the
/// oldest whole turns first and keeping the system prompt the conversation opened with.
/// The last turn is always sent, even when it alone is over the budget: pair it with
/// [`UsageLimits::request_tokens_limit`](crate::usage::UsageLimits::request_tokens_limit)
/// to refuse such a request instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FitTokens {
    budget: u64,
}

impl FitTokens {
    /// Keeps the history sent within `budget` estimated tokens.
    pub fn new(budget: u64) -> Self {
        FitTokens { budget }
    }
}

impl<Deps: Send + Sync + 'static> HistoryProcessor<Deps> for FitTokens {
    fn name(&self) -> &str {
        "fit_tokens"
    }

    fn process<'a>(
        &'a self,
        _ctx: &'a RunContext<Deps>,
        messages: Vec<Message>,
    ) -> BoxFuture<'a, Result<Vec<Message>, BoxError>> {
        let starts = turn_starts(&messages);
        let system = match opening_system(&messages) {
            parts if parts.is_empty() => 0,
            parts => estimate_tokens(&[Message::Request(ModelRequest::new(parts))]),
        };
        // The tokens from each message to the end.
        let mut from_here = vec![0; messages.len() + 1];
        for (index, message) in messages.iter().enumerate().rev() {
            from_here[index] =
                from_here[index + 1] + estimate_tokens(std::slice::from_ref(message));
        }
        let fits = starts
            .iter()
            .skip(1)
            .find(|&&start| system + from_here[start] <= self.budget);
        let kept = if from_here[0] <= self.budget {
            messages
        } else {
            match fits.or(starts.last()) {
                Some(&start) if start > 0 => cut(messages, start),
                _ => messages,
            }
        };
        futures_util::future::ready(Ok(kept)).boxed()
    }
}

/// Where each turn starts: the requests with a user prompt.
pub(super) fn turn_starts(messages: &[Message]) -> Vec<usize> {
    messages
        .iter()
        .enumerate()
        .filter(|(_, message)| {
            matches!(message, Message::Request(request)
                if request.parts.iter().any(|part| matches!(part, RequestPart::UserPrompt(_))))
        })
        .map(|(index, _)| index)
        .collect()
}

/// The messages from `start` on (a request with a user prompt), without the answers that
/// request gives to the response left out before it, and with the system prompt of the
/// first request in front.
fn cut(messages: Vec<Message>, start: usize) -> Vec<Message> {
    cut_with(messages, start, Vec::new())
}

/// As [`cut`], with `extra` parts after the system prompt (a summary of what was cut).
pub(super) fn cut_with(
    mut messages: Vec<Message>,
    start: usize,
    extra: Vec<RequestPart>,
) -> Vec<Message> {
    let mut front = opening_system(&messages);
    front.extend(extra);
    let mut kept = messages.split_off(start);
    if let Some(Message::Request(first)) = kept.first_mut() {
        first.parts.retain(|part| {
            !matches!(
                part,
                RequestPart::ToolReturn(_)
                    | RequestPart::RetryPrompt(RetryPromptPart {
                        tool_call_id: Some(_),
                        ..
                    })
            )
        });
        first.parts.splice(0..0, front);
    }
    kept
}

/// The system prompt parts of the first request: what the conversation opened with.
fn opening_system(messages: &[Message]) -> Vec<RequestPart> {
    match messages.first() {
        Some(Message::Request(first)) => first
            .parts
            .iter()
            .filter(|part| matches!(part, RequestPart::SystemPrompt(_)))
            .cloned()
            .collect(),
        _ => Vec::new(),
    }
}
