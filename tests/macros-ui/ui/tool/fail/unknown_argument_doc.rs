/// Roll dice.
///
/// # Arguments
/// * `n` - how many dice
/// * `sides` - faces per die
#[golem::tool]
async fn roll_dice(n: i64) -> i64 {
    n * 3
}

fn main() {}
