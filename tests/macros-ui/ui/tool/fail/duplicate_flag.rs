#[golem::tool(requires_approval, max_retries = 1, requires_approval = false)]
async fn delete_file(path: String) -> String {
    path
}

fn main() {}
