//! Output self-correction, as DESIGN §3 "Output" specifies it.

use crate::common;

use std::error::Error as _;
use std::sync::{Arc, Mutex};

use common::*;
use golem::model::{Message, ModelResponse, RequestPart};
use golem::output::{Json, Output, OutputKind, OutputMode};
use golem::tool::FunctionTool;
use golem::usage::RoundCost;
use golem::{Agent, BoxError, Exhausted, ModelRetry, RunContext, Stage};
use serde_json::json;

/// Who won and by how much.
#[golem::args]
#[derive(Debug, PartialEq)]
struct Verdict {
    winner: String,
    score: u32,
}

fn cost(requests: u64, input_tokens: u64, output_tokens: u64) -> RoundCost {
    RoundCost {
        requests,
        input_tokens,
        output_tokens,
    }
}

async fn yes_or_no<E: From<ModelRetry>>(_ctx: RunContext<()>, answer: String) -> Result<String, E> {
    match answer.as_str() {
        "yes" | "no" => Ok(answer),
        other => Err(ModelRetry::new(format!("answer yes or no, not `{other}`")).into()),
    }
}

#[tokio::test]
async fn output_retries_are_off_by_default() {
    let script = script(vec![reply(vec![text("maybe")], 10, 1)]);
    let agent = Agent::<(), String>::builder(script.model.clone())
        .output_validator(yes_or_no::<ModelRetry>)
        .build()
        .unwrap();

    let error = agent.run("Is water wet?", ()).await.unwrap_err();

    assert_eq!(error.stage(), Stage::Decode);
    assert!(error.is_decode() && error.is_retries_exhausted());
    assert_eq!(error.tool_name(), None);
    assert_eq!(
        error.exhausted(),
        Some(Exhausted {
            rejections: 1,
            limit: 0
        })
    );
    assert_eq!(
        error.to_string(),
        "the output was rejected and output retries are off"
    );
    let cause = error.source().unwrap();
    assert_eq!(cause.to_string(), "answer yes or no, not `maybe`");
    assert!(cause.downcast_ref::<ModelRetry>().is_some());
    // With no budget, nothing about self-correction is in the history: it ends with the
    // model's answer, and the feedback the run did not send waits apart.
    assert_eq!(
        error.messages(),
        [
            request(vec![user("Is water wet?")]),
            response(vec![text("maybe")], 10, 1),
        ]
    );
    assert_eq!(
        Message::Request(error.pending().unwrap().clone()),
        request(vec![retry("answer yes or no, not `maybe`")])
    );
    assert_eq!(error.usage().requests, 1);
    assert_eq!(error.usage().rejected.output, cost(1, 10, 1));
    assert_eq!(script.requests(), 1);
}

#[tokio::test]
async fn rejected_text_is_kept_and_the_feedback_is_a_user_message() {
    let script = script(vec![
        reply(vec![text("maybe")], 10, 1),
        reply(vec![text("perhaps")], 20, 1),
        reply(vec![text("yes")], 30, 1),
    ]);
    let agent = Agent::<(), String>::builder(script.model.clone())
        .output_retries(2)
        .output_validator(yes_or_no::<ModelRetry>)
        .build()
        .unwrap();

    let result = agent.run("Is water wet?", ()).await.unwrap();

    assert_eq!(result.output, "yes");
    let expected = [
        request(vec![user("Is water wet?")]),
        response(vec![text("maybe")], 10, 1),
        request(vec![retry("answer yes or no, not `maybe`")]),
        response(vec![text("perhaps")], 20, 1),
        request(vec![retry("answer yes or no, not `perhaps`")]),
        response(vec![text("yes")], 30, 1),
    ];
    assert_eq!(result.messages, expected);
    assert_eq!(script.seen.lock().expect("not poisoned")[2], expected[..5]);
    assert_eq!(
        (
            result.usage.requests,
            result.usage.input_tokens,
            result.usage.output_tokens
        ),
        (3, 60, 3)
    );
    assert_eq!(result.usage.rejected.total, cost(2, 30, 2));
    assert_eq!(result.usage.rejected.output, cost(2, 30, 2));
    assert!(result.usage.rejected.tools.is_empty());
}

