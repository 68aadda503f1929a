//! Every supported return type: plain `T`, `()`, `Result<T, ModelRetry>`, `Result<T, E>`
//! for a thiserror enum, `anyhow::Result<T>`, `Result<T, Box<dyn Error + Send + Sync>>`.

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

fn assert_tool<T: Tool<()>>(_: T) {}

fn main() {
    assert_tool(Plain);
    assert_tool(Unit);
    assert_tool(Retry);
    assert_tool(Lookup);
    assert_tool(WithAnyhow);
    assert_tool(Boxed);
}
