//! `#[golem::output]` on an `async fn`: with and without a context, fallible or not,
//! borrowed arguments, an `anyhow::Result`, renamed; each one an `OutputFunction` of the
//! agent's output type.

use golem::output::OutputFunction;
use golem::{ModelRetry, RunContext};

/// A verdict.
#[golem::output]
#[derive(Debug)]
struct Verdict {
    winner: String,
}

/// Names the winner.
///
/// # Arguments
/// * `winner` - Who won.
#[golem::output]
async fn name_winner(ctx: &RunContext<u32>, winner: &str) -> Result<Verdict, ModelRetry> {
    if *ctx.deps() == 0 {
        return Err(ModelRetry::new("no game was played"));
    }
    Ok(Verdict {
        winner: winner.to_owned(),
    })
}

/// A draw.
#[golem::output(name = "draw", struct_name = Draw)]
async fn no_winner() -> Verdict {
    Verdict {
        winner: String::new(),
    }
}

/// A verdict through anyhow.
#[golem::output]
async fn checked(winner: String) -> anyhow::Result<Verdict> {
    anyhow::ensure!(!winner.is_empty(), "empty");
    Ok(Verdict { winner })
}

fn assert_output_fn<Deps, O, F: OutputFunction<Deps, O>>(_: F) {}

fn main() {
    assert_output_fn::<u32, Verdict, _>(NameWinner);
    assert_output_fn::<(), Verdict, _>(Draw);
    assert_output_fn::<u32, Verdict, _>(Checked);
    assert_eq!(OutputFunction::<(), Verdict>::definition(&Draw).name, "draw");
}
