//! Retry accounting for one run: a counter per tool, one for unknown tool names, one for
//! the output, and what rejected rounds cost.

use crate::usage::{RoundCost, Usage};

/// Which counter a tool rejection is charged to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolKey {
    /// The agent's tool at this index.
    Known(usize),
    /// Any name the agent has no tool for; all share one counter.
    Unknown,
}

/// Rejections so far in one run. Counters never reset: a budget of N allows N rejections of
/// that tool in the whole run.
#[derive(Debug)]
pub(crate) struct Budget {
    tools: Vec<u32>,
    unknown: u32,
    output: u32,
}

impl Budget {
    pub(crate) fn new(tool_count: usize) -> Self {
        Budget {
            tools: vec![0; tool_count],
            unknown: 0,
            output: 0,
        }
    }

    /// Rejections so far of the tool behind `key`.
    pub(crate) fn tool_rejections(&self, key: ToolKey) -> u32 {
        match key {
            ToolKey::Known(index) => self.tools[index],
            ToolKey::Unknown => self.unknown,
        }
    }

    /// Counts one more rejection of the tool behind `key`; returns the new count.
    pub(crate) fn charge_tool(&mut self, key: ToolKey) -> u32 {
        let counter = match key {
            ToolKey::Known(index) => &mut self.tools[index],
            ToolKey::Unknown => &mut self.unknown,
        };
        *counter += 1;
        *counter
    }

    /// Rejections so far of the output.
    pub(crate) fn output_rejections(&self) -> u32 {
        self.output
    }

    /// Counts one more rejection of the output; returns the new count.
    pub(crate) fn charge_output(&mut self) -> u32 {
        self.output += 1;
        self.output
    }
}

/// What was rejected in one round, so that round's cost can be booked against it.
#[derive(Debug, Default)]
pub(crate) struct Culprits {
    pub(crate) tools: Vec<String>,
    pub(crate) unknown_tools: bool,
    pub(crate) output: bool,
}

impl Culprits {
    /// Books `cost` once in the total and once per culprit.
    pub(crate) fn book(self, cost: RoundCost, usage: &mut Usage) {
        if self.tools.is_empty() && !self.unknown_tools && !self.output {
            return;
        }
        let rejected = &mut usage.rejected;
        rejected.total += cost;
        for tool in self.tools {
            *rejected.tools.entry(tool).or_default() += cost;
        }
        if self.unknown_tools {
            rejected.unknown_tools += cost;
        }
        if self.output {
            rejected.output += cost;
        }
    }
}
