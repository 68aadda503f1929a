struct Player {
    name: String,
}

#[golem::output]
struct Verdict {
    winner: Player,
}

fn main() {}
