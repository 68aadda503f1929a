#[golem::output(validator = check)]
struct Verdict {
    winner: String,
}

fn main() {}
