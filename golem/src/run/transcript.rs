//! [`Transcript`]: the messages a run exchanged and the request it sends next, changed only
//! through transitions that keep every tool call answered.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::model::{
    FinishReason, Message, ModelRequest, ModelResponse, RequestPart, ResponsePart, ToolCallPart,
};

/// The answer of a call the run did not get to make. Every call in a history is answered, so
/// the history stays valid for providers when it is continued; the text never includes an
/// error's own message.
pub(crate) const NOT_RUN: &str = "Not run: the run stopped before this call.";
/// The answer of a call that was running when the run was stopped.
pub(crate) const STOPPED_DURING_CALL: &str = "Not finished: the run was stopped during this call.";
/// The answer of a call that failed terminally; the error's own text is never shown.
const TOOL_FAILED: &str = "The tool failed; the run stopped.";

/// The history of a run and the request it sends next.
///
/// Two invariants hold after every transition: when anything is sent, every tool call in the
/// history is answered; and the pending request, when there is one after a response, answers
/// that response's calls. The run changes the history only through these methods:
///
/// - [`send`](Self::send) puts the pending request into the history, to be sent;
/// - [`record_response`](Self::record_response) adds the answer to it, or
///   [`record_unused`](Self::record_unused) one the run will not act on (cut off by a stop,
///   truncated, filtered, over a limit), whose calls are answered as not run;
/// - [`handling`](Self::handling) gives the last response's calls to settle one by one as
///   each finishes ([`Handling::settle`]), so a step dropped midway keeps what finished, and
///   [`Handling::close`] answers them all in the pending request;
/// - [`push_prompt`](Self::push_prompt) continues with a prompt, answering as not run the
///   calls of a response that was not handled;
/// - [`flush`](Self::flush) ends a failed run with the answers it has in the history.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Transcript {
    messages: Vec<Message>,
    pending: Option<ModelRequest>,
    /// How the last response's calls that finished ended; cleared when the response's
    /// handling closes.
    settled: Outcomes,
    /// The index of the first message this run added.
    start: usize,
}

/// What the run does next with its transcript.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// Send a request: the pending one, or the history as it ends in a request.
    Send,
    /// Handle the last response: its tool calls and its output.
    Handle,
    /// Nothing: the history is empty.
    Nothing,
}

/// How one call of the last response ended, kept in the transcript from the moment it
/// finishes until the response's handling closes. Its `Debug` shows a returned tool's media
/// as their descriptions, never their bytes.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Settled {
    /// The tool returned this value.
    Returned(Value),
    /// The tool rejected the call with this feedback for the model.
    Rejected(String),
    /// The tool failed terminally, with this error message.
    Failed(String),
    /// The caller denied the call, for this reason.
    Denied(String),
    /// The call was not made: the model already had its result, as this feedback says.
    /// Charged like a rejection, but it does not hold back an answer in the same response.
    Repeated(String),
}

impl std::fmt::Debug for Settled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Settled::Returned(value) => f
                .debug_tuple("Returned")
                .field(&crate::model::media::DebugValue(value))
                .finish(),
            Settled::Rejected(text) => f.debug_tuple("Rejected").field(text).finish(),
            Settled::Failed(text) => f.debug_tuple("Failed").field(text).finish(),
            Settled::Denied(text) => f.debug_tuple("Denied").field(text).finish(),
            Settled::Repeated(text) => f.debug_tuple("Repeated").field(text).finish(),
        }
    }
}

impl Settled {
    /// The call's answer in the next request, made of this outcome.
    fn into_answer(self, call: &ToolCallPart) -> RequestPart {
        match self {
            Settled::Returned(value) => call.answer(value),
            Settled::Rejected(reason) | Settled::Repeated(reason) => call.reject(reason),
            Settled::Failed(_) => call.answer(TOOL_FAILED),
            Settled::Denied(reason) => call.answer(denial_text(&reason)),
        }
    }
}

/// The outcomes of the last response's calls that finished, in the order they finished,
/// each under the index of its call among the response's parts (call ids are unique in a
/// response, so the index names the call without a copy of its id); a response has few
/// calls, so a list beats a map.
#[derive(Debug, Clone, PartialEq, Default)]
struct Outcomes(Vec<(usize, Settled)>);

