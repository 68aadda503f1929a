use golem::model::function::FunctionModel;
use golem::model::ModelResponse;
use golem::Agent;

/// Scores the game.
#[golem::output]
async fn score(points: u32) -> u32 {
    points
}

fn main() {
    let model = FunctionModel::new(|_, _| ModelResponse::text("ok"));
    let _ = Agent::<(), String>::builder(model).output_fn(Score).build();
}
