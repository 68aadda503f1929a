//! Decisions on calls that wait for approval, as they cross a process boundary: a durable
//! engine's workflow, an HTTP request.

use serde::{Deserialize, Serialize};

use super::agent_run::AgentRun;
use super::state::ApprovalError;
use crate::model::ToolCallPart;
use crate::output::Output;

/// The decision on a call that waits for approval.
///
/// ```
/// use golem::run::Decision;
///
/// let decision: Decision = serde_json::from_str(r#"{"tool_call_id":"c1","approved":true}"#)?;
/// assert_eq!(decision, Decision::approve("c1"));
/// # Ok::<_, serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    /// The call it decides on.
    pub tool_call_id: String,
    /// Whether the call may run.
    pub approved: bool,
    /// Why it was denied, told to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Decision {
    /// Lets the call `tool_call_id` run.
    pub fn approve(tool_call_id: impl Into<String>) -> Self {
        Decision {
            tool_call_id: tool_call_id.into(),
            approved: true,
            reason: None,
        }
    }

    /// Refuses the call `tool_call_id`, telling the model `reason`.
    pub fn deny(tool_call_id: impl Into<String>, reason: impl Into<String>) -> Self {
        Decision {
            tool_call_id: tool_call_id.into(),
            approved: false,
            reason: Some(reason.into()),
        }
    }

    /// Applies the decision to `run`, which is paused for approval: the call runs, or is
    /// denied with the reason (`Denied.` when none was given).
    ///
    /// # Errors
    /// [`ApprovalError`] when no call with this id waits for approval in `run`.
    pub fn apply<Deps, O>(&self, run: &mut AgentRun<Deps, O>) -> Result<(), ApprovalError>
    where
        Deps: Send + Sync + 'static,
        O: Output,
    {
        if self.approved {
            run.approve(&self.tool_call_id)
        } else {
            run.deny(
                &self.tool_call_id,
                self.reason.clone().unwrap_or_else(|| "Denied.".to_owned()),
            )
        }
    }
}

/// A call that waits for a decision, as a workflow lists it for whoever decides.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AwaitingCall {
    /// The call's id, which a [`Decision`] names.
    pub tool_call_id: String,
    /// The tool the model called.
    pub tool_name: String,
    /// The model's arguments, as JSON text.
    pub args: String,
}

impl From<&ToolCallPart> for AwaitingCall {
    fn from(call: &ToolCallPart) -> Self {
        AwaitingCall {
            tool_call_id: call.tool_call_id.clone(),
            tool_name: call.tool_name.clone(),
            args: call.args.clone(),
        }
    }
}
