//! Tracing: GenAI spans for the run, each request and each tool call, and an event for every
//! rejection.
//!
//! Alone in its test binary: tracing caches whether a callsite is enabled process-wide, and
//! tests running beside this one without a subscriber could race it.

mod common;

use std::sync::{Arc, Mutex};

use common::*;
use futures_util::future::BoxFuture;
use golem::model::ModelResponse;
use golem::tool::{FunctionTool, Tool, ToolDefinition};
use golem::{Agent, ModelRetry, RunContext};

#[golem::args]
struct Dice {
    n: i64,
}

/// A tool a remote service runs, as an MCP server's tools are.
struct Lookup;

impl Tool<()> for Lookup {
    fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: "lookup".into(),
            description: None,
            parameters: serde_json::json!({"type": "object", "properties": {}}),
        }
    }

    fn tool_type(&self) -> &'static str {
        "extension"
    }

    fn call<'a>(
        &'a self,
        _ctx: &'a RunContext<()>,
        _args: &'a str,
    ) -> BoxFuture<'a, Result<serde_json::Value, golem::BoxError>> {
        Box::pin(async { Ok(serde_json::json!("found")) })
    }
}

mod tracing_capture {
    use std::collections::BTreeMap;

    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Subscriber};
    use tracing_subscriber::layer::{Context, Layer};
    use tracing_subscriber::registry::LookupSpan;

    use super::*;

    /// What `run` traced, given a runtime on this thread, with what it returned.
    pub(super) fn traced<T>(run: impl FnOnce(&tokio::runtime::Runtime) -> T) -> (T, Captured) {
        use tracing_subscriber::layer::SubscriberExt;

        let captured = Arc::new(Mutex::new(Captured::default()));
        let subscriber = tracing_subscriber::registry().with(Capture(Arc::clone(&captured)));
        let returned = tracing::subscriber::with_default(subscriber, || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("a runtime");
            run(&runtime)
        });
        let captured = captured.lock().expect("not poisoned").clone();
        (returned, captured)
    }

    #[derive(Debug, Clone, Default)]
    pub(super) struct Captured {
        pub(super) spans: Vec<(String, BTreeMap<String, String>)>,
        pub(super) events: Vec<BTreeMap<String, String>>,
    }

    pub(super) struct Capture(pub(super) Arc<Mutex<Captured>>);

    struct Fields<'a>(&'a mut BTreeMap<String, String>);

    impl Visit for Fields<'_> {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            self.0.insert(
                field.name().to_owned(),
                format!("{value:?}").trim_matches('"').to_owned(),
            );
        }
        fn record_str(&mut self, field: &Field, value: &str) {
            self.0.insert(field.name().to_owned(), value.to_owned());
        }
    }

    impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
        fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
            let mut fields = BTreeMap::new();
            fields.insert("#id".to_owned(), id.into_u64().to_string());
            let parent = match attrs.parent() {
                Some(parent) => Some(parent.clone()),
                None if attrs.is_contextual() => ctx.current_span().id().cloned(),
                None => None,
            };
            if let Some(parent) = parent {
                fields.insert("#parent".to_owned(), parent.into_u64().to_string());
            }
            attrs.record(&mut Fields(&mut fields));
            self.0
                .lock()
                .expect("not poisoned")
                .spans
                .push((attrs.metadata().name().to_owned(), fields));
        }

        fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
            let mut captured = self.0.lock().expect("not poisoned");
            let id = id.into_u64().to_string();
            if let Some((_, fields)) = captured
                .spans
                .iter_mut()
                .find(|(_, fields)| fields["#id"] == id)
            {
                values.record(&mut Fields(fields));
            }
        }

        fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
            let mut fields = BTreeMap::new();
            event.record(&mut Fields(&mut fields));
            self.0.lock().expect("not poisoned").events.push(fields);
        }
    }
}

