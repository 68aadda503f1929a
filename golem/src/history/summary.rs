//! Summarising older turns with a model: [`Summarize`], what the run state records of a
//! summary, and how a summary stands in for the turns it covers.

use std::collections::VecDeque;
use std::fmt::{self, Write as _};
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use super::builtin::{cut_with, turn_starts};
use super::estimate::estimate_tokens;
use crate::model::{
    Message, Model, ModelRequest, ModelSettings, RequestParams, RequestPart, ResponsePart,
};

/// How a summary opens, in the request that carries it.
const SUMMARY_OPENING: &str = "A summary of the earlier conversation:\n\n";

/// The instructions of a summary request, by default.
const DEFAULT_PROMPT: &str = "Summarise the conversation below for the assistant who will \
continue it. Keep every fact, name, number, decision and open question the assistant may \
need; leave out greetings and repetition. Write plain prose, no more than a few paragraphs.";

/// How many summaries an agent remembers across its runs.
const REMEMBERED: usize = 8;

/// Summarises the older turns of a long conversation with a model, once the history a
/// request would send is over a token budget: the turns before the last few are replaced,
/// in what is sent, by a summary the model writes of them.
///
/// Set it with [`AgentBuilder::summarize_history`](crate::AgentBuilder::summarize_history).
/// The summary request is made by the run itself, before the history processors: it is
/// counted in the run's usage and shown apart in [`Usage::summaries`](crate::Usage::summaries),
/// it is the journal step `summary:{turn}` in a durable run (a replay does not ask again),
/// and the summary is recorded in the run state, so a resumed run sends the same. A later
/// summary covers the earlier one and the turns since, so each request costs at most one
/// summary request, and most none. The agent also remembers its last few summaries, so a
/// conversation continued in a new run (`run_with_history`) in the same process does not
/// ask again for what it already has (a durable run does not: its replay must make the same
/// steps).
///
/// ```
/// use golem::history::Summarize;
/// use golem::model::function::FunctionModel;
/// use golem::model::{Message, ModelResponse};
/// use golem::Agent;
///
/// let summarizer = FunctionModel::new(|_: &[Message], _| ModelResponse::text("They said hello."));
/// let model = FunctionModel::new(|messages: &[Message], _| {
///     ModelResponse::text(format!("I was sent {} messages.", messages.len()))
/// });
/// let agent = Agent::<(), String>::builder(model)
///     .summarize_history(Summarize::new(summarizer, 20).keep_last_turns(1))
///     .build()?;
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let first = agent.run("Hello there, how are you today?", ()).await?;
/// let second = agent.run_with_history(first.messages, "What did I say?", ()).await?;
/// assert_eq!(second.output, "I was sent 1 messages."); // the summary and the new prompt
/// assert_eq!(second.usage.summaries.requests, 1);
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Summarize {
    pub(crate) model: Arc<dyn Model>,
    keep_turns: usize,
    over_tokens: u64,
    prompt: String,
    settings: ModelSettings,
    remembered: Arc<Mutex<VecDeque<Summary>>>,
}

impl fmt::Debug for Summarize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Summarize")
            .field("model", &self.model.name())
            .field("keep_turns", &self.keep_turns)
            .field("over_tokens", &self.over_tokens)
            .finish_non_exhaustive()
    }
}

impl Summarize {
    /// Summarises with `model` once the history a request would send is over `over_tokens`
    /// estimated tokens (see [`estimate_tokens`](super::estimate_tokens)), keeping the last
    /// two turns as they are.
    pub fn new(model: impl Model, over_tokens: u64) -> Self {
        Summarize {
            model: Arc::new(model),
            keep_turns: 2,
            over_tokens,
            prompt: DEFAULT_PROMPT.to_owned(),
            settings: ModelSettings::default().max_tokens(1024),
            remembered: Arc::default(),
        }
    }

    /// Keeps the last `turns` turns (at least one) as they are, a turn being a user prompt
    /// and everything after it.
    #[must_use]
    pub fn keep_last_turns(mut self, turns: usize) -> Self {
        self.keep_turns = turns.max(1);
        self
    }

    /// What the summary request asks of the model, in place of golem's own instructions.
    #[must_use]
    pub fn prompt(mut self, prompt: impl Into<String>) -> Self {
        self.prompt = prompt.into();
        self
    }

    /// The summary request's settings (by default, at most 1,024 output tokens).
    #[must_use]
    pub fn settings(mut self, settings: ModelSettings) -> Self {
        self.settings = settings;
        self
    }

    /// What to do for a request that would send `view`, with `recorded` the summary the
    /// run state holds. A durable run (`journaled`) uses only what its state records, so a
    /// replay asks for the same summaries, answered from the journal, as the first execution.
    pub(crate) fn plan(
        &self,
        view: &[Message],
        recorded: Option<&Summary>,
        journaled: bool,
    ) -> Plan {
        let known = recorded
            .filter(|summary| summary.fits(view))
            .cloned()
            .or_else(|| (!journaled).then(|| self.remembered(view)).flatten());
        // The history with the known summary in place: estimated here, and sent as it is
        // when no new summary is asked for.
        let known = known.map(|summary| {
            let applied = summary.apply(view);
            (summary, applied)
        });
        let tokens = known.as_ref().map_or_else(
            || estimate_tokens(view),
            |(_, applied)| estimate_tokens(applied),
        );
        if tokens <= self.over_tokens {
            return Plan::Send(known);
        }
        let starts = turn_starts(view);
        let Some(first_kept) = starts.len().checked_sub(self.keep_turns) else {
            return Plan::Send(known);
        };
        let cut = starts[first_kept];
        let covered = known.as_ref().map_or(0, |(summary, _)| summary.covers);
        if cut <= covered {
            return Plan::Send(known);
        }
        let request = self.request(
            known.as_ref().map(|(summary, _)| summary.text.as_str()),
            &view[covered..cut],
        );
        Plan::Ask {
            covers: cut,
            digest: digest(&view[..cut]),
            request: Box::new(request),
        }
    }