impl Outcomes {
    fn get(&self, part: usize) -> Option<&Settled> {
        self.0
            .iter()
            .find(|(settled_part, _)| *settled_part == part)
            .map(|(_, settled)| settled)
    }

    fn take(&mut self, part: usize) -> Option<Settled> {
        let index = self
            .0
            .iter()
            .position(|(settled_part, _)| *settled_part == part)?;
        Some(self.0.swap_remove(index).1)
    }

    fn insert(&mut self, part: usize, outcome: Settled) {
        match self
            .0
            .iter_mut()
            .find(|(settled_part, _)| *settled_part == part)
        {
            Some((_, settled)) => *settled = outcome,
            None => self.0.push((part, outcome)),
        }
    }

    fn clear(&mut self) {
        self.0.clear();
    }
}

/// The index among `response`'s parts of its call `tool_call_id`.
fn part_of(response: &ModelResponse, tool_call_id: &str) -> Option<usize> {
    response
        .indexed_calls()
        .find(|(_, call)| call.tool_call_id == tool_call_id)
        .map(|(part, _)| part)
}

/// How a denied call's answer starts.
const DENIED: &str = "This call was denied and did not run: ";

/// What a denied call's answer says.
pub(crate) fn denial_text(reason: &str) -> String {
    format!("{DENIED}{reason}")
}

impl Transcript {
    /// A transcript that sends `pending` after `messages`, or goes on from `messages` as they
    /// are when there is nothing pending.
    pub(crate) fn new(messages: Vec<Message>, pending: Option<ModelRequest>) -> Self {
        Transcript {
            start: messages.len(),
            messages,
            pending,
            settled: Outcomes::default(),
        }
    }

    /// A transcript from saved fields, as a [`RunState`](super::RunState) stores them.
    pub(crate) fn from_saved(
        messages: Vec<Message>,
        pending: Option<ModelRequest>,
        settled: BTreeMap<String, Settled>,
        start: usize,
    ) -> Self {
        let settled = match messages.last() {
            Some(Message::Response(response)) => Outcomes(
                settled
                    .into_iter()
                    .filter_map(|(id, settled)| Some((part_of(response, &id)?, settled)))
                    .collect(),
            ),
            _ => Outcomes::default(),
        };
        Transcript {
            start: start.min(messages.len()),
            messages,
            pending,
            settled,
        }
    }

    /// A transcript that continues `history` with the request `parts`: a history that ends
    /// in a request gets them in that request; one that ends in a response gets them after
    /// answers, as not run, to that response's calls.
    pub(crate) fn continued(mut history: Vec<Message>, parts: Vec<RequestPart>) -> Self {
        let mut start = history.len();
        let request = match history.pop() {
            Some(Message::Request(mut request)) => {
                start -= 1;
                request.parts.extend(parts);
                request
            }
            Some(Message::Response(response)) => {
                let mut answers = not_run(&response);
                answers.extend(parts);
                history.push(Message::Response(response));
                ModelRequest::new(answers)
            }
            None => ModelRequest::new(parts),
        };
        Transcript {
            messages: history,
            pending: Some(request),
            settled: Outcomes::default(),
            start,
        }
    }

    /// What was exchanged.
    pub(crate) fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// Adds `message` to the history, making room for a few turns at once when it is full:
    /// a message is a few hundred bytes, and growing the list one doubling at a time moved
    /// them all at each turn of a short run.
    fn push(&mut self, message: Message) {
        if self.messages.len() == self.messages.capacity() {
            self.messages
                .reserve(self.messages.len().max(MESSAGES_AHEAD));
        }
        self.messages.push(message);
    }

    /// Makes the messages added from now on those of a new run.
    pub(crate) fn start_here(&mut self) {
        self.start = self.messages.len();
    }

    /// The messages this run added to the history it started from.
    pub(crate) fn new_messages(&self) -> &[Message] {
        &self.messages[self.start.min(self.messages.len())..]
    }

    /// The request sent next, not yet in the history.
    pub(crate) fn pending(&self) -> Option<&ModelRequest> {
        self.pending.as_ref()
    }

