//! [`TestModel`]: calls every tool with schema-valid arguments, then answers.
//!
//! Deterministic and offline: arguments are generated from each tool's JSON schema (the
//! simplest valid value: `0` clamped into range, `"a"` repeated to `minLength`, the first
//! enum variant, every property), so a test can exercise an agent's tools and output
//! without scripting a conversation.

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::{Map, Value, json};

use super::{
    Message, Model, ModelError, ModelRequest, ModelResponse, RequestParams, RequestPart,
    ResponsePart,
};
use crate::output::OutputMode;
use crate::usage::RequestUsage;

/// A model that first calls every function tool once, with arguments generated from its
/// schema, then gives a final answer: for text output a JSON summary of what the tools
/// returned, for structured output a generated value.
///
/// A rejected call is made again with the same arguments, so budgets can be tested too.
///
/// ```
/// use golem::model::test::TestModel;
/// use golem::tool::FunctionTool;
/// use golem::{Agent, RunContext};
///
/// #[golem::args]
/// struct Dice {
///     #[schemars(range(min = 1, max = 10))]
///     n: i64,
/// }
///
/// let roll = FunctionTool::new("roll_dice", |_ctx: RunContext<()>, dice: Dice| async move {
///     Ok::<_, golem::ModelRetry>(dice.n * 4)
/// });
/// let agent = Agent::<(), String>::builder(TestModel::new()).tool(roll).build()?;
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let result = agent.run("Roll", ()).await?;
/// assert_eq!(result.output, r#"{"roll_dice":4}"#);
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct TestModel {
    only_tools: Option<Vec<String>>,
    text: Option<String>,
    output_args: Option<Value>,
}

impl TestModel {
    /// A test model that calls every tool.
    pub fn new() -> Self {
        TestModel::default()
    }

    /// Calls only the named tools.
    #[must_use]
    pub fn call_tools<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.only_tools = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Answers with `text` instead of the summary of tool returns (text output).
    #[must_use]
    pub fn text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }

    /// Answers with `args` instead of a generated value (structured output).
    #[must_use]
    pub fn output_args(mut self, args: Value) -> Self {
        self.output_args = Some(args);
        self
    }

    fn respond(&self, messages: &[Message], params: &RequestParams) -> ModelResponse {
        let start = messages
            .iter()
            .rposition(|message| {
                message
                    .as_request()
                    .is_some_and(ModelRequest::has_user_prompt)
            })
            .unwrap_or(0);
        let this_run = &messages[start..];
        let last_request = this_run.last().and_then(Message::as_request);

        // Make rejected function-tool calls again, with the same arguments.
        let rejected: Vec<ResponsePart> = last_request
            .into_iter()
            .flat_map(|request| &request.parts)
            .filter_map(|part| match part {
                RequestPart::RetryPrompt(retry) => retry.tool_name.as_deref(),
                _ => None,
            })
            .filter(|name| params.function_tools.iter().any(|tool| tool.name == *name))
            .filter_map(|name| {
                params
                    .function_tools
                    .iter()
                    .find(|tool| tool.name == name)
                    .map(|tool| {
                        ResponsePart::tool_call(name, generate(&tool.parameters), String::new())
                    })
            })
            .collect();
        if !rejected.is_empty() {
            return ModelResponse::new(rejected);
        }

        let called_tools = this_run
            .iter()
            .filter_map(Message::as_response)
            .any(|response| {
                response.tool_calls().any(|call| {
                    params
                        .function_tools
                        .iter()
                        .any(|t| t.name == call.tool_name)
                })
            });
        if !called_tools {
            let calls: Vec<ResponsePart> = params
                .function_tools
                .iter()
                .filter(|tool| {
                    self.only_tools
                        .as_ref()
                        .is_none_or(|only| only.contains(&tool.name))
                })
                .map(|tool| {
                    ResponsePart::tool_call(&tool.name, generate(&tool.parameters), String::new())
                })
                .collect();
            if !calls.is_empty() {
                return ModelResponse::new(calls);
            }
        }

        if let Some(output_tool) = params.output_tools.first() {
            let args = self
                .output_args
                .clone()
                .unwrap_or_else(|| generate(&output_tool.parameters));
            return ModelResponse::tool_call(&output_tool.name, args, String::new());
        }
        if params.output_mode == OutputMode::Native
            && let Some(schema) = &params.output_schema
        {
            let args = self
                .output_args
                .clone()
                .unwrap_or_else(|| generate(&schema.schema));
            return ModelResponse::text(args.to_string());
        }
        let text = self.text.clone().unwrap_or_else(|| {
            let mut returns = Map::new();
            for part in this_run
                .iter()
                .filter_map(Message::as_request)
                .flat_map(|request| &request.parts)
            {
                if let RequestPart::ToolReturn(ret) = part {
                    returns.insert(ret.tool_name.clone(), ret.content.clone());
                }
            }
            if returns.is_empty() {
                "success (no tool calls)".to_owned()
            } else {
                Value::Object(returns).to_string()
            }
        });
        ModelResponse::text(text)
    }
}

