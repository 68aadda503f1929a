//! `#[golem::output]`: parse the attribute and the struct or enum into an
//! [`ast::Output`], check it, expand it into the derives and the `Output` impl.

mod ast;
mod attr;
mod expand;
mod partial;
mod valid;

use proc_macro2::TokenStream;

/// Expands `#[golem::output(args)] item`; errors come out beside the user's item. On a
/// function, it is an output function, expanded as a tool is.
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    if let Ok(syn::Item::Fn(func)) = syn::parse2::<syn::Item>(item.clone()) {
        return crate::tool::expand_output_fn(args, func);
    }
    expand_kind(args, item, attr::Kind::Output)
}

/// Expands `#[golem::args(args)] item`: the derives of an output, without `impl Output`.
pub(crate) fn expand_args(args: TokenStream, item: TokenStream) -> TokenStream {
    expand_kind(args, item, attr::Kind::Args)
}

fn expand_kind(args: TokenStream, item: TokenStream, kind: attr::Kind) -> TokenStream {
    let attr = syn::parse::Parser::parse2(
        |input: syn::parse::ParseStream<'_>| attr::OutputAttr::parse_for(input, kind),
        args,
    );
    let output = match ast::Output::from_syn(attr, item.clone(), kind) {
        Ok(output) => output,
        Err(error) => {
            let error = error.into_compile_error();
            return quote::quote!(#error #item);
        }
    };
    let (checked, errors) = valid::check(&output);
    match errors.finish() {
        Ok(()) if kind == attr::Kind::Args => expand::args(&output, &checked),
        Ok(()) => expand::output(&output, &checked),
        Err(error) => expand::fallback(&output, error),
    }
}
