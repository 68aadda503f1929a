//! Reading rustdoc comments as Markdown (pulldown-cmark): the tool description and the
//! `# Arguments` list.
//!
//! The description is the text before the first section heading, rendered as clean text:
//! Rust code blocks (doc examples, `# ` hidden lines and all) are dropped, links keep their
//! text, other code blocks keep their fences. A section heading is an ATX or setext
//! heading of any level, or a paragraph that is only a bold section name
//! (`**Arguments**`, `**Examples:**`). The arguments section is titled `Arguments`,
//! `Parameters` or `Args`; each item of its top-level list describes one parameter, as
//! `` `n` - text ``, `n: text`, `n — text` or `**n**: text`, and everything nested under an
//! item (more paragraphs, bullets) belongs to that item.

use std::ops::Range;

use proc_macro2::Span;
use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};
use syn::spanned::Spanned;
use syn::{Attribute, Expr, ExprLit, Lit, Meta};

/// A doc comment as one Markdown text, with the span of the attribute each line came from.
#[derive(Debug, Default)]
pub(crate) struct DocText {
    pub(crate) text: String,
    /// The byte offset where each line starts, and its attribute's span.
    lines: Vec<(usize, Span)>,
}

impl DocText {
    /// The span of the doc attribute holding byte `offset` of the text.
    fn span_at(&self, offset: usize) -> Span {
        let index = self
            .lines
            .partition_point(|(start, _)| *start <= offset)
            .saturating_sub(1);
        self.lines
            .get(index)
            .map_or_else(Span::call_site, |(_, span)| *span)
    }
}

/// The `#[doc = "..."]` attributes (`///` and `/** */` comments) in `attrs` as one text,
/// with rustdoc's common indentation, and the ` * ` margin of block comments, removed.
pub(crate) fn doc_text(attrs: &[Attribute]) -> DocText {
    let mut lines: Vec<(String, Span)> = Vec::new();
    for attr in attrs {
        let Meta::NameValue(meta) = &attr.meta else {
            continue;
        };
        if !meta.path.is_ident("doc") {
            continue;
        }
        let Expr::Lit(ExprLit {
            lit: Lit::Str(text),
            ..
        }) = &meta.value
        else {
            continue;
        };
        let value = text.value();
        let mut block: Vec<&str> = value.split('\n').collect();
        if block.len() > 1 {
            // A `/** */` comment: rustdoc drops its blank first and last lines and a `*`
            // margin that every line has.
            if block.first().is_some_and(|line| line.trim().is_empty()) {
                block.remove(0);
            }
            if block.last().is_some_and(|line| line.trim().is_empty()) {
                block.pop();
            }
            let starred = block
                .iter()
                .all(|line| line.trim_start().starts_with('*') || line.trim().is_empty());
            if starred {
                for line in &mut block {
                    let rest = line.trim_start().strip_prefix('*').unwrap_or("");
                    *line = rest;
                }
            }
        }
        for line in block {
            lines.push((line.trim_end().to_owned(), attr.span()));
        }
    }
    let indent = lines
        .iter()
        .filter(|(line, _)| !line.trim().is_empty())
        .map(|(line, _)| line.len() - line.trim_start().len())
        .min()
        .unwrap_or(0);
    let mut doc = DocText::default();
    for (line, span) in lines {
        doc.lines.push((doc.text.len(), span));
        doc.text.push_str(line.get(indent..).unwrap_or(""));
        doc.text.push('\n');
    }
    doc
}

/// What a tool's doc comment says.
#[derive(Debug, Default)]
pub(crate) struct ToolDocs {
    /// The text before the first section heading.
    pub(crate) description: String,
    /// The items of the `# Arguments` list.
    pub(crate) arguments: Vec<ArgumentDoc>,
}

/// One item of an `# Arguments` list.
#[derive(Debug)]
pub(crate) struct ArgumentDoc {
    pub(crate) name: String,
    pub(crate) text: String,
    pub(crate) span: Span,
}

/// Section names that end the description when written as a bold paragraph.
const SECTIONS: &[&str] = &[
    "arguments",
    "parameters",
    "args",
    "returns",
    "errors",
    "examples",
    "example",
    "panics",
    "safety",
    "notes",
];

/// Titles of the section whose list describes the parameters.
const ARGUMENT_SECTIONS: &[&str] = &["arguments", "parameters", "args"];

/// A Markdown block at the top level of the comment, or a list item inside an arguments
/// section, with its events.
type Events<'a> = Vec<(Event<'a>, Range<usize>)>;