#[test]
fn runs_emit_gen_ai_spans_and_an_event_for_every_rejection() {
    let script = script(vec![
        reply(vec![call("roll", r#"{"n": 0}"#, "c1")], 10, 2),
        reply(
            vec![
                call("roll", r#"{"n": 2}"#, "c2"),
                call("lookup", "{}", "c3"),
            ],
            20,
            2,
        ),
        reply(vec![text("maybe")], 30, 1),
        ModelResponse::text("2").with_usage(40, 1),
    ]);
    let roll = FunctionTool::new("roll", |_ctx: RunContext<()>, dice: Dice| async move {
        if dice.n < 1 {
            return Err(ModelRetry::new("n must be at least 1"));
        }
        Ok(dice.n)
    });
    let agent = Agent::<(), String>::builder(script.model.with_name("scripted"))
        .name("referee")
        .tool(roll)
        .tool(Lookup)
        .tool_retries(1)
        .output_retries(1)
        .output_validator(|_ctx, text: String| async move {
            if text == "maybe" {
                return Err(ModelRetry::new("give a number"));
            }
            Ok(text)
        })
        .build()
        .unwrap();

    let ((), captured) = tracing_capture::traced(|runtime| {
        runtime.block_on(agent.run("Roll", ())).unwrap();
    });
    let names: Vec<&str> = captured
        .spans
        .iter()
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "invoke_agent",
            "chat",
            "execute_tool",
            "chat",
            "execute_tool",
            "execute_tool",
            "chat",
            "chat"
        ]
    );
    let run = &captured.spans[0].1;
    assert_eq!(run["gen_ai.operation.name"], "invoke_agent");
    assert_eq!(run["gen_ai.agent.name"], "referee");
    assert_eq!(run["gen_ai.request.model"], "scripted");
    assert_eq!(run["gen_ai.usage.input_tokens"], "100");
    assert_eq!(run["gen_ai.usage.output_tokens"], "6");
    assert_eq!(run["gen_ai.provider.name"], "function");
    assert_eq!(run["otel.name"], "invoke_agent referee");
    assert_eq!(run["otel.kind"], "internal");
    // The rounds that ended in a rejection: the first (10 + 2) and the third (30 + 1).
    assert_eq!(run["golem.usage.rejected.requests"], "2");
    assert_eq!(run["golem.usage.rejected.input_tokens"], "40");
    assert_eq!(run["golem.usage.rejected.output_tokens"], "3");
    assert!(!run.contains_key("gen_ai.system"));
    let chat = &captured.spans[1].1;
    assert_eq!(chat["gen_ai.operation.name"], "chat");
    assert_eq!(chat["gen_ai.provider.name"], "function");
    assert_eq!(chat["otel.kind"], "client");
    assert_eq!(chat["otel.name"], "chat scripted");
    assert_eq!(chat["gen_ai.usage.input_tokens"], "10");
    let tool = &captured.spans[2].1;
    assert_eq!(tool["gen_ai.operation.name"], "execute_tool");
    assert_eq!(tool["gen_ai.tool.name"], "roll");
    assert_eq!(tool["gen_ai.tool.call.id"], "c1");
    assert_eq!(tool["gen_ai.tool.type"], "function");
    assert_eq!(tool["otel.name"], "execute_tool roll");
    // A tool some other service runs says so.
    let lookup = &captured.spans[5].1;
    assert_eq!(lookup["gen_ai.tool.name"], "lookup");
    assert_eq!(lookup["gen_ai.tool.type"], "extension");

    let rejections: Vec<_> = captured
        .events
        .iter()
        .filter(|event| event.contains_key("golem.retry.stage"))
        .collect();
    assert_eq!(rejections.len(), 2);
    assert_eq!(rejections[0]["golem.retry.stage"], "tool");
    assert_eq!(rejections[0]["gen_ai.tool.name"], "roll");
    assert_eq!(rejections[0]["gen_ai.tool.call.id"], "c1");
    assert_eq!(rejections[0]["golem.retry.attempt"], "1");
    assert_eq!(rejections[0]["golem.retry.max"], "1");
    assert_eq!(rejections[0]["message"], "tool call rejected");
    assert_eq!(rejections[1]["golem.retry.stage"], "decode");
    assert_eq!(rejections[1]["golem.retry.attempt"], "1");
    assert_eq!(rejections[1]["message"], "output rejected");
    // The feedback may quote what was said: content, which this agent does not capture.
    assert!(
        rejections
            .iter()
            .all(|rejection| !rejection.contains_key("golem.retry.reason"))
    );
}

/// A streamed run says on each request whether the model streamed it: a model that answers
/// only whole is asked with `request`, and its `chat` span says so.
#[test]
fn a_chat_span_says_whether_the_request_was_streamed() {
    use futures_util::StreamExt;
    use golem::model::StreamEvent;
    use golem::model::function::FunctionModel;

    let whole = FunctionModel::new(|_, _| ModelResponse::text("whole"));
    let streaming =
        FunctionModel::new_stream(|_, _| vec![StreamEvent::Done(ModelResponse::text("streamed"))]);
    for (model, streamed) in [(whole, "false"), (streaming, "true")] {
        let agent = Agent::<(), String>::builder(model).build().unwrap();
        let ((), captured) = tracing_capture::traced(|runtime| {
            let events = runtime.block_on(agent.run_stream("Hi", ()).count());
            assert_eq!(events, 4);
        });
        let chat = &captured
            .spans
            .iter()
            .find(|(name, _)| name == "chat")
            .expect("a chat span")
            .1;
        assert_eq!(chat["gen_ai.request.stream"], streamed);
    }
}

/// A model of another provider: a `FunctionModel` under the provider name `system`.
struct OfProvider(golem::model::function::FunctionModel, &'static str);

impl golem::model::Model for OfProvider {
    fn request<'a>(
        &'a self,
        messages: &'a [golem::model::Message],
        params: &'a golem::model::RequestParams,
    ) -> BoxFuture<'a, Result<ModelResponse, golem::model::ModelError>> {
        self.0.request(messages, params)
    }

    fn request_stream<'a>(
        &'a self,
        messages: &'a [golem::model::Message],
        params: &'a golem::model::RequestParams,
    ) -> golem::model::ModelStream<'a> {
        self.0.request_stream(messages, params)
    }

    fn name(&self) -> &str {
        self.0.name()
    }

    fn system(&self) -> &str {
        self.1
    }
}

