//! The typed model of a tool: the function, its parameters, docs and return type.

use proc_macro2::{Span, TokenStream};
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, GenericArgument, Ident, Item, ItemFn, Pat, PathArguments, Type};

use super::attr::ToolAttr;
use crate::docs::{self, ToolDocs};

/// `#[golem::tool]` and the function it is on.
pub(crate) struct Tool {
    /// The attribute's keys, or why they don't parse.
    pub(crate) attr: syn::Result<ToolAttr>,
    /// The function as it is emitted: the parameter attributes golem forwards to the
    /// schema (`///`, `#[serde]`, `#[schemars]`) are removed from it.
    pub(crate) func: ItemFn,
    pub(crate) params: Vec<Param>,
    pub(crate) docs: ToolDocs,
}

pub(crate) enum Param {
    /// `self`, `&self`, ...: not allowed.
    Receiver(Span),
    /// A `RunContext` parameter, at `index`.
    Context {
        index: usize,
        ty: Box<Type>,
        shape: ContextShape,
    },
    /// A parameter the model fills in.
    Arg(Arg),
}

pub(crate) enum ContextShape {
    /// `&RunContext<D>`, the one accepted form.
    Shared(Box<Type>),
    /// `RunContext<D>` or `&mut RunContext<D>`.
    NotShared,
    /// `&RunContext` without the dependencies type.
    MissingDeps,
}

/// A parameter that becomes a field of the arguments struct.
pub(crate) struct Arg {
    pub(crate) pat: Box<Pat>,
    /// The parameter's name, when its pattern is a plain name.
    pub(crate) ident: Option<Ident>,
    /// The parameter's type as written.
    pub(crate) ty: Box<Type>,
    /// The type read from the JSON arguments: `ty`, or for a shared borrow the owned type
    /// it borrows from (`&str` → `String`, `&[T]` → `Vec<T>`, `&T` → `T`).
    pub(crate) owned_ty: Box<Type>,
    /// Whether the function takes a borrow of `owned_ty`.
    pub(crate) by_ref: bool,
    /// `///`, `#[serde(...)]` and `#[schemars(...)]`, for the field.
    pub(crate) field_attrs: Vec<Attribute>,
    /// Whether `field_attrs` holds a doc comment (which wins over `# Arguments`).
    pub(crate) has_doc: bool,
}

/// The item under `#[golem::tool]`, which must be a function.
pub(crate) fn parse_item(item: TokenStream) -> syn::Result<ItemFn> {
    let keyword = match syn::parse2::<Item>(item)? {
        Item::Fn(func) => return Ok(func),
        Item::Struct(item) => item.struct_token.span,
        Item::Enum(item) => item.enum_token.span,
        Item::Union(item) => item.union_token.span,
        Item::Impl(item) => item.impl_token.span,
        Item::Mod(item) => item.mod_token.span,
        Item::Trait(item) => item.trait_token.span,
        Item::Const(item) => item.const_token.span,
        Item::Static(item) => item.static_token.span,
        Item::Type(item) => item.type_token.span,
        Item::Use(item) => item.use_token.span,
        other => other.span(),
    };
    Err(syn::Error::new(
        keyword,
        "`#[golem::tool]` goes on an `async fn`; for structured output use `#[golem::output]`",
    ))
}

impl Tool {
    pub(crate) fn from_syn(attr: syn::Result<ToolAttr>, mut func: ItemFn) -> Self {
        let docs = docs::tool_docs(&docs::doc_text(&func.attrs));
        let params = func
            .sig
            .inputs
            .iter_mut()
            .enumerate()
            .map(|(index, input)| match input {
                FnArg::Receiver(receiver) => Param::Receiver(receiver.self_token.span),
                FnArg::Typed(typed) => match context_shape(&typed.ty) {
                    Some(shape) => Param::Context {
                        index,
                        ty: typed.ty.clone(),
                        shape,
                    },
                    None => {
                        let (field_attrs, kept) = std::mem::take(&mut typed.attrs)
                            .into_iter()
                            .partition::<Vec<_>, _>(is_field_attr);
                        typed.attrs = kept;
                        let ident = match &*typed.pat {
                            Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => {
                                Some(pat.ident.clone())
                            }
                            _ => None,
                        };
                        let (owned_ty, by_ref) = owned_type(&typed.ty);
                        Param::Arg(Arg {
                            pat: typed.pat.clone(),
                            ident,
                            ty: typed.ty.clone(),
                            owned_ty,
                            by_ref,
                            has_doc: field_attrs.iter().any(|attr| attr.path().is_ident("doc")),
                            field_attrs,
                        })
                    }
                },
            })
            .collect();
        Tool {
            attr,
            func,
            params,
            docs,
        }
    }

    pub(crate) fn args(&self) -> impl Iterator<Item = &Arg> {
        self.params.iter().filter_map(|param| match param {
            Param::Arg(arg) => Some(arg),
            _ => None,
        })
    }

    pub(crate) fn has_receiver(&self) -> bool {
        self.params
            .iter()
            .any(|param| matches!(param, Param::Receiver(_)))
    }
}

/// What a parameter of type `ty` is read as: a shared borrow (`&str`, `&'a [T]`, `&T`)
/// is read into the type it borrows from and passed by reference, which is sound since the
/// arguments live until the function's future is done. Anything else is read as it is.
fn owned_type(ty: &Type) -> (Box<Type>, bool) {
    let Type::Reference(reference) = ty else {
        return (Box::new(ty.clone()), false);
    };
    if reference.mutability.is_some() {
        return (Box::new(ty.clone()), false);
    }
    let owned = match &*reference.elem {
        Type::Path(path) if path.qself.is_none() && path.path.is_ident("str") => {
            syn::parse_quote!(::std::string::String)
        }
        Type::Slice(slice) => {
            let elem = &slice.elem;
            syn::parse_quote!(::std::vec::Vec<#elem>)
        }
        Type::Path(_) | Type::Array(_) | Type::Tuple(_) => (*reference.elem).clone(),
        _ => return (Box::new(ty.clone()), false),
    };
    (Box::new(owned), true)
}

/// Attributes golem moves from a parameter to its schema field.
fn is_field_attr(attr: &Attribute) -> bool {
    ["doc", "serde", "schemars"]
        .iter()
        .any(|name| attr.path().is_ident(name))
}

/// How a parameter's type is a `RunContext` (by its last path segment), if it is one.
fn context_shape(ty: &Type) -> Option<ContextShape> {
    let (shared, path) = match ty {
        Type::Reference(reference) => match &*reference.elem {
            Type::Path(path) => (reference.mutability.is_none(), path),
            _ => return None,
        },
        Type::Path(path) => (false, path),
        _ => return None,
    };
    let segment = path.path.segments.last()?;
    if segment.ident != "RunContext" {
        return None;
    }
    if !shared {
        return Some(ContextShape::NotShared);
    }
    let deps = match &segment.arguments {
        PathArguments::AngleBracketed(arguments) => {
            arguments.args.iter().find_map(|argument| match argument {
                GenericArgument::Type(ty) => Some(ty.clone()),
                _ => None,
            })
        }
        _ => None,
    };
    Some(deps.map_or(ContextShape::MissingDeps, |deps| {
        ContextShape::Shared(Box::new(deps))
    }))
}