/// Splits a tool's doc comment into the description and the items of its arguments
/// section.
pub(crate) fn tool_docs(doc: &DocText) -> ToolDocs {
    let events: Events<'_> = Parser::new_ext(&doc.text, Options::empty())
        .into_offset_iter()
        .collect();
    let blocks = top_level_blocks(&events);
    let mut docs = ToolDocs::default();
    let mut description = Vec::new();
    let mut section: Option<String> = None;
    let mut seen_section = false;
    for block in blocks {
        if let Some(title) = section_title(block) {
            seen_section = true;
            section = Some(title);
            continue;
        }
        if !seen_section {
            description.push(block);
            continue;
        }
        let in_arguments = section
            .as_deref()
            .is_some_and(|title| ARGUMENT_SECTIONS.contains(&title));
        if in_arguments && matches!(block.first(), Some((Event::Start(Tag::List(_)), _))) {
            for item in list_items(block) {
                if let Some(argument) = argument_item(item, doc) {
                    docs.arguments.push(argument);
                }
            }
        }
    }
    docs.description = description
        .iter()
        .map(|block| render(block))
        .filter(|text| !text.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    docs
}

/// The events of each top-level block (paragraph, heading, list, code block, ...).
fn top_level_blocks<'e, 'a>(
    events: &'e [(Event<'a>, Range<usize>)],
) -> Vec<&'e [(Event<'a>, Range<usize>)]> {
    let mut blocks = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (index, (event, _)) in events.iter().enumerate() {
        match event {
            Event::Start(_) => {
                if depth == 0 {
                    start = index;
                }
                depth += 1;
            }
            Event::End(_) => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    blocks.push(&events[start..=index]);
                }
            }
            _ if depth == 0 => blocks.push(&events[index..=index]),
            _ => {}
        }
    }
    blocks
}

/// The items of a list block, each without its `Start(Item)`/`End(Item)`.
fn list_items<'e, 'a>(
    list: &'e [(Event<'a>, Range<usize>)],
) -> Vec<&'e [(Event<'a>, Range<usize>)]> {
    let inner = &list[1..list.len().saturating_sub(1)];
    top_level_blocks(inner)
        .into_iter()
        .map(|item| &item[1..item.len().saturating_sub(1)])
        .collect()
}

