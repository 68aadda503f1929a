//! The run loop: request → response → tools and output → next turn.

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::future::join_all;
use serde_json::Value;
use serde_json::value::RawValue;
use tracing::{Instrument, field};

use super::budget::{Budget, Culprits, ToolKey};
use super::{Agent, AgentInner, RunResult};
use crate::context::RunContext;
use crate::error::{BoxError, Exhausted, RunError, Stage};
use crate::model::{
    FinishReason, Message, ModelError, ModelRequest, ModelResponse, ModelRetry, RequestPart,
    ResponsePart, ToolCallPart,
};
use crate::output::{Output, OutputMode, decode_json};
use crate::usage::{LimitExceeded, Usage};

const FINAL_RESULT_PROCESSED: &str = "Final result processed.";
const OUTPUT_NOT_USED: &str = "Output tool not used: only the first output call is considered.";
// What a call gets when the run stops before it can be answered. Every call in a history is
// answered, so the history stays valid for providers if it is resumed; the text never
// includes an error's own message.
const TOOL_FAILED: &str = "The tool failed; the run stopped.";
const OUTPUT_FAILED: &str = "The output could not be processed; the run stopped.";
const NOT_RUN: &str = "Not run: the run stopped before this call.";

impl<Deps, O> Agent<Deps, O>
where
    Deps: Send + Sync + 'static,
    O: Output,
{
    /// Runs the agent on `prompt` with `deps` until it produces an output.
    ///
    /// # Errors
    /// A [`RunError`] naming the stage that failed, with the cause and every message and
    /// the usage up to the failure.
    pub async fn run(
        &self,
        prompt: impl Into<String>,
        deps: Deps,
    ) -> Result<RunResult<O>, RunError> {
        self.run_with_history(Vec::new(), prompt, deps).await
    }

    /// Continues the conversation in `history` (e.g. a previous run's
    /// [`messages`](RunResult::messages)) with a new `prompt`.
    ///
    /// The instructions open a conversation only when `history` is empty: a saved history
    /// keeps its own.
    ///
    /// # Errors
    /// As for [`run`](Self::run).
    pub async fn run_with_history(
        &self,
        mut history: Vec<Message>,
        prompt: impl Into<String>,
        deps: Deps,
    ) -> Result<RunResult<O>, RunError> {
        let prompt = RequestPart::user_prompt(prompt);
        match history.last_mut() {
            // A history that ends in a request (e.g. feedback the run did not get to send)
            // gets the prompt in that same request.
            Some(Message::Request(request)) => request.parts.push(prompt),
            Some(Message::Response(_)) => {
                history.push(Message::Request(ModelRequest::new(vec![prompt])));
            }
            None => {
                let mut parts = Vec::with_capacity(2);
                if let Some(instructions) = &self.inner.instructions {
                    parts.push(RequestPart::system_prompt(instructions.clone()));
                }
                parts.push(prompt);
                history.push(Message::Request(ModelRequest::new(parts)));
            }
        }
        self.drive(history, deps).await
    }

    /// Sends `history` as it is and goes on from there: for a history that ends in a
    /// request, such as a [`RunError`]'s after a retry budget ran out.
    ///
    /// ```
    /// use golem::model::function::FunctionModel;
    /// use golem::model::{Message, ModelResponse};
    /// use golem::{Agent, ModelRetry};
    ///
    /// let model = FunctionModel::new(|messages: &[Message], _| {
    ///     ModelResponse::text(if messages.len() < 3 { "maybe" } else { "yes" })
    /// });
    /// let validator = |_ctx, answer: String| async move {
    ///     if answer == "maybe" { Err(ModelRetry::new("answer yes or no")) } else { Ok(answer) }
    /// };
    /// let strict = Agent::<(), String>::builder(model.clone())
    ///     .output_validator(validator)
    ///     .build()?;
    /// let lenient = Agent::<(), String>::builder(model)
    ///     .output_retries(1)
    ///     .output_validator(validator)
    ///     .build()?;
    /// # tokio::runtime::Runtime::new()?.block_on(async {
    /// let error = strict.run("Is water wet?", ()).await.unwrap_err();
    /// let result = lenient.resume(error.into_messages(), ()).await?;
    /// assert_eq!(result.output, "yes");
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// # })?;
    /// # Ok::<_, Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// A [`RunError`] at the [`Stage::Input`] stage when `history` does not end in a
    /// request; otherwise as for [`run`](Self::run).
    pub async fn resume(
        &self,
        history: Vec<Message>,
        deps: Deps,
    ) -> Result<RunResult<O>, RunError> {
        if !matches!(history.last(), Some(Message::Request(_))) {
            return Err(RunError::new(
                Stage::Input,
                None,
                None,
                "resume needs a history that ends in a request; use run_with_history to add a prompt"
                    .into(),
                history,
                Usage::default(),
            ));
        }
        self.drive(history, deps).await
    }

    async fn drive(&self, messages: Vec<Message>, deps: Deps) -> Result<RunResult<O>, RunError> {
        let inner = &*self.inner;
        let span = tracing::info_span!(
            "invoke_agent",
            otel.name = field::Empty,
            "gen_ai.operation.name" = "invoke_agent",
            "gen_ai.agent.name" = field::Empty,
            "gen_ai.system" = inner.model.system(),
            "gen_ai.request.model" = inner.model.name(),
            "gen_ai.usage.input_tokens" = field::Empty,
            "gen_ai.usage.output_tokens" = field::Empty,
        );
        if let Some(name) = &inner.name {
            span.record("gen_ai.agent.name", name.as_str());
            span.record("otel.name", format!("invoke_agent {name}"));
        }
        let mut run = RunState {
            messages,
            usage: Usage::default(),
            budget: Budget::new(inner.tools.len()),
            turns: 0,
            deps: Arc::new(deps),
        };
        let outcome: Result<O, Failure> = async {
            loop {
                if let Some(output) = inner.turn(&mut run).await? {
                    return Ok(output);
                }
            }
        }
        .instrument(span.clone())
        .await;
        span.record("gen_ai.usage.input_tokens", run.usage.input_tokens);
        span.record("gen_ai.usage.output_tokens", run.usage.output_tokens);
        match outcome {
            Ok(output) => Ok(RunResult {
                output,
                messages: run.messages,
                usage: run.usage,
            }),
            Err(failure) => Err(RunError::new(
                failure.stage,
                failure.tool_name,
                failure.exhausted,
                failure.source,
                run.messages,
                run.usage,
            )),
        }
    }
}

