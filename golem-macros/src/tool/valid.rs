//! Checks a parsed [`Tool`] and works out what to generate, collecting every error.

use syn::ext::IdentExt;
use syn::{Expr, ExprLit, ExprUnary, Ident, Lit, Pat, Type, UnOp};

use super::ast::{ContextShape, Param, Tool};
use crate::attr::CratePath;
use crate::ctxt::Errors;

/// What the expansion needs, worked out even when there are errors so the fallback can
/// still declare the struct.
pub(crate) struct Checked {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) max_retries: Option<u32>,
    pub(crate) struct_name: Ident,
    /// `D` of a `&RunContext<D>` parameter; `None`: the tool works for any `Deps`.
    pub(crate) deps: Option<Type>,
    pub(crate) krate: CratePath,
    /// For each argument, its description from the `# Arguments` list.
    pub(crate) arg_docs: Vec<Option<String>>,
}

pub(crate) fn check(tool: &Tool) -> (Checked, Errors) {
    let mut errors = Errors::default();
    let default_attr;
    let attr = match &tool.attr {
        Ok(attr) => {
            errors.append(attr.errors.clone());
            attr
        }
        Err(error) => {
            errors.push(error.clone());
            default_attr = Default::default();
            &default_attr
        }
    };
    let sig = &tool.func.sig;
    let fn_name = sig.ident.unraw().to_string();

    if sig.asyncness.is_none() {
        errors.at(
            sig.fn_token.span,
            format_args!(
                "the `async` keyword is missing: golem tools are `async fn`s; write `async fn {fn_name}`"
            ),
        );
    }
    if let Some(unsafety) = &sig.unsafety {
        errors.at(
            unsafety.span,
            "a golem tool cannot be an `unsafe fn`: the model decides when it runs",
        );
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.spanned(
            &sig.generics,
            "a golem tool cannot be generic: the model calls one concrete function; write a tool per type",
        );
    }

    let mut deps = None;
    for param in &tool.params {
        match param {
            Param::Receiver(span) => errors.at(
                *span,
                "a golem tool cannot take `self`: put it on a free `async fn` and reach shared state through a first parameter `ctx: &RunContext<Deps>` (`ctx.deps()`)",
            ),
            Param::Context { index, ty, shape } => match shape {
                _ if *index != 0 => errors.spanned(
                    ty,
                    "`RunContext` must be the first parameter of a golem tool",
                ),
                ContextShape::NotShared => errors.spanned(
                    ty,
                    "take the run context by shared reference: `&RunContext<Deps>`",
                ),
                ContextShape::MissingDeps => errors.spanned(
                    ty,
                    "name the dependencies type of the run context: `&RunContext<Deps>`",
                ),
                ContextShape::Shared(ty) => deps = Some((**ty).clone()),
            },
            Param::Arg(arg) if arg.ident.is_none() => errors.spanned(
                &arg.pat,
                "golem tool parameters must be plain names, which become the JSON argument names; take the value whole and destructure it in the function body",
            ),
            Param::Arg(arg) => {
                if let Type::Reference(reference) = &*arg.ty {
                    let owned = match &*reference.elem {
                        Type::Path(path) if path.path.is_ident("str") => "`String`",
                        Type::Slice(_) => "`Vec<T>`",
                        _ => "the owned type",
                    };
                    errors.spanned(
                        &arg.ty,
                        format_args!(
                            "golem tool parameters are read from the model's JSON arguments, so they cannot borrow: take {owned} instead"
                        ),
                    );
                }
            }
        }
    }

    let name = match attr.name.get() {
        Some(name) => {
            let value = name.value();
            if value.is_empty() {
                errors.at(
                    name.span(),
                    "a tool name cannot be empty: use 1 to 64 ASCII letters, digits, `_` or `-`",
                );
            } else if !is_valid_tool_name(&value) {
                errors.at(
                    name.span(),
                    format_args!(
                        "`{value}` is not a tool name providers accept: use 1 to 64 ASCII letters, digits, `_` or `-` (`^[a-zA-Z0-9_-]{{1,64}}$`)"
                    ),
                );
            }
            value
        }
        None => {
            if !is_valid_tool_name(&fn_name) {
                errors.at(
                    sig.ident.span(),
                    format_args!(
                        "`{fn_name}` is not a tool name providers accept (`^[a-zA-Z0-9_-]{{1,64}}$`): set one with `#[golem::tool(name = \"...\")]`"
                    ),
                );
            }
            fn_name.clone()
        }
    };

    let max_retries = attr
        .max_retries
        .get()
        .and_then(|expr| max_retries(expr, &mut errors));

    let param_names: Vec<String> = sig
        .inputs
        .iter()
        .filter_map(|input| match input {
            syn::FnArg::Typed(typed) => match &*typed.pat {
                Pat::Ident(pat) => Some(pat.ident.unraw().to_string()),
                _ => None,
            },
            syn::FnArg::Receiver(_) => None,
        })
        .collect();
    for argument in &tool.docs.arguments {
        if !param_names.contains(&argument.name) {
            errors.at(
                argument.span,
                format_args!(
                    "the `# Arguments` list describes `{}`, but `{fn_name}` has no parameter of that name",
                    argument.name
                ),
            );
        }
    }
    let arg_docs = tool
        .args()
        .map(|arg| {
            let ident = arg.ident.as_ref()?.unraw().to_string();
            tool.docs
                .arguments
                .iter()
                .find(|argument| argument.name == ident)
                .map(|argument| argument.text.clone())
        })
        .collect();

    let struct_name = attr
        .struct_name
        .get()
        .cloned()
        .unwrap_or_else(|| Ident::new(&pascal_case(&fn_name), sig.ident.span()));
    let description = attr
        .description
        .get()
        .map_or_else(|| tool.docs.description.clone(), |text| text.value());

    let checked = Checked {
        name,
        description,
        max_retries,
        struct_name,
        deps,
        krate: CratePath::new(&attr.krate),
        arg_docs,
    };
    (checked, errors)
}

