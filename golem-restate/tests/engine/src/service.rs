//! The Restate services: `Durable` runs the agent under test through a
//! [`RestateJournal`]; `Toolsets` runs the remote toolset agent the same way; `Bench` runs a
//! golem run against the same number of bare `ctx.run` steps, for the bench.

use std::net::SocketAddr;

use golem::Agent;
use golem::model::function::FunctionModel;
use golem::model::{Message, ModelResponse};
use golem::tool::FunctionTool;
use golem::{ModelRetry, RunContext};
use golem_restate::approval::{self, AwaitingCall, Decision};
use golem_restate::{RestateJournal, handler_error};
use restate_sdk::prelude::*;
use serde_json::{Value, json};

use crate::agent::{Effects, Summary, agent, approval_agent, delegating_agent};
use crate::remote::remote_agent;

/// The service under test: handlers that run the agent, and an agent that delegates to
/// it, durably.
#[derive(Debug)]
pub struct Durable {
    agent: Agent<Effects, String>,
    delegating: Agent<Effects, String>,
    effects: Effects,
}

impl Durable {
    /// The service, its agent on the model server at `base_url`, its tools' side effects in
    /// `effects`.
    pub fn new(base_url: &str, effects: Effects) -> Self {
        Durable {
            agent: agent(base_url),
            delegating: delegating_agent(base_url),
            effects,
        }
    }
}

#[restate_sdk::service]
impl Durable {
    /// Runs the agent on `prompt` through Restate's journal.
    #[handler]
    async fn run(&self, ctx: Context<'_>, prompt: String) -> Result<Json<Summary>, HandlerError> {
        durably(&self.agent, &ctx, prompt, &self.effects).await
    }

    /// Runs the delegating agent on `prompt` through Restate's journal: the child agent's
    /// steps are journaled under the parent's call.
    #[handler]
    async fn delegate(
        &self,
        ctx: Context<'_>,
        prompt: String,
    ) -> Result<Json<Summary>, HandlerError> {
        durably(&self.delegating, &ctx, prompt, &self.effects).await
    }
}

/// The approval tests' workflow: its run waits inside Restate for a decision on each call
/// of `save_note`.
#[derive(Debug)]
pub struct Approvals {
    agent: Agent<Effects, String>,
    effects: Effects,
}

impl Approvals {
    /// The workflow, its agent on the model server at `base_url`, its side effects in
    /// `effects`.
    pub fn new(base_url: &str, effects: Effects) -> Self {
        Approvals {
            agent: approval_agent(base_url),
            effects,
        }
    }
}

#[restate_sdk::workflow]
impl Approvals {
    /// Runs the approval agent on `prompt`, waiting for decisions inside Restate.
    #[handler]
    async fn run(
        &self,
        ctx: WorkflowContext<'_>,
        prompt: String,
    ) -> Result<Json<Summary>, HandlerError> {
        let run = self.agent.start(prompt, self.effects.clone());
        let result = approval::finish(run, &ctx).await?;
        Ok(Json(Summary::of(result)))
    }

    /// Decides on a waiting call.
    #[handler]
    async fn decide(
        &self,
        ctx: SharedWorkflowContext<'_>,
        decision: Json<Decision>,
    ) -> Result<(), HandlerError> {
        approval::decide(&ctx, decision.into_inner()).await
    }

    /// The calls that wait for a decision.
    #[handler]
    async fn awaiting(
        &self,
        ctx: SharedWorkflowContext<'_>,
    ) -> Result<Json<Vec<AwaitingCall>>, HandlerError> {
        Ok(Json(approval::awaiting(&ctx).await?))
    }
}

/// Runs `agent` on `prompt` through Restate's journal on `ctx`: the run's summary.
async fn durably(
    agent: &Agent<Effects, String>,
    ctx: &Context<'_>,
    prompt: String,
    effects: &Effects,
) -> Result<Json<Summary>, HandlerError> {
    let result = agent
        .start(prompt, effects.clone())
        .finish_in(&RestateJournal::new(ctx))
        .await
        .map_err(handler_error)?;
    Ok(Json(Summary::of(result)))
}

