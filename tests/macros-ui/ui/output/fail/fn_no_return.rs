/// Picks the winner.
#[golem::output]
async fn pick_winner(name: String) {
    let _ = name;
}

fn main() {}
