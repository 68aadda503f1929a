/**
 * Sort the rows.
 *
 * **Arguments**
 *
 * - ordre: how to sort them:
 *   - `asc`: smallest first
 */
#[golem::tool]
async fn sort_rows(order: String) -> String {
    order
}

fn main() {}
