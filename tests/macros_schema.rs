//! Snapshots of the schemas the macros generate, compared as JSON values with the
//! committed files in `macros_snapshots/`. After an intended change, regenerate them with
//! `GOLEM_BLESS=1 cargo test -p golem-tests --test all macros_schema` and review the diff.

use std::path::PathBuf;

use golem::output::{Output, OutputKind};
use golem::tool::Tool;
use golem::{ModelRetry, RunContext};
use serde_json::{Value, json};

#[track_caller]
fn assert_snapshot(name: &str, actual: &Value) {
    let path: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "macros_snapshots",
        &format!("{name}.json"),
    ]
    .iter()
    .collect();
    if std::env::var_os("GOLEM_BLESS").is_some() {
        let text = serde_json::to_string_pretty(actual).expect("serializes") + "\n";
        std::fs::write(&path, text).expect("writes the snapshot");
        return;
    }
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("no snapshot {}: {error}", path.display()));
    let expected: Value = serde_json::from_str(&text).expect("the snapshot is JSON");
    assert_eq!(
        actual,
        &expected,
        "schema of `{name}` differs from {}; actual:\n{}",
        path.display(),
        serde_json::to_string_pretty(actual).expect("serializes")
    );
}

fn tool_snapshot<D>(tool: &impl Tool<D>) -> Value {
    serde_json::to_value(tool.definition()).expect("a definition is JSON")
}

fn output_snapshot<O: Output>() -> Value {
    match O::kind() {
        OutputKind::Structured(structured) => {
            json!({"description": structured.description, "schema": structured.schema})
        }
        OutputKind::Text => panic!("not structured"),
    }
}

struct Game;

/// Roll `n` six-sided dice and return their total.
///
/// The dice are fair.
///
/// # Arguments
/// * `n` - how many dice to roll,
///   between 1 and 10
/// * `label` - a name for the roll
#[golem::tool(max_retries = 2)]
async fn roll_dice(
    _ctx: &RunContext<Game>,
    #[schemars(range(min = 1, max = 10))] n: u8,
    label: Option<String>,
) -> Result<u32, ModelRetry> {
    let _ = label;
    Ok(u32::from(n) * 3)
}

/// How to order results.
#[golem::output]
#[serde(rename_all = "snake_case")]
enum Sort {
    /// Best match first.
    Relevance,
    /// Newest first.
    Newest,
}

/// Narrows a search.
#[golem::output]
struct Filters {
    /// Only items by this author.
    author: Option<String>,
    /// Earliest year, inclusive.
    #[schemars(range(min = 1900))]
    since: Option<i32>,
}

/// Search the catalogue.
///
/// # Arguments
/// * `query` - what to look for
/// * `tags` - every result has all of these
#[golem::tool(name = "catalogue-search", struct_name = Search)]
async fn search(
    query: String,
    tags: Vec<String>,
    filters: Option<Filters>,
    sort: Sort,
    /// At most this many results (the parameter's own doc comment).
    #[schemars(range(max = 50))]
    #[serde(default)]
    limit: u32,
    price: f64,
) -> Vec<String> {
    let _ = (filters, sort, limit, price);
    tags.into_iter()
        .map(|tag| format!("{query}:{tag}"))
        .collect()
}

/// Check that the service is up.
#[golem::tool]
async fn ping() -> &'static str {
    "pong"
}

/// A player's result.
#[golem::output]
struct Score {
    /// The player's name.
    player: String,
    /// Points, 0 to 100.
    #[schemars(range(max = 100))]
    points: u32,
}

/// The verdict on a game.
#[golem::output]
struct Verdict {
    /// Who won, if anyone.
    winner: Option<String>,
    /// Every player's score, best first.
    scores: Vec<Score>,
    /// How the game ended.
    #[serde(rename = "outcome")]
    ending: Ending,
    /// Remarks for the players.
    #[serde(default)]
    notes: Vec<String>,
}

/// How a game ended.
#[golem::output]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Ending {
    /// Someone won by `margin` points.
    Win { margin: u32 },
    /// Nobody won.
    Draw,
    /// The game was stopped.
    Abandoned { reason: String },
}

/// Search the catalogue by keyword.
///
/// ```
/// # async fn demo() {
/// # // a hidden line starting with `#` is not a heading
/// let hits = search_docs("rust".into(), None).await;
/// # }
/// ```
///
/// Results come back best first.
///
/// # Arguments
/// * `query` - what to look for
/// * `limit` - at most this many results
///
/// # Examples
///
/// ```no_run
/// # let _ = 1;
/// ```
#[golem::tool]
async fn search_docs(query: String, limit: Option<u32>) -> Vec<String> {
    let _ = limit;
    vec![query]
}

/// Sort the rows.
///
/// ## Arguments
///
/// - order: how to sort them:
///   - `asc`: smallest first
///   - `desc`: largest first
/// - column: the column to sort by,
///   counted from 0
#[golem::tool]
async fn sort_rows(order: String, column: u32) -> String {
    format!("{order} {column}")
}

/**
 * Look up a city's weather.
 *
 * # Arguments
 * * `city` - the city's name
 * * `days` - how many days ahead
 */
#[golem::tool]
async fn weather(city: String, days: u8) -> String {
    format!("{city} {days}")
}

/// Convert an amount between [`currencies`](https://www.iso.org/iso-4217-currency-codes.html).
///
/// **Arguments**
///
/// * amount — how much to convert
/// * from — the ISO code converted from
/// * `to` – the ISO code converted to
///
/// **Returns**
///
/// * `rate` - not a parameter: the returned rate
#[golem::tool]
async fn convert(amount: f64, from: String, to: String) -> String {
    format!("{amount} {from} {to}")
}

#[test]
fn doc_with_a_code_fence_and_hidden_lines() {
    assert_snapshot("doc_code_fence", &tool_snapshot::<()>(&SearchDocs));
}

#[test]
fn doc_with_nested_bullets_under_an_argument() {
    assert_snapshot("doc_nested_bullets", &tool_snapshot::<()>(&SortRows));
}

#[test]
fn doc_as_a_block_comment() {
    assert_snapshot("doc_block_comment", &tool_snapshot::<()>(&Weather));
}

#[test]
fn doc_with_a_bold_arguments_heading() {
    assert_snapshot("doc_bold_heading", &tool_snapshot::<()>(&Convert));
}

#[test]
fn tool_with_context_constraints_and_argument_docs() {
    assert_snapshot("tool_roll_dice", &tool_snapshot(&RollDice));
}

#[test]
fn tool_with_nested_struct_enum_option_vec_and_renames() {
    assert_snapshot("tool_search", &tool_snapshot::<()>(&Search));
}

#[test]
fn tool_without_parameters() {
    assert_snapshot("tool_ping", &tool_snapshot::<()>(&Ping));
}

#[test]
fn output_struct_with_nested_types() {
    assert_snapshot("output_verdict", &output_snapshot::<Verdict>());
}

#[test]
fn output_internally_tagged_enum() {
    assert_snapshot("output_ending", &output_snapshot::<Ending>());
}

#[test]
fn definitions_are_built_once() {
    let first = Tool::<()>::definition(&Search);
    let second = Tool::<()>::definition(&Search);
    assert_eq!(first, second);
}