    /// The outcomes of the last response's calls that finished, by call id.
    pub(crate) fn settled(&self) -> BTreeMap<String, Settled> {
        let Some(Message::Response(response)) = self.messages.last() else {
            return BTreeMap::new();
        };
        self.settled
            .0
            .iter()
            .filter_map(|(part, settled)| {
                let call = response.call_at(*part)?;
                Some((call.tool_call_id.clone(), settled.clone()))
            })
            .collect()
    }

    /// What the run does next.
    pub(crate) fn next(&self) -> Next {
        if self.pending.is_some() {
            return Next::Send;
        }
        match self.messages.last() {
            Some(Message::Request(_)) => Next::Send,
            Some(Message::Response(_)) => Next::Handle,
            None => Next::Nothing,
        }
    }

    /// Puts the pending request into the history and returns what to send: the history as
    /// [`sendable`] makes it.
    pub(crate) fn send(&mut self) -> Cow<'_, [Message]> {
        debug_assert_eq!(self.next(), Next::Send);
        if let Some(request) = self.pending.take() {
            self.push(Message::Request(request));
        }
        sendable(&self.messages)
    }

    /// Puts the pending request into the history ahead of [`send`](Self::send), so what
    /// would be sent can be read in place ([`sendable`](Self::sendable)) by steps that may
    /// still fail the request; says whether there was one, for [`unstage`](Self::unstage).
    pub(crate) fn stage(&mut self) -> bool {
        match self.pending.take() {
            Some(request) => {
                self.push(Message::Request(request));
                true
            }
            None => false,
        }
    }

    /// Takes back what [`stage`](Self::stage) put into the history, when the request is not
    /// sent after all.
    pub(crate) fn unstage(&mut self, staged: bool) {
        if staged && let Some(Message::Request(request)) = self.messages.pop() {
            self.pending = Some(request);
        }
    }

    /// What the history sends as it is now (see [`sendable`]).
    pub(crate) fn sendable(&self) -> Cow<'_, [Message]> {
        sendable(&self.messages)
    }

    /// Adds the response to the request just sent, its calls named uniquely.
    pub(crate) fn record_response(&mut self, mut response: ModelResponse) -> &Arc<ModelResponse> {
        debug_assert!(matches!(self.messages.last(), Some(Message::Request(_))));
        name_calls(&mut response, self.messages.len());
        self.settled.clear();
        self.push(Message::Response(Arc::new(response)));
        self.last_response()
    }

    /// Adds a response the run will not act on: the pending request answers its calls as
    /// not run and says why (`note`), so going on sends a new request instead of handling it.
    pub(crate) fn record_unused(
        &mut self,
        response: ModelResponse,
        note: &str,
    ) -> &Arc<ModelResponse> {
        self.record_response(response);
        self.pending = Some(unused(self.last_response(), note));
        self.last_response()
    }

    fn last_response(&self) -> &Arc<ModelResponse> {
        match self.messages.last() {
            Some(Message::Response(response)) => response,
            _ => unreachable!("a response was just added"),
        }
    }

    /// The last response, to handle its calls, when that is what the run does next.
    pub(crate) fn handling(&mut self) -> Option<Handling<'_>> {
        if self.pending.is_some() {
            return None;
        }
        match self.messages.last() {
            Some(Message::Response(response)) => Some(Handling {
                response,
                earlier: &self.messages[..self.messages.len() - 1],
                settled: &mut self.settled,
                pending: &mut self.pending,
            }),
            _ => None,
        }
    }

    /// Goes back to the request at `turn`, which has a user prompt: the messages before it
    /// stay, it is sent next, and everything after it is dropped. `false`, and nothing
    /// changed, when there is no such request.
    pub(crate) fn rewind(&mut self, turn: usize) -> bool {
        match self.messages.get(turn) {
            Some(Message::Request(request)) if request.has_user_prompt() => {}
            _ => return false,
        }
        let Some(Message::Request(request)) = self.messages.drain(turn..).next() else {
            return false;
        };
        self.pending = Some(request);
        self.settled = Outcomes::default();
        self.start = self.start.min(turn);
        true
    }

    /// Puts `prompt` in place of the user prompts of the request sent next (where the first
    /// was). `false`, and nothing changed, when that request has none.
    pub(crate) fn replace_prompt(&mut self, prompt: RequestPart) -> bool {
        let Some(request) = self
            .pending
            .as_mut()
            .filter(|request| request.has_user_prompt())
        else {
            return false;
        };
        let mut prompt = Some(prompt);
        request.parts = std::mem::take(&mut request.parts)
            .into_iter()
            .filter_map(|part| match part {
                RequestPart::UserPrompt(_) => prompt.take(),
                other => Some(other),
            })
            .collect();
        true
    }

    /// Adds a user prompt to the request sent next: after the pending request's parts, or,
    /// after a response that was not handled, after answers to its calls as not run.
    pub(crate) fn push_prompt(&mut self, prompt: RequestPart) {
        if let Some(handling) = self.handling() {
            handling.close(Vec::new(), NOT_RUN);
        }
        match &mut self.pending {
            Some(request) => request.parts.push(prompt),
            None => self.pending = Some(ModelRequest::new(vec![prompt])),
        }
    }

    /// Ends a failed run's transcript: a pending request that answers the last response
    /// goes into the history, so every call there is answered. A response the run had not
    /// handled stays last, to be handled when the run goes on (its settled calls keep their
    /// outcomes), and a history that ends in the prompt of a run that sent nothing keeps it
    /// pending.
    pub(crate) fn flush(&mut self) {
        if matches!(self.messages.last(), Some(Message::Response(_)))
            && let Some(request) = self.pending.take()
        {
            self.messages.push(Message::Request(request));
        }
    }

    /// The history, with the pending request in it, and where this run's messages start.
    pub(crate) fn into_messages(mut self) -> (Vec<Message>, usize) {
        if let Some(request) = self.pending.take() {
            self.messages.push(Message::Request(request));
        }
        (self.messages, self.start)
    }

    /// Takes the history as it is, pending request apart.
    pub(crate) fn into_parts(self) -> (Vec<Message>, Option<ModelRequest>, usize) {
        (self.messages, self.pending, self.start)
    }

    /// Brings a transcript saved by version 1 of the run state up to version 2: a last
    /// response the run did not act on (cut off, truncated, filtered) was left to be
    /// handled, and is now followed by a request that says why it was not used.
    pub(crate) fn migrate_v1(&mut self) {
        if self.pending.is_some() {
            return;
        }
        let Some(Message::Response(response)) = self.messages.last() else {
            return;
        };
        let note = match response.finish_reason {
            Some(FinishReason::Incomplete) => INTERRUPTED,
            Some(FinishReason::Length) => TRUNCATED,
            Some(FinishReason::ContentFilter) => FILTERED,
            _ => return,
        };
        self.pending = Some(unused(response, note));
    }
}

