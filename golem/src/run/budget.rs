//! Retry accounting: which counter a rejection is charged to, and what rejected rounds cost.

use smallvec::SmallVec;

use super::state::Retries;
use crate::toolbox::ToolKey;
use crate::usage::{RoundCost, Usage};

impl Retries {
    /// Counts one more rejection of the tool `name` behind `key`; returns the new count.
    pub(crate) fn charge_tool(&mut self, key: ToolKey, name: &str) -> u32 {
        let counter = match key {
            ToolKey::Known(_) => match self.tools.get_mut(name) {
                Some(counter) => counter,
                None => self.tools.entry(name.to_owned()).or_default(),
            },
            ToolKey::Unknown => &mut self.unknown_tools,
        };
        *counter += 1;
        *counter
    }

    /// Rejections so far of the tool `name` behind `key`.
    pub(crate) fn tool_rejections(&self, key: ToolKey, name: &str) -> u32 {
        match key {
            ToolKey::Known(_) => self.tool(name),
            ToolKey::Unknown => self.unknown_tools,
        }
    }

    /// Counts one more rejection of the output; returns the new count.
    pub(crate) fn charge_output(&mut self) -> u32 {
        self.output += 1;
        self.output
    }
}

/// What was rejected in one round, so that round's cost can be booked against it.
#[derive(Debug, Default)]
pub(crate) struct Culprits<'a> {
    /// The rejected tools, by name: a name is copied only when its tool is booked first.
    /// Inline up to two, the common case, without an allocation.
    pub(crate) tools: SmallVec<[&'a str; 2]>,
    pub(crate) unknown_tools: bool,
    pub(crate) output: bool,
}

impl Culprits<'_> {
    /// Books `cost` once in the total and once per culprit.
    pub(crate) fn book(self, cost: RoundCost, usage: &mut Usage) {
        if self.tools.is_empty() && !self.unknown_tools && !self.output {
            return;
        }
        let rejected = &mut usage.rejected;
        rejected.total += cost;
        for tool in self.tools {
            match rejected.tools.get_mut(tool) {
                Some(booked) => *booked += cost,
                None => {
                    rejected.tools.insert(tool.to_owned(), cost);
                }
            }
        }
        if self.unknown_tools {
            rejected.unknown_tools += cost;
        }
        if self.output {
            rejected.output += cost;
        }
    }
}
