//! The code `#[golem::tool]` generates.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;

use super::ast::{Returns, Tool};
use super::valid::Checked;

/// The function as written, its unit struct, and inside `const _: () = { ... };` the
/// arguments struct and the `Tool` impl.
pub(crate) fn tool(tool: &Tool, checked: &Checked) -> TokenStream {
    let func = &tool.func;
    let fn_ident = &func.sig.ident;
    let krate = checked.krate.tokens();
    let (serde_crate, schemars_crate) = checked.krate.derive_crate_attrs();
    let unit_struct = unit_struct(tool, checked);
    let struct_name = &checked.struct_name;
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
        let ty = &arg.ty;
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
    let args_struct = if fields.is_empty() {
        // `{}` (or nothing) for a tool without parameters, with an empty `properties`.
        quote!(
            type __GolemArgsOf = ();
        )
    } else {
        quote! {
            #[derive(#krate::__private::serde::Deserialize, #krate::__private::schemars::JsonSchema)]
            #serde_crate
            #schemars_crate
            struct __GolemArgs<#(#type_params),*> {
                #(#fields,)*
            }

            type __GolemArgsOf = __GolemArgs<#(#struct_args),*>;
        }
    };
    // At each parameter's type, so rustc points there when it is not an argument type.
    let assertions = tool.args().map(|arg| {
        let ty = &arg.ty;
        quote_spanned! {ty.span()=>
            #krate::__private::assert_tool_argument::<#ty>();
        }
    });
    let arg_values = tool.args().map(|arg| {
        let ident = &arg.ident;
        quote!(__golem_args.#ident)
    });
    let ctx_arg = match checked.deps {
        Some(_) => quote!(__golem_ctx,),
        None => quote!(),
    };
    let ignore_ctx = checked.deps.is_none().then(|| quote!(let _ = __golem_ctx;));
    let into_result = match &tool.returns {
        Returns::Result(ty) => quote_spanned! {ty.span()=>
            #krate::__private::IntoToolResult::into_tool_result(__golem_output)
        },
        Returns::Plain(ty) => quote_spanned! {ty.span()=>
            #krate::__private::ToolReturn::into_tool_result(__golem_output)
        },
        Returns::Unit => quote! {
            #krate::__private::ToolReturn::into_tool_result(__golem_output)
        },
    };
    let (impl_generics, deps) = match &checked.deps {
        Some(deps) => (quote!(), quote!(#deps)),
        None => (
            quote!(<__GolemDeps: ::core::marker::Send + ::core::marker::Sync + 'static>),
            quote!(__GolemDeps),
        ),
    };
    let max_retries = checked.max_retries.map(|limit| {
        quote! {
            fn max_retries(&self) -> ::core::option::Option<#krate::tool::RetryLimit> {
                ::core::option::Option::Some(#krate::tool::RetryLimit(#limit))
            }
        }
    });

    quote! {
        #func

        #unit_struct

        const _: () = {
            #args_struct

            const _: () = {
                #(#assertions)*
            };

            impl #impl_generics #krate::tool::Tool<#deps> for #struct_name {
                fn definition(&self) -> #krate::tool::ToolDefinition {
                    static __GOLEM_DEFINITION: ::std::sync::OnceLock<#krate::tool::ToolDefinition> =
                        ::std::sync::OnceLock::new();
                    __GOLEM_DEFINITION
                        .get_or_init(|| {
                            #krate::tool::ToolDefinition::for_args::<__GolemArgsOf>(#name, #description)
                        })
                        .clone()
                }

                #max_retries

                fn call<'__golem>(
                    &'__golem self,
                    __golem_ctx: &'__golem #krate::RunContext<#deps>,
                    __golem_raw: &'__golem str,
                ) -> #krate::BoxFuture<
                    '__golem,
                    ::core::result::Result<#krate::__private::serde_json::Value, #krate::BoxError>,
                > {
                    #ignore_ctx
                    ::std::boxed::Box::pin(async move {
                        let __golem_args: __GolemArgsOf = #krate::tool::parse_args(#name, __golem_raw)?;
                        let __golem_output = #fn_ident(#ctx_arg #(#arg_values),*).await;
                        #into_result
                    })
                }
            }
        };
    }
}

/// The function as written and the errors; beside them the unit struct with a stub impl,
/// so code using the tool does not pile up errors of its own.
pub(crate) fn fallback(tool: &Tool, checked: &Checked, error: syn::Error) -> TokenStream {
    let error = error.into_compile_error();
    let func = &tool.func;
    if tool.has_receiver() {
        // Inside an `impl` block: only associated items may follow.
        return quote!(#error #func);
    }
    let krate = checked.krate.tokens();
    let struct_name = &checked.struct_name;
    let unit_struct = unit_struct(tool, checked);
    quote! {
        #error
        #func
        #unit_struct
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
}

fn unit_struct(tool: &Tool, checked: &Checked) -> TokenStream {
    let vis = &tool.func.vis;
    let struct_name = &checked.struct_name;
    let doc = format!(
        "The golem tool `{}`, generated by `#[golem::tool]` from `{}`.",
        checked.name, tool.func.sig.ident
    );
    quote! {
        #[doc = #doc]
        #[derive(::core::fmt::Debug, ::core::clone::Clone, ::core::marker::Copy, ::core::default::Default)]
        #vis struct #struct_name;
    }
}
