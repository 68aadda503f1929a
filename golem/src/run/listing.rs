//! The tools of one run: the agent's own, and what the agent's and the run's toolsets list
//! for it.

use std::sync::Arc;

use super::failure::Failure;
use super::scope::Overrides;
use super::state::RunState;
use super::stop::StopSignals;
use crate::agent::AgentInner;
use crate::context::RunContext;
use crate::error::Stage;
use crate::toolbox::{AGENT_SOURCE, Toolbox};
use crate::toolset::{Toolset, ToolsetError, list_all};

/// The agent's tools, and what its toolsets and the run's list for this run.
///
/// # Errors
/// A [`Failure`] at the [`Stage::Tool`] stage when a toolset cannot list its tools, at the
/// [`Stage::Input`] stage when two tools share a name, or at the [`Stage::Stopped`] stage
/// when the run is stopped while they are listed.
pub(crate) async fn list<Deps, O>(
    agent: &AgentInner<Deps, O>,
    deps: &Arc<Deps>,
    overrides: &Overrides<Deps>,
    state: &RunState,
    stop: &StopSignals,
) -> Result<Arc<Toolbox<Deps>>, Failure>
where
    Deps: Send + Sync + 'static,
{
    let toolsets: Vec<&dyn Toolset<Deps>> = agent
        .toolsets
        .iter()
        .map(|toolset| &**toolset)
        .chain(overrides.toolsets.iter().map(|toolset| &**toolset))
        .collect();
    if toolsets.is_empty() {
        return Ok(Arc::clone(&agent.toolbox));
    }
    let ctx = RunContext::from_parts(
        Arc::clone(deps),
        Arc::new(state.usage.clone()),
        state.turns,
    );
    let mut tools = agent.toolbox.extended();
    let taken = tools
        .entries
        .iter()
        .map(|entry| (entry.name.to_string(), AGENT_SOURCE.to_owned()))
        .chain(
            tools
                .output_tool
                .iter()
                .map(|name| (name.to_string(), "the output tool".to_owned())),
        )
        .collect::<Vec<_>>();
    let listed = stop
        .race(list_all(&toolsets, taken, &ctx))
        .await
        .map_err(Failure::stopped)?
        .map_err(|error| {
            let stage = match error {
                ToolsetError::List { .. } => Stage::Tool,
                _ => Stage::Input,
            };
            Failure::new(stage, error)
        })?;
    for listed in listed {
        tools
            .add_defined(listed.tool, listed.definition)
            .expect("list_all checked the names");
    }
    tools.seal();
    Ok(Arc::new(tools))
}
