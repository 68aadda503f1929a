//! The arguments of `#[golem::tool(...)]`, typed and with their spans.

use syn::parse::{Parse, ParseStream};
use syn::{Expr, Ident, LitBool, LitStr, Path, Token};

use crate::attr::{Key, parse_keys, unknown_key};
use crate::ctxt::Errors;

mod kw {
    syn::custom_keyword!(name);
    syn::custom_keyword!(description);
    syn::custom_keyword!(max_retries);
    syn::custom_keyword!(struct_name);
    syn::custom_keyword!(requires_approval);
    syn::custom_keyword!(repeatable);
}

const KEYS: &[&str] = &[
    "name",
    "description",
    "max_retries",
    "requires_approval",
    "repeatable",
    "struct_name",
    "crate",
];

/// `#[golem::tool(name = "...", description = "...", max_retries = N, requires_approval,
/// repeatable, struct_name = Ident, crate = path)]`.
pub(crate) struct ToolAttr {
    /// The tool name shown to the model; the function's name by default.
    pub(crate) name: Key<LitStr>,
    /// The description shown to the model; the doc comment by default.
    pub(crate) description: Key<LitStr>,
    /// The tool's retry budget; an expression so that `-1` can be reported as negative.
    pub(crate) max_retries: Key<Expr>,
    /// Whether each call waits for the caller's approval (`requires_approval`, or
    /// `requires_approval = true|false`).
    pub(crate) requires_approval: Key<LitBool>,
    /// Whether a call with the same arguments as an earlier one still runs (`repeatable`, or
    /// `repeatable = true|false`).
    pub(crate) repeatable: Key<LitBool>,
    /// The generated struct's name; the function's name in PascalCase by default.
    pub(crate) struct_name: Key<Ident>,
    /// The path of the `golem` crate, for a renamed dependency.
    pub(crate) krate: Key<Path>,
    /// Unknown and duplicate keys.
    pub(crate) errors: Errors,
}

impl Default for ToolAttr {
    fn default() -> Self {
        ToolAttr {
            name: Key::new("name"),
            description: Key::new("description"),
            max_retries: Key::new("max_retries"),
            requires_approval: Key::new("requires_approval"),
            repeatable: Key::new("repeatable"),
            struct_name: Key::new("struct_name"),
            krate: Key::new("crate"),
            errors: Errors::default(),
        }
    }
}

impl Parse for ToolAttr {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let mut attr = ToolAttr::default();
        parse_keys(input, |input| {
            let errors = &mut attr.errors;
            let lookahead = input.lookahead1();
            if lookahead.peek(kw::name) {
                attr.name.parse::<kw::name>(input, errors)
            } else if lookahead.peek(kw::description) {
                attr.description.parse::<kw::description>(input, errors)
            } else if lookahead.peek(kw::max_retries) {
                attr.max_retries.parse::<kw::max_retries>(input, errors)
            } else if lookahead.peek(kw::requires_approval) {
                attr.requires_approval
                    .parse_flag::<kw::requires_approval>(input, errors)
            } else if lookahead.peek(kw::repeatable) {
                attr.repeatable.parse_flag::<kw::repeatable>(input, errors)
            } else if lookahead.peek(kw::struct_name) {
                attr.struct_name.parse::<kw::struct_name>(input, errors)
            } else if lookahead.peek(Token![crate]) {
                attr.krate.parse::<Token![crate]>(input, errors)
            } else if input.peek(Ident) {
                unknown_key(input, KEYS, errors)
            } else {
                Err(lookahead.error())
            }
        })?;
        Ok(attr)
    }
}
