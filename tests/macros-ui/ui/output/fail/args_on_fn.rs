#[golem::args]
fn verdict() -> String {
    String::new()
}

fn main() {}
