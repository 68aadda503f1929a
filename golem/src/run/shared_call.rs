//! [`SharedCall`]: a tool call as the response that made it holds it.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use crate::model::{ModelResponse, ResponsePart, ToolCallPart};

/// A tool call, shared with the response that holds it: what the tool events of a run
/// carry, so that no event copies its call.
///
/// It reads as the [`ToolCallPart`] it points to: `call.tool_name`, `call.args` and
/// `call.tool_call_id` go through it, and `ToolCallPart::clone(&call)` copies the call out.
/// It compares and prints as that call.
///
/// ```
/// use golem::model::ToolCallPart;
/// use golem::run::SharedCall;
///
/// let call = SharedCall::from(ToolCallPart::new("roll_dice", r#"{"n":2}"#, "c1"));
/// assert_eq!(call.tool_name, "roll_dice");
/// assert_eq!(*call, ToolCallPart::new("roll_dice", r#"{"n":2}"#, "c1"));
/// ```
#[derive(Clone)]
pub struct SharedCall {
    response: Arc<ModelResponse>,
    /// The index of the call among the response's parts.
    part: usize,
}

impl SharedCall {
    /// The call that is part `part` of `response`; `None` when that part is not a tool call.
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use golem::model::ModelResponse;
    /// use golem::run::SharedCall;
    ///
    /// let response = Arc::new(ModelResponse::tool_call("roll_dice", "{}", "c1"));
    /// let call = SharedCall::new(Arc::clone(&response), 0).unwrap();
    /// assert_eq!(call.tool_call_id, "c1");
    /// assert!(SharedCall::new(response, 1).is_none());
    /// ```
    pub fn new(response: Arc<ModelResponse>, part: usize) -> Option<Self> {
        response
            .call_at(part)
            .is_some()
            .then_some(SharedCall { response, part })
    }

    /// `call`, shared with `response` when it is one of its parts (found by address, not
    /// compared), or a copy of it otherwise.
    pub(crate) fn of(response: &Arc<ModelResponse>, call: &ToolCallPart) -> Self {
        let part = response
            .indexed_calls()
            .find(|(_, held)| std::ptr::eq(*held, call));
        match part {
            Some((part, _)) => SharedCall {
                response: Arc::clone(response),
                part,
            },
            None => SharedCall::from(call.clone()),
        }
    }

    /// The response the call is part of.
    pub fn response(&self) -> &Arc<ModelResponse> {
        &self.response
    }
}

impl Deref for SharedCall {
    type Target = ToolCallPart;

    fn deref(&self) -> &ToolCallPart {
        self.response
            .call_at(self.part)
            .expect("a shared call points to a tool call")
    }
}

impl From<ToolCallPart> for SharedCall {
    /// The call alone, as the one part of a response of its own.
    fn from(call: ToolCallPart) -> Self {
        SharedCall {
            response: Arc::new(ModelResponse::new(vec![ResponsePart::ToolCall(call)])),
            part: 0,
        }
    }
}

impl fmt::Debug for SharedCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        ToolCallPart::fmt(self, f)
    }
}

impl PartialEq for SharedCall {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for SharedCall {}

impl PartialEq<ToolCallPart> for SharedCall {
    fn eq(&self, other: &ToolCallPart) -> bool {
        **self == *other
    }
}
