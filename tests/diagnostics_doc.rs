//! `docs/diagnostics.md` is generated from the trybuild cases: each section is a
//! `tests/macros-ui/ui/{tool,output}/fail/*.rs` case (as a `compile_fail` doctest of the guide) and
//! its committed `.stderr`. This test fails when the guide and the cases differ, or when a
//! case has no section; regenerate the guide with
//! `GOLEM_BLESS=1 cargo test -p golem-tests --test all diagnostics_doc` and review the diff.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const HEADER: &str = "\
# What the macros' compile errors look like

Every misuse of `#[golem::tool]`, `#[golem::output]` and `#[golem::args]` is a compile
error at the token to fix, saying what to write instead. Each section below is a trybuild
case under `tests/macros-ui/ui/{tool,output}/fail/`, and the error is its committed `.stderr`,
checked on stable by `cargo test --workspace` (test `macros_ui`). This guide is generated
from those files (test `diagnostics_doc` checks it is current), and each example is a
`compile_fail` doctest. After an intended change, regenerate the `.stderr` files with
`TRYBUILD=overwrite cargo test -p golem-macros-ui --test macros_ui`, review them, then this
guide with `GOLEM_BLESS=1 cargo test -p golem-tests --test all diagnostics_doc`.

Errors the macro finds itself (keys, names, the signature) are collected and reported
together, and the function is still emitted beside them, so the rest of the crate keeps
type-checking. Errors about types (parameters, return values, validators, `Send`) are
rustc's, pointed by the generated code at the parameter, the return type or the
function's name and worded by `#[diagnostic::on_unimplemented]` on golem's traits.
";

/// The sections of each macro, in order: (case file stem, title).
const TOOL: &[(&str, &str)] = &[
    ("not_async", "A tool that is not `async`"),
    ("self_receiver", "A `self` receiver"),
    ("in_impl_block", "A tool inside an `impl` block"),
    (
        "in_impl_block_with_error",
        "A tool inside an `impl` block, with another mistake",
    ),
    ("unknown_key", "An unknown key"),
    ("duplicate_key", "A duplicate key"),
    ("duplicate_flag", "A duplicate `requires_approval`"),
    ("negative_max_retries", "A negative `max_retries`"),
    (
        "max_retries_not_integer",
        "A `max_retries` that is not an integer",
    ),
    ("invalid_name", "A tool name providers would refuse"),
    ("destructuring", "A destructuring pattern in a parameter"),
    ("impl_trait_arg", "An `impl Trait` parameter"),
    ("borrowed_arg", "A borrow inside a parameter type"),
    ("mut_arg", "A `&mut` parameter"),
    (
        "arg_not_deserialize",
        "A parameter type with neither `Deserialize` nor `JsonSchema`",
    ),
    (
        "arg_not_json_schema",
        "A parameter type with `Deserialize` but no `JsonSchema`",
    ),
    (
        "return_not_serialize",
        "A return type that is not `Serialize`",
    ),
    ("error_not_boxable", "An error type that is not an error"),
    ("not_send", "A future that is not `Send`"),
    (
        "context_not_first",
        "`RunContext` that is not the first parameter",
    ),
    (
        "unknown_argument_doc",
        "An `# Arguments` item that names no parameter",
    ),
    (
        "unknown_argument_doc_forms",
        "The same in a `/** */` comment with a bold heading",
    ),
    ("generic", "A generic function"),
    (
        "not_a_fn",
        "`#[golem::tool]` on something else than a function",
    ),
    (
        "all_errors_at_once",
        "Several mistakes: every error in one build",
    ),
];

