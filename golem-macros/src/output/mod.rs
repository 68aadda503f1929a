//! `#[golem::output]`: parse the attribute and the struct or enum into an
//! [`ast::Output`], check it, expand it into the derives and the `Output` impl.

mod ast;
mod attr;
mod expand;
mod valid;

use proc_macro2::TokenStream;

/// Expands `#[golem::output(args)] item`; errors come out beside the user's item.
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let output = match ast::Output::from_syn(syn::parse2(args), item.clone()) {
        Ok(output) => output,
        Err(error) => {
            let error = error.into_compile_error();
            return quote::quote!(#error #item);
        }
    };
    let (checked, errors) = valid::check(&output);
    match errors.finish() {
        Ok(()) => expand::output(&output, &checked),
        Err(error) => expand::fallback(&output, error),
    }
}
