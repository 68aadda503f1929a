//! [`RunContext`]: what tools and validators see of the run they are part of.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use tokio_util::sync::CancellationToken;

use crate::model::Message;
use crate::run::SharedCall;
use crate::run::event::Forward;
use crate::usage::{Usage, UsageLimits};

/// The run a tool call or an output validation belongs to: the dependencies, the usage so
/// far, and where this tool (or the output) stands against its retry budget.
///
/// Cheap to clone: the dependencies are shared.
///
/// ```
/// use golem::{ModelRetry, RunContext};
///
/// // Soft-fail on the last chance instead of failing the run.
/// fn check_city(ctx: &RunContext<()>, city: &str) -> Result<String, ModelRetry> {
///     match city {
///         "Paris" | "Oslo" => Ok(format!("sunny in {city}")),
///         _ if ctx.last_attempt() => Ok(format!("no forecast for {city}")),
///         _ => Err(ModelRetry::new(format!("unknown city {city}; try a capital"))),
///     }
/// }
/// ```
pub struct RunContext<Deps> {
    deps: Arc<Deps>,
    run: Arc<RunShared>,
    retry: u32,
    max_retries: u32,
    /// The call of a tool or an output tool this context was made for.
    call: Option<SharedCall>,
    turn: u32,
    /// The conversation as an output function sees it; `None` elsewhere.
    messages: Option<Arc<[Message]>>,
}

/// What every context of one step of a run shares, in one allocation: the usage so far, the
/// run's limits, what the step's tool calls spent through other agents, and where their
/// events go.
#[derive(Default)]
struct RunShared {
    usage: Usage,
    limits: UsageLimits,
    /// Usage booked by the calls of the step, by call id, until the run takes it.
    delegated: Mutex<Vec<(String, Usage)>>,
    /// Where delegated agents' events go, when the run's events are listened to.
    events: Option<Forward>,
    /// Cancelled when the run is stopped while the step's calls run.
    cancellation: Option<CancellationToken>,
}

impl fmt::Debug for RunShared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunShared")
            .field("usage", &self.usage)
            .field("limits", &self.limits)
            .field("events", &self.events.is_some())
            .finish_non_exhaustive()
    }
}

impl<Deps> RunContext<Deps> {
    /// A context for `deps`, with no usage and no retries; for calling tools in tests.
    ///
    /// ```
    /// let ctx = golem::RunContext::new(42_u32);
    /// assert_eq!(*ctx.deps(), 42);
    /// assert_eq!(ctx.retry(), 0);
    /// ```
    pub fn new(deps: Deps) -> Self {
        RunContext::from_parts(Arc::new(deps), Usage::default(), 0)
    }

    pub(crate) fn from_parts(deps: Arc<Deps>, usage: Usage, turn: u32) -> Self {
        RunContext {
            deps,
            // Field by field: `..RunShared::default()` would make a usage only to drop it.
            run: Arc::new(RunShared {
                usage,
                limits: UsageLimits::default(),
                delegated: Mutex::default(),
                events: None,
                cancellation: None,
            }),
            retry: 0,
            max_retries: 0,
            call: None,
            turn,
            messages: None,
        }
    }

    /// The same context, with the run's usage limits: only on a context just made, not yet
    /// shared.
    pub(crate) fn with_limits(mut self, limits: UsageLimits) -> Self {
        if let Some(run) = Arc::get_mut(&mut self.run) {
            run.limits = limits;
        }
        self
    }

    /// The same context, sending delegated agents' events to `forward`: only on a context
    /// just made, not yet shared.
    pub(crate) fn with_events(mut self, forward: Option<Forward>) -> Self {
        if let Some(run) = Arc::get_mut(&mut self.run) {
            run.events = forward;
        }
        self
    }

    /// The same context, its `token` cancelled when the run is stopped: only on a context
    /// just made, not yet shared.
    pub(crate) fn with_cancellation(mut self, token: CancellationToken) -> Self {
        if let Some(run) = Arc::get_mut(&mut self.run) {
            run.cancellation = Some(token);
        }
        self
    }

    /// The same context, showing `messages` as the conversation so far.
    pub(crate) fn with_messages(mut self, messages: Arc<[Message]>) -> Self {
        self.messages = Some(messages);
        self
    }

    /// Where delegated agents' events go, when the run's events are listened to.
    pub(crate) fn events(&self) -> Option<&Forward> {
        self.run.events.as_ref()
    }

    pub(crate) fn for_attempt(
        &self,
        call: Option<SharedCall>,
        retry: u32,
        max_retries: u32,
    ) -> Self {
        RunContext {
            deps: Arc::clone(&self.deps),
            run: Arc::clone(&self.run),
            retry,
            max_retries,
            call,
            turn: self.turn,
            messages: self.messages.clone(),
        }
    }