#[tokio::test]
async fn the_rejection_past_the_budget_fails_the_run() {
    let script = script(vec![
        reply(vec![text("maybe")], 10, 1),
        reply(vec![text("perhaps")], 20, 1),
        reply(vec![text("yes")], 30, 1),
    ]);
    let agent = Agent::<(), String>::builder(script.model.clone())
        .output_retries(1)
        .output_validator(yes_or_no::<ModelRetry>)
        .build()
        .unwrap();

    let error = agent.run("Is water wet?", ()).await.unwrap_err();

    assert_eq!(
        error.exhausted(),
        Some(Exhausted {
            rejections: 2,
            limit: 1
        })
    );
    assert_eq!(
        error.to_string(),
        "the output was rejected 2 times, over its retry budget of 1"
    );
    assert_eq!(
        error.source().unwrap().to_string(),
        "answer yes or no, not `perhaps`"
    );
    assert_eq!(error.messages().len(), 4);
    assert_eq!(
        Message::Request(error.pending().unwrap().clone()),
        request(vec![retry("answer yes or no, not `perhaps`")])
    );
    assert_eq!(error.usage().requests, 2);
    assert_eq!(error.usage().input_tokens, 30);
    assert_eq!(script.requests(), 2);
}

#[tokio::test]
async fn every_kind_of_unusable_structured_output_is_fed_back_through_final_result() {
    let script = script(vec![
        reply(
            vec![call("final_result", r#"{"winner": "Ann""#, "c1")],
            1,
            1,
        ),
        reply(
            vec![call(
                "final_result",
                r#"{"winner": "Ann", "score": -3}"#,
                "c2",
            )],
            2,
            1,
        ),
        reply(vec![text("Ann won with 12.")], 3, 1),
        reply(vec![], 4, 0),
        reply(
            vec![call(
                "final_result",
                r#"{"winner": "Ann", "score": 12}"#,
                "c3",
            )],
            5,
            1,
        ),
    ]);
    let agent = Agent::<(), Json<Verdict>>::builder(script.model.clone())
        .output_retries(4)
        .build()
        .unwrap();

    let result = agent.run("Who won?", ()).await.unwrap();

    assert_eq!(
        result.output.0,
        Verdict {
            winner: "Ann".into(),
            score: 12
        }
    );
    assert_eq!(
        result.messages,
        [
            request(vec![user("Who won?")]),
            response(
                vec![call("final_result", r#"{"winner": "Ann""#, "c1")],
                1,
                1
            ),
            request(vec![tool_retry(
                "final_result",
                "c1",
                "invalid output: EOF while parsing an object at line 1 column 16"
            )]),
            response(
                vec![call(
                    "final_result",
                    r#"{"winner": "Ann", "score": -3}"#,
                    "c2"
                )],
                2,
                1
            ),
            request(vec![tool_retry(
                "final_result",
                "c2",
                "invalid output: at `score`: invalid value: integer `-3`, expected u32 at line 1 column 29"
            )]),
            response(vec![text("Ann won with 12.")], 3, 1),
            request(vec![retry(
                "Plain text responses are not permitted. Call the `final_result` tool with your answer."
            )]),
            response(vec![], 4, 0),
            request(vec![retry(
                "The response was empty. Call the `final_result` tool with your answer."
            )]),
            response(
                vec![call(
                    "final_result",
                    r#"{"winner": "Ann", "score": 12}"#,
                    "c3"
                )],
                5,
                1
            ),
            request(vec![tool_return(
                "final_result",
                "c3",
                json!("Final result processed.")
            )]),
        ]
    );
    assert_eq!(result.usage.requests, 5);
    assert_eq!(result.usage.rejected.output, cost(4, 10, 3));
    let params = script.params.lock().expect("not poisoned")[0].clone();
    assert!(!params.allow_text_output);
    assert_eq!(
        serde_json::to_value(&params.output_tools).unwrap(),
        json!([{
            "name": "final_result",
            "description": "Who won and by how much.",
            "parameters": {
                "type": "object",
                "description": "Who won and by how much.",
                "properties": {
                    "winner": {"type": "string"},
                    "score": {"type": "integer", "minimum": 0}
                },
                "required": ["winner", "score"],
                "additionalProperties": false
            }
        }])
    );
}

#[tokio::test]
async fn without_a_budget_unusable_output_fails_at_the_decode_stage() {
    let cases = [
        (
            ModelResponse::tool_call("final_result", "not json", "c1"),
            "invalid output: expected ident at line 1 column 2",
        ),
        (
            ModelResponse::tool_call("final_result", r#"{"winner": 7, "score": 1}"#, "c1"),
            "invalid output: at `winner`: invalid type: integer `7`, expected a string at line 1 column 12",
        ),
        (
            ModelResponse::text("Ann"),
            "Plain text responses are not permitted. Call the `final_result` tool with your answer.",
        ),
        (
            ModelResponse::new(vec![]),
            "The response was empty. Call the `final_result` tool with your answer.",
        ),
    ];
    for (bad, reason) in cases {
        let script = script(vec![bad]);
        let agent = Agent::<(), Json<Verdict>>::builder(script.model)
            .build()
            .unwrap();

        let error = agent.run("Who won?", ()).await.unwrap_err();

        assert_eq!(error.stage(), Stage::Decode, "{reason}");
        assert_eq!(
            error.exhausted(),
            Some(Exhausted {
                rejections: 1,
                limit: 0
            })
        );
        assert_eq!(error.source().unwrap().to_string(), reason);
        assert_eq!(error.model_retry().unwrap().message(), reason);
    }
}

#[tokio::test]
async fn an_empty_text_response_is_rejected() {
    let script = script(vec![
        reply(vec![text("  ")], 1, 0),
        reply(vec![text("Hi")], 1, 1),
    ]);
    let agent = Agent::<(), String>::builder(script.model)
        .output_retries(1)
        .build()
        .unwrap();

    let result = agent.run("Greet me", ()).await.unwrap();

    assert_eq!(result.output, "Hi");
    assert_eq!(
        result.messages[2],
        request(vec![retry("The response was empty. Answer with text.")])
    );
}

#[tokio::test]
async fn native_output_is_decoded_from_the_text_and_fed_back_as_a_user_message() {
    let script = script(vec![
        reply(vec![text(r#"{"winner": "Ann"}"#)], 1, 1),
        reply(vec![text(r#"{"winner": "Ann", "score": 3}"#)], 1, 1),
    ]);
    let agent = Agent::<(), Json<Verdict>>::builder(script.model.clone())
        .output_mode(OutputMode::Native)
        .output_retries(1)
        .build()
        .unwrap();

    let result = agent.run("Who won?", ()).await.unwrap();

    assert_eq!(result.output.score, 3);
    assert_eq!(
        result.messages[2],
        request(vec![retry(
            "invalid output: missing field `score` at line 1 column 17"
        )])
    );
    assert_eq!(result.messages.len(), 4);
    let params = script.params.lock().expect("not poisoned")[0].clone();
    assert!(params.output_tools.is_empty());
    let schema = params.output_schema.unwrap();
    assert_eq!(schema.name, "final_result");
    assert_eq!(schema.schema["required"], json!(["winner", "score"]));
}

#[tokio::test]
async fn prompted_output_is_found_in_the_text_after_tool_calls_and_corrected_once() {
    let script = script(vec![
        reply(vec![call("roll_dice", r#"{"n": 1}"#, "c1")], 10, 1),
        reply(vec![text("Ann won with 3.")], 20, 2),
        reply(
            vec![text(
                "Here is the verdict:\n```json\n{\"winner\": \"Ann\", \"score\": 3}\n```",
            )],
            30,
            3,
        ),
    ]);
    let roll = FunctionTool::new(
        "roll_dice",
        |_ctx: RunContext<()>, _: serde_json::Value| async { Ok::<_, ModelRetry>(3) },
    );
    let agent = Agent::<(), Json<Verdict>>::builder(script.model.clone())
        .instructions("You referee dice games.")
        .tool(roll)
        .output_mode(OutputMode::Prompted)
        .output_retries(1)
        .build()
        .unwrap();

    let result = agent.run("Who won?", ()).await.unwrap();

    assert_eq!(
        result.output.0,
        Verdict {
            winner: "Ann".to_owned(),
            score: 3
        }
    );
    assert_eq!(
        result.messages,
        [
            request(vec![user("Who won?")]),
            response(vec![call("roll_dice", r#"{"n": 1}"#, "c1")], 10, 1),
            request(vec![tool_return("roll_dice", "c1", json!(3))]),
            response(vec![text("Ann won with 3.")], 20, 2),
            request(vec![retry(
                "invalid output: expected value at line 1 column 1"
            )]),
            response(
                vec![text(
                    "Here is the verdict:\n```json\n{\"winner\": \"Ann\", \"score\": 3}\n```",
                )],
                30,
                3,
            ),
        ]
    );
    assert_eq!(result.usage.rejected.output, cost(1, 20, 2));
    // The schema goes with the instructions; no output tool, no native format, and the model
    // may answer with text.
    let params = script.params.lock().expect("not poisoned")[0].clone();
    assert!(params.output_tools.is_empty());
    assert!(params.output_schema.is_none());
    assert!(params.allow_text_output);
    let OutputKind::Structured(structured) = Json::<Verdict>::kind() else {
        panic!("a structured output")
    };
    let schema = structured.schema.to_string();
    assert_eq!(
        params.instructions.as_deref(),
        Some(
            format!(
                "You referee dice games.\n\nWhen you give your final answer, write it as one \
                 JSON object that matches this JSON schema, with no text before or after \
                 it.\n\n{schema}"
            )
            .as_str()
        )
    );
}

#[tokio::test]
async fn validators_see_their_retry_count_budget_and_last_attempt() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let script = script(vec![
        reply(
            vec![call("final_result", r#"{"winner": "", "score": 1}"#, "c1")],
            1,
            1,
        ),
        reply(
            vec![call("final_result", r#"{"winner": "", "score": 2}"#, "c2")],
            1,
            1,
        ),
        reply(
            vec![call("final_result", r#"{"winner": "", "score": 3}"#, "c3")],
            1,
            1,
        ),
    ]);
    let log = Arc::clone(&seen);
    let agent = Agent::<(), Json<Verdict>>::builder(script.model)
        .output_retries(2)
        .output_validator(move |ctx: RunContext<()>, verdict: Json<Verdict>| {
            log.lock().expect("not poisoned").push((
                ctx.retry(),
                ctx.max_retries(),
                ctx.last_attempt(),
                ctx.tool_name().map(str::to_owned),
                ctx.tool_call_id().map(str::to_owned),
            ));
            // Soft-fail on the last chance.
            let last = ctx.last_attempt();
            async move {
                if verdict.winner.is_empty() && !last {
                    return Err(ModelRetry::new("name the winner"));
                }
                Ok(verdict)
            }
        })
        .build()
        .unwrap();

    let result = agent.run("Who won?", ()).await.unwrap();

    assert_eq!(result.output.score, 3);
    let attempt = |retry, last, id: &str| {
        (
            retry,
            2,
            last,
            Some("final_result".to_owned()),
            Some(id.to_owned()),
        )
    };
    assert_eq!(
        *seen.lock().expect("not poisoned"),
        [
            attempt(0, false, "c1"),
            attempt(1, false, "c2"),
            attempt(2, true, "c3")
        ]
    );
}

#[tokio::test]
async fn any_other_validator_error_is_terminal_and_never_shown_to_the_model() {
    let script = script(vec![reply(vec![text("yes")], 7, 1)]);
    let agent = Agent::<(), String>::builder(script.model)
        .output_retries(3)
        .output_validator(|_ctx, _answer: String| async move {
            Err::<String, _>(std::io::Error::other("audit log unavailable"))
        })
        .build()
        .unwrap();

    let error = agent.run("Is water wet?", ()).await.unwrap_err();

    assert_eq!(error.stage(), Stage::Decode);
    assert!(!error.is_retries_exhausted());
    assert_eq!(error.to_string(), "the output could not be decoded");
    let io = error
        .source()
        .unwrap()
        .downcast_ref::<std::io::Error>()
        .unwrap();
    assert_eq!(io.to_string(), "audit log unavailable");
    assert_eq!(
        error.messages(),
        [
            request(vec![user("Is water wet?")]),
            response(vec![text("yes")], 7, 1)
        ]
    );
    assert!(error.usage().rejected.is_empty());
}

#[tokio::test]
async fn a_validator_error_wrapping_model_retry_is_a_correction() {
    let script = script(vec![
        reply(vec![text("maybe")], 1, 1),
        reply(vec![text("no")], 1, 1),
    ]);
    let agent = Agent::<(), String>::builder(script.model)
        .output_retries(1)
        .output_validator(|ctx, answer: String| async move {
            yes_or_no::<ModelRetry>(ctx, answer)
                .await
                .map_err(|retry| anyhow::Error::from(retry).context("validation failed"))
        })
        .build()
        .unwrap();

    let result = agent.run("Is fire cold?", ()).await.unwrap();

    assert_eq!(result.output, "no");
    assert_eq!(
        result.messages[2],
        request(vec![retry("answer yes or no, not `maybe`")])
    );
}

#[tokio::test]
async fn an_output_call_beside_a_rejected_tool_call_is_not_accepted_and_costs_no_output_retry() {
    #[golem::args]
    struct Points {
        points: i64,
    }
    let add = FunctionTool::new("add_points", |_ctx: RunContext<()>, p: Points| async move {
        if p.points < 0 {
            return Err(ModelRetry::new("points cannot be negative"));
        }
        Ok(p.points)
    });
    let script = script(vec![
        reply(
            vec![
                call("add_points", r#"{"points": -1}"#, "c1"),
                call("final_result", r#"{"winner": "Ann", "score": 1}"#, "c2"),
            ],
            1,
            1,
        ),
        reply(
            vec![
                call("add_points", r#"{"points": 1}"#, "c3"),
                call("final_result", r#"{"winner": "Ann", "score": 1}"#, "c4"),
            ],
            1,
            1,
        ),
    ]);
    let agent = Agent::<(), Json<Verdict>>::builder(script.model)
        .tool(add)
        .tool_retries(1)
        .build()
        .unwrap();

    let result = agent.run("Score it", ()).await.unwrap();

    assert_eq!(result.output.winner, "Ann");
    assert_eq!(
        result.messages[2],
        request(vec![
            tool_retry("add_points", "c1", "points cannot be negative"),
            tool_return(
                "final_result",
                "c2",
                json!(
                    "Output not accepted: a tool call in this response was rejected. \
                     Correct that call first, then call `final_result` again."
                )
            ),
        ])
    );
    // The tools ran first, then the output was accepted; every call is answered.
    assert_eq!(
        result.messages[4],
        request(vec![
            tool_return("add_points", "c3", json!(1)),
            tool_return("final_result", "c4", json!("Final result processed.")),
        ])
    );
    assert!(result.usage.rejected.output.is_zero());
    assert_eq!(result.usage.rejected.tools["add_points"].requests, 1);
}

#[tokio::test]
async fn only_the_first_output_call_is_considered() {
    let script = script(vec![reply(
        vec![
            call("final_result", r#"{"winner": "Ann", "score": 1}"#, "c1"),
            call("final_result", r#"{"winner": "Bob", "score": 2}"#, "c2"),
        ],
        1,
        1,
    )]);
    let agent = Agent::<(), Json<Verdict>>::builder(script.model)
        .build()
        .unwrap();

    let result = agent.run("Who won?", ()).await.unwrap();

    assert_eq!(result.output.winner, "Ann");
    assert_eq!(
        result.messages[2],
        request(vec![
            tool_return("final_result", "c1", json!("Final result processed.")),
            tool_return(
                "final_result",
                "c2",
                json!("Output tool not used: only the first output call is considered.")
            ),
        ])
    );
}

/// A yes/no answer given as plain text.
#[derive(Debug, PartialEq)]
struct YesNo(bool);

impl Output for YesNo {
    type Partial = golem::output::NoPartial;

    fn kind() -> OutputKind {
        OutputKind::Text
    }

    fn decode(raw: &str) -> Result<Self, BoxError> {
        match raw.trim().to_lowercase().as_str() {
            "yes" => Ok(YesNo(true)),
            "no" => Ok(YesNo(false)),
            _ => Err(ModelRetry::new("answer with one word: yes or no").into()),
        }
    }
}

#[tokio::test]
async fn hand_written_decoders_reject_like_validators() {
    let script = script(vec![
        reply(vec![text("Yes!")], 1, 1),
        reply(vec![text("Yes")], 1, 1),
    ]);
    let agent = Agent::<(), YesNo>::builder(script.model)
        .output_retries(1)
        .build()
        .unwrap();

    let result = agent.run("Is water wet?", ()).await.unwrap();

    assert_eq!(result.output, YesNo(true));
    assert_eq!(
        result.messages[2],
        request(vec![retry("answer with one word: yes or no")])
    );
}

#[tokio::test]
async fn a_decoder_set_on_the_builder_replaces_the_types_own() {
    let script = script(vec![
        reply(vec![text("oui")], 1, 1),
        reply(vec![text("non")], 1, 1),
    ]);
    let agent = Agent::<(), YesNo>::builder(script.model)
        .output_retries(1)
        .output_decoder(|raw: &str| match raw {
            "oui" => Err(ModelRetry::new("say non")),
            "non" => Ok(YesNo(false)),
            _ => Err(ModelRetry::new("say oui or non")),
        })
        .build()
        .unwrap();

    let result = agent.run("L'eau est-elle sèche ?", ()).await.unwrap();

    assert_eq!(result.output, YesNo(false));
    assert_eq!(result.messages[2], request(vec![retry("say non")]));
}

#[tokio::test]
async fn non_object_outputs_are_wrapped_for_the_output_tool() {
    let script = script(vec![
        reply(vec![call("final_result", "[1, 2]", "c1")], 1, 1),
        reply(
            vec![call("final_result", r#"{"response": [1, 2]}"#, "c2")],
            1,
            1,
        ),
    ]);
    let agent = Agent::<(), Json<Vec<u8>>>::builder(script.model.clone())
        .output_retries(1)
        .build()
        .unwrap();

    let result = agent.run("Two numbers", ()).await.unwrap();

    assert_eq!(result.output.0, vec![1, 2]);
    assert_eq!(
        result.messages[2],
        request(vec![tool_retry(
            "final_result",
            "c1",
            "invalid output: invalid type: sequence, expected a map at line 1 column 0"
        )])
    );
    let params = script.params.lock().expect("not poisoned")[0].clone();
    assert_eq!(
        params.output_tools[0].parameters,
        json!({
            "type": "object",
            "properties": {"response": {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 255}}},
            "required": ["response"],
            "additionalProperties": false
        })
    );
}

#[test]
fn retry_prompts_render_as_automated_feedback() {
    let RequestPart::RetryPrompt(part) = retry("answer yes or no") else {
        unreachable!()
    };
    assert_eq!(
        part.model_text(),
        "Automated validation feedback (not from the user):\nanswer yes or no\n\nFix the errors and try again."
    );
}

#[tokio::test]
async fn a_terminal_output_failure_still_answers_the_output_call() {
    let script = script(vec![reply(
        vec![call(
            "final_result",
            r#"{"winner": "Ann", "score": 1}"#,
            "c1",
        )],
        1,
        1,
    )]);
    let agent = Agent::<(), Json<Verdict>>::builder(script.model)
        .output_validator(|_ctx, _verdict: Json<Verdict>| async move {
            Err::<Json<Verdict>, _>(std::io::Error::other("scoreboard offline"))
        })
        .build()
        .unwrap();

    let error = agent.run("Who won?", ()).await.unwrap_err();

    assert_eq!(error.stage(), Stage::Decode);
    assert_eq!(error.source().unwrap().to_string(), "scoreboard offline");
    assert_eq!(
        error.messages()[2],
        request(vec![tool_return(
            "final_result",
            "c1",
            json!("The output could not be processed; the run stopped.")
        )])
    );
}
