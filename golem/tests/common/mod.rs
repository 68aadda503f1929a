//! Scripted models, message builders and a loopback provider shared by the behaviour tests.

#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

pub mod dice;
pub mod gemini;
pub mod http;
pub mod logs;
pub mod sse;
pub mod streams;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use golem::model::function::FunctionModel;
use golem::model::{
    Message, ModelError, ModelRequest, ModelResponse, RequestParams, RequestPart, ResponsePart,
};

/// A model that gives `responses` in order, and records every history it was sent.
#[derive(Clone)]
pub struct Script {
    pub model: FunctionModel,
    pub seen: Arc<Mutex<Vec<Vec<Message>>>>,
    pub params: Arc<Mutex<Vec<RequestParams>>>,
}

pub fn script(responses: Vec<ModelResponse>) -> Script {
    let queue = Mutex::new(VecDeque::from(responses));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let params = Arc::new(Mutex::new(Vec::new()));
    let (seen_by_model, params_by_model) = (Arc::clone(&seen), Arc::clone(&params));
    let model = FunctionModel::new(move |messages: &[Message], request: &RequestParams| {
        seen_by_model.lock().unwrap().push(messages.to_vec());
        params_by_model.lock().unwrap().push(request.clone());
        queue
            .lock()
            .unwrap()
            .pop_front()
            .ok_or_else(|| ModelError::other("the script ran out of responses"))
    });
    Script {
        model,
        seen,
        params,
    }
}

impl Script {
    /// How many requests the model got.
    pub fn requests(&self) -> usize {
        self.seen.lock().unwrap().len()
    }
}

pub fn request(parts: Vec<RequestPart>) -> Message {
    Message::Request(ModelRequest::new(parts))
}

/// A response as the history holds it: one request, with the given tokens.
pub fn response(parts: Vec<ResponsePart>, input_tokens: u64, output_tokens: u64) -> Message {
    ModelResponse::new(parts)
        .with_usage(input_tokens, output_tokens)
        .into()
}

pub fn reply(parts: Vec<ResponsePart>, input_tokens: u64, output_tokens: u64) -> ModelResponse {
    ModelResponse::new(parts).with_usage(input_tokens, output_tokens)
}

pub fn call(tool: &str, args: &str, id: &str) -> ResponsePart {
    ResponsePart::tool_call(tool, args, id)
}

pub fn text(content: &str) -> ResponsePart {
    ResponsePart::text(content)
}

pub fn user(content: &str) -> RequestPart {
    RequestPart::user_prompt(content)
}

pub fn system(content: &str) -> RequestPart {
    RequestPart::system_prompt(content)
}

pub fn tool_return(tool: &str, id: &str, value: serde_json::Value) -> RequestPart {
    RequestPart::tool_return(tool, id, value)
}

pub fn tool_retry(tool: &str, id: &str, reason: &str) -> RequestPart {
    RequestPart::tool_retry(tool, id, reason)
}

pub fn retry(reason: &str) -> RequestPart {
    RequestPart::retry_prompt(reason)
}

/// What rounds cost: `requests` and their tokens.
pub fn cost(requests: u64, input_tokens: u64, output_tokens: u64) -> golem::usage::RoundCost {
    golem::usage::RoundCost {
        requests,
        input_tokens,
        output_tokens,
    }
}

/// Asserts that `error` ended its run on the content filter's refusal, the model's `words`
/// kept as the refused response's text.
pub fn assert_refused(error: &golem::RunError, words: &str) {
    assert!(matches!(
        error.model_error(),
        Some(golem::model::ModelError::ContentFilter)
    ));
    let refused = error.messages()[1].as_response().expect("a response");
    assert_eq!(
        refused.finish_reason,
        Some(golem::model::FinishReason::ContentFilter)
    );
    assert_eq!(refused.parts, [text(words)]);
}
