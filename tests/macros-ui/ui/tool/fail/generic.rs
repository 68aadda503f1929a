#[golem::tool]
async fn echo<T: Clone>(value: T) -> T {
    value
}

fn main() {}
