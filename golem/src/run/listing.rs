//! The tools of one run: the agent's own, and what the agent's and the run's toolsets list
//! for it. In a journaled run the listing is a step (`tools:{turn}`), so a replay uses the
//! tool list of the first execution and lists a tool's toolset again only when a call of
//! that tool must really run.

use std::collections::HashMap;
use std::fmt;
use std::pin::pin;
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::OnceCell;

use super::failure::Failure;
use super::journal::{self, Journal};
use super::scope::Overrides;
use super::state::RunState;
use super::stop::{StopSignals, Stopped};
use crate::agent::AgentInner;
use crate::context::RunContext;
use crate::error::{BoxError, Stage};
use crate::tool::{RetryLimit, Tool, ToolDefinition};
use crate::toolbox::{AGENT_SOURCE, Toolbox};
use crate::toolset::{ListedTool, Toolset, ToolsetError, list_all};

/// The agent's tools, and what its toolsets and the run's list for this run, through
/// `journal`.
///
/// # Errors
/// A [`Failure`] at the [`Stage::Tool`] stage when a toolset cannot list its tools, at the
/// [`Stage::Input`] stage when two tools share a name, or at the [`Stage::Stopped`] stage
/// when the run is stopped while they are listed.
pub(crate) async fn list<Deps, O, J>(
    agent: &AgentInner<Deps, O>,
    deps: &Arc<Deps>,
    overrides: &Overrides<Deps>,
    state: &RunState,
    stop: &StopSignals,
    journal: &J,
) -> Result<Arc<Toolbox<Deps>>, Failure>
where
    Deps: Send + Sync + 'static,
    J: Journal,
{
    let toolsets: Vec<Arc<dyn Toolset<Deps>>> = agent
        .toolsets
        .iter()
        .chain(&overrides.toolsets)
        .cloned()
        .collect();
    if toolsets.is_empty() {
        return Ok(Arc::clone(&agent.toolbox));
    }
    let mut tools = agent.toolbox.extended();
    let taken = tools
        .entries
        .iter()
        .map(|entry| (entry.name.to_string(), AGENT_SOURCE.to_owned()))
        .chain(
            tools
                .output_tools
                .iter()
                .map(|name| (name.to_string(), "the output tool".to_owned())),
        )
        .collect::<Vec<_>>();
    let ctx = RunContext::from_parts(Arc::clone(deps), state.usage.clone(), state.turns);
    let listed = if journal.records() {
        list_in(journal, stop, toolsets, taken, ctx, state.turns)
            .await
            .map_err(Failure::stopped)?
    } else {
        let toolsets: Vec<&dyn Toolset<Deps>> = toolsets.iter().map(|set| &**set).collect();
        stop.race(pin!(list_all(&toolsets, taken, &ctx)))
            .await
            .map_err(Failure::stopped)?
            .map_err(BoxError::from)
    };
    let listed = listed.map_err(|error| {
        let stage = match error.downcast_ref::<ToolsetError>() {
            Some(ToolsetError::List { .. }) | None => Stage::Tool,
            Some(_) => Stage::Input,
        };
        Failure {
            stage,
            tool_name: None,
            exhausted: None,
            source: error,
            interrupted: Vec::new(),
        }
    })?;
    for listed in listed {
        tools
            .add_defined(listed.tool, listed.definition)
            .expect("list_all checked the names");
    }
    tools.seal();
    Ok(Arc::new(tools))
}

/// Lists the toolsets as the journal step `tools:{turn}`: executed, it lists them now and
/// records each tool's definition and settings; replayed, it gives tools made from the
/// record, which list their own toolset again only when one of them is called.
///
/// # Errors
/// [`Stopped`] when the run is stopped first (as the journal recorded it, on replay).
async fn list_in<Deps, J>(
    journal: &J,
    stop: &StopSignals,
    toolsets: Vec<Arc<dyn Toolset<Deps>>>,
    taken: Vec<(String, String)>,
    ctx: RunContext<Deps>,
    turn: u32,
) -> Result<Result<Vec<ListedTool<Deps>>, BoxError>, Stopped>
where
    Deps: Send + Sync + 'static,
    J: Journal,
{
    let live: Arc<Mutex<Option<Vec<ListedTool<Deps>>>>> = Arc::default();
    let step = {
        let (toolsets, live) = (toolsets.clone(), Arc::clone(&live));
        async move {
            let sets: Vec<&dyn Toolset<Deps>> = toolsets.iter().map(|set| &**set).collect();
            let listed = list_all(&sets, taken, &ctx).await?;
            let recorded: Vec<RecordedTool> = listed.iter().map(RecordedTool::of).collect();
            *live.lock().unwrap_or_else(PoisonError::into_inner) = Some(listed);
            Ok(serde_json::to_value(recorded)?)
        }
    };
    let recorded = journal::step_until(journal, stop, journal::tools_step(turn), Box::pin(step))
        .await
        .map_err(|stop| stop.stopped)?;
    Ok(relisted(recorded, &live, toolsets))
}

