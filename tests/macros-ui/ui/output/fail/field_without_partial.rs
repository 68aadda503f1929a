#[golem::output]
struct Verdict {
    winner: String,
    host: std::net::Ipv4Addr,
}

fn main() {}