/// A `FallbackModel`'s request is traced under the provider of the model that answered it,
/// streamed or not; the run's span keeps the first model's.
#[test]
fn a_fallback_request_is_traced_under_the_provider_that_answered() {
    use futures_util::StreamExt;
    use golem::model::fallback::FallbackModel;
    use golem::model::function::FunctionModel;
    use golem::model::{ModelError, StreamEvent};

    for streamed in [false, true] {
        let unavailable = || ModelError::Http {
            provider: "first".into(),
            status: 503,
            message: "unavailable".into(),
            attempts: 1,
        };
        let (down, up) = if streamed {
            (
                FunctionModel::new_stream(move |_, _| vec![Err::<StreamEvent, _>(unavailable())]),
                FunctionModel::new_stream(|_, _| {
                    vec![StreamEvent::Done(ModelResponse::text("answered"))]
                }),
            )
        } else {
            (
                FunctionModel::new(move |_, _| Err::<ModelResponse, _>(unavailable())),
                FunctionModel::new(|_, _| ModelResponse::text("answered")),
            )
        };
        let model = FallbackModel::new(OfProvider(down, "first")).or(OfProvider(up, "second"));
        let agent = Agent::<(), String>::builder(model).build().unwrap();
        let ((), captured) = tracing_capture::traced(|runtime| {
            if streamed {
                assert_eq!(runtime.block_on(agent.run_stream("Hi", ()).count()), 4);
            } else {
                let result = runtime.block_on(agent.run("Hi", ())).unwrap();
                assert_eq!(result.output, "answered");
            }
        });
        let span = |wanted: &str| {
            &captured
                .spans
                .iter()
                .find(|(name, _)| name == wanted)
                .unwrap_or_else(|| panic!("a {wanted} span"))
                .1
        };
        assert_eq!(span("chat")["gen_ai.provider.name"], "second");
        assert_eq!(span("chat")["gen_ai.request.stream"], streamed.to_string());
        assert_eq!(span("invoke_agent")["gen_ai.provider.name"], "first");
    }
}

