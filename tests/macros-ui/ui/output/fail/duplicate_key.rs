#[golem::output(validate = check, validate = check)]
struct Verdict {
    winner: String,
}

fn check(_: &Verdict) -> Result<(), golem::ModelRetry> {
    Ok(())
}

fn main() {}
