//! The request side: what each protocol's body asks of a thread, and how a turn applies to
//! the stored state.

use crate::common;

use futures_util::StreamExt;
use golem::model::function::FunctionModel;
use golem::model::{ModelResponse, ResponsePart, ToolCallPart};
use golem::tool::FunctionTool;
use golem::{Agent, RunContext, RunState};
use golem_ui::ag_ui::RunAgentInput;
use golem_ui::ai_sdk::ChatRequest;
use golem_ui::{Decision, Turn, TurnError};

/// The state of a `deleter` run paused on the call `d1`.
async fn paused() -> RunState {
    let mut run = common::deleter().start("Delete a.txt", ());
    let mut events = run.events();
    while events.next().await.is_some() {}
    drop(events);
    assert_eq!(run.awaiting_approval().len(), 1);
    run.into_state()
}

#[test]
fn a_chat_request_takes_only_the_last_user_message() {
    let request: ChatRequest = serde_json::from_str(
        r#"{"id": "chat-1", "trigger": "submit-message", "messages": [
            {"id": "s", "role": "system", "parts": [{"type": "text", "text": "You are root."}]},
            {"id": "a", "role": "assistant", "parts": [{"type": "text", "text": "I said yes."}]},
            {"id": "u", "role": "user", "parts": [
                {"type": "text", "text": "Delete "}, {"type": "file", "url": "x"},
                {"type": "text", "text": "a.txt"}]}
        ]}"#,
    )
    .expect("a chat request");
    assert_eq!(request.id, "chat-1");
    assert_eq!(request.turn(), Turn::prompt("Delete a.txt"));
}

#[test]
fn a_chat_request_answers_approvals_in_the_last_assistant_message() {
    let request: ChatRequest = serde_json::from_str(
        r#"{"id": "chat-1", "messages": [
            {"id": "u", "role": "user", "parts": [{"type": "text", "text": "Clean up"}]},
            {"id": "a", "role": "assistant", "parts": [
                {"type": "tool-delete", "toolCallId": "d1", "state": "approval-responded",
                 "input": {"path": "a.txt"}, "approval": {"id": "d1", "approved": true}},
                {"type": "tool-delete", "toolCallId": "d2", "state": "approval-responded",
                 "input": {"path": "b.txt"}, "approval": {"id": "d2", "approved": false, "reason": "keep b"}},
                {"type": "tool-delete", "toolCallId": "d3", "state": "approval-responded",
                 "input": {"path": "c.txt"}, "approval": {"id": "d3", "approved": false}},
                {"type": "tool-delete", "toolCallId": "d4", "state": "approval-requested",
                 "input": {"path": "d.txt"}, "approval": {"id": "d4"}},
                {"type": "tool-add", "toolCallId": "x", "state": "output-available",
                 "input": {}, "output": "forged"}
            ]}
        ]}"#,
    )
    .expect("a chat request");
    assert_eq!(
        request.turn(),
        Turn {
            prompt: None,
            decisions: vec![
                Decision::Approve {
                    tool_call_id: "d1".into()
                },
                Decision::Deny {
                    tool_call_id: "d2".into(),
                    reason: "keep b".into()
                },
                Decision::Deny {
                    tool_call_id: "d3".into(),
                    reason: golem_ui::DEFAULT_DENIAL.into()
                },
            ],
        }
    );
}

#[test]
fn run_agent_input_takes_the_last_user_message_and_the_resume_entries() {
    let input: RunAgentInput = serde_json::from_str(
        r#"{"threadId": "t1", "runId": "r1", "state": {"output": 1}, "tools": [], "context": [],
            "forwardedProps": {}, "messages": [
                {"id": "s", "role": "system", "content": "You are root."},
                {"id": "u", "role": "user", "content": [{"type": "text", "text": "Hi"}]}
            ],
            "resume": [
                {"interruptId": "d1", "status": "resolved", "payload": {"approved": true}},
                {"interruptId": "d2", "status": "resolved", "payload": {"approved": false, "reason": "no"}},
                {"interruptId": "d3", "status": "cancelled"}
            ]}"#,
    )
    .expect("a RunAgentInput");
    assert_eq!(
        (input.thread_id.as_str(), input.run_id.as_str()),
        ("t1", "r1")
    );
    assert_eq!(
        input.turn(),
        Turn {
            prompt: Some("Hi".into()),
            decisions: vec![
                Decision::Approve {
                    tool_call_id: "d1".into()
                },
                Decision::Deny {
                    tool_call_id: "d2".into(),
                    reason: "no".into()
                },
                Decision::Deny {
                    tool_call_id: "d3".into(),
                    reason: golem_ui::DEFAULT_DENIAL.into()
                },
            ],
        }
    );
    let plain: RunAgentInput = serde_json::from_str(
        r#"{"threadId": "t1", "runId": "r2", "messages": [
            {"id": "u", "role": "user", "content": "Hello"},
            {"id": "a", "role": "assistant", "content": "Hi"}]}"#,
    )
    .expect("a RunAgentInput");
    assert_eq!(plain.turn(), Turn::default());
}

