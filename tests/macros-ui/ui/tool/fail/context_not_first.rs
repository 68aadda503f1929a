use golem::RunContext;

#[golem::tool]
async fn roll_dice(n: i64, ctx: &RunContext<u64>) -> i64 {
    n * *ctx.deps() as i64
}

fn main() {}
