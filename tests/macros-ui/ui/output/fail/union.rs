#[golem::output]
union Number {
    int: i64,
    float: f64,
}

fn main() {}
