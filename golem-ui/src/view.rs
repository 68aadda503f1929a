//! [`RunView`]: what a chat UI shows of a run, decided once for both protocols.
//!
//! Both encoders read a run's events through a `RunView`, which turns them into [`Show`]
//! items: which text or reasoning part opens and closes, when a tool call appears, what it
//! returned, which calls wait for approval, what a rejection said. The view owns the
//! bookkeeping the protocols share (open parts, calls by part, calls held back while
//! rejected rounds are hidden); each encoder only spells the items in its protocol.

use golem::RunEvent;
use golem::model::{ModelResponse, ResponseDelta, ResponsePart, ToolCallPart};
use golem::output::Output;
use golem::run::{AgentCall, NestedEvent, Rejection, ToolOutcome};
use serde_json::Value;

/// Whether rejected rounds reach the UI.
///
/// A rejected tool call is, by default, shown as a tool call whose output is an error with
/// the feedback the model got, and each rejection is also reported on its own (the turn, the
/// stage, retry n of N). [`Hidden`](Self::Hidden) shows a tool call only once it ran and was
/// not rejected, and reports no rejection; text that streamed before its answer was rejected
/// stays, since both protocols only append.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rejections {
    /// Rejected calls and rejections are shown.
    #[default]
    Shown,
    /// Rejected calls and rejections are left out.
    Hidden,
}

/// What kind of text part is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TextKind {
    /// Text for the user.
    Text,
    /// The model's reasoning.
    Reasoning,
}