/// Why a response was not used, as the next request tells the model.
pub(crate) const INTERRUPTED: &str =
    "The previous response was interrupted before it was complete; it was not used. Respond again.";
pub(crate) const TRUNCATED: &str =
    "The previous response was cut off at the output token limit; it was not used. Respond again.";
pub(crate) const FILTERED: &str = "The previous response was stopped by the provider's content filter; it was not used. Respond again.";
pub(crate) const OVER_LIMIT: &str =
    "The previous response went over the run's usage limit; it was not used.";

/// The handling of the last response: its calls settle one by one, then
/// [`close`](Self::close) answers every call in the pending request.
#[derive(Debug)]
pub(crate) struct Handling<'a> {
    /// The response being handled.
    pub(crate) response: &'a Arc<ModelResponse>,
    /// The history before it.
    earlier: &'a [Message],
    settled: &'a mut Outcomes,
    pending: &'a mut Option<ModelRequest>,
}

impl<'a> Handling<'a> {
    /// How the call `tool_call_id` ended, if it finished.
    pub(crate) fn settled(&self, tool_call_id: &str) -> Option<&Settled> {
        // Only the settled calls' ids are compared: none while no call has finished.
        self.settled
            .0
            .iter()
            .find(|(part, _)| {
                self.response
                    .call_at(*part)
                    .is_some_and(|call| call.tool_call_id == tool_call_id)
            })
            .map(|(_, settled)| settled)
    }

