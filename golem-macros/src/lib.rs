//! Attribute macros for [golem](https://docs.rs/golem): `#[golem::tool]`, `#[golem::output]`
//! and `#[golem::args]`.
//!
//! Use them through the `golem` crate, which re-exports them; their documentation lives
//! there. Each entry point parses, validates and expands; on error it emits the compile
//! errors beside the user's item, so the rest of the crate still type-checks.

use proc_macro::TokenStream;

mod attr;
mod ctxt;
mod docs;
mod output;
mod tool;

#[doc = include_str!("../docs/tool.md")]
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    tool::expand(args.into(), item.into()).into()
}

#[doc = include_str!("../docs/output.md")]
#[proc_macro_attribute]
pub fn output(args: TokenStream, item: TokenStream) -> TokenStream {
    output::expand(args.into(), item.into()).into()
}

/// Emits the items `#[golem::tool]` hangs on its unit struct (not public API): inside an
/// `impl` block, where rustc drops the struct with its one error, they go with it.
#[doc(hidden)]
#[proc_macro_derive(ToolItems, attributes(golem_tool_items))]
pub fn tool_items(item: TokenStream) -> TokenStream {
    tool::carried_items(item.into()).into()
}

#[doc = include_str!("../docs/args.md")]
#[proc_macro_attribute]
pub fn args(args: TokenStream, item: TokenStream) -> TokenStream {
    output::expand_args(args.into(), item.into()).into()
}
