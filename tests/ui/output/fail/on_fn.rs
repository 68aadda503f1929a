#[golem::output]
async fn verdict() -> String {
    String::new()
}

fn main() {}