#[golem::args]
struct Ask {
    question: String,
}

/// An agent called as a tool runs inside the call: its `invoke_agent` span is the child of
/// the call's `execute_tool` span, streamed or not, and its requests are its own span's.
#[test]
fn a_delegated_agents_run_is_traced_inside_the_call_that_ran_it() {
    use futures_util::StreamExt;
    use golem::model::function::FunctionModel;

    for streamed in [false, true] {
        let child =
            Agent::<(), String>::builder(FunctionModel::new(|_, _| ModelResponse::text("Paris")))
                .name("geographer")
                .build()
                .unwrap();
        let parent = script(vec![
            reply(vec![call("ask", r#"{"question": "Capital?"}"#, "c1")], 1, 1),
            reply(vec![text("Paris it is.")], 1, 1),
        ]);
        let agent = Agent::<(), String>::builder(parent.model)
            .name("router")
            .tool(child.as_tool(
                "ask",
                "Asks the geographer.",
                |_ctx: &RunContext<()>, ask: Ask| (ask.question, ()),
            ))
            .build()
            .unwrap();
        let ((), captured) = tracing_capture::traced(|runtime| {
            if streamed {
                runtime.block_on(agent.run_stream("Capital of France?", ()).count());
            } else {
                runtime
                    .block_on(agent.run("Capital of France?", ()))
                    .unwrap();
            }
        });
        let named = |wanted: &str| {
            &captured
                .spans
                .iter()
                .find(|(_, fields)| fields.get("otel.name").map(String::as_str) == Some(wanted))
                .unwrap_or_else(|| panic!("a span {wanted}"))
                .1
        };
        let (router, call, geographer) = (
            named("invoke_agent router"),
            named("execute_tool ask"),
            named("invoke_agent geographer"),
        );
        assert_eq!(call["#parent"], router["#id"], "streamed: {streamed}");
        assert_eq!(geographer["#parent"], call["#id"], "streamed: {streamed}");
        let chats: Vec<&String> = captured
            .spans
            .iter()
            .filter(|(name, _)| name == "chat")
            .map(|(_, fields)| &fields["#parent"])
            .collect();
        assert_eq!(
            chats,
            [&router["#id"], &geographer["#id"], &router["#id"]],
            "streamed: {streamed}"
        );
    }
}

/// A run driven to its end that pauses for approval ends there, as a failure at the
/// approval stage: its span says so, with what it spent.
#[test]
fn a_run_that_pauses_for_approval_ends_its_span_with_the_approval_stage_and_its_usage() {
    let script = script(vec![reply(vec![call("roll", r#"{"n": 1}"#, "c1")], 10, 2)]);
    let roll = FunctionTool::new("roll", |_ctx: RunContext<()>, dice: Dice| async move {
        Ok::<_, ModelRetry>(dice.n)
    })
    .requires_approval(true);
    let agent = Agent::<(), String>::builder(script.model)
        .name("careful")
        .tool(roll)
        .build()
        .unwrap();
    let (error, captured) =
        tracing_capture::traced(|runtime| runtime.block_on(agent.run("Roll", ())).unwrap_err());
    assert_eq!(error.stage(), golem::Stage::Approval);
    let run = &captured
        .spans
        .iter()
        .find(|(name, _)| name == "invoke_agent")
        .expect("the run's span")
        .1;
    assert_eq!(run["error.type"], "approval");
    assert_eq!(run["otel.status_code"], "error");
    assert_eq!(run["gen_ai.usage.input_tokens"], "10");
    assert_eq!(run["gen_ai.usage.output_tokens"], "2");
}