struct RunState<Deps> {
    messages: Vec<Message>,
    usage: Usage,
    budget: Budget,
    turns: u32,
    deps: Arc<Deps>,
}

impl<Deps> RunState<Deps> {
    /// Keeps a response the run will not act on, answering its calls as not run.
    fn push_unanswered(&mut self, response: ModelResponse) {
        let parts: Vec<RequestPart> = response
            .tool_calls()
            .map(|call| call.answer(NOT_RUN))
            .collect();
        self.messages.push(Message::Response(response));
        if !parts.is_empty() {
            self.messages
                .push(Message::Request(ModelRequest::new(parts)));
        }
    }
}

/// A failure before the messages and usage are attached.
struct Failure {
    stage: Stage,
    tool_name: Option<String>,
    exhausted: Option<Exhausted>,
    source: BoxError,
}

impl Failure {
    fn limit(limit: LimitExceeded) -> Self {
        Failure {
            stage: Stage::Limit,
            tool_name: None,
            exhausted: None,
            source: Box::new(limit),
        }
    }
}

/// What the model's answer to one call turned out to be.
enum CallOutcome {
    Returned(Value),
    Rejected { reason: String, error: BoxError },
    Failed(BoxError),
}

/// The tool-call and output handling of one response.
struct Turn<O> {
    parts: Vec<RequestPart>,
    culprits: Culprits,
    result: Result<Option<O>, Failure>,
}

