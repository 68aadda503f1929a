fn check(_: &Args) -> Result<(), golem::ModelRetry> {
    Ok(())
}

#[golem::args(validate = check)]
struct Args {
    query: String,
}

fn main() {}
