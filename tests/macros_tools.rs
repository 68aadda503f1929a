//! Generated tools called directly: return values converted by their type (not their
//! name), borrowed parameters read into owned values, and the `requires_approval` and
//! `repeatable` keys.

use golem::tool::Tool;
use golem::{BoxError, ModelRetry, RunContext};
use serde_json::{Value, json};

fn call<T: Tool<()>>(tool: &T, args: Value) -> Result<Value, BoxError> {
    let ctx = RunContext::new(());
    let args = args.to_string();
    futures_executor(tool.call(&ctx, &args))
}

fn futures_executor<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime")
        .block_on(future)
}

/// A plain struct whose name ends in `Result`: a value, not a `Result`.
#[derive(serde::Serialize)]
struct SearchResult {
    hits: Vec<String>,
}

/// Search.
#[golem::tool]
async fn search(query: String) -> SearchResult {
    SearchResult { hits: vec![query] }
}

type Fallible<T> = Result<T, ModelRetry>;

/// Halve an even number.
#[golem::tool]
async fn halve(n: i64) -> Fallible<i64> {
    if n % 2 != 0 {
        return Err(ModelRetry::new(format!("{n} is odd")));
    }
    Ok(n / 2)
}

/// A `Result` with `String` errors (which are `Serialize` too): still a `Result`.
#[golem::tool]
async fn parse_number(text: String) -> Result<i64, String> {
    text.parse()
        .map_err(|_| format!("`{text}` is not a number"))
}

/// An opaque return type.
#[golem::tool]
async fn opaque(n: i64) -> impl serde::Serialize {
    json!({ "n": n })
}

/// `anyhow::Result`.
#[golem::tool]
async fn checked(n: i64) -> anyhow::Result<i64> {
    anyhow::ensure!(n >= 0, "n must not be negative");
    Ok(n)
}

#[test]
fn a_struct_named_result_is_a_value() {
    assert_eq!(
        call(&Search, json!({"query": "rust"})).expect("succeeds"),
        json!({"hits": ["rust"]})
    );
}

#[test]
fn an_alias_of_result_is_fallible() {
    assert_eq!(call(&Halve, json!({"n": 4})).expect("succeeds"), json!(2));
    let error = call(&Halve, json!({"n": 3})).expect_err("odd");
    let retry = error.downcast_ref::<ModelRetry>().expect("a ModelRetry");
    assert_eq!(retry.message(), "3 is odd");
}

#[test]
fn a_result_with_a_serializable_error_is_fallible() {
    assert_eq!(
        call(&ParseNumber, json!({"text": "12"})).expect("succeeds"),
        json!(12)
    );
    let error = call(&ParseNumber, json!({"text": "x"})).expect_err("not a number");
    assert_eq!(error.to_string(), "`x` is not a number");
}

#[test]
fn impl_serialize_is_a_value() {
    assert_eq!(
        call(&Opaque, json!({"n": 1})).expect("succeeds"),
        json!({"n": 1})
    );
}

#[test]
fn anyhow_errors_are_terminal_errors() {
    let error = call(&Checked, json!({"n": -1})).expect_err("negative");
    assert_eq!(error.to_string(), "n must not be negative");
    assert!(error.downcast_ref::<ModelRetry>().is_none());
    assert!(error.source().is_none());
}

/// Count the letters of a word in a sentence.
///
/// # Arguments
/// * `sentence` - where to look
/// * `letters` - which letters count
/// * `word` - the word
#[golem::tool]
#[allow(clippy::needless_lifetimes)] // a named lifetime works as well as an elided one
async fn count<'a>(sentence: &'a str, letters: &[char], word: &Word) -> usize {
    sentence
        .split_whitespace()
        .filter(|candidate| *candidate == word.text)
        .flat_map(str::chars)
        .filter(|c| letters.contains(c))
        .count()
}

/// A word.
#[golem::output]
struct Word {
    text: String,
}

