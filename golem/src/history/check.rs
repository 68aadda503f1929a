//! What a processed history must be to be sent: every provider's rules for where a
//! conversation starts and ends and how calls and their answers pair.

use crate::model::{Message, ModelRequest, ModelResponse, RequestPart};

/// Checks that `messages` can be sent: it starts and ends with a request, each response's
/// tool calls are answered in the request right after it, and each answer in a request
/// answers a call of the response right before it.
///
/// # Errors
/// What is wrong, for the processor's error.
pub(crate) fn check(messages: &[Message]) -> Result<(), String> {
    match (messages.first(), messages.last()) {
        (None, _) => return Err("it is empty".to_owned()),
        (Some(Message::Response(_)), _) => {
            return Err("it starts with a response; it must start with a request".to_owned());
        }
        (_, Some(Message::Response(_))) => {
            return Err("it ends with a response; it must end with the request to send".to_owned());
        }
        _ => {}
    }
    let mut previous: Option<&ModelResponse> = None;
    for (index, message) in messages.iter().enumerate() {
        match message {
            Message::Response(response) => {
                if let Some(Message::Request(next)) = messages.get(index + 1) {
                    for call in response.tool_calls() {
                        if !answered(next, &call.tool_call_id) {
                            return Err(format!(
                                "the call `{}` of `{}` (message {index}) is not answered in the \
                                 request after it",
                                call.tool_call_id, call.tool_name
                            ));
                        }
                    }
                } else if let Some(call) = response.tool_calls().next() {
                    return Err(format!(
                        "the call `{}` of `{}` (message {index}) is not answered in the request \
                         after it",
                        call.tool_call_id, call.tool_name
                    ));
                }
                previous = Some(response);
            }
            Message::Request(request) => {
                for id in answer_ids(request) {
                    let calls = previous
                        .map(|response| response.tool_calls().any(|call| call.tool_call_id == id));
                    if calls != Some(true) {
                        return Err(format!(
                            "message {index} answers the call `{id}`, which the response \
                             before it does not make"
                        ));
                    }
                }
                previous = None;
            }
        }
    }
    Ok(())
}

/// Whether `request` answers the call `tool_call_id`.
fn answered(request: &ModelRequest, tool_call_id: &str) -> bool {
    answer_ids(request).any(|id| id == tool_call_id)
}

/// The ids of the calls `request` answers.
fn answer_ids(request: &ModelRequest) -> impl Iterator<Item = &str> {
    request.parts.iter().filter_map(|part| match part {
        RequestPart::ToolReturn(answer) => Some(answer.tool_call_id.as_str()),
        RequestPart::RetryPrompt(retry) => retry.tool_call_id.as_deref(),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ModelResponse, ResponsePart};

    fn call(id: &str) -> Message {
        Message::from(ModelResponse::new(vec![ResponsePart::tool_call(
            "search", "{}", id,
        )]))
    }

    fn answer(id: &str) -> Message {
        Message::Request(ModelRequest::new(vec![RequestPart::tool_return(
            "search", id, 1,
        )]))
    }

    fn prompt() -> Message {
        Message::Request(ModelRequest::user_prompt("go"))
    }

    #[test]
    fn a_history_is_sendable_when_it_starts_and_ends_in_requests_with_calls_paired() {
        assert_eq!(check(&[prompt(), call("a"), answer("a")]), Ok(()));
        assert_eq!(check(&[prompt()]), Ok(()));
        assert_eq!(check(&[]), Err("it is empty".to_owned()));
        assert_eq!(
            check(&[call("a"), answer("a")]),
            Err("it starts with a response; it must start with a request".to_owned())
        );
        assert_eq!(
            check(&[prompt(), call("a")]),
            Err("it ends with a response; it must end with the request to send".to_owned())
        );
        assert_eq!(
            check(&[prompt(), call("a"), prompt()]),
            Err(
                "the call `a` of `search` (message 1) is not answered in the request after it"
                    .to_owned()
            )
        );
        assert_eq!(
            check(&[answer("a")]),
            Err(
                "message 0 answers the call `a`, which the response before it does not make"
                    .to_owned()
            )
        );
        assert_eq!(
            check(&[prompt(), call("a"), answer("b")]),
            Err(
                "the call `a` of `search` (message 1) is not answered in the request after it"
                    .to_owned()
            )
        );
    }
}
