//! Checks a parsed [`Tool`] and works out what to generate, collecting every error.

use syn::ext::IdentExt;
use syn::{Expr, ExprLit, ExprUnary, Ident, Lit, Pat, Type, UnOp};

use super::Kind;
use super::ast::{Arg, ContextShape, Param, Tool};
use crate::attr::CratePath;
use crate::ctxt::Errors;

/// What the expansion needs, worked out even when there are errors so the fallback can
/// still declare the struct.
pub(crate) struct Checked {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) max_retries: Option<u32>,
    pub(crate) requires_approval: bool,
    /// Whether calls with arguments seen before still run.
    pub(crate) repeatable: bool,
    pub(crate) struct_name: Ident,
    /// `D` of a `&RunContext<D>` parameter; `None`: the tool works for any `Deps`.
    pub(crate) deps: Option<Type>,
    pub(crate) krate: CratePath,
    /// For each argument, its description from the `# Arguments` list.
    pub(crate) arg_docs: Vec<Option<String>>,
    /// For an output function, the output type `T` and whether it returns `Result<T, _>`.
    pub(crate) output: Option<(Type, bool)>,
}

pub(crate) fn check(tool: &Tool, kind: Kind) -> (Checked, Errors) {
    let noun = kind.noun();
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
                "the `async` keyword is missing: {noun}s are `async fn`s; write `async fn {fn_name}`"
            ),
        );
    }
    if let Some(unsafety) = &sig.unsafety {
        errors.at(
            unsafety.span,
            format_args!("a {noun} cannot be an `unsafe fn`: the model decides when it runs"),
        );
    }
    // Lifetime parameters are fine: borrowed parameters are read into owned values and
    // passed by reference. Type and const parameters are not.
    let generic = sig
        .generics
        .params
        .iter()
        .any(|param| !matches!(param, syn::GenericParam::Lifetime(_)));
    if generic || sig.generics.where_clause.is_some() {
        errors.spanned(
            &sig.generics,
            format_args!(
                "a {noun} cannot be generic: the model calls one concrete function with JSON arguments, so each parameter needs one concrete type; write a {} per type",
                kind.short()
            ),
        );
    }

    let mut deps = None;
    for param in &tool.params {
        match param {
            Param::Receiver(span) => errors.at(
                *span,
                format_args!(
                    "a {noun} cannot take `self`: put it on a free `async fn` and reach shared state through a first parameter `ctx: &RunContext<Deps>` (`ctx.deps()`)"
                ),
            ),
            Param::Context { index, ty, shape } => match shape {
                _ if *index != 0 => errors.spanned(
                    ty,
                    format_args!("`RunContext` must be the first parameter of a {noun}"),
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
                format_args!(
                    "{noun} parameters must be plain names, which become the JSON argument names; take the value whole and destructure it in the function body"
                ),
            ),
            Param::Arg(arg) => check_arg_type(arg, noun, &mut errors),
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
                        "`{fn_name}` is not a tool name providers accept (`^[a-zA-Z0-9_-]{{1,64}}$`): set one with `#[golem::{attr}(name = \"...\")]`",
                        attr = kind.attr()
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
    let mut output = None;
    if kind == Kind::OutputFn {
        let tool_only = [
            (
                attr.max_retries.key_span(),
                "`max_retries` does not apply to an output function: its rejections count under the agent's output budget; remove it and set `.output_retries(n)` on the agent",
            ),
            (
                attr.requires_approval.key_span(),
                "`requires_approval` does not apply to an output function: the run ends with its output, so there is no call to approve; remove it",
            ),
            (
                attr.repeatable.key_span(),
                "`repeatable` does not apply to an output function: the run ends with its output, so it is never called twice; remove it",
            ),
        ];
        for (span, message) in tool_only {
            if let Some(span) = span {
                errors.at(span, message);
            }
        }
        output = output_type(&sig.output, &sig.ident, &mut errors);
    }

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
    let arg_names: Vec<String> = tool
        .args()
        .filter_map(|arg| Some(format!("`{}`", arg.ident.as_ref()?.unraw())))
        .collect();
    let known = if arg_names.is_empty() {
        "it has no parameters the model fills in".to_owned()
    } else {
        format!("its parameters are {}", arg_names.join(", "))
    };
    for argument in &tool.docs.arguments {
        if !param_names.contains(&argument.name) {
            errors.at(
                argument.span,
                format_args!(
                    "the `# Arguments` list describes `{}`, but `{fn_name}` has no parameter of that name; {known}",
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
        requires_approval: attr.requires_approval.is_set(),
        repeatable: attr.repeatable.is_set(),
        struct_name,
        deps,
        krate: CratePath::new(&attr.krate),
        arg_docs,
        output,
    };
    (checked, errors)
}

/// An output function's output type, from its return type: `T` of `Result<T, E>` (any path
/// ending in `Result`, `anyhow::Result<T>` too), or the type itself.
fn output_type(
    output: &syn::ReturnType,
    fn_ident: &Ident,
    errors: &mut Errors,
) -> Option<(Type, bool)> {
    let ty = match output {
        syn::ReturnType::Type(_, ty) => &**ty,
        syn::ReturnType::Default => {
            errors.at(
                fn_ident.span(),
                "an output function returns the run's output: write `-> T` or `-> Result<T, ModelRetry>` after the parameters",
            );
            return None;
        }
    };
    if let Type::Path(path) = ty
        && path.qself.is_none()
        && let Some(last) = path.path.segments.last()
        && last.ident == "Result"
        && let syn::PathArguments::AngleBracketed(args) = &last.arguments
        && let Some(syn::GenericArgument::Type(ok)) = args.args.first()
    {
        return Some((ok.clone(), true));
    }
    if let Type::ImplTrait(_) = ty {
        errors.spanned(
            ty,
            "an output function returns the run's output, one concrete type: name it (`String`, your own `#[golem::output]` type, ...)",
        );
        return None;
    }
    Some((ty.clone(), false))
}

/// A parameter's type must be one concrete type that owns its data (apart from the one
/// shared borrow golem reads into an owned value): one error per parameter, at the first
/// offending part of its type.
fn check_arg_type(arg: &Arg, noun: &str, errors: &mut Errors) {
    if let Type::Reference(reference) = &*arg.ty
        && reference.mutability.is_some()
    {
        let elem = &reference.elem;
        errors.spanned(
            &arg.ty,
            format_args!(
                "a {noun} parameter cannot be `&mut`: the arguments are the model's JSON, read fresh for each call; take `{elem}` by value (`mut name: {elem}` if the body changes it)",
                elem = type_text(elem),
            ),
        );
        return;
    }
    if let Type::Reference(reference) = &*arg.ty
        && reference
            .lifetime
            .as_ref()
            .is_some_and(|lifetime| lifetime.ident == "static")
    {
        errors.spanned(
            &arg.ty,
            format_args!(
                "a {noun} parameter cannot borrow for `'static`: golem reads the model's JSON into a value that lives for the call; write `&str` (or the owned type)"
            ),
        );
        return;
    }
    match type_problem(&arg.owned_ty) {
        Some(TypeProblem::ImplTrait(ty)) => errors.spanned(
            ty,
            format_args!(
                "a {noun} parameter cannot be `impl Trait`: the model's JSON arguments are read into one concrete type, so name it (`String`, `Vec<i64>`, your own `#[golem::args]` struct, ...)"
            ),
        ),
        Some(TypeProblem::Borrow(tokens)) => {
            let owned = match tokens {
                BorrowAt::Reference(reference) => match &*reference.elem {
                    Type::Path(path) if path.path.is_ident("str") => "`String`".to_owned(),
                    Type::Slice(_) => "`Vec<T>`".to_owned(),
                    elem => format!("`{}`", type_text(elem)),
                },
                BorrowAt::Lifetime(_) => "an owned type (`String` for `Cow<'_, str>`)".to_owned(),
            };
            let span = match tokens {
                BorrowAt::Reference(reference) => syn::spanned::Spanned::span(reference),
                BorrowAt::Lifetime(lifetime) => syn::spanned::Spanned::span(lifetime),
            };
            errors.at(
                span,
                format_args!(
                    "a {noun} parameter can borrow only at its top (`&str`, `&[T]`, `&T`, read into an owned value golem keeps for the call); inside a type the model's JSON has nothing to borrow from: take {owned} instead"
                ),
            );
        }
        None => {}
    }
}

/// A type as the user would write it (`Vec<i64>`, not `Vec < i64 >`).
fn type_text(ty: &Type) -> String {
    let text = quote::quote!(#ty).to_string();
    [
        (" < ", "<"),
        ("< ", "<"),
        (" >", ">"),
        (" :: ", "::"),
        (":: ", "::"),
        (" ,", ","),
        ("& ", "&"),
    ]
    .iter()
    .fold(text, |text, (from, to)| text.replace(from, to))
}

enum TypeProblem<'a> {
    ImplTrait(&'a Type),
    Borrow(BorrowAt<'a>),
}

enum BorrowAt<'a> {
    Reference(&'a syn::TypeReference),
    Lifetime(&'a syn::Lifetime),
}

/// The first part of `ty` that is `impl Trait` or a borrow (`'static` is fine).
fn type_problem(ty: &Type) -> Option<TypeProblem<'_>> {
    match ty {
        Type::ImplTrait(_) => Some(TypeProblem::ImplTrait(ty)),
        Type::Reference(reference) => Some(TypeProblem::Borrow(BorrowAt::Reference(reference))),
        Type::Paren(inner) => type_problem(&inner.elem),
        Type::Group(inner) => type_problem(&inner.elem),
        Type::Slice(slice) => type_problem(&slice.elem),
        Type::Array(array) => type_problem(&array.elem),
        Type::Tuple(tuple) => tuple.elems.iter().find_map(type_problem),
        Type::Path(path) => {
            let qself = path
                .qself
                .as_ref()
                .and_then(|qself| type_problem(&qself.ty));
            qself.or_else(|| {
                path.path
                    .segments
                    .iter()
                    .find_map(|segment| match &segment.arguments {
                        syn::PathArguments::AngleBracketed(arguments) => {
                            arguments.args.iter().find_map(|argument| match argument {
                                syn::GenericArgument::Type(ty) => type_problem(ty),
                                syn::GenericArgument::Lifetime(lifetime)
                                    if lifetime.ident != "static" =>
                                {
                                    Some(TypeProblem::Borrow(BorrowAt::Lifetime(lifetime)))
                                }
                                _ => None,
                            })
                        }
                        _ => None,
                    })
            })
        }
        _ => None,
    }
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
