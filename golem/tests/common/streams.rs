//! Driving a model's stream in tests, and the recorded stream fixtures.

use std::time::Duration;

use futures_util::StreamExt;
use golem::model::{
    Message, Model, ModelError, ModelResponse, RequestParams, ResponseDelta, StreamEvent,
};

/// A fixture under `tests/fixtures/`.
pub fn fixture(name: &str) -> String {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
}

/// A JSON fixture.
pub fn json_fixture(name: &str) -> serde_json::Value {
    serde_json::from_str(&fixture(name)).unwrap()
}

/// What a stream gave: its deltas, then the response or the error it ended with. Fails
/// the test if anything follows the end, or the stream takes longer than 20 s.
pub struct Streamed {
    pub deltas: Vec<ResponseDelta>,
    pub end: Result<ModelResponse, ModelError>,
}

pub async fn drive(model: &dyn Model, messages: &[Message], params: &RequestParams) -> Streamed {
    tokio::time::timeout(Duration::from_secs(20), async {
        let mut stream = model.request_stream(messages, params);
        let mut deltas = Vec::new();
        let end = loop {
            match stream.next().await {
                Some(Ok(StreamEvent::Delta(delta))) => deltas.push(delta),
                Some(Ok(StreamEvent::Done(response))) => break Ok(response),
                Some(Ok(other)) => panic!("an unknown event: {other:?}"),
                Some(Err(error)) => break Err(error),
                None => panic!("the stream ended without a response or an error"),
            }
        };
        assert!(stream.next().await.is_none(), "nothing follows the end");
        Streamed { deltas, end }
    })
    .await
    .expect("the stream ends within 20 s")
}

impl Streamed {
    pub fn response(self) -> ModelResponse {
        self.end.unwrap()
    }

    pub fn error(&self) -> &ModelError {
        self.end.as_ref().unwrap_err()
    }

    /// The text deltas of part `part`, joined.
    pub fn text(&self, part: usize) -> String {
        self.deltas
            .iter()
            .filter_map(|delta| match delta {
                ResponseDelta::Text { part: p, text } if *p == part => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

pub fn text_delta(part: usize, text: &str) -> ResponseDelta {
    ResponseDelta::Text {
        part,
        text: text.to_owned(),
    }
}

pub fn thinking_delta(part: usize, text: &str) -> ResponseDelta {
    ResponseDelta::Thinking {
        part,
        text: text.to_owned(),
    }
}

pub fn call_start(part: usize, tool_name: &str, tool_call_id: &str) -> ResponseDelta {
    ResponseDelta::ToolCallStart {
        part,
        tool_name: tool_name.to_owned(),
        tool_call_id: tool_call_id.to_owned(),
    }
}

pub fn args_delta(part: usize, args: &str) -> ResponseDelta {
    ResponseDelta::ToolCallArgs {
        part,
        args: args.to_owned(),
    }
}
