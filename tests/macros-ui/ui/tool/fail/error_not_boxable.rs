#[derive(Debug)]
struct LookupFailed;

#[golem::tool]
async fn lookup(n: i64) -> Result<i64, LookupFailed> {
    if n < 0 { Err(LookupFailed) } else { Ok(n) }
}

fn main() {}
