//! Pieces the runnable examples share: a readable transcript of a run.

use std::fmt::Write as _;

use golem::model::{Message, RequestPart, ResponsePart};
use golem::usage::Usage;

/// Renders a run's messages as a transcript a person can follow: who said what, which
/// calls were rejected and why, and what each tool returned.
pub fn transcript(messages: &[Message]) -> String {
    let mut out = String::new();
    for message in messages {
        match message {
            Message::Request(request) => {
                for part in &request.parts {
                    let line = match part {
                        RequestPart::SystemPrompt(p) => format!("system     │ {}", p.content),
                        RequestPart::UserPrompt(p) => format!("user       │ {}", p.content),
                        RequestPart::ToolReturn(p) => {
                            format!("tool       │ {} → {}", p.tool_name, p.model_text())
                        }
                        RequestPart::RetryPrompt(p) => match &p.tool_name {
                            Some(tool) => format!("rejected   │ {tool}: {}", p.content),
                            None => format!("rejected   │ output: {}", p.content),
                        },
                    };
                    let _ = writeln!(out, "{line}");
                }
            }
            Message::Response(response) => {
                for part in &response.parts {
                    let line = match part {
                        ResponsePart::Text(p) => format!("model      │ {}", p.content),
                        ResponsePart::ToolCall(call) => {
                            format!("model      │ calls {}({})", call.tool_name, call.args)
                        }
                    };
                    let _ = writeln!(out, "{line}");
                }
            }
        }
    }
    out
}

/// One line with what the run cost, and how much of it went to rejected rounds.
pub fn usage_line(usage: &Usage) -> String {
    format!(
        "usage      │ {} requests, {} input + {} output tokens, {} tool calls; \
         rejected rounds: {} requests, {} tokens",
        usage.requests,
        usage.input_tokens,
        usage.output_tokens,
        usage.tool_calls,
        usage.rejected.total.requests,
        usage.rejected.total.input_tokens + usage.rejected.total.output_tokens,
    )
}