    /// Takes what the call `tool_call_id` spent through other agents, if it did.
    pub(crate) fn take_delegated(&self, tool_call_id: &str) -> Option<Usage> {
        let mut delegated = self
            .run
            .delegated
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let index = delegated.iter().position(|(id, _)| id == tool_call_id)?;
        Some(delegated.swap_remove(index).1)
    }

    /// The dependencies the run was given.
    pub fn deps(&self) -> &Deps {
        &self.deps
    }

    /// The run's usage as of the latest model response.
    pub fn usage(&self) -> &Usage {
        &self.run.usage
    }

    /// Rejections so far in this run of this tool (or of the output, in a validator).
    pub fn retry(&self) -> u32 {
        self.retry
    }

    /// This tool's (or the output's) retry budget.
    pub fn max_retries(&self) -> u32 {
        self.max_retries
    }

    /// Whether a rejection now would fail the run: the budget is spent.
    pub fn last_attempt(&self) -> bool {
        self.retry >= self.max_retries
    }

    /// The tool being called, or the output tool's name in an output validator (`None` for
    /// text or native output).
    pub fn tool_name(&self) -> Option<&str> {
        self.call.as_ref().map(|call| call.tool_name.as_str())
    }

    /// The id of the call being handled.
    pub fn tool_call_id(&self) -> Option<&str> {
        self.call.as_ref().map(|call| call.tool_call_id.as_str())
    }

    /// The model turn this belongs to, from 1.
    pub fn turn(&self) -> u32 {
        self.turn
    }

    /// What is left of the run's usage limits: its limits, less its usage so far. An agent
    /// run on this run's behalf runs under these, so the run's limits bound it too.
    pub fn remaining_limits(&self) -> UsageLimits {
        self.run.limits.remaining(&self.run.usage)
    }

    /// The conversation so far, as an [output function](crate::output::OutputFunction)
    /// sees it: the run's history up to the response being handled, and a request
    /// answering that response's calls as the history will once the output is accepted
    /// (this output call with "Final result processed."). A
    /// [hand-off](crate::Agent::hand_off) continues it. Empty elsewhere (in tools and
    /// validators).
    pub fn messages(&self) -> &[Message] {
        self.messages.as_deref().unwrap_or_default()
    }

    /// A token cancelled when the run is stopped (its cancellation token cancelled, or its
    /// deadline passed) while this call runs; `None` outside a run's tool calls and output
    /// functions. A tool that runs an agent passes a [child](CancellationToken::child_token)
    /// of it to the agent's run
    /// ([`with_cancellation`](crate::AgentRun::with_cancellation)), so that the agent stops
    /// gracefully with the run and its state is part of the run's error;
    /// [`Agent::as_tool`](crate::Agent::as_tool) does this for you.
    pub fn cancellation(&self) -> Option<&CancellationToken> {
        self.run.cancellation.as_ref()
    }

    /// Books `usage`, spent by the agent called `agent` on this run's behalf (inside a
    /// tool or an output function), into the run's usage once the call ends: added to its
    /// totals, and shown apart under [`Usage::agents`].
    /// [`Agent::as_tool`](crate::Agent::as_tool) and [`Agent::hand_off`](crate::Agent::hand_off)
    /// do this for you; call it when a hand-written tool runs an agent itself. Outside a
    /// call it does nothing.
    pub fn add_delegated_usage(&self, agent: &str, usage: &Usage) {
        let Some(id) = self.tool_call_id() else {
            return;
        };
        let mut delegated = self
            .run
            .delegated
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match delegated.iter_mut().find(|(call, _)| call == id) {
            Some((_, spent)) => spent.add_delegated(agent, usage),
            None => {
                let mut spent = Usage::default();
                spent.add_delegated(agent, usage);
                delegated.push((id.to_owned(), spent));
            }
        }
    }
}

impl<Deps> Clone for RunContext<Deps> {
    fn clone(&self) -> Self {
        RunContext {
            deps: Arc::clone(&self.deps),
            run: Arc::clone(&self.run),
            retry: self.retry,
            max_retries: self.max_retries,
            call: self.call.clone(),
            turn: self.turn,
            messages: self.messages.clone(),
        }
    }
}

impl<Deps> fmt::Debug for RunContext<Deps> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunContext")
            .field("retry", &self.retry)
            .field("max_retries", &self.max_retries)
            .field("tool_name", &self.tool_name())
            .field("tool_call_id", &self.tool_call_id())
            .field("turn", &self.turn)
            .finish_non_exhaustive()
    }
}
