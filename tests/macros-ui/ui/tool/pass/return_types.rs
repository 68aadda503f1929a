//! Every supported return type, told apart by type and not by name: plain `T`, `()`,
//! `Result<T, ModelRetry>`, `Result<T, E>` for a thiserror enum, `anyhow::Result<T>`,
//! `Result<T, Box<dyn Error + Send + Sync>>`, `Result<T, String>`, an alias of `Result`
//! (`Fallible<T>`), a plain struct named `...Result`, `impl Serialize`, `&'static str`.

use golem::ModelRetry;
use golem::tool::Tool;

#[golem::tool]
async fn plain(n: i64) -> i64 {
    n
}

#[golem::tool]
async fn unit(_n: i64) {}

#[golem::tool]
async fn retry(n: i64) -> Result<i64, ModelRetry> {
    Ok(n)
}

#[derive(Debug, thiserror::Error)]
enum LookupError {
    #[error("{0}")]
    Retry(#[from] ModelRetry),
    #[error("the database is down")]
    Down,
}

#[golem::tool]
async fn lookup(n: i64) -> Result<Vec<String>, LookupError> {
    match n {
        0 => Err(LookupError::Down),
        1 => Err(ModelRetry::new("n must be 2 or more").into()),
        _ => Ok(vec!["a".to_owned(); n as usize]),
    }
}

#[golem::tool]
async fn with_anyhow(n: i64) -> anyhow::Result<serde_json::Value> {
    anyhow::ensure!(n > 0, "n must be positive");
    Ok(serde_json::json!({ "n": n }))
}

#[golem::tool]
async fn boxed(n: i64) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
    Ok(n.to_string())
}

#[golem::tool]
async fn with_string_error(n: i64) -> Result<i64, String> {
    Ok(n)
}

type Fallible<T> = Result<T, ModelRetry>;

#[golem::tool]
async fn aliased(n: i64) -> Fallible<i64> {
    Ok(n)
}

#[derive(serde::Serialize)]
struct SearchResult {
    hits: Vec<String>,
}

#[golem::tool]
async fn search(query: String) -> SearchResult {
    SearchResult { hits: vec![query] }
}

#[golem::tool]
async fn opaque(n: i64) -> impl serde::Serialize {
    vec![n]
}

#[golem::tool]
async fn name() -> &'static str {
    "golem"
}

fn assert_tool<T: Tool<()>>(_: T) {}

fn main() {
    assert_tool(Plain);
    assert_tool(Unit);
    assert_tool(Retry);
    assert_tool(Lookup);
    assert_tool(WithAnyhow);
    assert_tool(Boxed);
    assert_tool(WithStringError);
    assert_tool(Aliased);
    assert_tool(Search);
    assert_tool(Opaque);
    assert_tool(Name);
}