/// The tools a listing step gave: those listed now, or tools made from its record.
fn relisted<Deps: Send + Sync + 'static>(
    recorded: Result<Value, BoxError>,
    live: &Mutex<Option<Vec<ListedTool<Deps>>>>,
    toolsets: Vec<Arc<dyn Toolset<Deps>>>,
) -> Result<Vec<ListedTool<Deps>>, BoxError> {
    let recorded = recorded?;
    if let Some(listed) = live.lock().unwrap_or_else(PoisonError::into_inner).take() {
        return Ok(listed);
    }
    let recorded: Vec<RecordedTool> = serde_json::from_value(recorded)?;
    let relisting = Arc::new(Relisting {
        tools: toolsets.iter().map(|_| OnceCell::new()).collect(),
        toolsets,
    });
    Ok(recorded
        .into_iter()
        .map(|recorded| ListedTool {
            source: recorded.source.clone(),
            definition: recorded.definition.clone(),
            tool: Arc::new(Relisted {
                recorded,
                relisting: Arc::clone(&relisting),
            }) as Arc<dyn Tool<Deps>>,
        })
        .collect())
}

/// A listed tool as the journal records it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct RecordedTool {
    source: String,
    definition: ToolDefinition,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max_retries: Option<u32>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    requires_approval: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    repeatable: bool,
    tool_type: String,
}

impl RecordedTool {
    fn of<Deps: 'static>(listed: &ListedTool<Deps>) -> Self {
        RecordedTool {
            source: listed.source.clone(),
            definition: listed.definition.clone(),
            max_retries: listed.tool.max_retries().map(|RetryLimit(limit)| limit),
            requires_approval: listed.tool.requires_approval(),
            repeatable: listed.tool.repeatable(),
            tool_type: listed.tool.tool_type().to_owned(),
        }
    }
}

/// The toolsets of a replayed run, each listed again the first time one of its recorded
/// tools is called.
struct Relisting<Deps> {
    toolsets: Vec<Arc<dyn Toolset<Deps>>>,
    /// What each of `toolsets` lists now, once it was listed again.
    tools: Vec<OnceCell<ByName<Deps>>>,
}

/// The tools one toolset lists, by name.
type ByName<Deps> = HashMap<String, Arc<dyn Tool<Deps>>>;

impl<Deps: 'static> Relisting<Deps> {
    /// The tool the toolsets named `source` list now as `name`. Only those are listed: a
    /// call needs no other toolset's server.
    async fn find(
        &self,
        source: &str,
        name: &str,
        ctx: &RunContext<Deps>,
    ) -> Result<Arc<dyn Tool<Deps>>, ToolsetError> {
        for (toolset, tools) in self.toolsets.iter().zip(&self.tools) {
            if toolset.name() != source {
                continue;
            }
            let tools = tools
                .get_or_try_init(|| async {
                    let listed = toolset
                        .list(ctx)
                        .await
                        .map_err(|source| ToolsetError::List {
                            toolset: toolset.name().to_owned(),
                            source,
                        })?;
                    Ok::<_, ToolsetError>(
                        listed
                            .into_iter()
                            .map(|tool| (tool.definition().name, tool))
                            .collect(),
                    )
                })
                .await?;
            if let Some(tool) = tools.get(name) {
                return Ok(Arc::clone(tool));
            }
        }
        Err(ToolsetError::List {
            toolset: source.to_owned(),
            source: format!(
                "tool `{name}` was listed when the run began and is not listed any more"
            )
            .into(),
        })
    }
}

/// A tool of a replayed run's recorded tool list: it describes itself from the record, and
/// calls the tool its toolset lists now.
struct Relisted<Deps> {
    recorded: RecordedTool,
    relisting: Arc<Relisting<Deps>>,
}

impl<Deps> fmt::Debug for Relisted<Deps> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Relisted")
            .field("recorded", &self.recorded)
            .finish_non_exhaustive()
    }
}

impl<Deps: Send + Sync + 'static> Tool<Deps> for Relisted<Deps> {
    fn definition(&self) -> ToolDefinition {
        self.recorded.definition.clone()
    }

    fn max_retries(&self) -> Option<RetryLimit> {
        self.recorded.max_retries.map(RetryLimit)
    }

    fn requires_approval(&self) -> bool {
        self.recorded.requires_approval
    }

    fn repeatable(&self) -> bool {
        self.recorded.repeatable
    }

    fn tool_type(&self) -> &'static str {
        match self.recorded.tool_type.as_str() {
            "function" => "function",
            "datastore" => "datastore",
            _ => "extension",
        }
    }

    fn call<'a>(
        &'a self,
        ctx: &'a RunContext<Deps>,
        args: &'a str,
    ) -> BoxFuture<'a, Result<Value, BoxError>> {
        Box::pin(async move {
            let name = &self.recorded.definition.name;
            let tool = self
                .relisting
                .find(&self.recorded.source, name, ctx)
                .await?;
            tool.call(ctx, args).await
        })
    }
}
