//! Structs, enums, generic and tuple structs; a type that already derives a trait keeps
//! its own derive.

use golem::output::{Output, OutputKind};

/// A verdict.
#[golem::output]
#[derive(Debug)]
struct Verdict {
    winner: String,
    #[serde(default)]
    score: u32,
}

#[golem::output]
#[derive(Debug, serde::Serialize)]
#[serde(rename_all = "snake_case")]
enum Outcome {
    HomeWin,
    Draw,
    AwayWin { margin: u32 },
}

#[golem::output]
struct Page<T> {
    items: Vec<T>,
}

#[golem::output]
struct Score(u32);

fn assert_output<T: Output>() {
    assert!(matches!(T::kind(), OutputKind::Structured(_)));
}

fn main() {
    assert_output::<Verdict>();
    assert_output::<Outcome>();
    assert_output::<Page<Verdict>>();
    assert_output::<Score>();
    let verdict = Verdict::decode(r#"{"winner": "Ann"}"#).expect("decodes");
    assert_eq!((verdict.winner.as_str(), verdict.score), ("Ann", 0));
    assert!(matches!(
        Outcome::decode(r#"{"away_win": {"margin": 2}}"#).expect("decodes"),
        Outcome::AwayWin { margin: 2 }
    ));
    assert_eq!(serde_json::to_string(&Score(3)).expect("serializes"), "3");
}
