//! The user's view of the macros: what compiles, and the compile errors of misuse, each
//! with its committed `.stderr`. Regenerate them with `TRYBUILD=overwrite` and review.

#[test]
fn tool() {
    let cases = trybuild::TestCases::new();
    cases.pass("ui/tool/pass/*.rs");
    cases.compile_fail("ui/tool/fail/*.rs");
}

#[test]
fn output() {
    let cases = trybuild::TestCases::new();
    cases.pass("ui/output/pass/*.rs");
    cases.compile_fail("ui/output/fail/*.rs");
}
