//! `requires_approval` marks a tool whose calls wait for the caller's approval; alone it
//! means `true`, and `= false` is accepted too.

use golem::tool::Tool;

/// Delete a file.
#[golem::tool(requires_approval, max_retries = 1)]
async fn delete_file(path: String) -> String {
    path
}

/// List a folder.
#[golem::tool(requires_approval = false)]
async fn list_folder(path: String) -> Vec<String> {
    vec![path]
}

fn main() {
    assert!(Tool::<()>::requires_approval(&DeleteFile));
    assert!(!Tool::<()>::requires_approval(&ListFolder));
}
