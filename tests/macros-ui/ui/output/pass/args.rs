//! `#[golem::args]` derives `Deserialize` and `JsonSchema` for a `FunctionTool`'s
//! arguments (structs and enums, with serde and schemars attributes), and no `Output`.

use golem::RunContext;
use golem::tool::{FunctionTool, Tool};

/// How to order results.
#[golem::args]
#[serde(rename_all = "snake_case")]
enum Order {
    Newest,
    Oldest,
}

/// What to search for.
#[golem::args]
struct SearchArgs {
    /// The query.
    query: String,
    /// At most this many.
    #[schemars(range(max = 50))]
    #[serde(default)]
    limit: u32,
    order: Option<Order>,
}

fn main() {
    let search = FunctionTool::new("search", |_ctx: RunContext<()>, args: SearchArgs| async move {
        let _ = args.order;
        Ok::<_, golem::ModelRetry>(vec![args.query; args.limit as usize])
    });
    let definition = Tool::<()>::definition(&search);
    assert_eq!(definition.parameters["properties"]["limit"]["maximum"], 50);
    fn assert_schema<T: golem::schema::JsonSchema>() {}
    assert_schema::<Order>();
}
