//! [`RunState`]: everything a run is, as serde data, so it can pause, move between processes
//! and go on with the same counters.

use std::collections::BTreeMap;
use std::fmt;

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::transcript::{Settled, Transcript};
use crate::history::Summary;
use crate::model::{Message, ModelRequest, ToolCallPart};
use crate::usage::Usage;

/// The whole state of a run: the history, the request it sends next, the usage, the retry
/// counters, the turn and the calls that wait for approval.
///
/// Save it with serde (a run's [`state`](crate::AgentRun::state), or a failed run's
/// [`RunError::state`](crate::RunError::state)) and go on with
/// [`Agent::restore`](crate::Agent::restore) or [`Agent::resume`](crate::Agent::resume), in
/// this process or another: the restored run has the same counters, so it does not get fresh
/// budgets unless you call [`reset_retries`](Self::reset_retries).
///
/// The format is versioned (`"version": 2`) and stable within 0.x minor releases: a state
/// saved by 0.x.y is read by every 0.x.z, and a state of version 1 is read and brought up to
/// version 2. A state of an unknown version fails to deserialize with an error that names
/// the versions this golem reads.
///
/// ```
/// use golem::model::function::FunctionModel;
/// use golem::model::ModelResponse;
/// use golem::{Agent, RunState};
///
/// let agent = Agent::<(), String>::builder(FunctionModel::new(|_, _| ModelResponse::text("hi")))
///     .build()?;
/// let run = agent.start("Hello", ());
/// let saved = serde_json::to_string(run.state())?;
/// assert!(saved.starts_with(r#"{"version":2,"#));
///
/// let state: RunState = serde_json::from_str(&saved)?;
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let result = agent.resume(state, ()).await?;
/// assert_eq!(result.output, "hi");
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "Saved", into = "Saved")]
pub struct RunState {
    /// What was exchanged with the model, and the request the run sends next.
    pub(crate) transcript: Transcript,
    pub(crate) usage: Usage,
    /// Model requests made so far.
    pub(crate) turns: u32,
    pub(crate) retries: Retries,
    /// Calls of the last response that wait for the caller's decision.
    pub(crate) awaiting_approval: Vec<ToolCallPart>,
    /// Decisions taken on calls of the last response, by call id.
    pub(crate) approvals: BTreeMap<String, Approval>,
    /// When the run must have finished, if it has a timeout.
    pub(crate) deadline: Option<Deadline>,
    /// The summary of older turns the run's requests send in their place.
    pub(crate) summary: Option<Summary>,
}

impl RunState {
    /// The version of the format this golem writes. It reads this version and every
    /// earlier one.
    pub const VERSION: u32 = 2;

    /// A fresh run whose transcript is `transcript`.
    pub(crate) fn with_transcript(transcript: Transcript) -> Self {
        RunState {
            transcript,
            usage: Usage::default(),
            turns: 0,
            retries: Retries::default(),
            awaiting_approval: Vec::new(),
            approvals: BTreeMap::new(),
            deadline: None,
            summary: None,
        }
    }

    /// A fresh state (no usage, no rejections) that goes on from `history`: it sends the
    /// history as it is when it ends in a request, and handles its last response when it
    /// ends in one.
    pub fn from_history(history: Vec<Message>) -> Self {
        RunState::with_transcript(Transcript::new(history, None))
    }

    /// What was exchanged with the model: every request sent and every response received,
    /// those of a continued history included.
    ///
    /// When a retry budget ran out, this ends with the model's last response; the feedback
    /// the run would have sent next is [`pending`](Self::pending).
    pub fn messages(&self) -> &[Message] {
        self.transcript.messages()
    }

    /// The messages this run added to the history it started from (all of them for a run
    /// started from a prompt).
    pub fn new_messages(&self) -> &[Message] {
        self.transcript.new_messages()
    }

    /// The request the run sends next and has not sent: the prompt of a run not yet
    /// started, the answers to a response's calls, or the feedback a failed run did not get
    /// to send.
    pub fn pending(&self) -> Option<&ModelRequest> {
        self.transcript.pending()
    }

    /// The usage so far, what rejected rounds cost included.
    pub fn usage(&self) -> &Usage {
        &self.usage
    }

    /// Model requests made so far in this run.
    pub fn turns(&self) -> u32 {
        self.turns
    }

    /// Rejections so far, per tool and of the output.
    pub fn retries(&self) -> &Retries {
        &self.retries
    }

    /// Sets every retry counter back to zero, so a restored run gets its full budgets again.
    pub fn reset_retries(&mut self) {
        self.retries = Retries::default();
    }

