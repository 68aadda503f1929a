#[golem::tool]
struct RollDice {
    n: i64,
}

fn main() {}
