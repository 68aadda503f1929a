#[derive(Debug)]
struct NoWinner;

/// Picks the winner.
#[golem::output]
async fn pick_winner(name: String) -> Result<String, NoWinner> {
    if name.is_empty() { Err(NoWinner) } else { Ok(name) }
}

fn main() {}
