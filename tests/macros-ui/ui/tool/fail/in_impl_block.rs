struct Dice;

impl Dice {
    #[golem::tool]
    async fn roll(n: i64) -> i64 {
        n * 3
    }
}

fn main() {}