    /// The request that asks for a summary of `messages`, after the summary `earlier` of
    /// what came before them.
    fn request(
        &self,
        earlier: Option<&str>,
        messages: &[Message],
    ) -> (Vec<Message>, RequestParams) {
        let mut text = self.prompt.clone();
        text.push_str("\n\n");
        if let Some(earlier) = earlier {
            let _ = writeln!(text, "Summary of what came before:\n{earlier}\n");
        }
        text.push_str("The conversation:\n");
        render(&mut text, messages);
        let mut params = RequestParams::text(Vec::new());
        params.settings = self.settings.clone();
        (
            vec![Message::Request(ModelRequest::user_prompt(text))],
            params,
        )
    }

    /// Remembers `summary` for later runs of the agent.
    pub(crate) fn remember(&self, summary: &Summary) {
        let mut remembered = self
            .remembered
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        remembered.retain(|known| known.digest != summary.digest);
        if remembered.len() == REMEMBERED {
            remembered.pop_front();
        }
        remembered.push_back(summary.clone());
    }

    /// The remembered summary that covers the longest part of `view`.
    fn remembered(&self, view: &[Message]) -> Option<Summary> {
        let remembered = self
            .remembered
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        remembered
            .iter()
            .filter(|summary| {
                summary.covers < view.len() && summary.digest == digest(&view[..summary.covers])
            })
            .max_by_key(|summary| summary.covers)
            .cloned()
    }
}

/// What the run does about a summary before a request.
#[derive(Debug)]
pub(crate) enum Plan {
    /// Send the history, or, with a summary, the history with it standing in for the turns
    /// it covers (the second field).
    Send(Option<(Summary, Vec<Message>)>),
    /// Ask the summary model (`request`: its messages and parameters) for a summary of the
    /// first `covers` messages, which hash to `digest`.
    Ask {
        covers: usize,
        digest: u64,
        request: Box<(Vec<Message>, RequestParams)>,
    },
}

/// A summary of the first `covers` messages a request sends, as the run state records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Summary {
    pub(crate) covers: usize,
    /// A hash of the messages it covers, to know it for the same conversation later.
    pub(crate) digest: u64,
    pub(crate) text: String,
}

impl Summary {
    /// The summary of `response`'s text, for the messages `covers` and `digest` name.
    pub(crate) fn of(covers: usize, digest: u64, response: &crate::model::ModelResponse) -> Self {
        Summary {
            covers,
            digest,
            text: response.text_content(),
        }
    }

    /// Whether it can stand in for the start of `view`: it covers a turn's start before
    /// its end.
    fn fits(&self, view: &[Message]) -> bool {
        self.covers < view.len() && turn_starts(view).contains(&self.covers)
    }

    /// `view` with this summary in place of the messages it covers: the system prompt the
    /// conversation opened with, then the summary, at the start of the first request kept.
    pub(crate) fn apply(&self, view: &[Message]) -> Vec<Message> {
        if self.covers == 0 || self.covers >= view.len() {
            return view.to_vec();
        }
        let summary = RequestPart::user_prompt(format!("{SUMMARY_OPENING}{}", self.text));
        cut_with(view, self.covers, vec![summary])
    }
}

/// Writes `messages` as a transcript a model can summarise.
fn render(out: &mut String, messages: &[Message]) {
    for message in messages {
        match message {
            Message::Request(request) => {
                for part in &request.parts {
                    let _ = match part {
                        RequestPart::SystemPrompt(_) => Ok(()),
                        RequestPart::UserPrompt(prompt) => {
                            writeln!(out, "User: {}", prompt.text())
                        }
                        RequestPart::ToolReturn(answer) => writeln!(
                            out,
                            "Tool `{}` returned: {}",
                            answer.tool_name,
                            answer.model_text()
                        ),
                        RequestPart::RetryPrompt(retry) => {
                            writeln!(out, "Feedback to the assistant: {}", retry.content)
                        }
                    };
                }
            }
            Message::Response(response) => {
                for part in &response.parts {
                    let _ = match part {
                        ResponsePart::Text(text) => writeln!(out, "Assistant: {}", text.content),
                        ResponsePart::ToolCall(call) => writeln!(
                            out,
                            "Assistant called `{}` with {}",
                            call.tool_name, call.args
                        ),
                        ResponsePart::Thinking(_) | ResponsePart::Provider(_) => Ok(()),
                    };
                }
            }
        }
    }
}

/// A hash of `messages` that is the same in every process and golem version of this format
/// (FNV-1a over their JSON).
pub(crate) fn digest(messages: &[Message]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let bytes = serde_json::to_vec(messages).unwrap_or_default();
    bytes.iter().fold(OFFSET, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(PRIME)
    })
}
