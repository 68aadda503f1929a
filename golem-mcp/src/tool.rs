//! [`McpTool`]: one tool of an MCP server, called through its connection.

use std::borrow::Cow;
use std::sync::Arc;

use futures_util::FutureExt;
use golem::tool::{RetryLimit, Tool, ToolDefinition, parse_args};
use golem::{BoxError, BoxFuture, ModelRetry, RunContext};
use rmcp::model::{CallToolRequestParams, ErrorCode, JsonObject};
use serde_json::Value;

use crate::connection::{Connection, ToolFailures};
use crate::content;
use crate::error::McpError;

/// One tool an [`McpToolset`](crate::McpToolset) listed: the server's name, description and
/// `inputSchema`, called with `tools/call` under the toolset's timeout.
pub struct McpTool {
    connection: Arc<Connection>,
    /// The name on the server, which a prefix does not change.
    name: Cow<'static, str>,
    definition: ToolDefinition,
    max_retries: Option<RetryLimit>,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("server", &self.connection.name)
            .field("name", &self.name)
            .field("max_retries", &self.max_retries)
            .finish_non_exhaustive()
    }
}

impl McpTool {
    pub(crate) fn new(
        connection: Arc<Connection>,
        tool: rmcp::model::Tool,
        model_name: Option<String>,
        max_retries: Option<RetryLimit>,
    ) -> Self {
        let definition = ToolDefinition {
            name: model_name.unwrap_or_else(|| tool.name.to_string()),
            description: description(tool.description, tool.title),
            parameters: object_schema(&tool.input_schema),
        };
        McpTool {
            connection,
            name: tool.name,
            definition,
            max_retries,
        }
    }

    async fn call_server(&self, args: &str) -> Result<Value, BoxError> {
        let arguments: JsonObject = parse_args(&self.definition.name, args)?;
        let params = CallToolRequestParams::new(self.name.clone()).with_arguments(arguments);
        let connection = &self.connection;
        let request = || format!("`tools/call` of `{}`", self.name);
        tracing::debug!(server = %connection.name, tool = %self.name, "MCP tools/call");
        let call = connection.service.call_tool(params);
        let outcome = match connection.options.call_timeout {
            Some(after) => match tokio::time::timeout(after, call).await {
                Ok(outcome) => outcome,
                // Dropping the call sent `notifications/cancelled` to the server.
                Err(_elapsed) => {
                    tracing::warn!(
                        server = %connection.name,
                        tool = %self.name,
                        timeout = ?after,
                        "MCP tools/call timed out; cancelled"
                    );
                    return Err(McpError::Timeout {
                        server: connection.name.clone(),
                        request: request(),
                        after,
                    }
                    .into());
                }
            },
            None => call.await,
        };
        match outcome {
            Ok(result) if result.is_error == Some(true) => {
                Err(self.failure(failure_reason(&result, &self.definition.name)))
            }
            Ok(result) => Ok(content::to_value(result)),
            Err(error) => {
                let data = McpError::from_service(&connection.name, request(), error)?;
                if data.code == ErrorCode::INVALID_PARAMS {
                    let mut message = data.message.into_owned();
                    if let Some(Value::String(detail)) = data.data
                        && !detail.trim().is_empty()
                    {
                        message = format!("{message}: {detail}");
                    }
                    return Err(self.failure(message));
                }
                Err(McpError::server_error(&connection.name, request(), data).into())
            }
        }
    }

    /// A failure the model may fix: a rejection with the server's text as the feedback, or
    /// a terminal error if the toolset says so.
    fn failure(&self, message: String) -> BoxError {
        match self.connection.options.failures {
            ToolFailures::Retry => ModelRetry::new(message).into(),
            ToolFailures::Terminal => McpError::ToolFailed {
                server: self.connection.name.clone(),
                tool: self.name.to_string(),
                message,
            }
            .into(),
        }
    }
}

