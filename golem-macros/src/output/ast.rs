//! The typed model of an output: the struct or enum and its derives.

use proc_macro2::TokenStream;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, Generics, Ident, Item, Path, Token};

use super::attr::{Kind, OutputAttr};
use super::partial;
use crate::ctxt::Errors;

/// `#[golem::output]` and the type it is on.
pub(crate) struct Output {
    /// The attribute's keys, or why they don't parse.
    pub(crate) attr: syn::Result<OutputAttr>,
    /// The struct or enum, as written, less the `#[golem(...)]` attributes of its fields.
    pub(crate) item: Item,
    /// The struct or enum exactly as written, for its partial twin.
    pub(crate) source: Item,
    /// What is wrong with the `#[golem(...)]` attributes of its fields.
    pub(crate) field_errors: Errors,
    pub(crate) ident: Ident,
    pub(crate) generics: Generics,
    /// Whether the item already derives `Serialize` / `Deserialize` / `JsonSchema` itself.
    pub(crate) derives_serialize: bool,
    pub(crate) derives_deserialize: bool,
    pub(crate) derives_json_schema: bool,
}

impl Output {
    pub(crate) fn from_syn(
        attr: syn::Result<OutputAttr>,
        item: TokenStream,
        kind: Kind,
    ) -> syn::Result<Self> {
        let source = syn::parse2::<Item>(item)?;
        let mut item = source.clone();
        let mut field_errors = Errors::default();
        partial::strip_field_attrs(&mut item, &mut field_errors);
        let (ident, generics, attrs) = match &item {
            Item::Struct(item) => (&item.ident, &item.generics, &item.attrs),
            Item::Enum(item) => (&item.ident, &item.generics, &item.attrs),
            other => return Err(unsupported(other, kind)),
        };
        let derived = derived_traits(attrs);
        let derives = |name: &str| derived.iter().any(|path| path.is_ident(name));
        Ok(Output {
            derives_serialize: derives("Serialize"),
            derives_deserialize: derives("Deserialize"),
            derives_json_schema: derives("JsonSchema"),
            ident: ident.clone(),
            generics: generics.clone(),
            attr,
            item,
            source,
            field_errors,
        })
    }
}

fn unsupported(item: &Item, kind: Kind) -> syn::Error {
    let attribute = kind.attribute();
    let (keyword, what) = match item {
        Item::Union(item) => (
            item.union_token.span,
            format!(
                "`{attribute}` goes on a struct or an enum, not a union: a union cannot be decoded from JSON safely; use an enum"
            ),
        ),
        Item::Fn(item) => (
            item.sig.fn_token.span,
            format!(
                "`{attribute}` goes on a struct or an enum; to make a function a tool, use `#[golem::tool]`"
            ),
        ),
        other => (
            other.span(),
            format!("`{attribute}` goes on a struct or an enum"),
        ),
    };
    syn::Error::new(keyword, what)
}

/// The last segments of the paths in `#[derive(...)]`: `serde::Deserialize` → `Deserialize`.
fn derived_traits(attrs: &[Attribute]) -> Vec<Path> {
    attrs
        .iter()
        .filter(|attr| attr.path().is_ident("derive"))
        .filter_map(|attr| {
            attr.parse_args_with(Punctuated::<Path, Token![,]>::parse_terminated)
                .ok()
        })
        .flatten()
        .filter_map(|path| {
            path.segments
                .last()
                .map(|segment| segment.ident.clone().into())
        })
        .collect()
}
