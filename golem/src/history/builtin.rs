//! The processors golem comes with: the last turns, old tool outputs cut, a token budget.

use std::borrow::Cow;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::Value;

use super::HistoryProcessor;
use super::estimate::{estimate_tokens, output_chars};
use crate::context::RunContext;
use crate::error::BoxError;
use crate::model::{Message, ModelRequest, RequestPart, RetryPromptPart, ToolReturnPart};

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

    fn deterministic(&self) -> bool {
        true
    }

    fn process<'a>(
        &'a self,
        _ctx: &'a RunContext<Deps>,
        messages: Cow<'a, [Message]>,
    ) -> BoxFuture<'a, Result<Cow<'a, [Message]>, BoxError>> {
        let kept = match nth_turn_from_end(&messages, self.turns) {
            Some(start) if start > 0 => Cow::Owned(cut_with(&messages, start, Vec::new())),
            _ => messages,
        };
        futures_util::future::ready(Ok(kept)).boxed()
    }
}

/// Sends the outputs of tools the model has already read cut to a note, when they are
/// longer than `max_chars` characters (as text: a string's own, other JSON's compact form;
/// an image or a document the output holds counts as
/// [`MEDIA_PART_TOKENS`](super::MEDIA_PART_TOKENS) tokens' worth, and goes with the rest).
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

    /// How long `answer`'s output counts as, when it is over the limit.
    fn over(&self, answer: &ToolReturnPart) -> Option<usize> {
        let chars = output_chars(answer);
        (chars > self.max_chars).then_some(chars)
    }
}

impl<Deps: Send + Sync + 'static> HistoryProcessor<Deps> for TrimToolOutputs {
    fn name(&self) -> &str {
        "trim_tool_outputs"
    }

    fn deterministic(&self) -> bool {
        true
    }

    fn process<'a>(
        &'a self,
        _ctx: &'a RunContext<Deps>,
        messages: Cow<'a, [Message]>,
    ) -> BoxFuture<'a, Result<Cow<'a, [Message]>, BoxError>> {
        let read = messages.len().saturating_sub(1);
        let any = messages[..read].iter().any(|message| {
            matches!(message, Message::Request(request) if request.parts.iter().any(|part| {
                matches!(part, RequestPart::ToolReturn(answer) if self.over(answer).is_some())
            }))
        });
        if !any {
            return futures_util::future::ready(Ok(messages)).boxed();
        }
        let mut messages = messages.into_owned();
        for message in &mut messages[..read] {
            let Message::Request(request) = message else {
                continue;
            };
            for part in &mut request.parts {
                if let RequestPart::ToolReturn(answer) = part
                    && let Some(chars) = self.over(answer)
                {
                    let media = match answer
                        .media
                        .iter()
                        .filter(|m| m.as_text().is_none())
                        .count()
                    {
                        0 => String::new(),
                        1 => " with an image or a document".to_owned(),
                        n => format!(" with {n} images or documents"),
                    };
                    answer.content = Value::String(format!(
                        "[The output of `{}` was {chars} characters{media}; it was removed to \
                         save context. Call the tool again if you need it.]",
                        answer.tool_name
                    ));
                    answer.media.clear();
                }
            }
        }
        futures_util::future::ready(Ok(Cow::Owned(messages))).boxed()
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

    fn deterministic(&self) -> bool {
        true
    }

    fn process<'a>(
        &'a self,
        _ctx: &'a RunContext<Deps>,
        messages: Cow<'a, [Message]>,
    ) -> BoxFuture<'a, Result<Cow<'a, [Message]>, BoxError>> {
        let kept = match self.start(&messages) {
            Some(start) => Cow::Owned(cut_with(&messages, start, Vec::new())),
            None => messages,
        };
        futures_util::future::ready(Ok(kept)).boxed()
    }
}

impl FitTokens {
    /// Where the kept turns start, when some must go.
    fn start(&self, messages: &[Message]) -> Option<usize> {
        if estimate_tokens(messages) <= self.budget {
            return None;
        }
        let system = match opening_system(messages) {
            parts if parts.is_empty() => 0,
            parts => estimate_tokens(&[Message::Request(ModelRequest::new(parts))]),
        };
        // Walking back from the end, the earliest turn start whose turns still fit; the
        // last turn's start when even it does not.
        let mut tokens = system;
        let mut start = None;
        for (index, message) in messages.iter().enumerate().rev() {
            tokens += estimate_tokens(std::slice::from_ref(message));
            if is_turn_start(message) && index > 0 {
                if tokens > self.budget && start.is_some() {
                    break;
                }
                start = Some(index);
            }
        }
        start
    }
}

/// Whether `message` starts a turn: a request with a user prompt.
fn is_turn_start(message: &Message) -> bool {
    matches!(message, Message::Request(request) if request.has_user_prompt())
}

/// Where each turn starts: the requests with a user prompt.
pub(super) fn turn_starts(messages: &[Message]) -> Vec<usize> {
    messages
        .iter()
        .enumerate()
        .filter(|(_, message)| is_turn_start(message))
        .map(|(index, _)| index)
        .collect()
}

/// Where the `n`-th turn from the end starts, if there are that many.
fn nth_turn_from_end(messages: &[Message], n: usize) -> Option<usize> {
    messages
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, message)| is_turn_start(message))
        .nth(n.checked_sub(1)?)
        .map(|(index, _)| index)
}

/// The messages from `start` on (a request with a user prompt), without the answers that
/// request gives to the response left out before it, and with the system prompt of the
/// first request and then `extra` (a summary of what was cut) in front.
pub(super) fn cut_with(
    messages: &[Message],
    start: usize,
    extra: Vec<RequestPart>,
) -> Vec<Message> {
    let mut front = opening_system(messages);
    front.extend(extra);
    let mut kept = messages[start..].to_vec();
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::model::{BinaryContent, ModelResponse, ResponsePart, ToolCallPart, ToolContent};

    #[tokio::test]
    async fn a_read_outputs_media_count_toward_the_limit_and_go_with_it() {
        let chart = ToolContent::new("ok").with(BinaryContent::new(vec![7u8; 64], "image/png"));
        let answer = ToolReturnPart::new("chart", "c1", chart);
        let messages = [
            Message::Request(ModelRequest::user_prompt("Chart it")),
            Message::from(ModelResponse::new(vec![ResponsePart::ToolCall(
                ToolCallPart::new("chart", json!({}), "c1"),
            )])),
            Message::Request(ModelRequest::new(vec![RequestPart::ToolReturn(answer)])),
            Message::from(ModelResponse::text("Done.")),
            Message::Request(ModelRequest::user_prompt("Again?")),
        ];
        let trim = TrimToolOutputs::new(100);
        let ctx = RunContext::new(());
        let sent = HistoryProcessor::<()>::process(&trim, &ctx, Cow::Borrowed(&messages[..]))
            .await
            .expect("trims");
        let Message::Request(request) = &sent[2] else {
            panic!("the tool's answer")
        };
        let RequestPart::ToolReturn(answer) = &request.parts[0] else {
            panic!("the tool's answer")
        };
        assert_eq!(
            answer.content,
            json!(
                "[The output of `chart` was 6002 characters with an image or a document; it \
                 was removed to save context. Call the tool again if you need it.]"
            )
        );
        assert!(answer.media.is_empty());
    }
}