    /// Makes this the state of a new run that goes on from where this one ended, as a chat
    /// does with its next message: the usage, the model turns, the retry counters and the
    /// deadline start again, as for a run [`from_history`](Self::from_history), and
    /// [`new_messages`](Self::new_messages) starts here. The history, the request sent next
    /// (a failed run's feedback, a prompt not sent) and the calls awaiting approval stay.
    ///
    /// A run that failed on one of its limits, or was stopped by its deadline, fails again at
    /// once when restored as it is; a new run from its state does not.
    ///
    /// ```
    /// use golem::RunState;
    /// use golem::model::{Message, ModelRequest, ModelResponse};
    ///
    /// let mut state = RunState::from_history(vec![
    ///     Message::Request(ModelRequest::user_prompt("Hi")),
    ///     Message::Response(ModelResponse::text("Hello!").into()),
    /// ]);
    /// state.start_new_run();
    /// state.push_prompt("And now?");
    /// assert_eq!(state.usage().requests, 0);
    /// assert!(state.new_messages().is_empty());
    /// assert_eq!(state.messages().len(), 2);
    /// ```
    pub fn start_new_run(&mut self) {
        self.usage = Usage::default();
        self.turns = 0;
        self.retries = Retries::default();
        self.deadline = None;
        self.transcript.start_here();
    }

    /// When the run must have finished: the moment its timeout was first set, plus the
    /// timeout. Saved with the state, so a restored run keeps it instead of starting a new
    /// timeout; `None` when the run has no timeout.
    pub fn deadline(&self) -> Option<SystemTime> {
        self.deadline.map(|deadline| deadline.at)
    }

    /// Removes the run's deadline, e.g. to go on with a run that was stopped by it; the
    /// restored run then gets the agent's timeout afresh, if it has one.
    pub fn clear_deadline(&mut self) {
        self.deadline = None;
    }

    /// The calls that wait for a decision before the run can go on.
    pub fn awaiting_approval(&self) -> &[ToolCallPart] {
        &self.awaiting_approval
    }

    /// Approves the waiting call `tool_call_id`: it runs when the run goes on.
    ///
    /// # Errors
    /// [`ApprovalError`] when no call with that id waits for approval.
    pub fn approve(&mut self, tool_call_id: &str) -> Result<(), ApprovalError> {
        self.decide(tool_call_id, Approval::Approved)
    }

    /// Denies the waiting call `tool_call_id`: it does not run, and `reason` goes back to
    /// the model as its result. A denial costs no retry budget.
    ///
    /// # Errors
    /// [`ApprovalError`] when no call with that id waits for approval.
    pub fn deny(
        &mut self,
        tool_call_id: &str,
        reason: impl Into<String>,
    ) -> Result<(), ApprovalError> {
        self.decide(
            tool_call_id,
            Approval::Denied {
                reason: reason.into(),
            },
        )
    }

    fn decide(&mut self, tool_call_id: &str, approval: Approval) -> Result<(), ApprovalError> {
        let Some(index) = self
            .awaiting_approval
            .iter()
            .position(|call| call.tool_call_id == tool_call_id)
        else {
            return Err(ApprovalError {
                tool_call_id: tool_call_id.to_owned(),
            });
        };
        let call = self.awaiting_approval.remove(index);
        self.approvals.insert(call.tool_call_id, approval);
        Ok(())
    }

    /// Goes back to the start of the turn at message `turn` of the history (a request with a
    /// user prompt), to ask it again: the messages before it stay, that request is the one
    /// sent next, and what came after it goes (the responses and tool results, the request
    /// that was pending, the calls that waited for approval and their decisions). Usage, turns
    /// and retry counters stay: they were spent. This is how a chat's "regenerate" and the
    /// edit of an earlier message are served (with [`replace_prompt`](Self::replace_prompt)).
    ///
    /// ```
    /// use golem::model::{Message, ModelRequest, ModelResponse, RequestPart};
    /// use golem::RunState;
    ///
    /// let mut state = RunState::from_history(vec![
    ///     Message::Request(ModelRequest::new(vec![RequestPart::user_prompt("Hi")])),
    ///     Message::from(ModelResponse::text("Hello!")),
    ///     Message::Request(ModelRequest::new(vec![RequestPart::user_prompt("A joke?")])),
    ///     Message::from(ModelResponse::text("No.")),
    /// ]);
    /// state.rewind(2)?;
    /// assert_eq!(state.messages().len(), 2);
    /// assert_eq!(state.pending().map(|request| request.parts.len()), Some(1));
    /// state.replace_prompt("A pun?")?;
    /// assert!(state.rewind(1).is_err());
    /// # Ok::<_, golem::run::RewindError>(())
    /// ```
    ///
    /// # Errors
    /// [`RewindError::NotATurn`] when message `turn` is not a request with a user prompt;
    /// the state is unchanged.
    pub fn rewind(&mut self, turn: usize) -> Result<(), RewindError> {
        if !self.transcript.rewind(turn) {
            return Err(RewindError::NotATurn { index: turn });
        }
        self.awaiting_approval.clear();
        self.approvals.clear();
        Ok(())
    }

    /// Puts `prompt` in place of the user prompt of the request the run sends next, as the
    /// edit of a message does after [`rewind`](Self::rewind). The request's other parts (the
    /// answers to the calls before it) stay.
    ///
    /// # Errors
    /// [`RewindError::NoPrompt`] when the run sends no request with a user prompt next; the
    /// state is unchanged.
    pub fn replace_prompt(
        &mut self,
        prompt: impl Into<crate::model::UserPromptPart>,
    ) -> Result<(), RewindError> {
        match self
            .transcript
            .replace_prompt(crate::model::RequestPart::user_prompt(prompt))
        {
            true => Ok(()),
            false => Err(RewindError::NoPrompt),
        }
    }