    /// The conversation as it will be once the output call `accepted` is accepted: the
    /// history, the response, and a request answering its calls, each settled one with its
    /// outcome, `accepted` with `answer`, and any other with what `other` says.
    pub(crate) fn conversation(
        &self,
        accepted: &ToolCallPart,
        answer: &str,
        other: impl Fn(&ToolCallPart) -> RequestPart,
    ) -> Vec<Message> {
        let answers: Vec<RequestPart> = self
            .response
            .indexed_calls()
            .map(|(part, call)| match self.settled.get(part) {
                Some(settled) => settled.clone().into_answer(call),
                None if call.tool_call_id == accepted.tool_call_id => call.answer(answer),
                None => other(call),
            })
            .collect();
        let mut messages = Vec::with_capacity(self.earlier.len() + 2);
        messages.extend_from_slice(self.earlier);
        messages.push(Message::Response(Arc::clone(self.response)));
        messages.push(Message::Request(ModelRequest::new(answers)));
        messages
    }

    /// What the tool of `call` returned the last time, when it has returned for arguments
    /// equal to `call`'s (as JSON values) `times` times in a row since the user's last
    /// prompt: walking back through the history, a call of that tool with other arguments
    /// ends the streak, and calls that did not return (rejected, denied, not run) are passed
    /// over.
    pub(crate) fn repeated(&self, call: &ToolCallPart, times: u32) -> Option<&'a Value> {
        let args = Arguments::of(&call.args);
        let mut streak = 0;
        let mut last = None;
        let mut answers: Option<&ModelRequest> = None;
        for message in self.earlier.iter().rev() {
            let response = match message {
                Message::Request(request) => {
                    if request.has_user_prompt() {
                        return None;
                    }
                    answers = Some(request);
                    continue;
                }
                Message::Response(response) => response,
            };
            let answered = answers.take();
            let calls = response.parts.iter().rev().filter_map(|part| match part {
                ResponsePart::ToolCall(call) => Some(call),
                _ => None,
            });
            for earlier in calls {
                if earlier.tool_name != call.tool_name {
                    continue;
                }
                if Arguments::of(&earlier.args) != args {
                    return None;
                }
                let returned = answered.and_then(|request| {
                    request.parts.iter().find_map(|part| match part {
                        RequestPart::ToolReturn(answer)
                            if answer.tool_call_id == earlier.tool_call_id
                                && !is_golem_note(&answer.content) =>
                        {
                            Some(&answer.content)
                        }
                        _ => None,
                    })
                });
                if let Some(value) = returned {
                    last = last.or(Some(value));
                    streak += 1;
                    if streak >= times {
                        return last;
                    }
                }
            }
        }
        None
    }

    /// Records how the call `tool_call_id` ended, the moment it ends.
    pub(crate) fn settle(&mut self, tool_call_id: &str, outcome: Settled) {
        if let Some(part) = part_of(self.response, tool_call_id) {
            self.settled.insert(part, outcome);
        }
    }

    /// Ends the handling: the pending request answers every call of the response in call
    /// order (each settled call with its outcome, each call `parts` does not answer with
    /// `unanswered`), followed by `parts`.
    pub(crate) fn close(self, parts: Vec<RequestPart>, unanswered: &str) {
        let answered_in_parts = |id: &str| parts.iter().any(|part| answers(part, id));
        let mut answers: Vec<RequestPart> = Vec::with_capacity(parts.len() + self.settled.0.len());
        for (part, call) in self.response.indexed_calls() {
            match self.settled.take(part) {
                Some(settled) => answers.push(settled.into_answer(call)),
                None if answered_in_parts(&call.tool_call_id) => {}
                None => answers.push(call.answer(unanswered)),
            }
        }
        answers.extend(parts);
        self.settled.clear();
        if !answers.is_empty() {
            *self.pending = Some(ModelRequest::new(answers));
        }
    }
}

/// A call's arguments as the repeated-call check compares them: as JSON values, or as
/// text when they are not JSON.
#[derive(PartialEq)]
enum Arguments<'a> {
    Json(Value),
    Text(&'a str),
}

impl<'a> Arguments<'a> {
    fn of(args: &'a str) -> Self {
        match serde_json::from_str(args) {
            Ok(value) => Arguments::Json(value),
            Err(_) => Arguments::Text(args.trim()),
        }
    }
}

