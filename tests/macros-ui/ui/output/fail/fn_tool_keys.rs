/// Picks the winner.
#[golem::output(max_retries = 2, requires_approval, repeatable)]
async fn pick_winner(name: String) -> String {
    name
}

fn main() {}
