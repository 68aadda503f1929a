/// Picks the winner.
#[golem::output]
fn pick_winner(name: String) -> String {
    name
}

fn main() {}
