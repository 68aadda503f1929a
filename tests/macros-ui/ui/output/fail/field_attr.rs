#[golem::output]
struct Verdict {
    #[golem(hole)]
    winner: String,
}

fn main() {}
