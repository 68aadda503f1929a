#[golem::tool(max_retries = -1, colour = "blue", name = "")]
fn roll_dice((n, _): (i64, i64)) -> i64 {
    n * 3
}

fn main() {}
