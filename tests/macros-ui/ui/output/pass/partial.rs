// Every output has a partial twin, read from incomplete JSON while the answer streams.
use golem::output::{Output, PartialValue};

#[golem::output]
#[derive(Debug)]
struct Report {
    /// Grows as its text streams.
    title: String,
    tags: Vec<String>,
    author: Option<Person>,
    #[serde(rename = "feeling")]
    mood: Mood,
    /// Read as itself: an address has no partial form.
    #[golem(whole)]
    host: std::net::Ipv4Addr,
    #[serde(skip)]
    cache: u8,
}

#[golem::output]
#[derive(Debug)]
struct Person {
    name: String,
}

#[golem::output]
#[derive(Debug)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Mood {
    Calm,
    Excited { level: u8 },
}

#[golem::output]
struct Score(u32);

/// Sent as its one field.
#[golem::output]
#[serde(transparent)]
struct Points {
    value: u32,
}

/// A twin cannot tell untagged variants apart: the partial form is the JSON.
#[golem::output]
#[serde(untagged)]
enum Shape {
    Circle { radius: f64 },
    Rect { w: f64, h: f64 },
}

#[golem::output]
#[serde(tag = "type")]
enum Kind {
    Search { query: String },
}

/// A flattened enum: `None` until its tag arrives.
#[golem::output]
struct Request {
    id: u32,
    #[serde(flatten)]
    kind: Kind,
}

#[golem::output]
struct Page<T> {
    items: Vec<T>,
}

fn main() {
    let partial = Report::decode_partial(serde_json::json!({
        "title": "Moo",
        "feeling": {"kind": "excited"},
        "host": "10.0.0.1",
    }))
    .expect("reads");
    assert_eq!(
        partial,
        ReportPartial {
            title: Some("Moo".to_owned()),
            tags: None,
            author: None,
            mood: Some(MoodPartial::Excited { level: None }),
            host: Some(std::net::Ipv4Addr::new(10, 0, 0, 1)),
        }
    );
    let _: Option<PersonPartial> = None;
    assert_eq!(
        Points::decode_partial(serde_json::json!(5)),
        Some(PointsPartial { value: Some(5) })
    );
    let rect = serde_json::json!({"w": 1.0, "h": 2.0});
    assert_eq!(Shape::decode_partial(rect.clone()), Some(rect));
    assert_eq!(
        Request::decode_partial(serde_json::json!({"id": 1, "type": "Search", "query": "ru"})),
        Some(RequestPartial {
            id: Some(1),
            kind: Some(KindPartial::Search { query: Some("ru".to_owned()) }),
        })
    );
    assert_eq!(
        Request::decode_partial(serde_json::json!({"id": 1})),
        Some(RequestPartial { id: Some(1), kind: None })
    );
    assert_eq!(Score::decode_partial(serde_json::json!(3)), Some(ScorePartial(Some(3))));
    // A generic output's partial form is its JSON so far.
    let json: <Page<Score> as PartialValue>::Partial = serde_json::json!({"items": [1]});
    assert_eq!(Page::<Score>::decode_partial(json.clone()), Some(json));
}