impl Model for TestModel {
    fn request<'a>(
        &'a self,
        messages: &'a [Message],
        params: &'a RequestParams,
    ) -> BoxFuture<'a, Result<ModelResponse, ModelError>> {
        let mut response = self.respond(messages, params);
        response.usage = RequestUsage::new(
            estimate_input_tokens(messages),
            estimate_output_tokens(&response),
        );
        response.model_name = Some("test".to_owned());
        futures_util::future::ready(Ok(response)).boxed()
    }

    fn streams(&self) -> bool {
        false
    }

    fn name(&self) -> &str {
        "test"
    }

    fn system(&self) -> &str {
        "test"
    }
}

fn words(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

/// A stable stand-in for a tokenizer: 50 for the framing, plus a token per word.
fn estimate_input_tokens(messages: &[Message]) -> u64 {
    let mut tokens = 50;
    for message in messages {
        match message {
            Message::Request(request) => {
                for part in &request.parts {
                    tokens += match part {
                        RequestPart::SystemPrompt(p) => words(&p.content),
                        RequestPart::UserPrompt(p) => words(&p.text()),
                        RequestPart::ToolReturn(p) => words(&p.model_text()),
                        RequestPart::RetryPrompt(p) => words(&p.model_text()),
                    };
                }
            }
            Message::Response(response) => tokens += estimate_output_tokens(response),
        }
    }
    tokens
}

fn estimate_output_tokens(response: &ModelResponse) -> u64 {
    response
        .parts
        .iter()
        .map(|part| match part {
            ResponsePart::Text(text) => words(&text.content),
            ResponsePart::ToolCall(call) => 1 + words(&call.args),
            ResponsePart::Thinking(thinking) => words(&thinking.content),
            ResponsePart::Provider(_) => 0,
        })
        .sum()
}

/// The simplest value valid against `schema`.
///
/// ```
/// use serde_json::json;
///
/// let schema = json!({
///     "type": "object",
///     "properties": {
///         "n": {"type": "integer", "minimum": 1, "maximum": 10},
///         "name": {"type": "string", "minLength": 3},
///         "mode": {"enum": ["fast", "slow"]},
///         "tags": {"type": "array", "items": {"type": "string"}},
///         "note": {"type": ["string", "null"]}
///     }
/// });
/// assert_eq!(
///     golem::model::test::generate(&schema),
///     json!({"n": 1, "name": "aaa", "mode": "fast", "tags": ["a"], "note": "a"})
/// );
/// ```
pub fn generate(schema: &Value) -> Value {
    generate_in(schema, schema, 0)
}

fn generate_in(schema: &Value, root: &Value, depth: usize) -> Value {
    const MAX_DEPTH: usize = 16;
    let Some(map) = schema.as_object() else {
        return Value::Null;
    };
    if depth > MAX_DEPTH {
        return Value::Null;
    }
    if let Some(value) = map.get("const") {
        return value.clone();
    }
    if let Some(first) = map
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|v| v.first())
    {
        return first.clone();
    }
    if let Some(default) = map.get("default") {
        return default.clone();
    }
    if let Some(pointer) = map.get("$ref").and_then(Value::as_str) {
        let target = pointer
            .strip_prefix('#')
            .and_then(|pointer| root.pointer(pointer))
            .unwrap_or(&Value::Null);
        return generate_in(target, root, depth + 1);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(branches) = map.get(key).and_then(Value::as_array) {
            let branch = branches
                .iter()
                .find(|branch| branch.get("type").and_then(Value::as_str) != Some("null"))
                .or(branches.first());
            if let Some(branch) = branch {
                return generate_in(branch, root, depth + 1);
            }
        }
    }
    let ty = match map.get("type") {
        Some(Value::String(ty)) => ty.as_str(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|ty| *ty != "null")
            .unwrap_or("null"),
        _ if map.contains_key("properties") => "object",
        _ => "null",
    };
    match ty {
        "object" => {
            let mut object = Map::new();
            if let Some(properties) = map.get("properties").and_then(Value::as_object) {
                for (name, property) in properties {
                    object.insert(name.clone(), generate_in(property, root, depth + 1));
                }
            }
            Value::Object(object)
        }
        "array" => {
            let min = map.get("minItems").and_then(Value::as_u64).unwrap_or(1);
            let max = map
                .get("maxItems")
                .and_then(Value::as_u64)
                .unwrap_or(u64::MAX);
            let count = min.max(1).min(max);
            let item = map
                .get("items")
                .map_or(Value::Null, |items| generate_in(items, root, depth + 1));
            Value::Array((0..count).map(|_| item.clone()).collect())
        }
        "string" => {
            let format = map.get("format").and_then(Value::as_str);
            let text = match format {
                Some("date-time") => "2024-01-01T00:00:00Z".to_owned(),
                Some("date") => "2024-01-01".to_owned(),
                Some("time") => "00:00:00".to_owned(),
                Some("uuid") => "00000000-0000-4000-8000-000000000000".to_owned(),
                Some("email") => "a@example.com".to_owned(),
                Some("uri") => "https://example.com/".to_owned(),
                _ => {
                    let min = map.get("minLength").and_then(Value::as_u64).unwrap_or(1);
                    "a".repeat(usize::try_from(min.max(1)).unwrap_or(1))
                }
            };
            Value::String(text)
        }
        "integer" => json!(clamp_integer(map)),
        "number" => {
            let low = map
                .get("minimum")
                .or_else(|| map.get("exclusiveMinimum"))
                .and_then(Value::as_f64);
            let high = map
                .get("maximum")
                .or_else(|| map.get("exclusiveMaximum"))
                .and_then(Value::as_f64);
            let mut value = 0.0_f64;
            if let Some(low) = low
                && value <= low
            {
                value = if map.contains_key("exclusiveMinimum") {
                    low + 0.5
                } else {
                    low
                };
            }
            if let Some(high) = high
                && value >= high
            {
                value = if map.contains_key("exclusiveMaximum") {
                    high - 0.5
                } else {
                    high
                };
            }
            json!(value)
        }
        "boolean" => Value::Bool(false),
        _ => Value::Null,
    }
}

fn clamp_integer(map: &Map<String, Value>) -> i64 {
    let mut low = map.get("minimum").and_then(Value::as_i64);
    if let Some(exclusive) = map.get("exclusiveMinimum").and_then(Value::as_i64) {
        low = Some(exclusive + 1);
    }
    let mut high = map.get("maximum").and_then(Value::as_i64);
    if let Some(exclusive) = map.get("exclusiveMaximum").and_then(Value::as_i64) {
        high = Some(exclusive - 1);
    }
    let mut value = 0;
    if let Some(low) = low {
        value = value.max(low);
    }
    if let Some(high) = high {
        value = value.min(high);
    }
    value
}
