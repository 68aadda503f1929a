//! Pieces shared by the attribute parsers: keys that may appear once, unknown keys, and the
//! path of the `golem` crate.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::spanned::Spanned;
use syn::{Ident, Token};

use crate::ctxt::Errors;

/// One `key = value` of an attribute, with the span of the key so later errors can point
/// at it. A second occurrence is an error, whatever the key.
pub(crate) struct Key<T> {
    name: &'static str,
    value: Option<(Span, T)>,
}

impl<T> Key<T> {
    pub(crate) fn new(name: &'static str) -> Self {
        Key { name, value: None }
    }

    /// Parses `<keyword> = <value>` and records it, or a duplicate-key error.
    pub(crate) fn parse<K>(
        &mut self,
        input: ParseStream<'_>,
        errors: &mut Errors,
    ) -> syn::Result<()>
    where
        K: Parse + Spanned,
        T: Parse,
    {
        let key: K = input.parse()?;
        input.parse::<Token![=]>()?;
        let value: T = input.parse()?;
        self.set(key.span(), value, errors);
        Ok(())
    }

    /// Records `value` for a key already parsed as `key`, or a duplicate-key error.
    fn set(&mut self, key: Span, value: T, errors: &mut Errors) {
        if self.value.is_some() {
            errors.at(
                key,
                format_args!("duplicate key `{}`: set it once", self.name),
            );
        } else {
            self.value = Some((key, value));
        }
    }

    pub(crate) fn get(&self) -> Option<&T> {
        self.value.as_ref().map(|(_, value)| value)
    }

    /// Where the key was written, if it was.
    pub(crate) fn key_span(&self) -> Option<Span> {
        self.value.as_ref().map(|(span, _)| *span)
    }
}

impl Key<syn::LitBool> {
    /// Parses a flag, `<keyword>` alone (true) or `<keyword> = true|false`.
    pub(crate) fn parse_flag<K>(
        &mut self,
        input: ParseStream<'_>,
        errors: &mut Errors,
    ) -> syn::Result<()>
    where
        K: Parse + Spanned,
    {
        let key: K = input.parse()?;
        let value = if input.peek(Token![=]) {
            input.parse::<Token![=]>()?;
            input.parse()?
        } else {
            syn::LitBool::new(true, key.span())
        };
        self.set(key.span(), value, errors);
        Ok(())
    }

    /// Whether the flag is set (and not `= false`).
    pub(crate) fn is_set(&self) -> bool {
        self.get().is_some_and(|value| value.value)
    }
}

/// Records an error for an unknown key, listing the valid ones, and skips its value so
/// parsing can go on to find more errors.
pub(crate) fn unknown_key(
    input: ParseStream<'_>,
    valid: &[&str],
    errors: &mut Errors,
) -> syn::Result<()> {
    let key = input.call(Ident::parse_any)?;
    let valid = valid
        .iter()
        .map(|key| format!("`{key}`"))
        .collect::<Vec<_>>()
        .join(", ");
    errors.at(
        key.span(),
        format_args!("unknown key `{key}`; the valid keys are {valid}"),
    );
    if input.peek(Token![=]) {
        input.parse::<Token![=]>()?;
        while !input.is_empty() && !input.peek(Token![,]) {
            input.parse::<proc_macro2::TokenTree>()?;
        }
    }
    Ok(())
}

/// Parses `key = value, ...` with `one` handling each key, until the input ends.
pub(crate) fn parse_keys(
    input: ParseStream<'_>,
    mut one: impl FnMut(ParseStream<'_>) -> syn::Result<()>,
) -> syn::Result<()> {
    while !input.is_empty() {
        one(input)?;
        if input.is_empty() {
            break;
        }
        input.parse::<Token![,]>()?;
    }
    Ok(())
}

/// The path generated code names the `golem` crate by: `::golem`, or the `crate = path`
/// key for a renamed dependency.
pub(crate) struct CratePath(TokenStream);

impl CratePath {
    pub(crate) fn new(key: &Key<syn::Path>) -> Self {
        CratePath(match key.get() {
            Some(path) => quote!(#path),
            None => quote!(::golem),
        })
    }

    pub(crate) fn tokens(&self) -> &TokenStream {
        &self.0
    }

    /// `#[serde(crate = "...")]` and `#[schemars(crate = "...")]` for the private paths.
    pub(crate) fn derive_crate_attrs(&self) -> (TokenStream, TokenStream) {
        let root = self.0.to_string().replace(' ', "");
        let serde = format!("{root}::__private::serde");
        let schemars = format!("{root}::__private::schemars");
        (
            quote!(#[serde(crate = #serde)]),
            quote!(#[schemars(crate = #schemars)]),
        )
    }
}
