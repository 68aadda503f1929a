//! The per-call cost of a tool's argument handling: `parse_args` alone, and
//! `ArgsSchema::parse` (the schema check, then `parse_args`), which enforces the schema only
//! when built with `--features schema-validation` (docs/benchmarks.md).

use std::time::Duration;

use criterion::Criterion;
use golem::tool::{ArgsSchema, ToolDefinition, parse_args};

/// Search the catalogue.
#[golem::args]
struct SearchArgs {
    #[schemars(length(min = 1, max = 20))]
    query: String,
    #[schemars(range(min = 1, max = 10))]
    limit: u8,
    tags: Vec<String>,
    sort: Option<String>,
}

const RAW: &str = r#"{"query": "rust", "limit": 3, "tags": ["a", "b"], "sort": "newest"}"#;

fn main() {
    let definition = ToolDefinition::for_args::<SearchArgs>("search", "Search.");
    let schema = ArgsSchema::new(&definition.parameters);
    let checked: SearchArgs = schema.parse("search", RAW).expect("valid arguments");
    assert_eq!((checked.query.len(), checked.limit), (4, 3));
    assert_eq!(
        (checked.tags.len(), checked.sort.as_deref()),
        (2, Some("newest"))
    );

    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let mut group = criterion.benchmark_group("tool_args");
    group.bench_function("parse_args", |b| {
        b.iter(|| parse_args::<SearchArgs>("search", RAW).expect("valid"));
    });
    let name = if schema.is_enforced() {
        "checked_and_parsed"
    } else {
        "parsed_without_the_feature"
    };
    group.bench_function(name, |b| {
        b.iter(|| schema.parse::<SearchArgs>("search", RAW).expect("valid"));
    });
    group.finish();
    criterion.final_summary();
}
