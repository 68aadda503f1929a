#[golem::tool(retries = 2)]
async fn roll_dice(n: i64) -> i64 {
    n * 3
}

fn main() {}
