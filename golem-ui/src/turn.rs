//! [`Turn`]: what a client's request asks of a thread, read from either protocol.

use golem::RunState;

/// What one request from a chat UI asks: a new user prompt, or answers to the calls the
/// thread waits on (a request with both is refused: [`TurnError::AnswersWithPrompt`]).
///
/// It is all a server takes from the client. The history, the system prompt, tool results
/// and earlier assistant turns that a client sends are not read: the thread's stored
/// [`RunState`] is the history (see the [web guide](crate::guide)).
///
/// ```
/// use golem::RunState;
/// use golem_ui::{Decision, Turn};
///
/// let mut state = RunState::from_history(Vec::new());
/// let turn = Turn {
///     prompt: None,
///     decisions: vec![Decision::Approve { tool_call_id: "c9".into() }],
/// };
/// let error = turn.apply(&mut state).unwrap_err();
/// assert_eq!(error.to_string(), "the thread does not wait for an answer on call `c9`");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Turn {
    /// The user's new message, if the request brings one.
    pub prompt: Option<String>,
    /// Answers to calls that wait for approval.
    pub decisions: Vec<Decision>,
}

/// The user's answer to a call that waits for approval.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Decision {
    /// The call runs.
    Approve {
        /// The call.
        tool_call_id: String,
    },
    /// The call does not run; the reason goes back to the model as its result.
    Deny {
        /// The call.
        tool_call_id: String,
        /// What the model is told.
        reason: String,
    },
}

impl Decision {
    /// The call this answers.
    pub fn tool_call_id(&self) -> &str {
        match self {
            Decision::Approve { tool_call_id } | Decision::Deny { tool_call_id, .. } => {
                tool_call_id
            }
        }
    }
}

/// The reason a denial gives the model when the user gave none.
pub const DEFAULT_DENIAL: &str = "The user denied this call.";

/// A request that a thread cannot take.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TurnError {
    /// The request brings neither a prompt nor an answer.
    #[error("the request has no new user message and no approval answer")]
    Empty,
    /// An answer names a call the thread does not wait on.
    #[error("the thread does not wait for an answer on call `{tool_call_id}`")]
    NotAwaited {
        /// The call the answer named.
        tool_call_id: String,
    },
    /// The thread waits for answers on calls the request does not answer, and it brings
    /// no new prompt either.
    #[error("the thread still waits for an answer on call `{tool_call_id}`")]
    Unanswered {
        /// The first call without an answer.
        tool_call_id: String,
    },
    /// The request goes back to a turn (a regenerate, an edit) that the thread does not
    /// have: the client's messages and the thread disagree.
    #[error("the thread has no turn for the message the request goes back to")]
    UnknownTurn,
    /// The request answers calls and brings a new message too. The answered calls would
    /// run only after the message is answered, which a new message does not wait for: the
    /// answers go first, in a request of their own, and the message after them.
    #[error("the request answers waiting calls and brings a new message: send the answers first")]
    AnswersWithPrompt,
}

impl Turn {
    /// A turn with the user's `prompt` and no answers.
    pub fn prompt(prompt: impl Into<String>) -> Self {
        Turn {
            prompt: Some(prompt.into()),
            decisions: Vec::new(),
        }
    }

    /// Applies the turn to a thread's stored state: the answers, each checked against the
    /// calls the state waits on, or the prompt (which answers calls still waiting as not
    /// run).
    ///
    /// # Errors
    /// [`TurnError::Empty`] for a turn with nothing in it, [`TurnError::NotAwaited`] for an
    /// answer to a call the state does not wait on, [`TurnError::Unanswered`] when calls
    /// still wait and there is no prompt, [`TurnError::AnswersWithPrompt`] for answers and a
    /// prompt together. On error `state` is unchanged.
    pub fn apply(self, state: &mut RunState) -> Result<(), TurnError> {
        if self.prompt.is_none() && self.decisions.is_empty() {
            return Err(TurnError::Empty);
        }
        let awaited = |id: &str| {
            state
                .awaiting_approval()
                .iter()
                .any(|call| call.tool_call_id == id)
        };
        if let Some(decision) = self.decisions.iter().find(|d| !awaited(d.tool_call_id())) {
            return Err(TurnError::NotAwaited {
                tool_call_id: decision.tool_call_id().to_owned(),
            });
        }
        // The prompt would answer the approved calls as not run.
        if self.prompt.is_some() && !self.decisions.is_empty() {
            return Err(TurnError::AnswersWithPrompt);
        }
        if self.prompt.is_none()
            && let Some(call) = state.awaiting_approval().iter().find(|call| {
                !self
                    .decisions
                    .iter()
                    .any(|d| d.tool_call_id() == call.tool_call_id)
            })
        {
            return Err(TurnError::Unanswered {
                tool_call_id: call.tool_call_id.clone(),
            });
        }
        // A call answered twice is denied if either answer denies it: only an approval that
        // nothing contradicts approves. (A call's first decision stands.)
        let mut decisions = self.decisions;
        decisions.sort_by_key(|decision| matches!(decision, Decision::Approve { .. }));
        for decision in decisions {
            // Checked above: every answer names a waiting call.
            let _ = match decision {
                Decision::Approve { tool_call_id } => state.approve(&tool_call_id),
                Decision::Deny {
                    tool_call_id,
                    reason,
                } => state.deny(&tool_call_id, reason),
            };
        }
        if let Some(prompt) = self.prompt {
            // A new message is a new run: its budgets, limits and deadline start again, as
            // after a run that finished, though the run before it failed or stopped.
            state.start_new_run();
            state.push_prompt(prompt);
        }
        Ok(())
    }
}
