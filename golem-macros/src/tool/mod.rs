//! `#[golem::tool]`: parse the attribute and the `async fn` into an [`ast::Tool`], check
//! it, expand it into the unit struct and its `Tool` impl. `#[golem::output]` on an
//! `async fn` goes the same way, into an `OutputFunction` impl.

mod ast;
mod attr;
mod expand;
mod valid;

use proc_macro2::TokenStream;

pub(crate) use expand::carried_items;

/// What the function becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A tool, `#[golem::tool]`.
    Tool,
    /// An output function, `#[golem::output]` on an `async fn`.
    OutputFn,
}

impl Kind {
    /// What the errors call it.
    pub(crate) fn noun(self) -> &'static str {
        match self {
            Kind::Tool => "golem tool",
            Kind::OutputFn => "golem output function",
        }
    }

    /// What the errors call it, short.
    pub(crate) fn short(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::OutputFn => "output function",
        }
    }

    /// The attribute's name.
    pub(crate) fn attr(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::OutputFn => "output",
        }
    }
}

/// Expands `#[golem::tool(args)] item`; errors come out beside the user's function.
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let func = match ast::parse_item(item.clone()) {
        Ok(func) => func,
        Err(error) => {
            let error = error.into_compile_error();
            return quote::quote!(#error #item);
        }
    };
    expand_fn(args, func, Kind::Tool)
}

/// Expands `#[golem::output(args)]` on the function `func`.
pub(crate) fn expand_output_fn(args: TokenStream, func: syn::ItemFn) -> TokenStream {
    expand_fn(args, func, Kind::OutputFn)
}

fn expand_fn(args: TokenStream, func: syn::ItemFn, kind: Kind) -> TokenStream {
    let tool = ast::Tool::from_syn(syn::parse2(args), func);
    let (checked, errors) = valid::check(&tool, kind);
    match (errors.finish(), kind) {
        (Ok(()), Kind::Tool) => expand::tool(&tool, &checked),
        (Ok(()), Kind::OutputFn) => expand::output_fn(&tool, &checked),
        (Err(error), _) => expand::fallback(&tool, &checked, error, kind),
    }
}
