//! One response's output: find the answer, decode and validate it, and reject it with
//! feedback the model can act on.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::value::RawValue;

use super::event::{Rejection, RunEvent, emit};
use super::failure::Failure;
use super::journal::Journal;
use super::state::Retries;
use super::tools::{Handled, ToolsVerdict, TurnScope};
use crate::agent::AgentInner;
use crate::context::RunContext;
use crate::error::{BoxError, Exhausted, Stage};
use crate::model::{ModelResponse, ModelRetry, RequestPart, ToolCallPart};
use crate::output::{Output, OutputMode, decode_json};

const FINAL_RESULT_PROCESSED: &str = "Final result processed.";
const OUTPUT_NOT_USED: &str = "Output tool not used: only the first output call is considered.";
const OUTPUT_FAILED: &str = "The output could not be processed; the run stopped.";

impl<Deps, O> AgentInner<Deps, O>
where
    Deps: Send + Sync + 'static,
    O: Output,
{
    pub(crate) fn is_output_call(&self, call: &ToolCallPart) -> bool {
        self.output.structured.is_some()
            && self.output.mode == OutputMode::Tool
            && call.tool_name == *self.output.tool_name
    }

    /// Handles the response's answer, after its function-tool calls (`had_tool_calls`) went
    /// as `verdict` says.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn handle_output<J: Journal>(
        &self,
        response: &ModelResponse,
        output_calls: &[&ToolCallPart],
        had_tool_calls: bool,
        verdict: ToolsVerdict,
        scope: &TurnScope<'_, Deps, O, J>,
        retries: &mut Retries,
        handled: &mut Handled<O>,
    ) {
        if self.output.structured.is_some() && self.output.mode == OutputMode::Tool {
            let Some((first, rest)) = output_calls.split_first() else {
                if !had_tool_calls {
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
                    self.reject_output(None, reason, None, scope, retries, handled);
                }
                return;
            };
            if verdict.rejected || verdict.denied {
                self.decline_output_calls(output_calls, verdict, handled);
                return;
            }
            let raw = first.args.as_str();
            self.finish(Some(first), raw, scope, retries, handled).await;
            for call in rest {
                handled.parts.push(call.answer(OUTPUT_NOT_USED));
            }
            return;
        }
        if had_tool_calls {
            return;
        }
        let text = response.text_content();
        if text.trim().is_empty() {
            let reason = if self.output.structured.is_some() {
                "The response was empty. Answer with JSON that matches the schema."
            } else {
                "The response was empty. Answer with text."
            };
            self.reject_output(None, reason.to_owned(), None, scope, retries, handled);
            return;
        }
        self.finish(None, &text, scope, retries, handled).await;
    }

    /// Answers output calls that cannot be accepted because a tool call in the same
    /// response was rejected, failed or denied. Not charged to the output budget.
    pub(crate) fn decline_output_calls(
        &self,
        calls: &[&ToolCallPart],
        verdict: ToolsVerdict,
        handled: &mut Handled<O>,
    ) {
        if calls.is_empty() {
            return;
        }
        let why = if verdict.denied && !verdict.rejected {
            "a tool call in this response was denied. Take the denial into account"
        } else {
            "a tool call in this response was rejected. Correct that call first"
        };
        let reason = format!(
            "Output not accepted: {why}, then call `{}` again.",
            self.output.tool_name
        );
        handled
            .parts
            .extend(calls.iter().map(|call| call.answer(reason.as_str())));
    }

    /// Decodes and validates the answer in `raw`; ends the run on success.
    async fn finish<J: Journal>(
        &self,
        call: Option<&ToolCallPart>,
        raw: &str,
        scope: &TurnScope<'_, Deps, O, J>,
        retries: &mut Retries,
        handled: &mut Handled<O>,
    ) {
        let ctx = scope.ctx.for_attempt(
            call.map(|_| Arc::clone(&self.output.tool_name)),
            call.map(|call| Arc::from(call.tool_call_id.as_str())),
            retries.output(),
            self.output_retries,
        );
        match self.decode(raw, ctx).await {
            Ok(output) => {
                if let Some(call) = call {
                    handled.parts.push(call.answer(FINAL_RESULT_PROCESSED));
                }
                handled.result = Ok(Some(output));
            }
            Err(error) => match ModelRetry::find(&*error) {
                Some(retry) => {
                    let reason = retry.message().to_owned();
                    self.reject_output(call, reason, Some(error), scope, retries, handled);
                }
                None => {
                    if let Some(call) = call {
                        handled.parts.push(call.answer(OUTPUT_FAILED));
                    }
                    handled.result = Err(Failure::new(Stage::Decode, error));
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

    /// Books an output rejection and adds its feedback; fails the run past the budget.
    fn reject_output<J>(
        &self,
        call: Option<&ToolCallPart>,
        reason: String,
        error: Option<BoxError>,
        scope: &TurnScope<'_, Deps, O, J>,
        retries: &mut Retries,
        handled: &mut Handled<O>,
    ) {
        let rejections = retries.charge_output();
        let limit = self.output_retries;
        handled.culprits.output = true;
        tracing::warn!(
            "golem.retry.stage" = "decode",
            "gen_ai.tool.name" = call.map(|call| call.tool_name.as_str()),
            "golem.retry.attempt" = rejections,
            "golem.retry.max" = limit,
            "golem.retry.reason" = reason.as_str(),
            "output rejected"
        );
        emit(scope.events, || {
            RunEvent::Rejected(Rejection {
                turn: scope.turn,
                stage: Stage::Decode,
                tool_name: call.map(|call| call.tool_name.clone()),
                tool_call_id: call.map(|call| call.tool_call_id.clone()),
                retry: rejections,
                max_retries: limit,
                feedback: reason.clone(),
                cost: scope.cost,
            })
        });
        handled.parts.push(match call {
            Some(call) => call.reject(reason.clone()),
            None => RequestPart::retry_prompt(reason.clone()),
        });
        if rejections > limit {
            handled.result = Err(Failure {
                stage: Stage::Decode,
                tool_name: None,
                exhausted: Some(Exhausted { rejections, limit }),
                source: error.unwrap_or_else(|| Box::new(ModelRetry::new(reason))),
            });
        }
    }
}
