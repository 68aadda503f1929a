//! Doc comments are read as Markdown: a doc example (with `# ` hidden lines) is not a
//! heading, bullets nested under an argument are part of it, `/** */` comments,
//! `## Arguments` and `**Arguments**` headings, and the `` * `n` - ``, `- n:` and `* n —`
//! item forms all describe parameters. A nested bullet naming no parameter is no error.

use golem::tool::Tool;

/// Search the catalogue.
///
/// ```
/// # fn hidden() {}
/// let hits = search("rust".to_owned());
/// ```
///
/// # Arguments
/// * `query` - what to look for
#[golem::tool]
async fn search(query: String) -> Vec<String> {
    vec![query]
}

/// Sort the rows.
///
/// ## Arguments
/// - order: how to sort them:
///   - `asc`: smallest first
///   - `desc`: largest first
#[golem::tool]
async fn sort_rows(order: String) -> String {
    order
}

/**
 * Look up a city's weather.
 *
 * **Arguments**
 *
 * * city — the city's name
 */
#[golem::tool]
async fn weather(city: String) -> String {
    city
}

fn main() {
    let search = Tool::<()>::definition(&Search);
    assert_eq!(search.description.as_deref(), Some("Search the catalogue."));
    assert_eq!(
        search.parameters["properties"]["query"]["description"],
        "what to look for"
    );
    let sort = Tool::<()>::definition(&SortRows);
    assert_eq!(
        sort.parameters["properties"]["order"]["description"],
        "how to sort them:\n- `asc`: smallest first\n- `desc`: largest first"
    );
    let weather = Tool::<()>::definition(&Weather);
    assert_eq!(weather.description.as_deref(), Some("Look up a city's weather."));
    assert_eq!(
        weather.parameters["properties"]["city"]["description"],
        "the city's name"
    );
}