/// Whether `content` is one of golem's own answers to a call that did not return: not run,
/// stopped during the call, failed or denied.
fn is_golem_note(content: &Value) -> bool {
    match content {
        Value::String(text) => {
            text == NOT_RUN
                || text == STOPPED_DURING_CALL
                || text == TOOL_FAILED
                || text.starts_with(DENIED)
        }
        _ => false,
    }
}

/// The room a history makes when it is full, at least: the requests and responses of four
/// turns.
const MESSAGES_AHEAD: usize = 8;

/// `messages` as they are sent: a response cut off by a stop reduced to its text (its cut-off
/// calls, their answers and unsigned thinking are not sent, as providers refuse invalid
/// arguments and tool use without its signed thinking), or left out when it has no text.
fn sendable(messages: &[Message]) -> Cow<'_, [Message]> {
    if !messages.iter().any(is_incomplete) {
        return Cow::Borrowed(messages);
    }
    let mut sent = Vec::with_capacity(messages.len());
    let mut cut_calls: Vec<&str> = Vec::new();
    for message in messages {
        match message {
            Message::Response(response) if is_incomplete(message) => {
                cut_calls = response
                    .tool_calls()
                    .map(|call| call.tool_call_id.as_str())
                    .collect();
                let text: Vec<ResponsePart> = response
                    .parts
                    .iter()
                    .filter(
                        |part| matches!(part, ResponsePart::Text(text) if !text.content.is_empty()),
                    )
                    .cloned()
                    .collect();
                if !text.is_empty() {
                    let mut kept = ModelResponse::clone(response);
                    kept.parts = text;
                    sent.push(kept.into());
                }
            }
            Message::Request(request) if !cut_calls.is_empty() => {
                let parts: Vec<RequestPart> = request
                    .parts
                    .iter()
                    .filter(|part| !cut_calls.iter().any(|id| answers(part, id)))
                    .cloned()
                    .collect();
                cut_calls.clear();
                if !parts.is_empty() {
                    let mut kept = request.clone();
                    kept.parts = parts;
                    sent.push(Message::Request(kept));
                }
            }
            other => sent.push(other.clone()),
        }
    }
    Cow::Owned(sent)
}

/// Whether `message` is a response cut off by a stop.
fn is_incomplete(message: &Message) -> bool {
    matches!(message, Message::Response(response) if response.finish_reason == Some(FinishReason::Incomplete))
}

/// Whether `part` answers the call `tool_call_id`.
fn answers(part: &RequestPart, tool_call_id: &str) -> bool {
    match part {
        RequestPart::ToolReturn(part) => part.tool_call_id == tool_call_id,
        RequestPart::RetryPrompt(part) => part.tool_call_id.as_deref() == Some(tool_call_id),
        _ => false,
    }
}

/// The request after a response the run does not use: its calls answered as not run, and
/// `note` saying why.
fn unused(response: &ModelResponse, note: &str) -> ModelRequest {
    let mut parts = not_run(response);
    parts.push(RequestPart::retry_prompt(note));
    ModelRequest::new(parts)
}

/// Answers every call of `response` as not run.
fn not_run(response: &ModelResponse) -> Vec<RequestPart> {
    response
        .tool_calls()
        .map(|call| call.answer(NOT_RUN))
        .collect()
}

