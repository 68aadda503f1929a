#[golem::output(validate = check)]
struct Verdict {
    winner: String,
}

fn check(verdict: Verdict) -> bool {
    !verdict.winner.is_empty()
}

fn main() {}
