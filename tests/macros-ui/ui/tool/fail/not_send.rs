use std::rc::Rc;

async fn tick() {}

#[golem::tool]
async fn counter(n: i64) -> i64 {
    let shared = Rc::new(n);
    tick().await;
    *shared
}

fn main() {}