/// The toolset tests' service: one handler that runs the remote toolset agent durably.
#[derive(Debug)]
pub struct Toolsets {
    agent: Agent<Effects, String>,
    effects: Effects,
}

impl Toolsets {
    /// The service, its agent on the model server at `model_url` with the tools of the
    /// toolset server at `toolset_url`, their side effects in `effects`.
    pub fn new(model_url: &str, toolset_url: &str, effects: Effects) -> Self {
        Toolsets {
            agent: remote_agent(model_url, toolset_url),
            effects,
        }
    }
}

#[restate_sdk::service]
impl Toolsets {
    /// Runs the remote toolset agent on `prompt` through Restate's journal.
    #[handler]
    async fn run(&self, ctx: Context<'_>, prompt: String) -> Result<Json<Summary>, HandlerError> {
        durably(&self.agent, &ctx, prompt, &self.effects).await
    }
}

/// The bench's service: the same number of journaled steps, through golem or bare.
#[derive(Debug)]
pub struct Bench {
    agent: Agent<(), String>,
}

impl Default for Bench {
    fn default() -> Self {
        Bench {
            agent: bench_agent(),
        }
    }
}

/// A model that calls `echo` once per turn until `turns` tool calls were made, then answers.
/// The prompt is the number of tool turns.
fn bench_agent() -> Agent<(), String> {
    let model = FunctionModel::new(|messages: &[Message], _| {
        let turns: usize = match messages.first() {
            Some(Message::Request(request)) => request
                .parts
                .iter()
                .find_map(|part| match part {
                    golem::model::RequestPart::UserPrompt(prompt) => prompt.text().parse().ok(),
                    _ => None,
                })
                .unwrap_or(0),
            _ => 0,
        };
        let turn = messages.len() / 2 + 1;
        if turn <= turns {
            ModelResponse::tool_call("echo", json!({"n": turn}).to_string(), format!("c{turn}"))
                .with_usage(100, 10)
        } else {
            ModelResponse::text("done").with_usage(100, 10)
        }
    });
    let echo = FunctionTool::new("echo", |_ctx: RunContext<()>, args: Value| async move {
        Ok::<_, ModelRetry>(args)
    });
    Agent::builder(model)
        .tool(echo)
        .max_turns(10_000)
        .build()
        .expect("a valid agent")
}

#[restate_sdk::service]
impl Bench {
    /// A golem run with `turns` tool turns: `2 * turns + 1` journaled steps.
    #[handler]
    async fn golem(&self, ctx: Context<'_>, turns: u32) -> Result<u64, HandlerError> {
        let result = self
            .agent
            .start(turns.to_string(), ())
            .finish_in(&RestateJournal::new(&ctx))
            .await
            .map_err(handler_error)?;
        Ok(result.usage.requests)
    }

    /// `steps` bare `ctx.run` steps, each recording a JSON value of a model response's size.
    #[handler]
    async fn bare(&self, ctx: Context<'_>, steps: u32) -> Result<u64, HandlerError> {
        let mut recorded = 0;
        for step in 0..steps {
            let value = ctx
                .run(move || async move {
                    let response =
                        ModelResponse::tool_call("echo", json!({"n": step}).to_string(), "c")
                            .with_usage(100, 10);
                    Ok(Json(serde_json::to_value(response)?))
                })
                .name(format!("step:{step}"))
                .await?;
            recorded += u64::from(!value.0.is_null());
        }
        Ok(recorded)
    }
}

/// Serves `services` on `address` until the process ends.
pub async fn serve(endpoint: Endpoint, address: SocketAddr) {
    HttpServer::new(endpoint).listen_and_serve(address).await;
}