    /// Adds a user prompt to the request the run sends next: after the pending feedback of a
    /// failed run, or as a new request after the last response (whose calls, if it was not
    /// handled, are answered as not run).
    pub fn push_prompt(&mut self, prompt: impl Into<crate::model::UserPromptPart>) {
        self.transcript
            .push_prompt(crate::model::RequestPart::user_prompt(prompt));
        self.awaiting_approval.clear();
        self.approvals.clear();
    }
}

/// When a run must have finished, and the timeout that set it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Deadline {
    pub(crate) at: SystemTime,
    pub(crate) timeout: Duration,
}

impl Deadline {
    /// The deadline `timeout` from now.
    pub(crate) fn from_now(timeout: Duration) -> Self {
        Deadline {
            at: SystemTime::now() + timeout,
            timeout,
        }
    }
}

/// A decision on a call that waited for approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Approval {
    /// The call runs.
    Approved,
    /// The call does not run; the reason is its result.
    Denied {
        /// What the model is told.
        reason: String,
    },
}

/// No call with this id waits for approval.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no call with id `{tool_call_id}` waits for approval")]
pub struct ApprovalError {
    /// The id that was given.
    pub tool_call_id: String,
}

/// A [`RunState`] cannot go back where it was asked to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RewindError {
    /// The message is not a request with a user prompt, where a turn starts.
    #[error(
        "message {index} of the history is not the start of a turn (a request with a user prompt)"
    )]
    NotATurn {
        /// The index that was given.
        index: usize,
    },
    /// The run sends no request with a user prompt next.
    #[error("the run sends no user prompt next")]
    NoPrompt,
}

/// Rejections so far in a run: per tool name, of unknown tool names (one shared counter),
/// and of the output. Counters never reset within a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Retries {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) tools: BTreeMap<String, u32>,
    #[serde(skip_serializing_if = "is_zero")]
    pub(crate) unknown_tools: u32,
    #[serde(skip_serializing_if = "is_zero")]
    pub(crate) output: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Retries {
    /// Rejections of the tool `name` so far.
    pub fn tool(&self, name: &str) -> u32 {
        self.tools.get(name).copied().unwrap_or(0)
    }

    /// Rejections of calls to unknown tool names so far.
    pub fn unknown_tools(&self) -> u32 {
        self.unknown_tools
    }

    /// Rejections of the output so far.
    pub fn output(&self) -> u32 {
        self.output
    }
}

/// A [`RunState`] as it is saved: the format of [`RunState::VERSION`], which also reads
/// every earlier version's fields.
#[derive(Serialize, Deserialize)]
struct Saved {
    version: u32,
    messages: Vec<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pending: Option<ModelRequest>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    settled: BTreeMap<String, Settled>,
    #[serde(default, skip_serializing_if = "is_zero_index")]
    run_start: usize,
    usage: Usage,
    turns: u32,
    retries: Retries,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    awaiting_approval: Vec<ToolCallPart>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    approvals: BTreeMap<String, Approval>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    deadline: Option<Deadline>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    summary: Option<Summary>,
}

fn is_zero_index(n: &usize) -> bool {
    *n == 0
}

impl From<RunState> for Saved {
    fn from(state: RunState) -> Self {
        let settled = state.transcript.settled();
        let (messages, pending, run_start) = state.transcript.into_parts();
        Saved {
            version: RunState::VERSION,
            messages,
            pending,
            settled,
            run_start,
            usage: state.usage,
            turns: state.turns,
            retries: state.retries,
            awaiting_approval: state.awaiting_approval,
            approvals: state.approvals,
            deadline: state.deadline,
            summary: state.summary,
        }
    }
}

impl TryFrom<Saved> for RunState {
    type Error = UnsupportedVersion;

    fn try_from(saved: Saved) -> Result<Self, Self::Error> {
        if !(1..=RunState::VERSION).contains(&saved.version) {
            return Err(UnsupportedVersion(saved.version));
        }
        let mut transcript = Transcript::from_saved(
            saved.messages,
            saved.pending,
            saved.settled,
            saved.run_start,
        );
        if saved.version == 1 {
            transcript.migrate_v1();
        }
        Ok(RunState {
            transcript,
            usage: saved.usage,
            turns: saved.turns,
            retries: saved.retries,
            awaiting_approval: saved.awaiting_approval,
            approvals: saved.approvals,
            deadline: saved.deadline,
            summary: saved.summary,
        })
    }
}

/// A saved state of a version this golem does not read.
#[derive(Debug)]
pub(crate) struct UnsupportedVersion(u32);

impl fmt::Display for UnsupportedVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "run state version {} is not supported; this golem reads versions 1 to {}",
            self.0,
            RunState::VERSION
        )
    }
}
