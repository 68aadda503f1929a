//! The tools one run can call: the agent's own, checked when it is built, and those its
//! toolsets list at the start of each run.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::model::{ModelResponse, RequestParams, ToolCallPart, ToolsStamp};
use crate::tool::{RetryLimit, Tool, ToolDefinition, is_valid_tool_name};

/// Which counter a tool rejection is charged to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolKey {
    /// The agent's tool at this index.
    Known(usize),
    /// Any name the agent has no tool for; all share one counter.
    Unknown,
}

/// Where the agent's own tools come from, in errors.
pub(crate) const AGENT_SOURCE: &str = "the agent";

/// One callable tool and what the run needs to know of it.
pub(crate) struct ToolEntry<Deps> {
    pub(crate) tool: Arc<dyn Tool<Deps>>,
    pub(crate) name: Arc<str>,
    pub(crate) max_retries: u32,
    pub(crate) requires_approval: bool,
    /// Whether calls with the arguments of an earlier call still run.
    pub(crate) repeatable: bool,
}

impl<Deps> Clone for ToolEntry<Deps> {
    fn clone(&self) -> Self {
        ToolEntry {
            tool: Arc::clone(&self.tool),
            name: Arc::clone(&self.name),
            max_retries: self.max_retries,
            requires_approval: self.requires_approval,
            repeatable: self.repeatable,
        }
    }
}

/// A run's tools, with the request parameters that describe them to the model.
pub(crate) struct Toolbox<Deps> {
    pub(crate) entries: Vec<ToolEntry<Deps>>,
    /// Each tool's place in `entries`, by name: ordered, because a few string comparisons
    /// cost less than hashing a name with SipHash, the lookup each call makes.
    pub(crate) index: BTreeMap<String, usize>,
    /// Whether any tool waits for approval, so runs without such tools skip the check.
    pub(crate) any_requires_approval: bool,
    /// The tool names for the unknown-tool feedback: `` `a`, `b` ``.
    pub(crate) available: String,
    pub(crate) params: RequestParams,
    /// The output tools' names, which no tool may take.
    pub(crate) output_tools: Vec<Arc<str>>,
    /// The budget of a tool without its own.
    default_retries: u32,
}

/// Why a tool cannot join a toolbox.
#[derive(Debug)]
pub(crate) enum NameClash {
    Invalid(String),
    Duplicate(String),
    OutputTool(String),
}

impl<Deps: 'static> Toolbox<Deps> {
    /// An empty toolbox for `params` (which hold the output tools, if any).
    pub(crate) fn new(
        params: RequestParams,
        output_tools: Vec<Arc<str>>,
        default_retries: u32,
    ) -> Self {
        Toolbox {
            entries: Vec::new(),
            index: BTreeMap::new(),
            any_requires_approval: false,
            available: String::new(),
            params,
            output_tools,
            default_retries,
        }
    }

    /// The same tools, to add a run's listed ones to.
    pub(crate) fn extended(&self) -> Self {
        Toolbox {
            entries: self.entries.clone(),
            index: self.index.clone(),
            any_requires_approval: self.any_requires_approval,
            available: String::new(),
            params: self.params.clone(),
            output_tools: self.output_tools.clone(),
            default_retries: self.default_retries,
        }
    }

    /// Adds `tool`, its schema built now.
    pub(crate) fn add(&mut self, tool: Arc<dyn Tool<Deps>>) -> Result<(), NameClash> {
        let definition = tool.definition();
        self.add_defined(tool, definition)
    }

    /// Adds `tool`, whose schema is `definition`.
    pub(crate) fn add_defined(
        &mut self,
        tool: Arc<dyn Tool<Deps>>,
        definition: ToolDefinition,
    ) -> Result<(), NameClash> {
        if !is_valid_tool_name(&definition.name) {
            return Err(NameClash::Invalid(definition.name));
        }
        if self
            .output_tools
            .iter()
            .any(|name| **name == *definition.name)
        {
            return Err(NameClash::OutputTool(definition.name));
        }
        if self.index.contains_key(&definition.name) {
            return Err(NameClash::Duplicate(definition.name));
        }
        let max_retries = tool
            .max_retries()
            .map_or(self.default_retries, |RetryLimit(limit)| limit);
        let requires_approval = tool.requires_approval();
        let repeatable = tool.repeatable();
        self.any_requires_approval |= requires_approval;
        self.index
            .insert(definition.name.clone(), self.entries.len());
        self.entries.push(ToolEntry {
            name: Arc::from(definition.name.as_str()),
            tool,
            max_retries,
            requires_approval,
            repeatable,
        });
        self.params.function_tools.push(definition);
        Ok(())
    }

    /// The calls in `response` that need the caller's approval and are not `decided` yet.
    pub(crate) fn awaiting_approval(
        &self,
        response: &ModelResponse,
        decided: impl Fn(&ToolCallPart) -> bool,
    ) -> Vec<ToolCallPart> {
        if !self.any_requires_approval {
            return Vec::new();
        }
        response
            .tool_calls()
            .filter(|call| match self.key(&call.tool_name) {
                ToolKey::Known(index) => self.entries[index].requires_approval,
                ToolKey::Unknown => false,
            })
            .filter(|call| !decided(call))
            .cloned()
            .collect()
    }

    /// Which counter a rejection of the tool `name` is charged to.
    pub(crate) fn key(&self, name: &str) -> ToolKey {
        self.index
            .get(name)
            .map_or(ToolKey::Unknown, |&index| ToolKey::Known(index))
    }

    /// The budget behind `key`.
    pub(crate) fn limit(&self, key: ToolKey) -> u32 {
        match key {
            ToolKey::Known(index) => self.entries[index].max_retries,
            ToolKey::Unknown => self.default_retries,
        }
    }

    /// Completes the toolbox once every tool is in: its tool list is marked as one nothing
    /// changes after.
    pub(crate) fn seal(&mut self) {
        self.params.tools_stamp = ToolsStamp::fresh();
        self.available = self
            .params
            .all_tools()
            .map(|definition| format!("`{}`", definition.name))
            .collect::<Vec<_>>()
            .join(", ");
    }
}