/// The lower-cased title when `block` starts a section: a heading, or a paragraph that is
/// only a bold section name.
fn section_title(block: &[(Event<'_>, Range<usize>)]) -> Option<String> {
    let title = match block.first()? {
        (Event::Start(Tag::Heading { .. }), _) => render(&block[1..block.len() - 1]),
        (Event::Start(Tag::Paragraph), _) => {
            let inner = &block[1..block.len() - 1];
            let (first, rest) = inner.split_first()?;
            if !matches!(first.0, Event::Start(Tag::Strong)) {
                return None;
            }
            let end = rest
                .iter()
                .position(|(event, _)| matches!(event, Event::End(TagEnd::Strong)))?;
            let after = render(&rest[end + 1..]);
            if !(after.is_empty() || after == ":") {
                return None;
            }
            let title = render(&rest[..end]);
            let name = title.trim_end_matches(':').trim().to_lowercase();
            if !SECTIONS.contains(&name.as_str()) {
                return None;
            }
            title
        }
        _ => return None,
    };
    Some(title.trim_end_matches(':').trim().to_lowercase())
}

/// `` `n` - text ``, `n: text`, `n — text` or `**n**: text`, with everything under it.
fn argument_item(item: &[(Event<'_>, Range<usize>)], doc: &DocText) -> Option<ArgumentDoc> {
    // A loose item's first block is a paragraph; a tight item's text comes directly.
    let (first, body) = match item.first() {
        Some((Event::Start(Tag::Paragraph), _)) => {
            let end = item
                .iter()
                .position(|(event, _)| matches!(event, Event::End(TagEnd::Paragraph)))?;
            (&item[1..end], &item[end + 1..])
        }
        _ => {
            let end = item
                .iter()
                .position(|(event, _)| matches!(event, Event::Start(_)) && !is_inline_start(event))
                .unwrap_or(item.len());
            (&item[..end], &item[end..])
        }
    };
    let span = doc.span_at(item.first()?.1.start);
    let (name, rest) = match first.first()? {
        (Event::Code(name), _) => (name.to_string(), &first[1..]),
        (Event::Start(Tag::Strong), _) => {
            let end = first
                .iter()
                .position(|(event, _)| matches!(event, Event::End(TagEnd::Strong)))?;
            (render(&first[1..end]), &first[end + 1..])
        }
        (Event::Text(_), _) => {
            // pulldown-cmark may split plain text in several events (at `_`, `*`, ...).
            let text = render(first);
            let end = text
                .find(|c: char| c.is_whitespace() || c == ':')
                .unwrap_or(text.len());
            let (name, after) = text.split_at(end);
            let text = join_body(strip_separator(after).trim(), body);
            return Some(ArgumentDoc {
                name: name.to_owned(),
                text,
                span,
            });
        }
        _ => return None,
    };
    let rest = render(rest);
    let text = join_body(strip_separator(&rest).trim(), body);
    Some(ArgumentDoc {
        name: name.trim().to_owned(),
        text,
        span,
    })
}

/// The item's first line and the blocks nested under it, as one text.
fn join_body(first: &str, body: &[(Event<'_>, Range<usize>)]) -> String {
    let body = render(body);
    match (first.is_empty(), body.is_empty()) {
        (_, true) => first.to_owned(),
        (true, false) => body,
        (false, false) => format!("{first}\n{body}"),
    }
}

fn is_inline_start(event: &Event<'_>) -> bool {
    matches!(
        event,
        Event::Start(
            Tag::Emphasis | Tag::Strong | Tag::Strikethrough | Tag::Link { .. } | Tag::Image { .. }
        )
    )
}

/// Drops the `-`, `:`, `–` or `—` between an argument's name and its text.
fn strip_separator(text: &str) -> &str {
    let text = text.trim_start();
    ["-", ":", "–", "—"]
        .iter()
        .find_map(|separator| text.strip_prefix(separator))
        .unwrap_or(text)
}

/// Whether a fenced or indented code block is Rust (a doc example), as rustdoc decides:
/// no language, `rust`, or only rustdoc's attributes.
fn is_rust(kind: &CodeBlockKind<'_>) -> bool {
    let CodeBlockKind::Fenced(info) = kind else {
        return true;
    };
    info.split([',', ' ', '\t'])
        .filter(|word| !word.is_empty())
        .all(|word| {
            matches!(
                word,
                "rust"
                    | "ignore"
                    | "no_run"
                    | "should_panic"
                    | "compile_fail"
                    | "test_harness"
                    | "standalone_crate"
            ) || word.starts_with("edition")
                || word.starts_with("ignore-")
                || word.starts_with('{')
        })
}

/// Renders events as clean text: soft breaks become spaces, links keep their text, list
/// items become `- ` lines (indented when nested), Rust code blocks are dropped.
fn render(events: &[(Event<'_>, Range<usize>)]) -> String {
    let mut out = String::new();
    let mut lists: Vec<Option<u64>> = Vec::new();
    let mut skip_code = false;
    // Right after an item's marker, where a loose item's paragraph starts on the same line.
    let mut item_start = false;
    for (event, _) in events {
        if skip_code {
            skip_code = !matches!(event, Event::End(TagEnd::CodeBlock));
            continue;
        }
        let at_item_start = std::mem::take(&mut item_start);
        match event {
            Event::Text(text) => out.push_str(text),
            Event::Code(code) => {
                out.push('`');
                out.push_str(code);
                out.push('`');
            }
            Event::Html(html) | Event::InlineHtml(html) => out.push_str(html),
            Event::SoftBreak => out.push(' '),
            Event::HardBreak => out.push('\n'),
            Event::Rule => block_break(&mut out, "---"),
            Event::Start(Tag::Paragraph) if !at_item_start => block_break(&mut out, ""),
            Event::Start(Tag::Heading { level, .. }) => {
                let hashes = "#".repeat(*level as usize);
                block_break(&mut out, &format!("{hashes} "));
            }
            Event::Start(Tag::CodeBlock(kind)) => {
                if is_rust(kind) {
                    skip_code = true;
                } else {
                    let info = match kind {
                        CodeBlockKind::Fenced(info) => info.as_ref(),
                        CodeBlockKind::Indented => "",
                    };
                    block_break(&mut out, &format!("```{info}\n"));
                }
            }
            Event::End(TagEnd::CodeBlock) => {
                if !out.ends_with('\n') {
                    out.push('\n');
                }
                out.push_str("```");
            }
            Event::Start(Tag::List(first)) => lists.push(*first),
            Event::End(TagEnd::List(_)) => {
                lists.pop();
            }
            Event::Start(Tag::Item) => {
                if !out.is_empty() {
                    out.truncate(out.trim_end().len());
                    out.push('\n');
                }
                out.push_str(&"  ".repeat(lists.len().saturating_sub(1)));
                match lists.last_mut() {
                    Some(Some(number)) => {
                        out.push_str(&format!("{number}. "));
                        *number += 1;
                    }
                    _ => out.push_str("- "),
                }
                item_start = true;
            }
            Event::Start(Tag::Emphasis) | Event::End(TagEnd::Emphasis) => out.push('*'),
            Event::Start(Tag::Strong) | Event::End(TagEnd::Strong) => out.push_str("**"),
            Event::Start(Tag::BlockQuote(_)) => block_break(&mut out, "> "),
            _ => {}
        }
    }
    out.lines()
        .map(str::trim_end)
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned()
}

/// Starts a new block in `out`: a blank line unless `out` is empty, then `prefix`.
fn block_break(out: &mut String, prefix: &str) {
    if !out.trim().is_empty() {
        out.truncate(out.trim_end().len());
        out.push_str("\n\n");
    } else {
        out.clear();
    }
    out.push_str(prefix);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs(text: &str) -> ToolDocs {
        let attrs: Vec<Attribute> = text
            .lines()
            .map(|line| {
                let line = format!(" {line}");
                syn::parse_quote!(#[doc = #line])
            })
            .collect();
        tool_docs(&doc_text(&attrs))
    }

    fn arguments(docs: &ToolDocs) -> Vec<(&str, &str)> {
        docs.arguments
            .iter()
            .map(|argument| (argument.name.as_str(), argument.text.as_str()))
            .collect()
    }

    #[test]
    fn description_stops_at_the_first_heading_and_arguments_are_listed() {
        let docs = docs(
            "Roll dice.\n\nAll of them.\n\n# Arguments\n* `n` - how many dice,\n  1 to 10\n- sides: faces per die\n\n# Errors\n* `x` - not an argument",
        );
        assert_eq!(docs.description, "Roll dice.\n\nAll of them.");
        assert_eq!(
            arguments(&docs),
            [("n", "how many dice, 1 to 10"), ("sides", "faces per die")]
        );
    }

    #[test]
    fn rust_code_blocks_are_dropped_with_their_hidden_lines() {
        let docs = docs(
            "Search the catalogue.\n\n```\n# use golem::RunContext;\n# fn main() {}\nsearch(\"q\");\n```\n\nThen read the results.\n\n```json\n{\"q\": 1}\n```\n\n# Arguments\n* `q` - the query",
        );
        assert_eq!(
            docs.description,
            "Search the catalogue.\n\nThen read the results.\n\n```json\n{\"q\": 1}\n```"
        );
        assert_eq!(arguments(&docs), [("q", "the query")]);
    }

    #[test]
    fn nested_bullets_belong_to_their_argument() {
        let docs = docs(
            "Sort.\n\n## Arguments\n\n- `order` - how to sort:\n  - `asc`: smallest first\n  - `desc`: largest first\n- `limit`: at most this many\n",
        );
        assert_eq!(
            arguments(&docs),
            [
                (
                    "order",
                    "how to sort:\n- `asc`: smallest first\n- `desc`: largest first"
                ),
                ("limit", "at most this many")
            ]
        );
    }

    #[test]
    fn bold_headings_and_item_forms() {
        let docs = docs(
            "Look up a [`City`](crate::City) by *name*.\n\n**Arguments:**\n\n* name — the city's name\n* **country**: an ISO code\n* `days` – how many days\n\n**Returns**\n\n* `x` - not an argument",
        );
        assert_eq!(docs.description, "Look up a `City` by *name*.");
        assert_eq!(
            arguments(&docs),
            [
                ("name", "the city's name"),
                ("country", "an ISO code"),
                ("days", "how many days")
            ]
        );
    }

    #[test]
    fn block_comments_lose_their_star_margin() {
        let attr: Attribute = syn::parse_quote!(
            #[doc = "\n     * Roll dice.\n     *\n     * # Arguments\n     * * `n` - how many\n     "]
        );
        let docs = tool_docs(&doc_text(&[attr]));
        assert_eq!(docs.description, "Roll dice.");
        assert_eq!(arguments(&docs), [("n", "how many")]);
    }

    #[test]
    fn bold_text_that_is_not_a_section_stays_in_the_description() {
        let docs = docs("**Careful:** this deletes files.\n\n**Note**\n\nReally.");
        assert_eq!(
            docs.description,
            "**Careful:** this deletes files.\n\n**Note**\n\nReally."
        );
    }
}
