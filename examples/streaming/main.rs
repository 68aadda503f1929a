//! Streaming: the model's text as it arrives, then a structured answer that fills in field
//! by field as its typed partial form (`TripPlanPartial`), before it is decoded and
//! validated as a `TripPlan`.
//!
//! ```text
//! cargo run --example streaming                       # offline, a scripted streaming model
//! OPENAI_API_KEY=sk-... cargo run --example streaming # a real model
//! ```

use std::fmt::Write as _;
use std::io::Write as _;

use futures_util::StreamExt;
use golem::model::function::FunctionModel;
use golem::model::{Message, Model, ModelResponse, ResponseDelta, ResponsePart, StreamEvent};
use golem::run::ToolOutcome;
use golem::{Agent, RunError, RunEvent};
use golem_examples::{openai_from_env, usage_line};
use serde_json::Value;

/// A short trip plan.
#[golem::output]
#[derive(Debug)]
pub(crate) struct TripPlan {
    /// A title for the trip.
    title: String,
    /// What to do, one line per day.
    days: Vec<String>,
}

/// The weather for the next days in a city.
///
/// # Arguments
/// * `city` - the city's name
#[golem::tool]
async fn forecast(city: String) -> String {
    format!("{city}: sunny, then rain on day 2")
}

fn agent(model: impl Model) -> Result<Agent<(), TripPlan>, golem::BuildError> {
    Agent::<(), TripPlan>::builder(model)
        .instructions("You plan short trips. Check the forecast first, then give the plan.")
        .tool(Forecast)
        .build()
}

fn delta(delta: ResponseDelta) -> StreamEvent {
    StreamEvent::Delta(delta)
}

/// Plays a streaming model offline: a sentence and a forecast call, then the plan in the
/// fragments a real model streams it in.
pub(crate) fn scripted_model() -> FunctionModel {
    FunctionModel::new_stream(|messages: &[Message], _| {
        let mut items = Vec::new();
        let response = if messages.len() == 1 {
            for text in ["Checking ", "the forecast ", "first."] {
                items.push(delta(ResponseDelta::Text {
                    part: 0,
                    text: text.into(),
                }));
            }
            items.push(delta(ResponseDelta::ToolCallStart {
                part: 1,
                tool_name: "forecast".into(),
                tool_call_id: "call_1".into(),
            }));
            for args in [r#"{"city": "#, r#""Lisbon"}"#] {
                items.push(delta(ResponseDelta::ToolCallArgs {
                    part: 1,
                    args: args.into(),
                }));
            }
            let mut response =
                ModelResponse::tool_call("forecast", r#"{"city": "Lisbon"}"#, "call_1");
            response
                .parts
                .insert(0, ResponsePart::text("Checking the forecast first."));
            response.with_usage(90, 20)
        } else {
            let fragments = [
                r#"{"title": "Two days in Lis"#,
                r#"bon", "days": ["Walk Alfama and"#,
                r#" the castle", "Museums while it r"#,
                r#"ains"]}"#,
            ];
            items.push(delta(ResponseDelta::ToolCallStart {
                part: 0,
                tool_name: "final_result".into(),
                tool_call_id: "call_2".into(),
            }));
            for args in fragments {
                items.push(delta(ResponseDelta::ToolCallArgs {
                    part: 0,
                    args: args.into(),
                }));
            }
            ModelResponse::tool_call("final_result", fragments.concat(), "call_2")
                .with_usage(140, 45)
        };
        items.push(StreamEvent::Done(response));
        items
    })
    .with_name("scripted")
}

/// What a partial plan shows: the title so far and the days so far.
fn show(partial: &TripPlanPartial) -> String {
    let title = partial.title.as_deref().unwrap_or("…");
    let days = partial.days.as_deref().unwrap_or_default();
    format!("{title:?}, {} day(s): {days:?}", days.len())
}

/// Runs the agent through its events, printing each as it comes, and returns what was
/// printed.
pub(crate) async fn run(model: impl Model) -> Result<String, RunError> {
    let agent = agent(model).expect("a valid agent");
    let mut printed = String::new();
    let mut out = |text: &str| {
        print!("{text}");
        let _ = std::io::stdout().flush();
        printed.push_str(text);
    };
    let mut events = agent.run_stream("Plan two days in Lisbon.", ());
    let mut in_text = false;
    while let Some(event) = events.next().await {
        match event? {
            RunEvent::Delta {
                delta: ResponseDelta::Text { text, .. },
                ..
            } => {
                if !in_text {
                    out("model    │ ");
                    in_text = true;
                }
                out(&text);
            }
            RunEvent::Delta { .. } => {}
            RunEvent::PartialOutput { partial, .. } => {
                out(&format!("partial  │ {}\n", show(&partial)));
            }
            RunEvent::ResponseReceived { .. } if in_text => {
                out("\n");
                in_text = false;
            }
            RunEvent::ToolCallFinished { call, outcome, .. } => {
                let result = match outcome {
                    ToolOutcome::Returned(Value::String(text)) => text,
                    other => format!("{other:?}"),
                };
                out(&format!(
                    "tool     │ {}({}) → {result}\n",
                    call.tool_name, call.args
                ));
            }
            RunEvent::Finished(result) => {
                let mut line = format!(
                    "{}\nplan: {}\n",
                    usage_line(&result.usage),
                    result.output.title
                );
                for (day, plan) in result.output.days.iter().enumerate() {
                    let _ = writeln!(line, "  day {}: {plan}", day + 1);
                }
                out(&line);
            }
            _ => {}
        }
    }
    Ok(printed)
}

#[tokio::main]
async fn main() -> Result<(), RunError> {
    match openai_from_env() {
        Some(model) => run(model).await?,
        None => run(scripted_model()).await?,
    };
    Ok(())
}