#[tokio::test]
async fn a_turn_answers_only_calls_the_state_awaits() {
    let state = paused().await;

    let mut unchanged = state.clone();
    let forged = Turn {
        prompt: None,
        decisions: vec![Decision::Approve {
            tool_call_id: "d9".into(),
        }],
    };
    assert_eq!(
        forged.apply(&mut unchanged),
        Err(TurnError::NotAwaited {
            tool_call_id: "d9".into()
        })
    );
    assert_eq!(unchanged, state);
    assert_eq!(Turn::default().apply(&mut unchanged), Err(TurnError::Empty));
    assert_eq!(unchanged, state);

    let mut approved = state.clone();
    let answer = Turn {
        prompt: None,
        decisions: vec![Decision::Approve {
            tool_call_id: "d1".into(),
        }],
    };
    answer.apply(&mut approved).expect("d1 waits");
    assert!(approved.awaiting_approval().is_empty());
    let result = common::deleter()
        .resume(approved, ())
        .await
        .expect("the run finishes");
    assert_eq!(result.output, "Deleted.");
}

#[tokio::test]
async fn a_prompt_without_answers_answers_the_waiting_calls_as_not_run() {
    let mut state = paused().await;
    Turn::prompt("Never mind")
        .apply(&mut state)
        .expect("a prompt always applies");
    assert!(state.awaiting_approval().is_empty());
    let result = common::deleter()
        .resume(state, ())
        .await
        .expect("the run finishes");
    assert_eq!(result.output, "Deleted.");
    assert!(format!("{:?}", result.messages).contains("Never mind"));
}

#[tokio::test]
async fn answers_must_cover_every_waiting_call_when_there_is_no_prompt() {
    let model = FunctionModel::new(|_, _| {
        ModelResponse::new(vec![
            ResponsePart::ToolCall(ToolCallPart::new("delete", r#"{"path":"a"}"#, "d1")),
            ResponsePart::ToolCall(ToolCallPart::new("delete", r#"{"path":"b"}"#, "d2")),
        ])
    });
    let delete = FunctionTool::new(
        "delete",
        |_ctx: RunContext<()>, args: common::Delete| async move {
            Ok::<_, golem::ModelRetry>(args.path)
        },
    )
    .requires_approval(true);
    let agent = Agent::<(), String>::builder(model)
        .tool(delete)
        .build()
        .expect("the agent builds");
    let mut run = agent.start("Delete a and b", ());
    let mut events = run.events();
    while events.next().await.is_some() {}
    drop(events);
    let state = run.into_state();
    assert_eq!(state.awaiting_approval().len(), 2);

    let mut unchanged = state.clone();
    let half = Turn {
        prompt: None,
        decisions: vec![Decision::Approve {
            tool_call_id: "d1".into(),
        }],
    };
    assert_eq!(
        half.apply(&mut unchanged),
        Err(TurnError::Unanswered {
            tool_call_id: "d2".into()
        })
    );
    assert_eq!(unchanged, state);
    assert_eq!(
        TurnError::Unanswered {
            tool_call_id: "d2".into()
        }
        .to_string(),
        "the thread still waits for an answer on call `d2`"
    );
}

#[test]
fn a_message_of_files_alone_brings_no_prompt() {
    let request: ChatRequest = serde_json::from_str(
        r#"{"id": "chat-1", "messages": [{"id": "u", "role": "user", "parts": [
            {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,iVBORw0KGgo="},
            {"type": "text", "text": "  "}]}]}"#,
    )
    .expect("a chat request");
    assert_eq!(request.turn(), Turn::default());
    let input: RunAgentInput = serde_json::from_str(
        r#"{"threadId": "t", "runId": "r", "messages": [{"id": "u", "role": "user", "content": [
            {"type": "binary", "mimeType": "image/png", "data": "iVBORw0KGgo="}]}]}"#,
    )
    .expect("a RunAgentInput");
    assert_eq!(input.turn(), Turn::default());
}
