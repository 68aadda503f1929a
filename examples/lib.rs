//! Pieces the runnable examples share: choosing a model, a readable transcript of a run,
//! and the durable examples' agent.

use std::collections::HashMap;
use std::fmt::Write as _;

use golem::model::openai::OpenAiModel;
use golem::model::{Message, Model, ModelSettings, RequestPart, ResponsePart, UserContent};
use golem::usage::Usage;

pub mod durable;

/// The real OpenAI-compatible model when `OPENAI_API_KEY` is set (`OPENAI_BASE_URL` and
/// `GOLEM_MODEL`, default `gpt-4o-mini`, are honoured), else `None`.
///
/// Its output is bounded by `max_tokens`, as golem recommends for OpenAI and compatible
/// servers (golem sets no limit of its own there): a model that never stops cannot fill
/// its context, and 2048 tokens leave room for the examples' longest answers.
///
/// # Panics
/// When a key is set but the model cannot be configured (e.g. a bad base URL).
pub fn openai_from_env() -> Option<Box<dyn Model>> {
    let key = std::env::var("OPENAI_API_KEY")
        .ok()
        .filter(|key| !key.is_empty())?;
    let name = std::env::var("GOLEM_MODEL").unwrap_or_else(|_| "gpt-4o-mini".to_owned());
    let mut builder = OpenAiModel::builder(name)
        .api_key(key)
        .settings(ModelSettings::default().max_tokens(2048));
    if let Some(url) = std::env::var("OPENAI_BASE_URL")
        .ok()
        .filter(|url| !url.trim().is_empty())
    {
        builder = builder.base_url(url);
    }
    match builder.build() {
        Ok(model) => Some(Box::new(model)),
        Err(error) => panic!("OPENAI_API_KEY is set, but the model cannot be set up: {error}"),
    }
}

/// Renders a run's messages as a transcript a person can follow: who said what, each
/// rejection with its retry count, what each tool returned.
#[derive(Debug, Default)]
pub struct Transcript {
    tool_budgets: HashMap<String, u32>,
    default_tool_budget: u32,
    output_budget: u32,
}

impl Transcript {
    /// A transcript for an agent with these budgets (as given to the builder).
    pub fn new(default_tool_budget: u32, output_budget: u32) -> Self {
        Transcript {
            tool_budgets: HashMap::new(),
            default_tool_budget,
            output_budget,
        }
    }

    /// A tool with its own budget (`#[golem::tool(max_retries = n)]`).
    #[must_use]
    pub fn tool_budget(mut self, tool: &str, budget: u32) -> Self {
        self.tool_budgets.insert(tool.to_owned(), budget);
        self
    }

    /// The transcript of `messages`.
    pub fn render(&self, messages: &[Message]) -> String {
        let mut out = String::new();
        let mut rejections: HashMap<String, u32> = HashMap::new();
        for message in messages {
            match message {
                Message::Request(request) => {
                    for part in &request.parts {
                        match part {
                            RequestPart::SystemPrompt(p) => line(&mut out, "system", &p.content),
                            RequestPart::UserPrompt(p) => {
                                let text = with_media(p.text().into_owned(), p.media());
                                line(&mut out, "user", &text)
                            }
                            RequestPart::ToolReturn(p) => {
                                let text = format!("{} → {}", p.tool_name, p.model_text());
                                line(&mut out, "tool", &with_media(text, &p.media))
                            }
                            RequestPart::RetryPrompt(p) => {
                                let (who, budget) = match p.tool_name.as_deref() {
                                    Some(tool) if tool != "final_result" => (
                                        tool.to_owned(),
                                        *self
                                            .tool_budgets
                                            .get(tool)
                                            .unwrap_or(&self.default_tool_budget),
                                    ),
                                    _ => ("output".to_owned(), self.output_budget),
                                };
                                let count = rejections.entry(who.clone()).or_default();
                                *count += 1;
                                line(
                                    &mut out,
                                    "rejected",
                                    &format!("{who}, retry {count} of {budget}: {}", p.content),
                                );
                            }
                            other => line(&mut out, "request", &format!("{other:?}")),
                        }
                    }
                }
                Message::Response(response) => {
                    for part in &response.parts {
                        match part {
                            ResponsePart::Text(p) => line(&mut out, "model", &p.content),
                            ResponsePart::ToolCall(call) => line(
                                &mut out,
                                "model",
                                &format!("calls {}({})", call.tool_name, call.args),
                            ),
                            ResponsePart::Thinking(p) => line(&mut out, "thinking", &p.content),
                            _ => {}
                        }
                    }
                }
            }
        }
        out
    }
}

/// `text` followed by each media part's description in brackets (never its bytes).
fn with_media<'a>(mut text: String, media: impl IntoIterator<Item = &'a UserContent>) -> String {
    for part in media {
        text.push_str(&format!(" [{}]", part.describe()));
    }
    text
}

fn line(out: &mut String, who: &str, text: &str) {
    let _ = writeln!(out, "{who:<9}│ {text}");
}

/// One line with what the run cost, and how much of it went to rejected rounds; with the
/// `prices` feature, in dollars too (see `cost`).
pub fn usage_line(usage: &Usage) -> String {
    let line = format!(
        "{:<9}│ {} requests, {} input + {} output tokens, {} tool calls; \
         rounds that ended in a rejection: {} requests, {} tokens",
        "usage",
        usage.requests,
        usage.input_tokens,
        usage.output_tokens,
        usage.tool_calls,
        usage.rejected.total.requests,
        usage.rejected.total.input_tokens + usage.rejected.total.output_tokens,
    );
    #[cfg(feature = "prices")]
    let line = format!("{line}; {}", cost(usage, "openai", &priced_model()));
    line
}

/// The model the examples' costs are priced at: `GOLEM_MODEL`, else `gpt-4o-mini` (the
/// model [`openai_from_env`] asks; the scripted runs are priced as if it had answered).
#[cfg(feature = "prices")]
pub fn priced_model() -> String {
    std::env::var("GOLEM_MODEL").unwrap_or_else(|_| "gpt-4o-mini".to_owned())
}

/// What `usage` cost in dollars at `model`'s prices, and what its rejected rounds cost, or
/// why it cannot be priced.
#[cfg(feature = "prices")]
pub fn cost(usage: &Usage, provider: &str, model: &str) -> String {
    match (
        usage.price(provider, model),
        usage.rejected_price(provider, model),
    ) {
        (Ok(price), Ok(rejected)) => format!(
            "cost {price} at {model} prices, rejected rounds ${:.6}",
            rejected.total
        ),
        (Err(error), _) | (_, Err(error)) => format!("cost unknown: {error}"),
    }
}
