//! The MCP example, run offline with its scripted model against the real reference server:
//! what it prints is checked line by line, so a newcomer sees exactly this.

#![allow(dead_code)]

#[path = "../main.rs"]
mod mcp;

#[path = "../../../tests/mcp/servers.rs"]
mod mcp_servers;

fn rejections(output: &str) -> usize {
    output
        .lines()
        .filter(|line| line.starts_with("rejected"))
        .count()
}

#[tokio::test]
async fn mcp_fixes_a_sum_the_real_server_rejected() {
    let mut command = std::process::Command::new("node");
    command.arg(mcp_servers::everything_server()).arg("stdio");
    let output = mcp::run(mcp::scripted_model(), command).await.unwrap();

    assert_eq!(rejections(&output), 1);
    assert_eq!(
        output,
        "\
user     │ What is two plus 3?
model    │ calls get-sum({\"a\": \"two\", \"b\": 3})
rejected │ get-sum, retry 1 of 1: MCP error -32602: Input validation error: Invalid arguments for tool get-sum: Invalid input: expected number, received string at a
model    │ calls get-sum({\"a\": 2, \"b\": 3})
tool     │ get-sum → The sum of 2 and 3 is 5.
model    │ 2 + 3 = 5.
usage    │ 3 requests, 825 input + 52 output tokens, 2 tool calls; rounds that ended in a rejection: 1 requests, 232 tokens
answer: 2 + 3 = 5.
"
    );
}
