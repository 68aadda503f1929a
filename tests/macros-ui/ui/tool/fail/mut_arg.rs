#[golem::tool]
async fn push(items: &mut Vec<i64>, item: i64) -> usize {
    items.push(item);
    items.len()
}

fn main() {}
