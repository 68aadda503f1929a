//! Collecting every error of a pass, so the user sees them all in one build.

use std::fmt::Display;

use proc_macro2::Span;
use quote::ToTokens;

/// The errors found so far; combined into one `syn::Error` at the end of a pass.
#[derive(Default, Clone)]
pub(crate) struct Errors(Option<syn::Error>);

impl Errors {
    pub(crate) fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(errors) => errors.combine(error),
            None => self.0 = Some(error),
        }
    }

    /// An error at `span`.
    pub(crate) fn at(&mut self, span: Span, message: impl Display) {
        self.push(syn::Error::new(span, message));
    }

    /// An error covering all of `tokens` (e.g. both tokens of `-1`).
    pub(crate) fn spanned(&mut self, tokens: impl ToTokens, message: impl Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    /// Takes the errors of `other` too.
    pub(crate) fn append(&mut self, other: Errors) {
        if let Some(error) = other.0 {
            self.push(error);
        }
    }

    pub(crate) fn finish(self) -> syn::Result<()> {
        self.0.map_or(Ok(()), Err)
    }
}
