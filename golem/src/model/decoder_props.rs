//! Property tests: both providers' response decoders, fed arbitrary bytes, arbitrary JSON and
//! mutations of valid bodies (wrong types at every path, deep nesting, huge strings), end
//! in a response or a typed error, never a panic.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::{ModelResponse, RequestParams};
use crate::tool::ToolDefinition;

fn params() -> RequestParams {
    let mut params = RequestParams::text(vec![ToolDefinition {
        name: "roll_dice".into(),
        description: None,
        parameters: json!({
            "type": "object",
            "properties": {"n": {"type": "integer", "default": 1}, "tags": {"type": "array", "items": {"type": "string"}}},
            "additionalProperties": false
        }),
    }]);
    params.allow_text_output = true;
    params
}

/// Every decoder golem has, on one body.
fn decode_all(body: &[u8]) -> Vec<Result<ModelResponse, String>> {
    let params = params();
    vec![
        super::openai::wire::parse(body, &params, false),
        super::openai::wire::parse(body, &params, true),
        super::anthropic::wire::parse(body),
    ]
}

fn openai_body() -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "", "reasoning_content": "think", "refusal": null,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "roll_dice", "arguments": "{\"n\": null, \"tags\": [null]}"}},
                {"type": "function", "function": {"name": "roll_dice", "arguments": {"n": 2}}}
            ]
        }}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 1}}
    })
}

fn anthropic_body() -> Value {
    json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude",
        "content": [
            {"type": "thinking", "thinking": "hm", "signature": "sig"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "text", "text": "Rolling."},
            {"type": "tool_use", "id": "toolu_1", "name": "roll_dice", "input": {"n": 2}}
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 5, "output_tokens": 2, "cache_read_input_tokens": 1, "cache_creation_input_tokens": null}
    })
}

fn arbitrary_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
        prop_oneof![
            Just("text"),
            Just("tool_use"),
            Just("thinking"),
            Just("function"),
            Just("choices"),
            Just("null"),
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("type".to_owned()),
                    Just("content".to_owned()),
                    Just("choices".to_owned()),
                    Just("message".to_owned()),
                    Just("usage".to_owned()),
                    Just("tool_calls".to_owned()),
                    Just("function".to_owned()),
                    Just("arguments".to_owned()),
                    Just("input".to_owned()),
                    ".{0,6}".prop_map(String::from),
                ],
                inner,
                0..6
            )
            .prop_map(|map| Value::Object(map.into_iter().collect())),
        ]
    })
}

/// The paths of every value inside `value`, as JSON pointers.
fn pointers(value: &Value, at: String, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                pointers(child, format!("{at}/{key}"), out);
            }
        }
        Value::Array(items) => {
            for (index, child) in items.iter().enumerate() {
                pointers(child, format!("{at}/{index}"), out);
            }
        }
        _ => {}
    }
    out.push(at);
}

/// `body` with the value at its `pick`-th path replaced by `replacement`.
fn mutate(mut body: Value, pick: usize, replacement: Value) -> Value {
    let mut paths = Vec::new();
    pointers(&body, String::new(), &mut paths);
    let path = &paths[pick % paths.len()];
    match body.pointer_mut(path) {
        Some(slot) => *slot = replacement,
        None => body = replacement,
    }
    body
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        for outcome in decode_all(&bytes) {
            if let Err(error) = outcome {
                prop_assert!(!error.is_empty());
            }
        }
    }

    #[test]
    fn arbitrary_json_never_panics(value in arbitrary_json()) {
        let body = serde_json::to_vec(&value).expect("serializes");
        decode_all(&body);
    }

    #[test]
    fn every_path_of_a_valid_body_may_hold_anything(
        pick in any::<usize>(),
        replacement in arbitrary_json(),
        anthropic in any::<bool>(),
    ) {
        let valid = if anthropic { anthropic_body() } else { openai_body() };
        let body = serde_json::to_vec(&mutate(valid, pick, replacement)).expect("serializes");
        decode_all(&body);
    }

    #[test]
    fn strict_forms_and_null_removal_take_any_schema_and_arguments(
        schema in arbitrary_json(),
        mut args in arbitrary_json(),
    ) {
        let strict = crate::schema::to_strict_schema(&schema);
        crate::schema::is_strict_compatible(&strict);
        let before = args.clone();
        if !crate::schema::drop_added_nulls(&mut args, &schema) {
            prop_assert_eq!(args, before);
        }
    }

    #[test]
    fn truncated_valid_bodies_are_typed_errors(cut in any::<usize>(), anthropic in any::<bool>()) {
        let valid = if anthropic { anthropic_body() } else { openai_body() };
        let body = serde_json::to_vec(&valid).expect("serializes");
        let cut = cut % body.len();
        for outcome in decode_all(&body[..cut]) {
            let typed = outcome.is_err();
            prop_assert!(typed, "a cut body decoded: {:?}", outcome);
        }
    }
}

#[test]
fn the_valid_bodies_decode() {
    let openai = super::openai::wire::parse(
        &serde_json::to_vec(&openai_body()).expect("json"),
        &params(),
        true,
    )
    .expect("decodes");
    assert_eq!(openai.tool_calls().count(), 2);
    // Strict mode's nulls for defaulted fields are gone; nulls inside a list are data.
    assert_eq!(
        openai.tool_calls().next().expect("call").args,
        r#"{"tags":[null]}"#
    );
    let anthropic =
        super::anthropic::wire::parse(&serde_json::to_vec(&anthropic_body()).expect("json"))
            .expect("decodes");
    assert_eq!(anthropic.parts.len(), 4);
}

#[test]
fn deep_nesting_and_huge_strings_end_in_a_result() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    for outcome in decode_all(deep.as_bytes()) {
        assert!(outcome.is_err());
    }
    // Deep arguments inside a valid body: kept verbatim for the run to reject.
    let mut body = openai_body();
    let nested = format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000));
    body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] =
        Value::from(format!("{{\"n\": null, \"tags\": {nested}}}"));
    let response =
        super::openai::wire::parse(&serde_json::to_vec(&body).expect("json"), &params(), true)
            .expect("decodes");
    assert!(response.tool_calls().next().expect("call").args.len() > 20_000);
    // A 4 MiB answer is just text.
    let mut body = anthropic_body();
    body["content"][2]["text"] = Value::from("x".repeat(4 * 1024 * 1024));
    let response =
        super::anthropic::wire::parse(&serde_json::to_vec(&body).expect("json")).expect("decodes");
    assert_eq!(response.text_content().len(), 4 * 1024 * 1024);
}
