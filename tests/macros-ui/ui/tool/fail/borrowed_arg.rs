use std::borrow::Cow;

#[golem::tool]
async fn shout<'a>(word: Option<&str>, suffix: Cow<'a, str>) -> String {
    format!("{}{suffix}", word.unwrap_or_default())
}

fn main() {}
