//! [`RunState`]: everything a run is, as serde data, so it can pause, move between processes
//! and go on with the same counters.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

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
/// The format is versioned (`"version": 1`) and stable within 0.x minor releases: a state
/// saved by 0.x.y is read by every 0.x.z. A state of an unknown version fails to deserialize
/// with an error that names both versions.
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
/// assert!(saved.starts_with(r#"{"version":1,"#));
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
pub struct RunState {
    pub(crate) version: Version,
    /// What was exchanged with the model.
    pub(crate) messages: Vec<Message>,
    /// The request the run sends next, kept apart from the history until it is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) pending: Option<ModelRequest>,
    pub(crate) usage: Usage,
    /// Model requests made so far.
    pub(crate) turns: u32,
    pub(crate) retries: Retries,
    /// Calls of the last response that wait for the caller's decision.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) awaiting_approval: Vec<ToolCallPart>,
    /// Decisions taken on calls of the last response, by call id.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) approvals: BTreeMap<String, Approval>,
}

impl RunState {
    /// The version of the format this golem writes and reads.
    pub const VERSION: u32 = 1;

    /// A fresh run that sends `pending` after `messages`.
    pub(crate) fn new(messages: Vec<Message>, pending: Option<ModelRequest>) -> Self {
        RunState {
            version: Version,
            messages,
            pending,
            usage: Usage::default(),
            turns: 0,
            retries: Retries::default(),
            awaiting_approval: Vec::new(),
            approvals: BTreeMap::new(),
        }
    }

    /// A fresh state (no usage, no rejections) that goes on from `history`: it sends the
    /// history as it is when it ends in a request, and handles its last response when it
    /// ends in one.
    pub fn from_history(history: Vec<Message>) -> Self {
        RunState::new(history, None)
    }

    /// What was exchanged with the model: every request sent and every response received,
    /// those of a continued history included.
    ///
    /// When a retry budget ran out, this ends with the model's last response; the feedback
    /// the run would have sent next is [`pending`](Self::pending).
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The request the run sends next and has not sent: the prompt of a run not yet
    /// started, the answers to a response's calls, or the feedback a failed run did not get
    /// to send.
    pub fn pending(&self) -> Option<&ModelRequest> {
        self.pending.as_ref()
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

    /// Adds a user prompt to the request the run sends next: after the pending feedback of a
    /// failed run, or as a new request after the last response.
    pub fn push_prompt(&mut self, prompt: impl Into<String>) {
        let prompt = crate::model::RequestPart::user_prompt(prompt);
        match &mut self.pending {
            Some(request) => request.parts.push(prompt),
            None => self.pending = Some(ModelRequest::new(vec![prompt])),
        }
    }

    /// Puts the pending request into the history: every call in it is then answered.
    pub(crate) fn flush_pending(&mut self) {
        if let Some(request) = self.pending.take() {
            self.messages.push(Message::Request(request));
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

/// The format version, written as a number and checked when read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Version;

impl Serialize for Version {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u32(RunState::VERSION)
    }
}

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let version = u32::deserialize(deserializer)?;
        if version == RunState::VERSION {
            Ok(Version)
        } else {
            Err(serde::de::Error::custom(UnsupportedVersion(version)))
        }
    }
}

struct UnsupportedVersion(u32);

impl fmt::Display for UnsupportedVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "run state version {} is not supported; this golem reads version {}",
            self.0,
            RunState::VERSION
        )
    }
}
