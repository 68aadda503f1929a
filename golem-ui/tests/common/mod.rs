//! Scripted agents the tests share: a streamed answer, a rejected tool call, a call that
//! waits for approval, a structured answer that fills in.
#![allow(dead_code, unreachable_pub)]

use golem::model::function::FunctionModel;
use golem::model::{
    Message, ModelResponse, ResponseDelta, ResponsePart, StreamEvent, ThinkingPart,
};
use golem::tool::FunctionTool;
use golem::{Agent, ModelRetry, RunContext};

#[golem::args]
pub struct Add {
    pub a: i64,
    pub b: i64,
}

#[golem::args]
pub struct Delete {
    pub path: String,
}

/// `add`, which rejects a negative `a`.
pub fn add() -> impl golem::tool::Tool<()> {
    FunctionTool::new("add", |_ctx: RunContext<()>, args: Add| async move {
        if args.a < 0 {
            return Err(ModelRetry::new("a must not be negative"));
        }
        Ok(args.a + args.b)
    })
}

/// An agent that streams "Hel", "lo!" and answers "Hello!".
pub fn hello() -> Agent<(), String> {
    let model = FunctionModel::new_stream(|_, _| {
        let text = |text: &str| {
            StreamEvent::Delta(ResponseDelta::Text {
                part: 0,
                text: text.into(),
            })
        };
        vec![
            text("Hel"),
            text("lo!"),
            StreamEvent::Done(ModelResponse::text("Hello!")),
        ]
    });
    Agent::builder(model).build().expect("the agent builds")
}

/// An agent that answers the last user message it was sent with `"<message> #<n>"`, `n`
/// counting its answers from 1.
pub fn echo() -> Agent<(), String> {
    let answers = std::sync::atomic::AtomicUsize::new(0);
    let model = FunctionModel::new(move |messages: &[Message], _| {
        let n = answers.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        ModelResponse::text(format!("{} #{n}", last_prompt(messages)))
    });
    Agent::builder(model).build().expect("the agent builds")
}

/// The text of the last user prompt in `messages`.
pub fn last_prompt(messages: &[Message]) -> String {
    messages
        .iter()
        .rev()
        .filter_map(|message| match message {
            Message::Request(request) => Some(&request.parts),
            Message::Response(_) => None,
        })
        .flatten()
        .find_map(|part| match part {
            golem::model::RequestPart::UserPrompt(prompt) => Some(prompt.text().into_owned()),
            _ => None,
        })
        .unwrap_or_default()
}