/// The budget in `max_retries = <expr>`, which must be a `u32` literal.
fn max_retries(expr: &Expr, errors: &mut Errors) -> Option<u32> {
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Int(int), ..
        }) => match int.base10_parse::<u32>() {
            Ok(limit) => Some(limit),
            Err(_) => {
                errors.at(
                    int.span(),
                    format_args!("`max_retries` is at most {} (`u32::MAX`)", u32::MAX),
                );
                None
            }
        },
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_),
            expr: inner,
            ..
        }) if matches!(
            &**inner,
            Expr::Lit(ExprLit {
                lit: Lit::Int(_),
                ..
            })
        ) =>
        {
            errors.spanned(
                expr,
                "retry budgets are unsigned, so `max_retries` cannot be negative; write `max_retries = 0` to make this tool's failures terminal",
            );
            None
        }
        _ => {
            errors.spanned(
                expr,
                "`max_retries` takes a non-negative integer literal, like `max_retries = 2` (0 makes failures terminal)",
            );
            None
        }
    }
}

/// The rule of `golem::tool::is_valid_tool_name`: `^[a-zA-Z0-9_-]{1,64}$`.
fn is_valid_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// `roll_dice` → `RollDice`.
fn pascal_case(snake: &str) -> String {
    snake
        .split('_')
        .flat_map(|word| {
            let mut chars = word.chars();
            chars
                .next()
                .map(|first| first.to_uppercase().chain(chars))
                .into_iter()
                .flatten()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn struct_names_are_pascal_case() {
        assert_eq!(pascal_case("roll_dice"), "RollDice");
        assert_eq!(pascal_case("get_weather_v2"), "GetWeatherV2");
        assert_eq!(pascal_case("_private__tool"), "PrivateTool");
        assert_eq!(pascal_case("ping"), "Ping");
    }
}
