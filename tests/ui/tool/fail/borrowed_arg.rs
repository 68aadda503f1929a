#[golem::tool]
async fn shout(word: &str, letters: &[char]) -> String {
    format!("{word}{letters:?}")
}

fn main() {}