impl<Deps: 'static> Tool<Deps> for McpTool {
    fn definition(&self) -> ToolDefinition {
        self.definition.clone()
    }

    fn max_retries(&self) -> Option<RetryLimit> {
        self.max_retries
    }

    /// The server runs the call: an `"extension"` in OpenTelemetry's terms.
    fn tool_type(&self) -> &'static str {
        "extension"
    }

    fn call<'a>(
        &'a self,
        _ctx: &'a RunContext<Deps>,
        args: &'a str,
    ) -> BoxFuture<'a, Result<Value, BoxError>> {
        self.call_server(args).boxed()
    }
}

/// The server's `inputSchema` as it is, with `"type": "object"` and `"properties"` filled
/// in when a server leaves them out or sets them `null` (providers require both).
fn object_schema(input_schema: &JsonObject) -> Value {
    let mut schema = input_schema.clone();
    schema
        .entry("type")
        .or_insert_with(|| Value::String("object".into()));
    // Missing or `null` (as some servers write it): no properties, which providers take.
    if matches!(schema.get("properties"), None | Some(Value::Null)) {
        schema.insert("properties".into(), Value::Object(JsonObject::new()));
    }
    Value::Object(schema)
}

/// What the model is told of a tool: its description, else its title, when either says
/// something.
fn description(description: Option<Cow<'_, str>>, title: Option<String>) -> Option<String> {
    description
        .map(Cow::into_owned)
        .filter(|description| !description.trim().is_empty())
        .or(title)
        .filter(|description| !description.trim().is_empty())
}

/// Why a call that returned `isError` failed: its text, else its structured content (where
/// some servers put it), else a note that it gave no reason.
fn failure_reason(result: &rmcp::model::CallToolResult, tool: &str) -> String {
    let text = content::text_of(&result.content);
    if !text.trim().is_empty() {
        return text;
    }
    match &result.structured_content {
        Some(structured) if !structured.is_null() => structured.to_string(),
        _ => format!("the tool `{tool}` failed and gave no reason"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_without_a_description_is_described_by_its_title() {
        let title = || Some("Adds two numbers".to_owned());
        assert_eq!(description(Some("".into()), title()), title());
        assert_eq!(description(None, title()), title());
        assert_eq!(
            description(Some("Adds a and b.".into()), title()).as_deref(),
            Some("Adds a and b.")
        );
        assert_eq!(description(Some(" ".into()), Some(String::new())), None);
    }

    #[test]
    fn a_failure_says_why_from_its_text_else_its_structured_content() {
        let result = |content: Vec<rmcp::model::ContentBlock>, structured: Option<Value>| {
            let mut result = rmcp::model::CallToolResult::error(content);
            result.structured_content = structured;
            result
        };
        let why = serde_json::json!({"error": "rate limited"});
        assert_eq!(
            failure_reason(
                &result(
                    vec![rmcp::model::ContentBlock::text("quota used up")],
                    Some(why.clone())
                ),
                "x"
            ),
            "quota used up"
        );
        assert_eq!(
            failure_reason(&result(Vec::new(), Some(why)), "x"),
            r#"{"error":"rate limited"}"#
        );
        assert_eq!(
            failure_reason(&result(Vec::new(), None), "x"),
            "the tool `x` failed and gave no reason"
        );
    }

    #[test]
    fn a_schema_is_kept_as_the_server_gives_it() {
        let schema: JsonObject = serde_json::from_value(serde_json::json!({
            "type": "object",
            "properties": {"a": {"type": "number", "description": "first"}},
            "required": ["a"],
            "$schema": "http://json-schema.org/draft-07/schema#"
        }))
        .expect("an object");
        assert_eq!(object_schema(&schema), Value::Object(schema));
    }

    #[test]
    fn an_empty_schema_becomes_an_object_without_properties() {
        assert_eq!(
            object_schema(&JsonObject::new()),
            serde_json::json!({"type": "object", "properties": {}})
        );
        let null: JsonObject =
            serde_json::from_value(serde_json::json!({"type": "object", "properties": null}))
                .expect("an object");
        assert_eq!(
            object_schema(&null),
            serde_json::json!({"type": "object", "properties": {}})
        );
    }
}
