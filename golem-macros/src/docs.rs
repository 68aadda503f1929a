//! Reading rustdoc comments: the tool description and the `# Arguments` list.

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{Attribute, Expr, ExprLit, Lit, Meta};

/// One line of a doc comment, with the span of the attribute it came from.
#[derive(Debug)]
pub(crate) struct DocLine {
    pub(crate) text: String,
    pub(crate) span: Span,
}

/// The lines of the `#[doc = "..."]` attributes (`///` and `/** */` comments) in `attrs`,
/// with rustdoc's common indentation removed.
pub(crate) fn doc_lines(attrs: &[Attribute]) -> Vec<DocLine> {
    let mut lines = Vec::new();
    for attr in attrs {
        let Meta::NameValue(meta) = &attr.meta else {
            continue;
        };
        if !meta.path.is_ident("doc") {
            continue;
        }
        if let Expr::Lit(ExprLit {
            lit: Lit::Str(text),
            ..
        }) = &meta.value
        {
            // `split`, not `lines`: an empty `///` line is an empty paragraph break.
            for line in text.value().split('\n') {
                lines.push(DocLine {
                    text: line.trim_end().to_owned(),
                    span: attr.span(),
                });
            }
        }
    }
    let indent = lines
        .iter()
        .filter(|line| !line.text.trim().is_empty())
        .map(|line| line.text.len() - line.text.trim_start().len())
        .min()
        .unwrap_or(0);
    for line in &mut lines {
        line.text = line.text.get(indent..).unwrap_or("").to_owned();
    }
    lines
}

/// Joins lines into one text without leading or trailing blank lines.
pub(crate) fn join(lines: &[DocLine]) -> String {
    lines
        .iter()
        .map(|line| line.text.as_str())
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned()
}

/// What a tool's doc comment says.
#[derive(Debug, Default)]
pub(crate) struct ToolDocs {
    /// The text before the first heading.
    pub(crate) description: String,
    /// The items of the `# Arguments` list.
    pub(crate) arguments: Vec<ArgumentDoc>,
}

/// `* `name` - text` in an `# Arguments` list.
#[derive(Debug)]
pub(crate) struct ArgumentDoc {
    pub(crate) name: String,
    pub(crate) text: String,
    pub(crate) span: Span,
}

/// Splits a tool's doc comment into the description (everything before the first `#`
/// heading) and the items of its `# Arguments` (or `# Parameters`) section.
pub(crate) fn tool_docs(lines: &[DocLine]) -> ToolDocs {
    let first_heading = lines
        .iter()
        .position(|line| heading(&line.text).is_some())
        .unwrap_or(lines.len());
    let mut docs = ToolDocs {
        description: join(&lines[..first_heading]),
        arguments: Vec::new(),
    };
    let mut in_arguments = false;
    let mut in_code = false;
    for line in &lines[first_heading..] {
        let text = line.text.trim();
        if text.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        if let Some(title) = heading(&line.text) {
            in_arguments = ["arguments", "parameters", "args"]
                .iter()
                .any(|name| title.eq_ignore_ascii_case(name));
            continue;
        }
        if !in_arguments || text.is_empty() {
            continue;
        }
        if let Some(item) = text.strip_prefix("* ").or_else(|| text.strip_prefix("- ")) {
            let (name, text) = argument_item(item);
            docs.arguments.push(ArgumentDoc {
                name,
                text,
                span: line.span,
            });
        } else if let Some(last) = docs.arguments.last_mut() {
            // A continuation line of the item above.
            if !last.text.is_empty() {
                last.text.push(' ');
            }
            last.text.push_str(text);
        }
    }
    docs
}

/// The title of a Markdown ATX heading (`# Arguments` → `Arguments`).
fn heading(line: &str) -> Option<&str> {
    let line = line.trim_start();
    let title = line.trim_start_matches('#');
    let level = line.len() - title.len();
    ((1..=6).contains(&level) && title.starts_with(' ')).then(|| title.trim())
}

/// Splits `` `name` - text `` (or `name: text`, `name — text`) into name and text.
fn argument_item(item: &str) -> (String, String) {
    let item = item.trim();
    let (name, rest) = match item.strip_prefix('`') {
        Some(quoted) => match quoted.split_once('`') {
            Some((name, rest)) => (name, rest),
            None => (quoted, ""),
        },
        None => {
            let end = item
                .find(|c: char| c.is_whitespace() || c == ':')
                .unwrap_or(item.len());
            item.split_at(end)
        }
    };
    let rest = rest.trim_start();
    let rest = ["-", ":", "–", "—"]
        .iter()
        .find_map(|separator| rest.strip_prefix(separator))
        .unwrap_or(rest);
    (name.trim().to_owned(), rest.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<DocLine> {
        text.lines()
            .map(|line| DocLine {
                text: line.to_owned(),
                span: Span::call_site(),
            })
            .collect()
    }

    #[test]
    fn description_stops_at_the_first_heading_and_arguments_are_listed() {
        let docs = tool_docs(&lines(
            "Roll dice.\n\nAll of them.\n\n# Arguments\n* `n` - how many dice,\n  1 to 10\n- sides: faces per die\n\n# Errors\n* `x` - not an argument",
        ));
        assert_eq!(docs.description, "Roll dice.\n\nAll of them.");
        let arguments: Vec<_> = docs
            .arguments
            .iter()
            .map(|argument| (argument.name.as_str(), argument.text.as_str()))
            .collect();
        assert_eq!(
            arguments,
            [("n", "how many dice, 1 to 10"), ("sides", "faces per die")]
        );
    }
}
