#[golem::tool(max_retries = 2, name = "roll", max_retries = 3)]
async fn roll_dice(n: i64) -> i64 {
    n * 3
}

fn main() {}