/// Gives every call of `response` an id that is unique in it: one without an id gets one
/// unique in the history, and a repeated id gets the call's position added.
fn name_calls(response: &mut ModelResponse, history_len: usize) {
    let parts = &mut response.parts;
    for index in 0..parts.len() {
        // The calls before this one are named already: their ids are the ones to avoid.
        let (earlier, rest) = parts.split_at_mut(index);
        let ResponsePart::ToolCall(call) = &mut rest[0] else {
            continue;
        };
        if call.tool_call_id.is_empty() {
            // `call_{history_len}_{index}`, written without the formatting machinery, which
            // costs more than the rest of a response's bookkeeping.
            let mut number = itoa::Buffer::new();
            let id = &mut call.tool_call_id;
            id.push_str("call_");
            id.push_str(number.format(history_len));
            id.push('_');
            id.push_str(number.format(index));
        }
        let taken = |id: &str| {
            earlier.iter().any(
                |part| matches!(part, ResponsePart::ToolCall(earlier) if earlier.tool_call_id == id),
            )
        };
        while taken(&call.tool_call_id) {
            call.tool_call_id = format!("{}_{index}", call.tool_call_id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> ResponsePart {
        ResponsePart::tool_call("search", "{}", id)
    }

    fn ids(response: &ModelResponse) -> Vec<&str> {
        response
            .tool_calls()
            .map(|call| call.tool_call_id.as_str())
            .collect()
    }

    #[test]
    fn calls_get_ids_unique_in_their_response() {
        let mut response = ModelResponse::new(vec![call("a"), call(""), call("a"), call("a")]);
        name_calls(&mut response, 4);
        assert_eq!(ids(&response), ["a", "call_4_1", "a_2", "a_3"]);
        let mut response = ModelResponse::new(vec![call(""); 11]);
        name_calls(&mut response, 1_234_567_890);
        assert_eq!(ids(&response)[0], "call_1234567890_0");
        assert_eq!(ids(&response)[10], "call_1234567890_10");
    }

    #[test]
    fn a_settled_calls_media_show_in_debug_without_their_bytes() {
        use crate::model::{BinaryContent, ToolContent};

        let chart = ToolContent::new("March").with(BinaryContent::new(vec![7u8; 64], "image/png"));
        let settled = format!("{:?}", Settled::Returned(chart.into()));
        assert_eq!(
            settled,
            r#"Returned({"value":"March","media":["image/png bytes (64 bytes)"]})"#
        );
        assert_eq!(
            format!("{:?}", Settled::Returned(Value::from(3))),
            "Returned(Number(3))"
        );
    }

    #[test]
    fn closing_answers_every_call_in_call_order_then_the_parts() {
        let mut transcript =
            Transcript::continued(Vec::new(), vec![RequestPart::user_prompt("hi")]);
        transcript.send();
        transcript.record_response(ModelResponse::new(vec![call("a"), call("b"), call("c")]));
        let mut handling = transcript.handling().expect("a response to handle");
        handling.settle("c", Settled::Returned(Value::from(3)));
        handling.settle("a", Settled::Rejected("no".to_owned()));
        handling.close(vec![RequestPart::retry_prompt("note")], STOPPED_DURING_CALL);
        let calls: Vec<ToolCallPart> = match &transcript.messages()[1] {
            Message::Response(response) => response.tool_calls().cloned().collect(),
            Message::Request(_) => unreachable!(),
        };
        assert_eq!(
            transcript.pending().map(|request| request.parts.clone()),
            Some(vec![
                calls[0].reject("no"),
                calls[1].answer(STOPPED_DURING_CALL),
                calls[2].answer(3),
                RequestPart::retry_prompt("note"),
            ])
        );
        assert!(transcript.settled().is_empty());
        assert_eq!(transcript.next(), Next::Send);
    }

    #[test]
    fn a_continued_history_that_ends_in_a_response_answers_its_calls_first() {
        let history = vec![
            Message::Request(ModelRequest::user_prompt("go")),
            Message::from(ModelResponse::new(vec![call("a")])),
        ];
        let transcript = Transcript::continued(history, vec![RequestPart::user_prompt("again")]);
        assert_eq!(
            transcript.pending().map(|request| request.parts.clone()),
            Some(vec![
                RequestPart::tool_return("search", "a", NOT_RUN),
                RequestPart::user_prompt("again"),
            ])
        );
        assert_eq!(transcript.start, 2);
    }

    #[test]
    fn a_prompt_after_a_response_not_handled_answers_its_calls_keeping_settled_ones() {
        let mut transcript =
            Transcript::continued(Vec::new(), vec![RequestPart::user_prompt("hi")]);
        transcript.send();
        transcript.record_response(ModelResponse::new(vec![call("a"), call("b")]));
        transcript
            .handling()
            .expect("a response to handle")
            .settle("a", Settled::Returned(Value::from(1)));
        transcript.flush();
        assert_eq!(transcript.next(), Next::Handle);
        transcript.push_prompt(RequestPart::user_prompt("next"));
        assert_eq!(
            transcript.pending().map(|request| request.parts.clone()),
            Some(vec![
                RequestPart::tool_return("search", "a", 1),
                RequestPart::tool_return("search", "b", NOT_RUN),
                RequestPart::user_prompt("next"),
            ])
        );
    }
}
