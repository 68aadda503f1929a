struct Roll(i64);

#[golem::tool]
async fn roll_dice(n: i64) -> Roll {
    Roll(n * 3)
}

fn main() {}
