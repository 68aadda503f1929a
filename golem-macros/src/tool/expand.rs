//! The code `#[golem::tool]` generates.

use proc_macro2::{TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use super::Kind;
use super::ast::Tool;

/// The most parameters read by golem's tuple visitor (`golem::__private::args::MAX_FIELDS`).
const MAX_FIELDS: usize = 12;
use super::valid::Checked;

/// What a tool and an output function share: the arguments struct, the assertions on the
/// parameters' types, the probe and the statics (in `items`), and the expressions that pass
/// the parsed arguments to the function.
struct ArgsParts {
    items: TokenStream,
    /// The parameters' JSON names, for golem's tuple visitor (empty with serde's derive).
    names: Vec<Option<String>>,
    arg_values: Vec<TokenStream>,
}

fn args_parts(tool: &Tool, checked: &Checked) -> ArgsParts {
    let krate = checked.krate.tokens();
    let (serde_crate, schemars_crate) = checked.krate.derive_crate_attrs();
    let name = &checked.name;
    let description = &checked.description;

    // The arguments struct is generic over the types of plain parameters, so that its
    // derives hold whatever the types are: a type that is not an argument type is then
    // reported at the parameter by the assertions below, not inside serde's generated code.
    // A parameter with `#[serde]`/`#[schemars]` attributes keeps its concrete type, which
    // those attributes may rely on (`default`, `default = "path"`, `with`, ...).
    let mut type_params = Vec::new();
    let mut struct_args = Vec::new();
    let mut fields = Vec::new();
    for (arg, doc) in tool.args().zip(&checked.arg_docs) {
        let ident = &arg.ident;
        let ty = &arg.owned_ty;
        let attrs = &arg.field_attrs;
        let doc = doc
            .as_ref()
            .filter(|_| !arg.has_doc)
            .map(|doc| quote!(#[doc = #doc]));
        let field_ty = if attrs.iter().any(|attr| !attr.path().is_ident("doc")) {
            quote!(#ty)
        } else {
            let type_param = format_ident!("__GolemT{}", type_params.len());
            type_params.push(type_param.clone());
            struct_args.push(ty);
            quote!(#type_param)
        };
        fields.push(quote!(#doc #(#attrs)* #ident: #field_ty));
    }
    // Arguments are read by golem's one generic visitor (`__private::args`) into the tuple
    // of the parameters, unless a parameter has `#[serde]` attributes (which need serde's
    // derive) or there are too many for the tuples: serde's derive on a struct per tool was
    // most of a tool's compile time. The struct then only derives `JsonSchema`.
    let fast = !fields.is_empty()
        && fields.len() <= MAX_FIELDS
        && tool.args().all(|arg| {
            !arg.field_attrs
                .iter()
                .any(|attr| attr.path().is_ident("serde"))
        });
    let serde_derive = (!fast).then(|| quote!(#krate::__private::serde::Deserialize,));
    let serde_crate = (!fast).then_some(serde_crate);
    let args_struct = if fields.is_empty() {
        // `{}` (or nothing) for a tool without parameters, with an empty `properties`.
        quote!(
            type __GolemArgsOf = ();
        )
    } else {
        quote! {
            #[derive(#serde_derive #krate::__private::schemars::JsonSchema)]
            #serde_crate
            #schemars_crate
            #[allow(dead_code)]
            struct __GolemArgs<#(#type_params),*> {
                #(#fields,)*
            }

            type __GolemArgsOf = __GolemArgs<#(#struct_args),*>;
        }
    };
    // At each parameter's type, so rustc points there when it is not an argument type.
    let assertions = tool.args().map(|arg| {
        let ty = &arg.owned_ty;
        quote_spanned! {arg.ty.span()=>
            #krate::__private::assert_tool_argument::<#ty>();
        }
    });
    // A borrowed parameter (`&str`) borrows from the arguments the future owns.
    let arg_values: Vec<_> = tool
        .args()
        .enumerate()
        .map(|(index, arg)| {
            let by_ref = arg.by_ref.then(|| quote!(&));
            if fast {
                let index = syn::Index::from(index);
                quote!(#by_ref __golem_args.#index)
            } else {
                let ident = &arg.ident;
                quote!(#by_ref __golem_args.#ident)
            }
        })
        .collect();
    // The statics and the parsing go through a probe (`__private::ArgsReady`, with the
    // fallback `ArgsUnready`), so that a parameter type without `Deserialize` or
    // `JsonSchema` is reported only by its assertion above, not again here.
    let (probe, names) = if fast {
        let names: Vec<_> = tool
            .args()
            .map(|arg| {
                arg.ident
                    .as_ref()
                    .map(|ident| syn::ext::IdentExt::unraw(ident).to_string())
            })
            .collect();
        let types = tool.args().map(|arg| &arg.owned_ty);
        (
            quote!(#krate::__private::FieldsProbe<__GolemArgsOf, (#(#types,)*)>),
            names,
        )
    } else {
        (
            quote!(#krate::__private::StructProbe<__GolemArgsOf>),
            Vec::new(),
        )
    };
    let items = quote! {
        #args_struct

        const _: () = {
            #(#assertions)*
        };

        #[allow(unused_imports)]
        use #krate::__private::{ArgsReady as _, ArgsUnready as _};

        type __GolemProbe = #probe;

        /// The definition and the compiled schema, built on first use.
        fn __golem_statics() -> &'static #krate::__private::ToolStatics {
            static __GOLEM_STATICS: ::std::sync::OnceLock<#krate::__private::ToolStatics> =
                ::std::sync::OnceLock::new();
            __GOLEM_STATICS.get_or_init(|| (&__GolemProbe::NEW).statics(#name, #description))
        }
    };
    ArgsParts {
        items,
        names,
        arg_values,
    }
}

/// The function as written, its unit struct, and inside `const _: () = { ... };` the
/// arguments struct and the `Tool` impl.
pub(crate) fn tool(tool: &Tool, checked: &Checked) -> TokenStream {
    let func = &tool.func;
    let fn_ident = &func.sig.ident;
    let krate = checked.krate.tokens();
    let struct_name = &checked.struct_name;
    let ArgsParts {
        items: args_items,
        names,
        arg_values,
    } = args_parts(tool, checked);
    let ctx_arg = match checked.deps {
        Some(_) => quote!(__golem_ctx,),
        None => quote!(),
    };
    let ignore_ctx = checked.deps.is_none().then(|| quote!(let _ = __golem_ctx;));
    // The return value is converted by its type, not its name (autoref dispatch in
    // `__private::returns`): any `Result<T, E>`, whatever it is called, is fallible, any
    // other `T: Serialize` is a plain value. Spanned at the return type, so a type that is
    // neither is reported there.
    let return_span = match &func.sig.output {
        syn::ReturnType::Type(_, ty) => ty.span(),
        syn::ReturnType::Default => fn_ident.span(),
    };
    let into_result = quote_spanned! {return_span=>
        (&__golem_output).__golem_return_tag().into_tool_result(__golem_output)
    };
    // Spanned at the function's name: a future that is not `Send` is reported there, with
    // rustc's note on the value held across an `.await`.
    let krate_at_fn = respan(krate.clone(), fn_ident.span());
    let future = quote_spanned! {fn_ident.span()=>
        #krate_at_fn::__private::returns::tool_future(
            async move { #fn_ident(#ctx_arg #(#arg_values),*).await },
            |__golem_output| {
                #[allow(unused_imports)]
                use #krate::__private::returns::{ReturnsResult as _, ReturnsValue as _};
                #into_result
            },
        )
    };
    let (impl_generics, deps) = match &checked.deps {
        Some(deps) => (quote!(), quote!(#deps)),
        None => (
            quote!(<__GolemDeps: ::core::marker::Send + ::core::marker::Sync + 'static>),
            quote!(__GolemDeps),
        ),
    };
    let requires_approval = checked.requires_approval.then(|| {
        quote! {
            fn requires_approval(&self) -> bool {
                true
            }
        }
    });
    let repeatable = checked.repeatable.then(|| {
        quote! {
            fn repeatable(&self) -> bool {
                true
            }
        }
    });
    let max_retries = checked.max_retries.map(|limit| {
        quote! {
            fn max_retries(&self) -> ::core::option::Option<#krate::tool::RetryLimit> {
                ::core::option::Option::Some(#krate::tool::RetryLimit(#limit))
            }
        }
    });

    let items = quote! {
        const _: () = {
            #args_items

            impl #impl_generics #krate::tool::Tool<#deps> for #struct_name {
                fn definition(&self) -> #krate::tool::ToolDefinition {
                    __golem_statics().definition.clone()
                }

                #max_retries

                #requires_approval

                #repeatable

                fn call<'__golem>(
                    &'__golem self,
                    __golem_ctx: &'__golem #krate::RunContext<#deps>,
                    __golem_raw: &'__golem str,
                ) -> #krate::BoxFuture<
                    '__golem,
                    ::core::result::Result<#krate::__private::serde_json::Value, #krate::BoxError>,
                > {
                    #ignore_ctx
                    let __golem_args = match (&__GolemProbe::NEW).read(
                        __golem_statics(),
                        &[#(#names),*],
                        __golem_raw,
                    ) {
                        ::core::result::Result::Ok(args) => args,
                        ::core::result::Result::Err(retry) => {
                            return #krate::__private::returns::rejected(retry);
                        }
                    };
                    #future
                }
            }
        };
    };
    let unit_struct = unit_struct(tool, checked, &items, Kind::Tool);
    quote! {
        #func

        #unit_struct
    }
}

/// The function as written, its unit struct, and inside `const _: () = { ... };` the
/// arguments struct and the `OutputFunction` impl.
pub(crate) fn output_fn(tool: &Tool, checked: &Checked) -> TokenStream {
    let func = &tool.func;
    let fn_ident = &func.sig.ident;
    let krate = checked.krate.tokens();
    let struct_name = &checked.struct_name;
    let Some((output_ty, fallible)) = &checked.output else {
        unreachable!("an output function without an output type is an error")
    };
    let ArgsParts {
        items: args_items,
        names,
        arg_values,
    } = args_parts(tool, checked);
    let ctx_arg = match checked.deps {
        Some(_) => quote!(__golem_ctx,),
        None => quote!(),
    };
    let ignore_ctx = checked.deps.is_none().then(|| quote!(let _ = __golem_ctx;));
    // Spanned at the return type, so an error type golem cannot box is reported there.
    let return_span = match &func.sig.output {
        syn::ReturnType::Type(_, ty) => ty.span(),
        syn::ReturnType::Default => fn_ident.span(),
    };
    let krate_at_return = respan(krate.clone(), return_span);
    let convert = if *fallible {
        quote_spanned! {return_span=>
            #krate_at_return::__private::returns::output_result(__golem_output)
        }
    } else {
        quote!(::core::result::Result::Ok(__golem_output))
    };
    let krate_at_fn = respan(krate.clone(), fn_ident.span());
    let future = quote_spanned! {fn_ident.span()=>
        #krate_at_fn::__private::returns::output_future(
            async move { #fn_ident(#ctx_arg #(#arg_values),*).await },
            |__golem_output| #convert,
        )
    };
    let (impl_generics, deps) = match &checked.deps {
        Some(deps) => (quote!(), quote!(#deps)),
        None => (
            quote!(<__GolemDeps: ::core::marker::Send + ::core::marker::Sync + 'static>),
            quote!(__GolemDeps),
        ),
    };
    let items = quote! {
        const _: () = {
            #args_items

            impl #impl_generics #krate::output::OutputFunction<#deps, #output_ty> for #struct_name {
                fn definition(&self) -> #krate::tool::ToolDefinition {
                    __golem_statics().definition.clone()
                }

                // The conversion of the function's value is a closure, spanned at the user's
                // return type so that rustc points there.
                #[allow(clippy::redundant_closure)]
                fn call<'__golem>(
                    &'__golem self,
                    __golem_ctx: &'__golem #krate::RunContext<#deps>,
                    __golem_raw: &'__golem str,
                ) -> #krate::BoxFuture<
                    '__golem,
                    ::core::result::Result<#output_ty, #krate::BoxError>,
                > {
                    #ignore_ctx
                    let __golem_args = match (&__GolemProbe::NEW).read(
                        __golem_statics(),
                        &[#(#names),*],
                        __golem_raw,
                    ) {
                        ::core::result::Result::Ok(args) => args,
                        ::core::result::Result::Err(retry) => {
                            return #krate::__private::returns::output_rejected(retry);
                        }
                    };
                    #future
                }
            }
        };
    };
    let unit_struct = unit_struct(tool, checked, &items, Kind::OutputFn);
    quote! {
        #func

        #unit_struct
    }
}

/// The function as written and the errors; beside them the unit struct with a stub impl,
/// so code using the tool does not pile up errors of its own.
pub(crate) fn fallback(
    tool: &Tool,
    checked: &Checked,
    error: syn::Error,
    kind: Kind,
) -> TokenStream {
    let error = error.into_compile_error();
    let func = &tool.func;
    if tool.has_receiver() {
        // Inside an `impl` block: only associated items may follow.
        return quote!(#error #func);
    }
    let krate = checked.krate.tokens();
    let struct_name = &checked.struct_name;
    let stub = if kind == Kind::OutputFn {
        quote! {
            const _: () = {
                impl<
                    __GolemDeps: ::core::marker::Send + ::core::marker::Sync + 'static,
                    __GolemO,
                > #krate::output::OutputFunction<__GolemDeps, __GolemO> for #struct_name
                {
                    fn definition(&self) -> #krate::tool::ToolDefinition {
                        ::core::unreachable!()
                    }

                    fn call<'__golem>(
                        &'__golem self,
                        _: &'__golem #krate::RunContext<__GolemDeps>,
                        _: &'__golem str,
                    ) -> #krate::BoxFuture<
                        '__golem,
                        ::core::result::Result<__GolemO, #krate::BoxError>,
                    > {
                        ::core::unreachable!()
                    }
                }
            };
        }
    } else {
        quote! {
        const _: () = {
            impl<__GolemDeps: ::core::marker::Send + ::core::marker::Sync + 'static>
                #krate::tool::Tool<__GolemDeps> for #struct_name
            {
                fn definition(&self) -> #krate::tool::ToolDefinition {
                    ::core::unreachable!()
                }

                fn call<'__golem>(
                    &'__golem self,
                    _: &'__golem #krate::RunContext<__GolemDeps>,
                    _: &'__golem str,
                ) -> #krate::BoxFuture<
                    '__golem,
                    ::core::result::Result<#krate::__private::serde_json::Value, #krate::BoxError>,
                > {
                    ::core::unreachable!()
                }
            }
        };
        }
    };
    let unit_struct = unit_struct(tool, checked, &stub, kind);
    quote! {
        #error
        #func
        #unit_struct
    }
}

/// The unit struct, carrying `items` (everything else the tool generates) in an attribute
/// that its derive `__private::ToolItems` emits beside it.
///
/// Inside an `impl` block rustc's parser drops the struct with one error ("struct is not
/// supported in `trait`s or `impl`s"), attributes and all, so its items never reach name
/// resolution or type checking and add no errors of their own. Emitted beside the struct,
/// they would (a nameless `const _`, the `Tool` impl calling a function that is not in
/// scope, ...).
fn unit_struct(tool: &Tool, checked: &Checked, items: &TokenStream, kind: Kind) -> TokenStream {
    let krate = checked.krate.tokens();
    let vis = &tool.func.vis;
    let struct_name = &checked.struct_name;
    let doc = format!(
        "The {} `{}`, generated by `#[golem::{}]` from `{}`.",
        kind.noun(),
        checked.name,
        kind.attr(),
        tool.func.sig.ident
    );
    quote! {
        #[doc = #doc]
        #[derive(
            ::core::fmt::Debug,
            ::core::clone::Clone,
            ::core::marker::Copy,
            ::core::default::Default,
            #krate::__private::ToolItems,
        )]
        #[golem_tool_items(#items)]
        #vis struct #struct_name;
    }
}

/// The derive `ToolItems`: the contents of the struct's `#[golem_tool_items(...)]`, as they
/// are.
pub(crate) fn carried_items(item: TokenStream) -> TokenStream {
    let mut tokens = item.into_iter();
    while let Some(token) = tokens.next() {
        let TokenTree::Punct(pound) = &token else {
            continue;
        };
        if pound.as_char() != '#' {
            continue;
        }
        let Some(TokenTree::Group(attr)) = tokens.next() else {
            continue;
        };
        let mut attr = attr.stream().into_iter();
        if let (Some(TokenTree::Ident(name)), Some(TokenTree::Group(items))) =
            (attr.next(), attr.next())
            && name == "golem_tool_items"
        {
            return items.stream();
        }
    }
    TokenStream::new()
}

/// `tokens` with every span set to `span`, so that rustc points an error about the
/// expression they start at `span` (a span joined from the call site and the user's
/// tokens would point at the attribute).
fn respan(tokens: TokenStream, span: proc_macro2::Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut token| {
            if let proc_macro2::TokenTree::Group(group) = &token {
                let mut inner =
                    proc_macro2::Group::new(group.delimiter(), respan(group.stream(), span));
                inner.set_span(span);
                token = proc_macro2::TokenTree::Group(inner);
            } else {
                token.set_span(span);
            }
            token
        })
        .collect()
}
