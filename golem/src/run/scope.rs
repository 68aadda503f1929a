//! What one step of a run works with besides the run's state: the agent, the run's own
//! overrides, the tools listed for it, its stop signals, its events and its journal.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use super::event::EventSink;
use super::state::Approval;
use super::stop::StopSignals;
use crate::agent::AgentInner;
use crate::context::RunContext;
use crate::model::{Model, ModelResponse, ModelSettings, RequestParams};
use crate::output::Output;
use crate::toolbox::Toolbox;
use crate::toolset::Toolset;
use crate::usage::{RoundCost, UsageLimits};

/// What a run sets for itself over its agent's configuration, each taking effect from the
/// run's next request.
pub(crate) struct Overrides<Deps> {
    /// Model settings merged over the agent's; boxed, because they are large, most runs
    /// override nothing, and a run moves this struct as it starts.
    pub(crate) settings: Option<Box<ModelSettings>>,
    /// Usage limits in place of the agent's.
    pub(crate) usage_limits: Option<UsageLimits>,
    /// The model asked in place of the agent's.
    pub(crate) model: Option<Arc<dyn Model>>,
    /// Toolsets this run lists besides the agent's.
    pub(crate) toolsets: Vec<Arc<dyn Toolset<Deps>>>,
    /// Instructions in place of the agent's static ones.
    pub(crate) instructions: Option<String>,
    /// The conversation the caller named, for the spans.
    pub(crate) conversation_id: Option<Arc<str>>,
}

impl<Deps> Default for Overrides<Deps> {
    fn default() -> Self {
        Overrides {
            settings: None,
            usage_limits: None,
            model: None,
            toolsets: Vec::new(),
            instructions: None,
            conversation_id: None,
        }
    }
}

impl<Deps> fmt::Debug for Overrides<Deps> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Overrides")
            .field("settings", &self.settings)
            .field("usage_limits", &self.usage_limits)
            .field("model", &self.model.as_ref().map(|model| model.name()))
            .field("toolsets", &self.toolsets.len())
            .field("instructions", &self.instructions)
            .field("conversation_id", &self.conversation_id)
            .finish()
    }
}

/// What one step of a run works with, borrowed from the run for the step's length.
pub(crate) struct StepScope<'a, Deps, O: Output, J> {
    pub(crate) agent: &'a Arc<AgentInner<Deps, O>>,
    pub(crate) deps: &'a Arc<Deps>,
    pub(crate) overrides: &'a Overrides<Deps>,
    /// The tools listed for this run.
    pub(crate) tools: &'a Toolbox<Deps>,
    pub(crate) stop: &'a StopSignals,
    pub(crate) events: Option<&'a EventSink<O>>,
    pub(crate) journal: &'a J,
}

impl<'a, Deps, O: Output, J> StepScope<'a, Deps, O, J> {
    /// The model the run asks: its own, or the agent's.
    pub(crate) fn model(&self) -> &'a Arc<dyn Model> {
        self.overrides.model.as_ref().unwrap_or(&self.agent.model)
    }

    /// The usage limits of the run: its own, or the agent's.
    pub(crate) fn usage_limits(&self) -> &'a UsageLimits {
        self.overrides
            .usage_limits
            .as_ref()
            .unwrap_or(&self.agent.usage_limits)
    }

    /// The parameters of the next request: the tools', with the run's settings merged over
    /// the agent's and the run's instructions in place of the agent's static ones.
    pub(crate) fn params(&self) -> Params<'a> {
        let overrides = self.overrides;
        if overrides.settings.is_none() && overrides.instructions.is_none() {
            return Params::Listed(&self.tools.params);
        }
        let mut params = self.tools.params.clone();
        if let Some(settings) = &overrides.settings {
            params.settings = params.settings.merged(settings);
        }
        if let Some(instructions) = &overrides.instructions {
            params.instructions = self.agent.output.with_prompted_schema(instructions.clone());
        }
        Params::Own(Box::new(params))
    }
}

/// The parameters of one request: those of the run's tool list as they are, or a copy of
/// them with the run's overrides. The copy is boxed, so the request's future stays small.
pub(crate) enum Params<'a> {
    Listed(&'a RequestParams),
    Own(Box<RequestParams>),
}

impl Params<'_> {
    /// The parameters to change, copied first if they are the tool list's.
    pub(crate) fn to_mut(&mut self) -> &mut RequestParams {
        if let Params::Listed(listed) = *self {
            *self = Params::Own(Box::new(listed.clone()));
        }
        match self {
            Params::Own(own) => own,
            Params::Listed(_) => unreachable!("made its own just above"),
        }
    }

    pub(crate) fn into_owned(self) -> RequestParams {
        match self {
            Params::Listed(listed) => listed.clone(),
            Params::Own(own) => *own,
        }
    }
}

impl Deref for Params<'_> {
    type Target = RequestParams;

    fn deref(&self) -> &RequestParams {
        match self {
            Params::Listed(listed) => listed,
            Params::Own(own) => own,
        }
    }
}

/// What the handling of one response works with: the step's scope, the context its tools
/// and validators see, the decisions on calls that waited for approval, the turn and what
/// the turn's request and response cost.
pub(crate) struct Turn<'a, Deps, O: Output, J> {
    pub(crate) step: &'a StepScope<'a, Deps, O, J>,
    /// `None` when no tool call, output function or validator is there to see it.
    pub(crate) ctx: Option<&'a RunContext<Deps>>,
    pub(crate) approvals: &'a BTreeMap<String, Approval>,
    pub(crate) turn: u32,
    /// The response whose calls the step handles.
    pub(crate) response: &'a Arc<ModelResponse>,
}

impl<'a, Deps, O: Output, J> Turn<'a, Deps, O, J> {
    /// The context the tools, the output function and the validators see.
    ///
    /// # Panics
    /// When the handling made none: it makes one whenever a call, an output function or a
    /// validator is there to see it, and only those ask for it.
    pub(crate) fn ctx(&self) -> &'a RunContext<Deps> {
        self.ctx
            .expect("a context is made for the calls, output function and validators")
    }

    /// What the response cost: one request and its tokens.
    pub(crate) fn cost(&self) -> RoundCost {
        self.response.usage.cost()
    }
}