/// One thing the UI shows, in order.
#[derive(Debug, PartialEq)]
pub(crate) enum Show<'e> {
    /// A model request starts (a step, for both protocols).
    StepStart { turn: u32 },
    /// The step ends: its response was handled, or the run paused or ended.
    StepEnd { turn: u32 },
    /// A text or reasoning part opens.
    TextStart {
        kind: TextKind,
        turn: u32,
        part: usize,
    },
    /// More of an open part.
    TextDelta {
        kind: TextKind,
        turn: u32,
        part: usize,
        delta: &'e str,
    },
    /// The part is complete.
    TextEnd {
        kind: TextKind,
        turn: u32,
        part: usize,
    },
    /// A tool call appears, its arguments still to come.
    ToolStart {
        turn: u32,
        call_id: &'e str,
        tool_name: &'e str,
    },
    /// More of a call's arguments, as JSON text.
    ToolArgs { call_id: &'e str, delta: &'e str },
    /// The call's arguments are complete. `streamed` says whether `ToolStart` and
    /// `ToolArgs` showed them already.
    ToolInput {
        turn: u32,
        call: &'e ToolCallPart,
        streamed: bool,
    },
    /// The call returned this value.
    ToolOutput { call_id: &'e str, output: &'e Value },
    /// The call was rejected (its feedback) or failed.
    ToolError { call_id: &'e str, error: &'e str },
    /// A call that began to stream will not be complete: the run failed or stopped while
    /// its arguments came.
    ToolUnfinished { call_id: &'e str },
    /// The caller denied the call; the reason is its result.
    ToolDenied { call_id: &'e str, reason: &'e str },
    /// The call waits for the user's approval.
    ApprovalRequest { call: &'e ToolCallPart },
    /// A rejection, with its feedback and budget.
    Rejected(&'e Rejection),
    /// The structured answer so far, as JSON.
    Partial { turn: u32, value: Value },
    /// The run's output, as JSON.
    Output(Value),
    /// An agent this run delegated to starts (its first event arrived): the calls down to
    /// it, outermost first.
    AgentStart { path: &'e [AgentCall] },
    /// What the delegated agent at `path` shows: never an approval, partial output or
    /// output, and never itself nested (each agent has its own path).
    Nested {
        path: &'e [AgentCall],
        item: Box<Show<'e>>,
    },
    /// The delegated agent finished with this output; its call's result follows.
    AgentEnd {
        path: &'e [AgentCall],
        output: &'e Value,
    },
    /// The delegated agent did not finish: its call failed, was rejected or denied, or the
    /// stream ended while it ran. `error` is what its call's result shows.
    AgentFailed {
        path: &'e [AgentCall],
        error: &'e str,
    },
}

/// A tool call's arguments as a JSON value: parsed, or the text itself when it is not JSON.
pub(crate) fn call_input(call: &ToolCallPart) -> Value {
    serde_json::from_str(&call.args).unwrap_or_else(|_| Value::String(call.args.clone()))
}

/// Renders a value of the run as JSON for the UI.
pub(crate) type Render<T> = fn(&T) -> Option<Value>;

/// What a UI shows of one stream of a run: see the module docs.
pub(crate) struct RunView<O: Output> {
    rejections: Rejections,
    /// Whether the model's reasoning is shown.
    reasoning: bool,
    output_tool: String,
    partial: Option<Render<O::Partial>>,
    output: Option<Render<O>>,
    /// The model turn of the step that is open, if one is.
    step: Option<u32>,
    /// The text and reasoning parts open in this turn, in the order they opened: those that
    /// streamed (the response shows the others whole).
    open: Vec<(TextKind, usize)>,
    /// This turn's streamed calls by part: their id, and whether the UI sees them (the
    /// output tool's calls and, while rejections are hidden, every call, are not shown).
    calls: Vec<(usize, String, bool)>,
    /// Whether this turn's response arrived: then every call that streamed is complete
    /// (under the id the run gave it, maybe not the one it streamed with).
    responded: bool,
    /// This turn's calls shown whole and still without an outcome.
    running: Vec<String>,
    /// Calls held back until their outcome is known (rejections hidden), in the order they
    /// came.
    held: Vec<ToolCallPart>,
    /// Whether the agents this run delegates to are shown.
    nested: bool,
    /// The delegated agents seen so far, at any depth, in the order they started.
    agents: Vec<Delegated<O>>,
}

/// A delegated agent: where it runs, its own view, and whether it ended.
struct Delegated<O: Output> {
    path: Vec<AgentCall>,
    view: RunView<O>,
    ended: bool,
}

impl<O: Output> std::fmt::Debug for RunView<O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunView")
            .field("rejections", &self.rejections)
            .field("output_tool", &self.output_tool)
            .field("step", &self.step)
            .finish_non_exhaustive()
    }
}

impl<O: Output> RunView<O> {
    pub(crate) fn new() -> Self {
        RunView {
            rejections: Rejections::Shown,
            reasoning: true,
            output_tool: golem::DEFAULT_OUTPUT_TOOL_NAME.to_owned(),
            partial: None,
            output: None,
            step: None,
            open: Vec::new(),
            calls: Vec::new(),
            responded: false,
            running: Vec::new(),
            held: Vec::new(),
            nested: true,
            agents: Vec::new(),
        }
    }

    /// The view of an agent this one delegates to: shown as this one is.
    fn child(&self) -> Self {
        let mut view = RunView::new();
        view.rejections = self.rejections;
        view.reasoning = self.reasoning;
        view
    }

    pub(crate) fn hide_nested(&mut self) {
        self.nested = false;
    }

    /// Whether the UI sees the call `id` while it runs: not while it is held back.
    fn shows_call(&self, id: &str) -> bool {
        !self.held.iter().any(|call| call.tool_call_id == id)
    }

    /// Takes the call `id` out of those held back, if it is one.
    fn release(&mut self, id: &str) -> Option<ToolCallPart> {
        let index = self.held.iter().position(|call| call.tool_call_id == id)?;
        Some(self.held.remove(index))
    }

    pub(crate) fn set_rejections(&mut self, rejections: Rejections) {
        self.rejections = rejections;
    }

    pub(crate) fn hide_reasoning(&mut self) {
        self.reasoning = false;
    }

    pub(crate) fn set_output_tool(&mut self, name: String) {
        self.output_tool = name;
    }

    pub(crate) fn set_partial(&mut self, render: Render<O::Partial>) {
        self.partial = Some(render);
    }

    pub(crate) fn set_output(&mut self, render: Render<O>) {
        self.output = Some(render);
    }

    fn shows(&self, kind: TextKind) -> bool {
        kind == TextKind::Text || self.reasoning
    }

    fn hidden(&self) -> bool {
        self.rejections == Rejections::Hidden
    }

    /// Closes the step that is open, if one is.
    pub(crate) fn end_step(&mut self, show: &mut impl FnMut(Show<'_>)) {
        self.close_agents(show);
        self.close_parts(show);
        // The calls shown while they streamed, when their response never came.
        if !self.responded {
            for (_, call_id, shown) in &self.calls {
                if *shown {
                    show(Show::ToolUnfinished { call_id });
                }
            }
        }
        self.calls.clear();
        // Calls still without an outcome when a step ends well wait for approval.
        self.running.clear();
        if let Some(turn) = self.step.take() {
            show(Show::StepEnd { turn });
        }
    }

    /// Closes the step that is open when the run failed or stopped: the calls shown that
    /// will have no outcome (not run, or stopped while they ran) end in an error first.
    pub(crate) fn fail(&mut self, show: &mut impl FnMut(Show<'_>)) {
        for call_id in std::mem::take(&mut self.running) {
            show(Show::ToolError {
                call_id: &call_id,
                error: TOOL_NOT_RUN,
            });
        }
        self.end_step(show);
    }

    /// Ends the delegated agents still running, as not finished. Not generic over `show`,
    /// which each level of delegation wraps: a generic one would be instantiated without end.
    fn close_agents(&mut self, show: &mut dyn FnMut(Show<'_>)) {
        for Delegated { path, view, ended } in &mut self.agents {
            if !*ended {
                *ended = true;
                view.end_nested(path, show);
                show(Show::AgentFailed {
                    path,
                    error: AGENT_UNFINISHED,
                });
            }
        }
    }

    /// Closes this view of the delegated agent at `path`, what it shows wrapped as
    /// [`Show::Nested`].
    fn end_nested(&mut self, path: &[AgentCall], show: &mut dyn FnMut(Show<'_>)) {
        self.end_step(&mut |item| {
            show(Show::Nested {
                path,
                item: Box::new(item),
            })
        });
    }

    fn close_parts(&mut self, show: &mut impl FnMut(Show<'_>)) {
        let turn = self.step.unwrap_or(0);
        for (kind, part) in self.open.drain(..) {
            show(Show::TextEnd { kind, turn, part });
        }
    }

    /// What `event` shows, passed to `show` in order.
    pub(crate) fn event(&mut self, event: &RunEvent<O>, show: &mut impl FnMut(Show<'_>)) {
        match event {
            RunEvent::RequestSent { turn } => self.request_sent(*turn, show),
            RunEvent::Delta { turn, delta } => self.delta(*turn, delta, show),
            RunEvent::ResponseReceived { turn, response } => self.response(*turn, response, show),
            RunEvent::ApprovalRequired { calls, .. } => {
                for call in calls {
                    if let Some(held) = self.release(&call.tool_call_id) {
                        show_input(self.step.unwrap_or(0), &held, show);
                    }
                    show(Show::ApprovalRequest { call });
                }
                // The run pauses before any call of the response runs; the others run once
                // the approvals are answered, in the next request's stream, which knows
                // nothing held here: they are shown now, even if one is later rejected.
                for held in std::mem::take(&mut self.held) {
                    show_input(self.step.unwrap_or(0), &held, show);
                }
                self.end_step(show);
            }
            RunEvent::ToolCallFinished { call, outcome, .. } => {
                self.agent_outcome(&[], call, outcome, show);
                self.outcome(call, outcome, show);
            }
            RunEvent::Rejected(rejection) if !self.hidden() => show(Show::Rejected(rejection)),
            RunEvent::Agent(agent) if self.nested => self.agent(&agent.path, &agent.event, show),
            RunEvent::PartialOutput { turn, partial } => {
                if let Some(value) = self.partial.and_then(|render| render(partial)) {
                    show(Show::Partial { turn: *turn, value });
                }
            }
            RunEvent::Finished(result) => {
                self.end_step(show);
                if let Some(value) = self.output.and_then(|render| render(&result.output)) {
                    show(Show::Output(value));
                }
            }
            _ => {}
        }
    }

    fn request_sent(&mut self, turn: u32, show: &mut impl FnMut(Show<'_>)) {
        self.end_step(show);
        self.step = Some(turn);
        self.responded = false;
        show(Show::StepStart { turn });
    }

    /// The response of `turn`: its calls, and the text and reasoning that did not stream
    /// (all of it from a model that answers whole; a refusal's words, which providers send
    /// apart from the text deltas, after reasoning that streamed).
    fn response(&mut self, turn: u32, response: &ModelResponse, show: &mut impl FnMut(Show<'_>)) {
        self.responded = true;
        let streamed = std::mem::take(&mut self.open);
        for &(kind, part) in &streamed {
            show(Show::TextEnd { kind, turn, part });
        }
        // A part of a kind is shown from the response when the response has more of that
        // kind than streamed, and its index did not stream. (A response may order its parts
        // otherwise than they streamed, so an index alone does not say.)
        let (mut texts, mut thoughts) = (0, 0);
        for part in &response.parts {
            match part {
                ResponsePart::Text(text) if !text.content.is_empty() => texts += 1,
                ResponsePart::Thinking(thinking) if !thinking.content.is_empty() => thoughts += 1,
                _ => {}
            }
        }
        let streamed_of = |kind| streamed.iter().filter(|(of, _)| *of == kind).count();
        let more = |kind, parts| parts > streamed_of(kind);
        let (more_text, more_reasoning) = (
            more(TextKind::Text, texts),
            more(TextKind::Reasoning, thoughts),
        );
        let unstreamed = |more: bool, kind, index| more && !streamed.contains(&(kind, index));
        for (index, part) in response.parts.iter().enumerate() {
            match part {
                ResponsePart::Text(text) if unstreamed(more_text, TextKind::Text, index) => {
                    self.whole(TextKind::Text, turn, index, &text.content, show);
                }
                ResponsePart::Thinking(thinking)
                    if unstreamed(more_reasoning, TextKind::Reasoning, index) =>
                {
                    self.whole(TextKind::Reasoning, turn, index, &thinking.content, show);
                }
                ResponsePart::ToolCall(call) => self.response_call(turn, call, show),
                _ => {}
            }
        }
    }

    /// What a delegated agent's `event` shows in this view, the agent's own.
    fn nested_event(&mut self, event: &NestedEvent, show: &mut impl FnMut(Show<'_>)) {
        match event {
            NestedEvent::RequestSent { turn } => self.request_sent(*turn, show),
            NestedEvent::Delta { turn, delta } => self.delta(*turn, delta, show),
            NestedEvent::ResponseReceived { turn, response } => {
                self.response(*turn, response, show);
            }
            NestedEvent::ToolCallFinished { call, outcome, .. } => {
                self.outcome(call, outcome, show);
            }
            NestedEvent::Rejected(rejection) if !self.hidden() => {
                show(Show::Rejected(rejection));
            }
            _ => {}
        }
    }

    /// An event of the delegated agent at `path`: shown when its call is, in that agent's
    /// own view, wrapped as [`Show::Nested`].
    fn agent(&mut self, path: &[AgentCall], event: &NestedEvent, show: &mut impl FnMut(Show<'_>)) {
        let Some((last, parent)) = path.split_last() else {
            return;
        };
        let index = match self.agents.iter().position(|agent| agent.path == path) {
            Some(index) => index,
            None => {
                let visible = match parent.is_empty() {
                    true => self.shows_call(&last.tool_call_id),
                    false => self.agents.iter().any(|agent| {
                        agent.path == parent
                            && !agent.ended
                            && agent.view.shows_call(&last.tool_call_id)
                    }),
                };
                if !visible {
                    return;
                }
                let view = self.child();
                self.agents.push(Delegated {
                    path: path.to_vec(),
                    view,
                    ended: false,
                });
                show(Show::AgentStart { path });
                self.agents.len() - 1
            }
        };
        if let NestedEvent::ToolCallFinished { call, outcome, .. } = event {
            self.agent_outcome(path, call, outcome, show);
        }
        let Delegated { view, ended, .. } = &mut self.agents[index];
        if *ended {
            return;
        }
        let mut nested = |item: Show<'_>| {
            show(Show::Nested {
                path,
                item: Box::new(item),
            })
        };
        match event {
            NestedEvent::Finished { output } => {
                *ended = true;
                view.end_step(&mut nested);
                show(Show::AgentEnd { path, output });
            }
            event => view.nested_event(event, &mut nested),
        }
    }

    /// The call `call` of the agent at `parent` (this run, when empty) ended: the agent it
    /// ran, if one still runs, ends with it.
    fn agent_outcome(
        &mut self,
        parent: &[AgentCall],
        call: &ToolCallPart,
        outcome: &ToolOutcome,
        show: &mut impl FnMut(Show<'_>),
    ) {
        let Some(Delegated { path, view, ended }) = self.agents.iter_mut().find(|agent| {
            !agent.ended
                && agent.path.len() == parent.len() + 1
                && agent.path.starts_with(parent)
                && agent.path[parent.len()].tool_call_id == call.tool_call_id
        }) else {
            return;
        };
        *ended = true;
        view.end_nested(path, show);
        show(match outcome {
            ToolOutcome::Returned(output) => Show::AgentEnd { path, output },
            ToolOutcome::Rejected { feedback: error } | ToolOutcome::Denied { reason: error } => {
                Show::AgentFailed { path, error }
            }
            _ => Show::AgentFailed {
                path,
                error: TOOL_FAILED,
            },
        });
    }

    fn delta(&mut self, turn: u32, delta: &ResponseDelta, show: &mut impl FnMut(Show<'_>)) {
        match delta {
            ResponseDelta::Text { part, text } => {
                self.text(TextKind::Text, turn, *part, text, show)
            }
            ResponseDelta::Thinking { part, text } => {
                self.text(TextKind::Reasoning, turn, *part, text, show);
            }
            ResponseDelta::ToolCallStart {
                part,
                tool_name,
                tool_call_id,
            } => {
                // A call that streams without an id (Gemini's) gets one from the run when
                // its response is recorded: it is shown whole then, under that id.
                let shown =
                    !self.hidden() && *tool_name != self.output_tool && !tool_call_id.is_empty();
                self.calls.push((*part, tool_call_id.clone(), shown));
                if shown {
                    show(Show::ToolStart {
                        turn,
                        call_id: tool_call_id,
                        tool_name,
                    });
                }
            }
            ResponseDelta::ToolCallArgs { part, args } => {
                let call = self.calls.iter().find(|(p, _, _)| p == part);
                if let Some((_, call_id, true)) = call
                    && !args.is_empty()
                {
                    show(Show::ToolArgs {
                        call_id,
                        delta: args,
                    });
                }
            }
            _ => {}
        }
    }

    fn text(
        &mut self,
        kind: TextKind,
        turn: u32,
        part: usize,
        delta: &str,
        show: &mut impl FnMut(Show<'_>),
    ) {
        if delta.is_empty() || !self.shows(kind) {
            return;
        }
        if !self.open.contains(&(kind, part)) {
            self.open.push((kind, part));
            show(Show::TextStart { kind, turn, part });
        }
        show(Show::TextDelta {
            kind,
            turn,
            part,
            delta,
        });
    }

    fn whole(
        &mut self,
        kind: TextKind,
        turn: u32,
        part: usize,
        text: &str,
        show: &mut impl FnMut(Show<'_>),
    ) {
        if text.is_empty() || !self.shows(kind) {
            return;
        }
        show(Show::TextStart { kind, turn, part });
        show(Show::TextDelta {
            kind,
            turn,
            part,
            delta: text,
        });
        show(Show::TextEnd { kind, turn, part });
    }

    fn response_call(&mut self, turn: u32, call: &ToolCallPart, show: &mut impl FnMut(Show<'_>)) {
        if call.tool_name == self.output_tool {
            return;
        }
        if self.hidden() {
            self.held.push(call.clone());
            return;
        }
        let streamed = self
            .calls
            .iter()
            .any(|(_, id, shown)| *shown && *id == call.tool_call_id);
        show(Show::ToolInput {
            turn,
            call,
            streamed,
        });
        self.running.push(call.tool_call_id.clone());
    }

    fn outcome(
        &mut self,
        call: &ToolCallPart,
        outcome: &ToolOutcome,
        show: &mut impl FnMut(Show<'_>),
    ) {
        // Calls are held only while rejections are hidden: skip the lookup otherwise.
        let held = match self.held.is_empty() {
            true => None,
            false => self.release(&call.tool_call_id),
        };
        if let (Some(held), false) = (&held, matches!(outcome, ToolOutcome::Rejected { .. })) {
            show_input(self.step.unwrap_or(0), held, show);
        }
        let call_id = call.tool_call_id.as_str();
        self.running.retain(|running| running != call_id);
        match outcome {
            ToolOutcome::Returned(output) => show(Show::ToolOutput { call_id, output }),
            // A call held back and then rejected is never shown; one shown already (its
            // approval was asked) gets its error.
            ToolOutcome::Rejected { feedback } if held.is_none() => show(Show::ToolError {
                call_id,
                error: feedback,
            }),
            ToolOutcome::Failed { .. } => show(Show::ToolError {
                call_id,
                error: TOOL_FAILED,
            }),
            ToolOutcome::Denied { reason } => show(Show::ToolDenied { call_id, reason }),
            _ => {}
        }
    }
}

/// What the UI sees of a call that failed with an error (not a rejection): the error itself
/// stays on the server, where the run's error carries it.
pub(crate) const TOOL_FAILED: &str = "the tool failed";

/// What the UI shows of a call whose arguments were still streaming when the run failed or
/// stopped.
pub(crate) const TOOL_UNFINISHED: &str = "the call was not complete";

/// What the UI shows of a call that was shown whole and will have no outcome: the run failed
/// or stopped before it ran, or while it ran.
pub(crate) const TOOL_NOT_RUN: &str = "the run ended before the call did";

/// What the UI sees of a delegated agent still running when the stream ended.
pub(crate) const AGENT_UNFINISHED: &str = "the agent did not finish";

fn show_input(turn: u32, call: &ToolCallPart, show: &mut impl FnMut(Show<'_>)) {
    show(Show::ToolInput {
        turn,
        call,
        streamed: false,
    });
}
