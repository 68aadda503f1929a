#[golem::tool(name = "roll dice!")]
async fn roll_dice(n: i64) -> i64 {
    n * 3
}

fn main() {}
