//! The code `#[golem::output]` generates.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::ast::Output;
use super::partial;
use super::valid::Checked;

/// The derives of `Serialize`, `Deserialize` and `JsonSchema` through golem's private paths, the item as
/// written, and the `Output` impl inside `const _: () = { ... };`.
pub(crate) fn output(output: &Output, checked: &Checked) -> TokenStream {
    let krate = checked.krate.tokens();
    let derives = derives(output, checked, true);

    let item = &output.item;
    let ident = &output.ident;
    let (impl_generics, ty_generics, where_clause) = output.generics.split_for_impl();
    let bounds = (!output.generics.params.is_empty()).then(|| {
        let predicates = where_clause
            .into_iter()
            .flat_map(|clause| clause.predicates.iter());
        quote! {
            where
                #(#predicates,)*
                Self: #krate::__private::serde::de::DeserializeOwned
                    + #krate::__private::schemars::JsonSchema
                    + #krate::output::PartialValue
                    + ::core::marker::Send
                    + 'static,
        }
    });
    let where_clause = match bounds {
        Some(bounds) => bounds,
        None => quote!(#where_clause),
    };
    let validate = checked.validate.as_ref().map(|path| {
        quote_spanned! {path.span()=>
            #krate::__private::OutputValidator::<Self>::validate(&#path, &__golem_output)?;
        }
    });

    let (serde_crate, _) = checked.krate.derive_crate_attrs();
    // An output is always `Serialize` (see `derives`), and so is its twin.
    let twin = partial::twin(&output.source, krate, &serde_crate, true);

    quote! {
        #derives
        #item
        #twin

        const _: () = {
            impl #impl_generics #krate::output::Output for #ident #ty_generics #where_clause {
                type Partial = <Self as #krate::output::PartialValue>::Partial;

                fn kind() -> #krate::output::OutputKind {
                    #krate::output::OutputKind::Structured(
                        #krate::output::StructuredOutput::of::<Self>(),
                    )
                }

                fn decode(
                    __golem_raw: &str,
                ) -> ::core::result::Result<Self, #krate::BoxError> {
                    let __golem_output: Self = #krate::output::decode_json(__golem_raw)?;
                    #validate
                    ::core::result::Result::Ok(__golem_output)
                }

                fn decode_partial(
                    __golem_json: #krate::__private::serde_json::Value,
                ) -> ::core::option::Option<Self::Partial> {
                    <Self as #krate::output::PartialValue>::read_partial(__golem_json)
                }
            }
        };
    }
}

/// The derives of `Deserialize` and `JsonSchema` through golem's private paths (and of
/// `Serialize` with `serialize`), each left out when the item derives it itself.
fn derives(output: &Output, checked: &Checked, serialize: bool) -> TokenStream {
    let krate = checked.krate.tokens();
    let (serde_crate, schemars_crate) = checked.krate.derive_crate_attrs();
    let serde_derives: Vec<_> = [
        (!serialize || output.derives_serialize, quote!(Serialize)),
        (output.derives_deserialize, quote!(Deserialize)),
    ]
    .into_iter()
    .filter(|(derived, _)| !derived)
    .map(|(_, name)| quote!(#krate::__private::serde::#name))
    .collect();
    let serde = (!serde_derives.is_empty()).then(|| {
        quote! {
            #[derive(#(#serde_derives),*)]
            #serde_crate
        }
    });
    let json_schema = (!output.derives_json_schema).then(|| {
        quote! {
            #[derive(#krate::__private::schemars::JsonSchema)]
            #schemars_crate
        }
    });
    quote!(#serde #json_schema)
}

/// `#[golem::args]`: the derives and the item, nothing else.
pub(crate) fn args(output: &Output, checked: &Checked) -> TokenStream {
    let derives = derives(output, checked, false);
    let item = &output.item;
    let (serde_crate, _) = checked.krate.derive_crate_attrs();
    let twin = partial::twin(
        &output.source,
        checked.krate.tokens(),
        &serde_crate,
        output.derives_serialize,
    );
    quote!(#derives #item #twin)
}

/// The item as written and the errors.
pub(crate) fn fallback(output: &Output, error: syn::Error) -> TokenStream {
    let error = error.into_compile_error();
    let item = &output.item;
    quote!(#error #item)
}