/// An agent whose first call of `add` is rejected, whose second returns 5, and which then
/// answers "5", none of it streamed.
pub fn adder() -> Agent<(), String> {
    let model = FunctionModel::new(|messages: &[Message], _| match messages.len() {
        1 => ModelResponse::tool_call("add", r#"{"a":-1,"b":3}"#, "c1"),
        3 => ModelResponse::tool_call("add", r#"{"a":2,"b":3}"#, "c2"),
        _ => ModelResponse::text("5"),
    });
    Agent::builder(model)
        .tool(add())
        .tool_retries(1)
        .build()
        .expect("the agent builds")
}

/// An agent that streams a call of `delete`, which waits for approval, then answers
/// "Deleted." or, when the call was denied, "Kept.".
pub fn deleter() -> Agent<(), String> {
    let model = FunctionModel::new_stream(|messages: &[Message], _| {
        if messages.len() == 1 {
            let call = ModelResponse::tool_call("delete", r#"{"path":"a.txt"}"#, "d1");
            return vec![
                StreamEvent::Delta(ResponseDelta::ToolCallStart {
                    part: 0,
                    tool_name: "delete".into(),
                    tool_call_id: "d1".into(),
                }),
                StreamEvent::Delta(ResponseDelta::ToolCallArgs {
                    part: 0,
                    args: r#"{"path":"#.into(),
                }),
                StreamEvent::Delta(ResponseDelta::ToolCallArgs {
                    part: 0,
                    args: r#""a.txt"}"#.into(),
                }),
                StreamEvent::Done(call),
            ];
        }
        let denied = format!("{:?}", messages.last()).contains("denied");
        let answer = if denied { "Kept." } else { "Deleted." };
        vec![StreamEvent::Done(ModelResponse::text(answer))]
    });
    let delete = FunctionTool::new("delete", |_ctx: RunContext<()>, args: Delete| async move {
        Ok::<_, ModelRetry>(format!("deleted {}", args.path))
    })
    .requires_approval(true);
    Agent::builder(model)
        .tool(delete)
        .build()
        .expect("the agent builds")
}

#[golem::output]
pub struct Forecast {
    pub city: String,
    pub temp: u32,
}

/// An agent whose structured answer, a `Forecast` whose partial twin is sent on as the JSON
/// that has arrived, streams through the output tool in three fragments.
pub fn forecaster() -> Agent<(), Forecast> {
    let model = FunctionModel::new_stream(|_, _| {
        let args = |args: &str| {
            StreamEvent::Delta(ResponseDelta::ToolCallArgs {
                part: 0,
                args: args.into(),
            })
        };
        vec![
            StreamEvent::Delta(ResponseDelta::ToolCallStart {
                part: 0,
                tool_name: golem::DEFAULT_OUTPUT_TOOL_NAME.into(),
                tool_call_id: "o1".into(),
            }),
            args(r#"{"city":"Par"#),
            args(r#"is","temp":2"#),
            args("1}"),
            StreamEvent::Done(ModelResponse::tool_call(
                golem::DEFAULT_OUTPUT_TOOL_NAME,
                r#"{"city":"Paris","temp":21}"#,
                "o1",
            )),
        ]
    });
    Agent::builder(model).build().expect("the agent builds")
}

#[golem::args]
pub struct Wait {
    pub seconds: u32,
}

/// An agent that calls `wait`, a tool that never returns on its own.
pub fn waiter() -> Agent<(), String> {
    let model = FunctionModel::new(|messages: &[Message], _| match messages.len() {
        1 => ModelResponse::tool_call("wait", r#"{"seconds":3600}"#, "w1"),
        _ => ModelResponse::text("Done waiting."),
    });
    let wait = FunctionTool::new("wait", |_ctx: RunContext<()>, _args: Wait| async move {
        std::future::pending::<()>().await;
        Ok::<_, ModelRetry>(0)
    });
    Agent::builder(model)
        .tool(wait)
        .build()
        .expect("the agent builds")
}

/// An agent whose model thinks before it answers: streamed ("Two", " dice."), then the
/// text "Six."; asked again (a second message), it answers with a whole, unstreamed
/// thinking part and text.
pub fn thinker() -> Agent<(), String> {
    let model = FunctionModel::new_stream(|messages: &[Message], _| {
        let answer = ModelResponse::new(vec![
            ResponsePart::Thinking(ThinkingPart::new("Two dice.")),
            ResponsePart::text("Six."),
        ]);
        if messages.len() > 1 {
            return vec![StreamEvent::Done(ModelResponse::new(vec![
                ResponsePart::Thinking(ThinkingPart::new("Again.")),
                ResponsePart::text("Five."),
            ]))];
        }
        let thinking = |text: &str| {
            StreamEvent::Delta(ResponseDelta::Thinking {
                part: 0,
                text: text.into(),
            })
        };
        vec![
            thinking("Two"),
            thinking(" dice."),
            StreamEvent::Delta(ResponseDelta::Text {
                part: 1,
                text: "Six.".into(),
            }),
            StreamEvent::Done(answer),
        ]
    });
    Agent::builder(model).build().expect("the agent builds")
}

#[golem::args]
pub struct Task {
    pub task: String,
}

/// An agent that delegates to `research`, an agent called as a tool (call `p1`), and then
/// answers "It is 5.". The researcher calls `add` (call `k1`, unstreamed), then streams
/// "Sum: " and "5." and answers "Sum: 5.".
pub fn delegator() -> Agent<(), String> {
    let researcher = FunctionModel::new_stream(|messages: &[Message], _| {
        if messages.len() == 1 {
            return vec![StreamEvent::Done(ModelResponse::tool_call(
                "add",
                r#"{"a":2,"b":3}"#,
                "k1",
            ))];
        }
        let text = |text: &str| {
            StreamEvent::Delta(ResponseDelta::Text {
                part: 0,
                text: text.into(),
            })
        };
        vec![
            text("Sum: "),
            text("5."),
            StreamEvent::Done(ModelResponse::text("Sum: 5.")),
        ]
    });
    let researcher = Agent::<(), String>::builder(researcher)
        .tool(add())
        .build()
        .expect("the agent builds");
    let model = FunctionModel::new(|messages: &[Message], _| match messages.len() {
        1 => ModelResponse::tool_call("research", r#"{"task":"2 + 3"}"#, "p1"),
        _ => ModelResponse::text("It is 5."),
    });
    Agent::builder(model)
        .tool(researcher.as_tool(
            "research",
            "Researches a question.",
            |_ctx: &RunContext<()>, task: Task| (task.task, ()),
        ))
        .build()
        .expect("the agent builds")
}

/// [`delegator`], whose researcher calls `add` with a negative `a` and has no retries left:
/// it fails, and the call is rejected with its error (`OnAgentError::Retry`).
pub fn failing_delegator() -> Agent<(), String> {
    let researcher = FunctionModel::new(|_: &[Message], _| {
        ModelResponse::tool_call("add", r#"{"a":-1,"b":3}"#, "k1")
    });
    let researcher = Agent::<(), String>::builder(researcher)
        .tool(add())
        .tool_retries(0)
        .build()
        .expect("the agent builds");
    let model = FunctionModel::new(|messages: &[Message], _| match messages.len() {
        1 => ModelResponse::tool_call("research", r#"{"task":"2 + 3"}"#, "p1"),
        _ => ModelResponse::text("No answer."),
    });
    Agent::builder(model)
        .tool(
            researcher
                .as_tool(
                    "research",
                    "Researches a question.",
                    |_ctx: &RunContext<()>, task: Task| (task.task, ()),
                )
                .on_error(golem::tool::OnAgentError::Retry),
        )
        .tool_retries(1)
        .build()
        .expect("the agent builds")
}

/// An agent that delegates to `research` (call `p1`), which delegates to `dice` (call
/// `g1`), which answers "6"; then `research` answers "Rolled 6." and the run "Done.".
/// None of it streamed.
pub fn grand_delegator() -> Agent<(), String> {
    let dice = Agent::<(), String>::builder(FunctionModel::new(|_: &[Message], _| {
        ModelResponse::text("6")
    }))
    .build()
    .expect("the agent builds");
    let research = FunctionModel::new(|messages: &[Message], _| match messages.len() {
        1 => ModelResponse::tool_call("dice", r#"{"task":"roll"}"#, "g1"),
        _ => ModelResponse::text("Rolled 6."),
    });
    let research = Agent::<(), String>::builder(research)
        .tool(
            dice.as_tool("dice", "Rolls.", |_ctx: &RunContext<()>, task: Task| {
                (task.task, ())
            }),
        )
        .build()
        .expect("the agent builds");
    let model = FunctionModel::new(|messages: &[Message], _| match messages.len() {
        1 => ModelResponse::tool_call("research", r#"{"task":"roll"}"#, "p1"),
        _ => ModelResponse::text("Done."),
    });
    Agent::builder(model)
        .tool(research.as_tool(
            "research",
            "Researches a question.",
            |_ctx: &RunContext<()>, task: Task| (task.task, ()),
        ))
        .build()
        .expect("the agent builds")
}
