#[golem::tool]
async fn shout(word: impl Into<String>) -> String {
    word.into().to_uppercase()
}

fn main() {}