const OUTPUT: &[(&str, &str)] = &[
    ("union", "`#[golem::output]` on a union"),
    ("args_on_fn", "`#[golem::args]` on a function"),
    ("unknown_key", "An unknown key"),
    ("duplicate_key", "A duplicate key"),
    (
        "validator_signature",
        "A `validate` function with the wrong signature",
    ),
    (
        "field_not_deserialize",
        "A field type without `Deserialize`/`JsonSchema`",
    ),
    (
        "field_without_partial",
        "A field type with no partial form for streamed output",
    ),
    (
        "field_attr",
        "A field attribute other than `#[golem(whole)]`",
    ),
    ("args_validate_key", "`#[golem::args]` takes no `validate`"),
    ("fn_not_async", "An output function that is not `async`"),
    ("fn_no_return", "An output function that returns nothing"),
    ("fn_tool_keys", "Tool keys on an output function"),
    (
        "fn_error_not_boxable",
        "An output function's error type that is not an error",
    ),
    (
        "fn_wrong_output",
        "An output function of another output type",
    ),
];

/// What to write instead, for the cases whose error is rustc's own wording: (case file
/// stem, the text under its title).
const NOTES: &[(&str, &str)] = &[
    (
        "in_impl_block",
        "The macro sees only the function, not the `impl` around it; the struct it generates \
         cannot live there, and rustc drops it (and everything the macro hangs on it) with \
         this one error. A tool is a free `async fn`: move it out of the `impl` to module \
         level, and reach shared state through a first parameter `ctx: &RunContext<Deps>` \
         (`ctx.deps()`), where `Deps` is the agent's dependencies type.",
    ),
    (
        "in_impl_block_with_error",
        "Each mistake still gets its own error: the macro's, and rustc's for the place.",
    ),
];

fn ui_dir(kind: &str) -> PathBuf {
    [env!("CARGO_MANIFEST_DIR"), "macros-ui", "ui", kind, "fail"]
        .iter()
        .collect()
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", path.display()))
}

fn section(out: &mut String, kind: &str, stem: &str, title: &str) {
    let dir = ui_dir(kind);
    let source = read(&dir.join(format!("{stem}.rs")));
    let stderr = read(&dir.join(format!("{stem}.stderr")));
    out.push_str(&format!("\n### {title}\n"));
    if let Some((_, note)) = NOTES.iter().find(|(case, _)| *case == stem) {
        out.push_str(&format!("\n{note}\n"));
    }
    out.push_str(&format!(
        "\n```rust,compile_fail\n{}\n```\n\n```text\n{}\n```\n",
        source.trim_end(),
        stderr.trim_end()
    ));
}

fn generate() -> String {
    let mut out = HEADER.to_owned();
    for (kind, heading, sections) in [
        ("tool", "`#[golem::tool]`", TOOL),
        ("output", "`#[golem::output]` and `#[golem::args]`", OUTPUT),
    ] {
        out.push_str(&format!("\n## {heading}\n"));
        for (stem, title) in sections {
            section(&mut out, kind, stem, title);
        }
    }
    out
}

#[test]
fn every_fail_case_has_a_section() {
    for (kind, sections) in [("tool", TOOL), ("output", OUTPUT)] {
        let cases: BTreeSet<String> = std::fs::read_dir(ui_dir(kind))
            .expect("the ui folder")
            .filter_map(|entry| {
                let path = entry.expect("an entry").path();
                (path.extension()? == "rs").then(|| {
                    path.file_stem()
                        .expect("a name")
                        .to_string_lossy()
                        .into_owned()
                })
            })
            .collect();
        let listed: BTreeSet<String> = sections
            .iter()
            .map(|(stem, _)| (*stem).to_owned())
            .collect();
        assert_eq!(
            cases, listed,
            "the {kind} fail cases and the sections of docs/diagnostics.md differ"
        );
    }
}

#[test]
fn the_guide_is_generated_from_the_cases() {
    let path: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "docs", "diagnostics.md"]
        .iter()
        .collect();
    let generated = generate();
    if std::env::var_os("GOLEM_BLESS").is_some() {
        std::fs::write(&path, &generated).expect("writes the guide");
        return;
    }
    assert!(
        read(&path) == generated,
        "docs/diagnostics.md is not what the ui cases generate; run \
         `GOLEM_BLESS=1 cargo test -p golem-tests --test all diagnostics_doc` and review the diff"
    );
}
