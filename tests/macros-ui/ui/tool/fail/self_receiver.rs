struct Dice;

impl Dice {
    #[golem::tool]
    async fn roll(&self, n: i64) -> i64 {
        n * 3
    }
}

fn main() {}
