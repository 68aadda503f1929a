//! The arguments of `#[golem::output(...)]`, typed and with their spans.

use syn::parse::{Parse, ParseStream};
use syn::{Ident, Path, Token};

use crate::attr::{Key, parse_keys, unknown_key};
use crate::ctxt::Errors;

mod kw {
    syn::custom_keyword!(validate);
}

const KEYS: &[&str] = &["validate", "crate"];
const ARGS_KEYS: &[&str] = &["crate"];

/// Which attribute is being parsed: `#[golem::output]`, or `#[golem::args]` (which has
/// no validator).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Output,
    Args,
}

impl Kind {
    pub(crate) fn attribute(self) -> &'static str {
        match self {
            Kind::Output => "#[golem::output]",
            Kind::Args => "#[golem::args]",
        }
    }
}

/// `#[golem::output(validate = path::to::fn, crate = path)]`.
pub(crate) struct OutputAttr {
    /// A `fn(&Self) -> Result<(), ModelRetry>` run after decoding.
    pub(crate) validate: Key<Path>,
    /// The path of the `golem` crate, for a renamed dependency.
    pub(crate) krate: Key<Path>,
    /// Unknown and duplicate keys.
    pub(crate) errors: Errors,
}

impl Default for OutputAttr {
    fn default() -> Self {
        OutputAttr {
            validate: Key::new("validate"),
            krate: Key::new("crate"),
            errors: Errors::default(),
        }
    }
}

impl Parse for OutputAttr {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        OutputAttr::parse_for(input, Kind::Output)
    }
}

impl OutputAttr {
    /// Parses the keys of `kind`'s attribute.
    pub(crate) fn parse_for(input: ParseStream<'_>, kind: Kind) -> syn::Result<Self> {
        let mut attr = OutputAttr::default();
        let keys = match kind {
            Kind::Output => KEYS,
            Kind::Args => ARGS_KEYS,
        };
        parse_keys(input, |input| {
            let errors = &mut attr.errors;
            let lookahead = input.lookahead1();
            if kind == Kind::Output && lookahead.peek(kw::validate) {
                attr.validate.parse::<kw::validate>(input, errors)
            } else if lookahead.peek(Token![crate]) {
                attr.krate.parse::<Token![crate]>(input, errors)
            } else if input.peek(Ident) {
                unknown_key(input, keys, errors)
            } else {
                Err(lookahead.error())
            }
        })?;
        Ok(attr)
    }
}
