//! `#[golem::tool]`: parse the attribute and the `async fn` into an [`ast::Tool`], check
//! it, expand it into the unit struct and its `Tool` impl.

mod ast;
mod attr;
mod expand;
mod valid;

use proc_macro2::TokenStream;

pub(crate) use expand::carried_items;

/// Expands `#[golem::tool(args)] item`; errors come out beside the user's function.
pub(crate) fn expand(args: TokenStream, item: TokenStream) -> TokenStream {
    let func = match ast::parse_item(item.clone()) {
        Ok(func) => func,
        Err(error) => {
            let error = error.into_compile_error();
            return quote::quote!(#error #item);
        }
    };
    let tool = ast::Tool::from_syn(syn::parse2(args), func);
    let (checked, errors) = valid::check(&tool);
    match errors.finish() {
        Ok(()) => expand::tool(&tool, &checked),
        Err(error) => expand::fallback(&tool, &checked, error),
    }
}
