//! [`Traces`]: what the agents a run delegated to show, as the UI messages their calls'
//! preliminary outputs carry.

use golem::run::AgentCall;
use serde_json::{Map, Value, json};

use crate::rejection_json;
use crate::view::{Show, TOOL_UNFINISHED, TextKind, call_input};

/// The messages of the delegated agents of one stream, one tree per call of the run.
#[derive(Debug, Default)]
pub(super) struct Traces {
    /// By the run's call that delegated.
    calls: Vec<(String, Trace)>,
}

/// One delegated agent's UI message so far, and the agents it delegated to.
#[derive(Debug, Default)]
struct Trace {
    parts: Vec<Map<String, Value>>,
    /// Text and reasoning parts by `<turn>-<part>`: their index in `parts`.
    texts: Vec<(String, usize)>,
    /// Tool parts by call id: their index in `parts`.
    tools: Vec<(String, usize)>,
    /// The agents this one delegated to, by call id; `true` once they ended.
    agents: Vec<(String, Trace, bool)>,
}

impl Traces {
    /// Takes `show` in; the call to update and its new preliminary output, when the UI
    /// message of a delegated agent changed.
    pub(super) fn show(&mut self, show: &Show<'_>) -> Option<(String, Value)> {
        let (path, item) = match show {
            Show::AgentStart { path } => {
                let (last, parent) = path.split_last()?;
                match parent.is_empty() {
                    true => self
                        .calls
                        .push((last.tool_call_id.clone(), Trace::default())),
                    false => self.find(parent)?.agents.push((
                        last.tool_call_id.clone(),
                        Trace::default(),
                        false,
                    )),
                }
                (*path, None)
            }
            Show::Nested { path, item } => (*path, Some(&**item)),
            Show::AgentEnd { path, .. } | Show::AgentFailed { path, .. } => {
                // A nested agent's message stays its call's output until its result comes.
                if let Some((last, parent)) = path.split_last()
                    && let Some(trace) = self.find(parent)
                    && let Some(agent) = trace
                        .agents
                        .iter_mut()
                        .find(|(id, _, _)| *id == last.tool_call_id)
                {
                    agent.2 = true;
                }
                return None;
            }
            _ => return None,
        };
        if let Some(item) = item
            && !self.find(path)?.apply(item)
        {
            return None;
        }
        let first = path.first()?;
        let (_, root) = self
            .calls
            .iter()
            .find(|(id, _)| *id == first.tool_call_id)?;
        Some((first.tool_call_id.clone(), root.render()))
    }

    fn find(&mut self, path: &[AgentCall]) -> Option<&mut Trace> {
        let (first, rest) = path.split_first()?;
        let mut trace = &mut self
            .calls
            .iter_mut()
            .find(|(id, _)| *id == first.tool_call_id)?
            .1;
        for call in rest {
            trace = &mut trace
                .agents
                .iter_mut()
                .find(|(id, _, _)| *id == call.tool_call_id)?
                .1;
        }
        Some(trace)
    }
}

impl Trace {
    /// Applies `item` to the message; whether the UI should see it now (a new step or an
    /// empty text part waits for what comes next).
    fn apply(&mut self, item: &Show<'_>) -> bool {
        match item {
            Show::StepStart { .. } => {
                self.parts.push(object(json!({"type": "step-start"})));
                return false;
            }
            Show::TextStart { kind, turn, part } => {
                let kind = match kind {
                    TextKind::Text => "text",
                    TextKind::Reasoning => "reasoning",
                };
                self.texts
                    .push((format!("{turn}-{part}"), self.parts.len()));
                self.parts.push(object(
                    json!({"type": kind, "text": "", "state": "streaming"}),
                ));
                return false;
            }
            Show::TextDelta {
                turn, part, delta, ..
            } => {
                let Some(text) = self.text(*turn, *part) else {
                    return false;
                };
                if let Some(Value::String(text)) = text.get_mut("text") {
                    text.push_str(delta);
                }
            }
            Show::TextEnd { turn, part, .. } => {
                let Some(text) = self.text(*turn, *part) else {
                    return false;
                };
                text.insert("state".into(), "done".into());
            }
            Show::ToolStart {
                call_id, tool_name, ..
            } => {
                self.tool(call_id, tool_name)
                    .insert("state".into(), "input-streaming".into());
            }
            Show::ToolInput { call, .. } => {
                let tool = self.tool(&call.tool_call_id, &call.tool_name);
                tool.insert("state".into(), "input-available".into());
                tool.insert("input".into(), call_input(call));
            }
            Show::ToolOutput { call_id, output } => {
                self.finish_tool(
                    call_id,
                    "output-available",
                    Some(("output", (*output).clone())),
                );
            }
            Show::ToolError { call_id, error } => {
                self.finish_tool(
                    call_id,
                    "output-error",
                    Some(("errorText", (*error).into())),
                );
            }
            Show::ToolDenied { call_id, .. } => self.finish_tool(call_id, "output-denied", None),
            Show::ToolUnfinished { call_id } => self.finish_tool(
                call_id,
                "output-error",
                Some(("errorText", TOOL_UNFINISHED.into())),
            ),
            Show::Rejected(rejection) => self.parts.push(object(
                json!({"type": "data-rejection", "data": rejection_json(rejection)}),
            )),
            _ => return false,
        }
        true
    }

    fn text(&mut self, turn: u32, part: usize) -> Option<&mut Map<String, Value>> {
        let key = format!("{turn}-{part}");
        let (_, index) = self.texts.iter().rev().find(|(id, _)| *id == key)?;
        self.parts.get_mut(*index)
    }

    /// The tool part of `call_id`, added when it is new.
    fn tool(&mut self, call_id: &str, tool_name: &str) -> &mut Map<String, Value> {
        let index = match self.tools.iter().find(|(id, _)| id == call_id) {
            Some((_, index)) => *index,
            None => {
                self.tools.push((call_id.to_owned(), self.parts.len()));
                self.parts.push(object(json!({
                    "type": format!("tool-{tool_name}"),
                    "toolCallId": call_id,
                })));
                self.parts.len() - 1
            }
        };
        &mut self.parts[index]
    }

    fn finish_tool(&mut self, call_id: &str, state: &str, value: Option<(&str, Value)>) {
        let Some((_, index)) = self.tools.iter().find(|(id, _)| id == call_id) else {
            return;
        };
        let part = &mut self.parts[*index];
        part.insert("state".into(), state.into());
        if let Some((key, value)) = value {
            part.insert(key.into(), value);
        }
    }

    /// The UI message: `{"role": "assistant", "parts": [..]}`, a nested agent that still
    /// runs as its call's preliminary output.
    fn render(&self) -> Value {
        let mut parts = self.parts.clone();
        for (call_id, agent, ended) in &self.agents {
            let Some((_, index)) = self.tools.iter().find(|(id, _)| id == call_id) else {
                continue;
            };
            if !*ended {
                let part = &mut parts[*index];
                part.insert("state".into(), "output-available".into());
                part.insert("output".into(), agent.render());
                part.insert("preliminary".into(), true.into());
            }
        }
        json!({"role": "assistant", "parts": parts})
    }
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}
