//! Checks a parsed [`Output`], collecting every error.

use super::ast::Output;
use crate::attr::CratePath;
use crate::ctxt::Errors;

/// What the expansion needs.
pub(crate) struct Checked {
    pub(crate) krate: CratePath,
    pub(crate) validate: Option<syn::Path>,
}

pub(crate) fn check(output: &Output) -> (Checked, Errors) {
    let mut errors = output.field_errors.clone();
    let checked = match &output.attr {
        Ok(attr) => {
            errors.append(attr.errors.clone());
            Checked {
                krate: CratePath::new(&attr.krate),
                validate: attr.validate.get().cloned(),
            }
        }
        Err(error) => {
            errors.push(error.clone());
            Checked {
                krate: CratePath::new(&crate::attr::Key::new("crate")),
                validate: None,
            }
        }
    };
    (checked, errors)
}
