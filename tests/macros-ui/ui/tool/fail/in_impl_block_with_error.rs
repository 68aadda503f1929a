struct Dice;

impl Dice {
    #[golem::tool(max_retries = -1)]
    async fn roll(n: i64) -> i64 {
        n * 3
    }
}

fn main() {}
