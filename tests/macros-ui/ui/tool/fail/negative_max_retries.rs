#[golem::tool(max_retries = -1)]
async fn roll_dice(n: i64) -> i64 {
    n * 3
}

fn main() {}