impl<O> Turn<O> {
    fn new() -> Self {
        Turn {
            parts: Vec::new(),
            culprits: Culprits::default(),
            result: Ok(None),
        }
    }
}

impl<Deps, O> AgentInner<Deps, O>
where
    Deps: Send + Sync + 'static,
    O: Output,
{
    /// One model turn. `Ok(Some(output))` ends the run, `Ok(None)` asks the model again.
    async fn turn(&self, run: &mut RunState<Deps>) -> Result<Option<O>, Failure> {
        if run.turns >= self.max_turns {
            return Err(Failure::limit(LimitExceeded::Turns {
                limit: self.max_turns,
            }));
        }
        self.usage_limits
            .check_before_request(&run.usage)
            .map_err(Failure::limit)?;
        run.turns += 1;

        let mut response = self.request(&run.messages).await?;
        name_unnamed_calls(&mut response, run.messages.len());
        run.usage += &response.usage;
        let cost = response.usage.cost();
        if let Err(limit) = self.usage_limits.check_tokens(&run.usage) {
            run.push_unanswered(response);
            return Err(Failure::limit(limit));
        }
        // A cut-off or filtered response is kept in the history, but not acted on.
        let unusable = match response.finish_reason {
            Some(FinishReason::Length) => Some(ModelError::Truncated),
            Some(FinishReason::ContentFilter) => Some(ModelError::ContentFilter),
            _ => None,
        };
        if let Some(error) = unusable {
            run.push_unanswered(response);
            return Err(Failure {
                stage: Stage::Model,
                tool_name: None,
                exhausted: None,
                source: Box::new(error),
            });
        }

        let ctx = RunContext::from_parts(
            Arc::clone(&run.deps),
            Arc::new(run.usage.clone()),
            run.turns,
        );
        let turn = self
            .handle_response(&response, &ctx, &mut run.budget, &mut run.usage)
            .await;
        turn.culprits.book(cost, &mut run.usage);
        run.messages.push(Message::Response(response));
        if !turn.parts.is_empty() {
            run.messages
                .push(Message::Request(ModelRequest::new(turn.parts)));
        }
        turn.result
    }

    async fn request(&self, messages: &[Message]) -> Result<ModelResponse, Failure> {
        let span = tracing::info_span!(
            "chat",
            otel.name = format!("chat {}", self.model.name()),
            "gen_ai.operation.name" = "chat",
            "gen_ai.system" = self.model.system(),
            "gen_ai.request.model" = self.model.name(),
            "gen_ai.response.model" = field::Empty,
            "gen_ai.response.id" = field::Empty,
            "gen_ai.usage.input_tokens" = field::Empty,
            "gen_ai.usage.output_tokens" = field::Empty,
        );
        let result = self
            .model
            .request(messages, &self.params)
            .instrument(span.clone())
            .await;
        match result {
            Ok(response) => {
                if let Some(model) = &response.model_name {
                    span.record("gen_ai.response.model", model.as_str());
                }
                if let Some(id) = &response.provider_response_id {
                    span.record("gen_ai.response.id", id.as_str());
                }
                span.record("gen_ai.usage.input_tokens", response.usage.input_tokens);
                span.record("gen_ai.usage.output_tokens", response.usage.output_tokens);
                Ok(response)
            }
            Err(error) => {
                span.in_scope(|| tracing::warn!(error = %error, "model request failed"));
                Err(Failure {
                    stage: Stage::Model,
                    tool_name: None,
                    exhausted: None,
                    source: Box::new(error),
                })
            }
        }
    }

    async fn handle_response(
        &self,
        response: &ModelResponse,
        ctx: &RunContext<Deps>,
        budget: &mut Budget,
        usage: &mut Usage,
    ) -> Turn<O> {
        let mut turn = Turn::new();
        let (output_calls, function_calls): (Vec<&ToolCallPart>, Vec<&ToolCallPart>) = response
            .tool_calls()
            .partition(|call| self.is_output_call(call));

        let mut tool_rejected = false;
        if !function_calls.is_empty() {
            match self
                .run_tools(&function_calls, ctx, budget, usage, &mut turn)
                .await
            {
                Ok(rejected) => tool_rejected = rejected,
                Err(failure) => {
                    // Answer the output calls too, so a history that ends here can be
                    // resumed: providers require every call to be answered.
                    if failure.exhausted.is_some() {
                        self.decline_output_calls(&output_calls, &mut turn);
                    } else {
                        turn.parts
                            .extend(output_calls.iter().map(|call| call.answer(NOT_RUN)));
                    }
                    turn.result = Err(failure);
                    return turn;
                }
            }
        }

        match self.output.structured {
            Some(_) if self.output.mode == OutputMode::Tool => {
                let Some((first, rest)) = output_calls.split_first() else {
                    if function_calls.is_empty() {
                        let reason = if response.text_content().trim().is_empty() {
                            format!(
                                "The response was empty. Call the `{}` tool with your answer.",
                                self.output.tool_name
                            )
                        } else {
                            format!(
                                "Plain text responses are not permitted. Call the `{}` tool with your answer.",
                                self.output.tool_name
                            )
                        };
                        self.reject_output(None, reason, None, budget, &mut turn);
                    }
                    return turn;
                };
                if tool_rejected {
                    self.decline_output_calls(&output_calls, &mut turn);
                    return turn;
                }
                let raw = first.args.as_str();
                self.finish(Some(first), raw, ctx, budget, &mut turn).await;
                for call in rest {
                    turn.parts.push(call.answer(OUTPUT_NOT_USED));
                }
            }
            _ => {
                if !function_calls.is_empty() {
                    return turn;
                }
                let text = response.text_content();
                if text.trim().is_empty() {
                    let reason = if self.output.structured.is_some() {
                        "The response was empty. Answer with JSON that matches the schema."
                    } else {
                        "The response was empty. Answer with text."
                    };
                    self.reject_output(None, reason.to_owned(), None, budget, &mut turn);
                    return turn;
                }
                self.finish(None, &text, ctx, budget, &mut turn).await;
            }
        }
        turn
    }

    /// Answers output calls that cannot be accepted because a tool call in the same
    /// response was rejected or failed. Not charged to the output budget.
    fn decline_output_calls(&self, calls: &[&ToolCallPart], turn: &mut Turn<O>) {
        let reason = format!(
            "Output not accepted: a tool call in this response was rejected. \
             Correct that call first, then call `{}` again.",
            self.output.tool_name
        );
        turn.parts
            .extend(calls.iter().map(|call| call.answer(reason.as_str())));
    }

    fn is_output_call(&self, call: &ToolCallPart) -> bool {
        self.output.structured.is_some()
            && self.output.mode == OutputMode::Tool
            && call.tool_name == *self.output.tool_name
    }

    /// Runs the turn's function-tool calls concurrently and books their rejections.
    /// `Ok(true)` when any call was rejected.
    async fn run_tools(
        &self,
        calls: &[&ToolCallPart],
        ctx: &RunContext<Deps>,
        budget: &mut Budget,
        usage: &mut Usage,
        turn: &mut Turn<O>,
    ) -> Result<bool, Failure> {
        let known = calls
            .iter()
            .filter(|call| self.tool_index.contains_key(&call.tool_name))
            .count() as u64;
        if let Err(limit) = self.usage_limits.check_tool_calls(usage, known) {
            turn.parts
                .extend(calls.iter().map(|call| call.answer(NOT_RUN)));
            return Err(Failure::limit(limit));
        }
        usage.tool_calls += known;

        let budget_now = &*budget;
        let outcomes = join_all(
            calls
                .iter()
                .map(|call| self.call_tool(call, ctx, budget_now)),
        )
        .await;

        let mut terminal = None;
        let mut rejected: Vec<(ToolKey, &ToolCallPart, String, BoxError)> = Vec::new();
        for (call, outcome) in calls.iter().zip(outcomes) {
            match outcome {
                CallOutcome::Returned(value) => turn.parts.push(call.answer(value)),
                CallOutcome::Rejected { reason, error } => {
                    turn.parts.push(call.reject(reason.clone()));
                    let key = self.tool_key(&call.tool_name);
                    if !rejected.iter().any(|(seen, ..)| *seen == key) {
                        rejected.push((key, call, reason, error));
                    }
                }
                CallOutcome::Failed(error) => {
                    turn.parts.push(call.answer(TOOL_FAILED));
                    if terminal.is_none() {
                        terminal = Some(Failure {
                            stage: Stage::Tool,
                            tool_name: Some(call.tool_name.clone()),
                            exhausted: None,
                            source: error,
                        });
                    }
                }
            }
        }
        // Rejections are booked even when another call failed, so every one is counted
        // and traced.
        let any_rejected = !rejected.is_empty();
        let mut exhausted = None;
        for (key, call, reason, error) in rejected {
            let rejections = budget.charge_tool(key);
            let limit = self.tool_limit(key);
            match key {
                ToolKey::Known(_) => turn.culprits.tools.push(call.tool_name.clone()),
                ToolKey::Unknown => turn.culprits.unknown_tools = true,
            }
            tracing::warn!(
                stage = "tool",
                "gen_ai.tool.name" = call.tool_name.as_str(),
                "gen_ai.tool.call.id" = call.tool_call_id.as_str(),
                retry = rejections,
                max_retries = limit,
                reason = reason.as_str(),
                "tool call rejected"
            );
            if rejections > limit && exhausted.is_none() {
                exhausted = Some(Failure {
                    stage: Stage::Tool,
                    tool_name: Some(call.tool_name.clone()),
                    exhausted: Some(Exhausted { rejections, limit }),
                    source: error,
                });
            }
        }
        match terminal.or(exhausted) {
            Some(failure) => Err(failure),
            None => Ok(any_rejected),
        }
    }

    fn tool_key(&self, name: &str) -> ToolKey {
        self.tool_index
            .get(name)
            .map_or(ToolKey::Unknown, |&index| ToolKey::Known(index))
    }

    fn tool_limit(&self, key: ToolKey) -> u32 {
        match key {
            ToolKey::Known(index) => self.tools[index].max_retries,
            ToolKey::Unknown => self.tool_retries,
        }
    }

    async fn call_tool(
        &self,
        call: &ToolCallPart,
        base: &RunContext<Deps>,
        budget: &Budget,
    ) -> CallOutcome {
        let ToolKey::Known(index) = self.tool_key(&call.tool_name) else {
            let reason = if self.available_tools.is_empty() {
                format!(
                    "Unknown tool name: `{}`. No tools are available.",
                    call.tool_name
                )
            } else {
                format!(
                    "Unknown tool name: `{}`. Available tools: {}.",
                    call.tool_name, self.available_tools
                )
            };
            return CallOutcome::Rejected {
                error: Box::new(ModelRetry::new(reason.clone())),
                reason,
            };
        };
        let entry = &self.tools[index];
        let ctx = base.for_attempt(
            Some(Arc::clone(&entry.name)),
            Some(Arc::from(call.tool_call_id.as_str())),
            budget.tool_rejections(ToolKey::Known(index)),
            entry.max_retries,
        );
        let span = tracing::info_span!(
            "execute_tool",
            otel.name = format!("execute_tool {}", call.tool_name),
            "gen_ai.operation.name" = "execute_tool",
            "gen_ai.tool.name" = call.tool_name.as_str(),
            "gen_ai.tool.call.id" = call.tool_call_id.as_str(),
        );
        match entry.tool.call(&ctx, &call.args).instrument(span).await {
            Ok(value) => CallOutcome::Returned(value),
            Err(error) => match ModelRetry::find(&*error) {
                Some(retry) => CallOutcome::Rejected {
                    reason: retry.message().to_owned(),
                    error,
                },
                None => CallOutcome::Failed(error),
            },
        }
    }

    /// Decodes and validates the answer in `raw`; ends the run on success.
    async fn finish(
        &self,
        call: Option<&ToolCallPart>,
        raw: &str,
        ctx: &RunContext<Deps>,
        budget: &mut Budget,
        turn: &mut Turn<O>,
    ) {
        let ctx = ctx.for_attempt(
            call.map(|_| Arc::clone(&self.output.tool_name)),
            call.map(|call| Arc::from(call.tool_call_id.as_str())),
            budget.output_rejections(),
            self.output_retries,
        );
        match self.decode(raw, ctx).await {
            Ok(output) => {
                if let Some(call) = call {
                    turn.parts.push(call.answer(FINAL_RESULT_PROCESSED));
                }
                turn.result = Ok(Some(output));
            }
            Err(error) => match ModelRetry::find(&*error) {
                Some(retry) => {
                    let reason = retry.message().to_owned();
                    self.reject_output(call, reason, Some(error), budget, turn);
                }
                None => {
                    if let Some(call) = call {
                        turn.parts.push(call.answer(OUTPUT_FAILED));
                    }
                    turn.result = Err(Failure {
                        stage: Stage::Decode,
                        tool_name: None,
                        exhausted: None,
                        source: error,
                    });
                }
            },
        }
    }

    async fn decode(&self, raw: &str, ctx: RunContext<Deps>) -> Result<O, BoxError> {
        let mut output = match self.output.structured {
            Some(true) => {
                // The schema was wrapped as `{"response": ...}` for the model.
                let mut fields: HashMap<String, Box<RawValue>> = decode_json(raw)?;
                let response = fields
                    .remove("response")
                    .ok_or_else(|| ModelRetry::new("invalid output: missing field `response`"))?;
                (self.output.decoder)(response.get())?
            }
            _ => (self.output.decoder)(raw)?,
        };
        for validator in &self.output.validators {
            output = validator(ctx.clone(), output).await?;
        }
        Ok(output)
    }

    /// Books an output rejection and appends its feedback; fails the run past the budget.
    fn reject_output(
        &self,
        call: Option<&ToolCallPart>,
        reason: String,
        error: Option<BoxError>,
        budget: &mut Budget,
        turn: &mut Turn<O>,
    ) {
        let rejections = budget.charge_output();
        let limit = self.output_retries;
        turn.culprits.output = true;
        tracing::warn!(
            stage = "decode",
            "gen_ai.tool.name" = call.map(|call| call.tool_name.as_str()),
            retry = rejections,
            max_retries = limit,
            reason = reason.as_str(),
            "output rejected"
        );
        turn.parts.push(match call {
            Some(call) => call.reject(reason.clone()),
            None => RequestPart::retry_prompt(reason.clone()),
        });
        if rejections > limit {
            turn.result = Err(Failure {
                stage: Stage::Decode,
                tool_name: None,
                exhausted: Some(Exhausted { rejections, limit }),
                source: error.unwrap_or_else(|| Box::new(ModelRetry::new(reason))),
            });
        }
    }
}

/// Gives every call without an id one that is unique in the history.
fn name_unnamed_calls(response: &mut ModelResponse, history_len: usize) {
    for (index, part) in response.parts.iter_mut().enumerate() {
        if let ResponsePart::ToolCall(call) = part
            && call.tool_call_id.is_empty()
        {
            call.tool_call_id = format!("call_{history_len}_{index}");
        }
    }
}