#[test]
fn borrowed_parameters_are_read_into_owned_values() {
    let definition = Tool::<()>::definition(&Count);
    assert_eq!(
        definition.parameters["properties"]["sentence"],
        json!({"type": "string", "description": "where to look"})
    );
    assert_eq!(
        definition.parameters["properties"]["letters"]["type"],
        "array"
    );
    assert_eq!(
        call(
            &Count,
            json!({"sentence": "a banana and a bandana", "letters": ["a", "n"], "word": {"text": "banana"}})
        )
        .expect("succeeds"),
        json!(5)
    );
}

/// Delete a file.
#[golem::tool(requires_approval)]
async fn delete_file(path: String) -> String {
    path
}

/// Read a file.
#[golem::tool(requires_approval = false)]
async fn read_file(path: String) -> String {
    path
}

#[test]
fn requires_approval_is_set_by_the_key() {
    assert!(Tool::<()>::requires_approval(&DeleteFile));
    assert!(!Tool::<()>::requires_approval(&ReadFile));
    assert!(!Tool::<()>::requires_approval(&Search));
}

/// The time now, in seconds.
#[golem::tool(repeatable)]
async fn clock() -> u64 {
    0
}

#[test]
fn repeatable_is_set_by_the_key() {
    assert!(Tool::<()>::repeatable(&Clock));
    assert!(!Tool::<()>::repeatable(&ReadFile));
}

/// A raw identifier, a borrow, `mut` and an optional parameter.
#[golem::tool]
async fn describe(r#type: &str, mut count: u32, note: Option<String>) -> String {
    count += 1;
    format!("{type} x{count} {}", note.unwrap_or_default(), type = r#type)
}

#[test]
fn raw_names_are_the_json_names_and_optional_parameters_may_be_absent() {
    assert_eq!(
        call(&Describe, json!({"type": "dice", "count": 1})).expect("succeeds"),
        json!("dice x2 ")
    );
    let error = call(&Describe, json!({"count": 1})).expect_err("type is required");
    assert_eq!(
        error.to_string(),
        "invalid arguments for tool `describe`: missing field `type` at line 1 column 11"
    );
    let error = call(&Describe, json!({"type": "a", "count": -1})).expect_err("negative");
    assert_eq!(
        error.to_string(),
        "invalid arguments for tool `describe`: at `count`: invalid value: integer `-1`, expected u32 at line 1 column 22"
    );
}

/// Parameters with `#[serde]` attributes keep serde's derive.
#[golem::tool]
async fn page(query: String, #[serde(default = "ten")] per_page: u32) -> String {
    format!("{query}/{per_page}")
}

fn ten() -> u32 {
    10
}

/// More parameters than golem's tuples read (12) take serde's derive too.
#[golem::tool]
#[allow(clippy::too_many_arguments)]
async fn many(
    a: u8,
    b: u8,
    c: u8,
    d: u8,
    e: u8,
    f: u8,
    g: u8,
    h: u8,
    i: u8,
    j: u8,
    k: u8,
    l: u8,
    m: Option<u8>,
) -> u32 {
    [a, b, c, d, e, f, g, h, i, j, k, l, m.unwrap_or(100)]
        .iter()
        .map(|n| u32::from(*n))
        .sum()
}

#[test]
fn serde_attributes_and_many_parameters_go_through_the_derive() {
    assert_eq!(
        call(&Page, json!({"query": "q"})).expect("succeeds"),
        json!("q/10")
    );
    let all: serde_json::Map<String, Value> = "abcdefghijkl"
        .chars()
        .map(|name| (name.to_string(), json!(1)))
        .collect();
    assert_eq!(
        call(&Many, Value::Object(all)).expect("succeeds"),
        json!(112)
    );
    let error = call(&Many, json!({"a": 1})).expect_err("missing fields");
    assert_eq!(
        error.to_string(),
        "invalid arguments for tool `many`: missing field `b` at line 1 column 7"
    );
}
