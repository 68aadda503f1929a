//! Typed partial output (DESIGN §7 "Streaming"): while a structured answer streams, the run
//! reports what of it has arrived as the output's `Partial` twin; the complete answer is
//! decoded and validated as before, and a stop mid-stream keeps what arrived.

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use golem::model::function::FunctionModel;
use golem::model::{
    FinishReason, Message, Model, ModelError, ModelRequest, ModelResponse, ModelStream,
    RequestParams, RequestPart, ResponseDelta, ResponsePart, StreamEvent, TextPart, ToolCallPart,
};
use golem::output::{Output, OutputMode};
use golem::run::{CancellationToken, Stopped};
use golem::{Agent, ModelRetry, RunEvent, Stage};

/// A report the model writes, with a nested output, a list, an enum and a whole field.
#[golem::output(validate = check_report)]
#[derive(Debug, PartialEq)]
struct Report {
    title: String,
    tags: Vec<String>,
    author: Option<Person>,
    mood: Mood,
    #[golem(whole)]
    score: Score,
}

#[golem::output]
#[derive(Debug, PartialEq)]
struct Person {
    name: String,
    age: u32,
}

#[golem::output]
#[derive(Debug, PartialEq)]
#[serde(rename_all = "snake_case")]
enum Mood {
    Calm,
    Angry,
}

/// A type with no partial form of its own: `#[golem(whole)]` reads it as itself.
#[derive(
    Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, golem::schema::JsonSchema,
)]
struct Score {
    points: u32,
}

fn check_report(report: &Report) -> Result<(), ModelRetry> {
    if report.title.len() < 5 {
        return Err(ModelRetry::new("the title is too short"));
    }
    Ok(())
}

const REPORT: &str = r#"{"title": "Moon landing", "tags": ["space", "history"], "author": {"name": "Ann", "age": 41}, "mood": "calm", "score": {"points": 95}}"#;

/// The report's arguments, in the fragments the model streams them in.
const FRAGMENTS: [&str; 6] = [
    r#"{"title": "Moon"#,
    r#" landing", "tags": ["space", "hist"#,
    r#"ory"], "author": {"name": "Ann", "a"#,
    r#"ge": 41}, "mood": "ca"#,
    r#"lm", "score": {"points": 9"#,
    r#"5}}"#,
];

fn call_stream(args: &[&str], id: &str) -> Vec<StreamEvent> {
    let mut items = vec![StreamEvent::Delta(ResponseDelta::ToolCallStart {
        part: 0,
        tool_name: "final_result".into(),
        tool_call_id: id.into(),
    })];
    items.extend(args.iter().map(|args| {
        StreamEvent::Delta(ResponseDelta::ToolCallArgs {
            part: 0,
            args: (*args).to_owned(),
        })
    }));
    let whole: String = args.concat();
    items.push(StreamEvent::Done(
        ModelResponse::tool_call("final_result", whole, id).with_usage(12, 30),
    ));
    items
}

/// A streamed text answer of `fragments`.
fn text_stream(fragments: &[&str]) -> Vec<StreamEvent> {
    let mut items: Vec<StreamEvent> = fragments
        .iter()
        .map(|text| {
            StreamEvent::Delta(ResponseDelta::Text {
                part: 0,
                text: (*text).to_owned(),
            })
        })
        .collect();
    items.push(StreamEvent::Done(ModelResponse::text(fragments.concat())));
    items
}

/// The two partials and the output every verdict test streams to.
fn assert_won_by_three(events: &[RunEvent<Verdict>]) {
    assert_eq!(
        partials(events),
        [
            &VerdictPartial::Win {
                margin: None,
                note: None
            },
            &VerdictPartial::Win {
                margin: Some(3),
                note: Some("close".to_owned())
            },
        ]
    );
    let Some(RunEvent::Finished(result)) = events.last() else {
        panic!("the run finished")
    };
    assert_eq!(
        result.output,
        Verdict::Win {
            margin: 3,
            note: Some("close".to_owned())
        }
    );
}

fn partials<O: Output>(events: &[RunEvent<O>]) -> Vec<&O::Partial> {
    events
        .iter()
        .filter_map(|event| match event {
            RunEvent::PartialOutput { partial, .. } => Some(partial),
            _ => None,
        })
        .collect()
}

async fn drain<O: Output>(
    mut events: impl futures_util::Stream<Item = Result<RunEvent<O>, golem::RunError>> + Unpin,
) -> (Vec<RunEvent<O>>, Option<golem::RunError>) {
    let mut seen = Vec::new();
    while let Some(event) = events.next().await {
        match event {
            Ok(event) => seen.push(event),
            Err(error) => return (seen, Some(error)),
        }
    }
    (seen, None)
}

#[tokio::test]
async fn a_streamed_answer_is_reported_field_by_field_as_it_arrives() {
    let model = FunctionModel::new_stream(|_, _| call_stream(&FRAGMENTS, "c1"));
    let agent = Agent::<(), Report>::builder(model).build().unwrap();
    let (events, error) = drain(agent.run_stream("Report on 1969", ())).await;
    assert!(error.is_none());

    let person = |name: Option<&str>, age| PersonPartial {
        name: name.map(str::to_owned),
        age,
    };
    let tags = |tags: &[&str]| Some(tags.iter().map(|tag| (*tag).to_owned()).collect());
    let title = Some("Moon landing".to_owned());
    assert_eq!(
        partials(&events),
        [
            &ReportPartial {
                title: Some("Moon".to_owned()),
                ..ReportPartial::default()
            },
            &ReportPartial {
                title: title.clone(),
                tags: tags(&["space", "hist"]),
                ..ReportPartial::default()
            },
            &ReportPartial {
                title: title.clone(),
                tags: tags(&["space", "history"]),
                author: Some(person(Some("Ann"), None)),
                ..ReportPartial::default()
            },
            // "ca" is no `Mood` yet: the field waits, the others stay.
            &ReportPartial {
                title: title.clone(),
                tags: tags(&["space", "history"]),
                author: Some(person(Some("Ann"), Some(41))),
                ..ReportPartial::default()
            },
            &ReportPartial {
                title: title.clone(),
                tags: tags(&["space", "history"]),
                author: Some(person(Some("Ann"), Some(41))),
                mood: Some(MoodPartial::Calm),
                // `9` may be the start of `95`: a number at the very end waits.
                score: None,
            },
            &ReportPartial {
                title: title.clone(),
                tags: tags(&["space", "history"]),
                author: Some(person(Some("Ann"), Some(41))),
                mood: Some(MoodPartial::Calm),
                score: Some(Score { points: 95 }),
            },
        ]
    );

    // Each partial follows the delta it was read after, all before the response.
    let kinds: Vec<&str> = events
        .iter()
        .map(|event| match event {
            RunEvent::RequestSent { .. } => "request",
            RunEvent::Delta { .. } => "delta",
            RunEvent::PartialOutput { turn: 1, .. } => "partial",
            RunEvent::ResponseReceived { .. } => "response",
            RunEvent::OutputAccepted { .. } => "accepted",
            RunEvent::Finished(_) => "finished",
            _ => "other",
        })
        .collect();
    let mut expected = vec!["request", "delta"];
    expected.extend(["delta", "partial"].repeat(6));
    expected.extend(["response", "accepted", "finished"]);
    assert_eq!(kinds, expected);

    // The answer itself is decoded as the real type, and the run is the one `run()` gives.
    let Some(RunEvent::Finished(result)) = events.last() else {
        panic!("the run finished")
    };
    let model = FunctionModel::new(|_, _| {
        ModelResponse::tool_call("final_result", REPORT, "c1").with_usage(12, 30)
    });
    let plain = Agent::<(), Report>::builder(model)
        .build()
        .unwrap()
        .run("Report on 1969", ())
        .await
        .unwrap();
    assert_eq!(result.output, plain.output);
    assert_eq!(result.messages, plain.messages);
    assert_eq!(result.usage, plain.usage);
}

/// A verdict: an enum, so golem wraps its schema as `{"response": ...}` for the model.
#[golem::output]
#[derive(Debug, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Verdict {
    Win { margin: u32, note: Option<String> },
    Draw,
}

#[tokio::test]
async fn native_output_streams_as_text_and_is_unwrapped_before_it_is_read() {
    let model = FunctionModel::new_stream(|_, _| {
        text_stream(&[
            r#"{"response": {"kind": "wi"#,
            r#"n", "margin": 3"#,
            r#", "note": "close"}}"#,
        ])
    });
    let agent = Agent::<(), Verdict>::builder(model)
        .output_mode(OutputMode::Native)
        .build()
        .unwrap();
    let (events, error) = drain(agent.run_stream("Who won?", ())).await;
    assert!(error.is_none());
    // `"wi"` is no variant yet, so the first fragment reports nothing; `3` at the very end
    // may still grow, so it waits for the next.
    assert_won_by_three(&events);
}

#[tokio::test]
async fn prompted_output_is_read_from_the_json_in_the_streaming_text() {
    let model = FunctionModel::new_stream(|_, _| {
        text_stream(&[
            "The verdict:\n```js",
            "on\n{\"response\": {\"kind\": \"win\"",
            r#", "margin": 3, "note": "close"}}"#,
            "\n```\nGood game.",
        ])
    });
    let agent = Agent::<(), Verdict>::builder(model)
        .output_mode(OutputMode::Prompted)
        .build()
        .unwrap();
    let (events, error) = drain(agent.run_stream("Who won?", ())).await;
    assert!(error.is_none());
    // Nothing reads before the first brace; the prose after the closing fence adds nothing.
    assert_won_by_three(&events);
}

#[tokio::test]
async fn a_rejected_answer_is_marked_after_its_partials_and_the_retry_streams_on() {
    let model = FunctionModel::new_stream(|messages: &[Message], _| match messages.len() {
        1 => call_stream(
            &[
                r#"{"title": "Mo"#,
                r#"on", "tags": [], "mood": "calm", "score": {"points": 1}}"#,
            ],
            "c1",
        ),
        _ => call_stream(&FRAGMENTS, "c2"),
    });
    let agent = Agent::<(), Report>::builder(model)
        .output_retries(1)
        .build()
        .unwrap();
    let (events, error) = drain(agent.run_stream("Report on 1969", ())).await;
    assert!(error.is_none());
    let seen: Vec<String> = events
        .iter()
        .filter_map(|event| match event {
            RunEvent::PartialOutput { turn, partial } => {
                Some(format!("partial {turn}: {:?}", partial.title))
            }
            RunEvent::Rejected(rejection) => Some(format!(
                "rejected {}: {} ({} of {})",
                rejection.turn, rejection.feedback, rejection.retry, rejection.max_retries
            )),
            RunEvent::OutputAccepted { turn } => Some(format!("accepted {turn}")),
            _ => None,
        })
        .collect();
    let mut expected = vec![
        r#"partial 1: Some("Mo")"#.to_owned(),
        r#"partial 1: Some("Moon")"#.to_owned(),
        "rejected 1: the title is too short (1 of 1)".to_owned(),
        r#"partial 2: Some("Moon")"#.to_owned(),
    ];
    expected.extend(std::iter::repeat_n(
        r#"partial 2: Some("Moon landing")"#.to_owned(),
        5,
    ));
    expected.push("accepted 2".to_owned());
    assert_eq!(seen, expected);
}

#[tokio::test]
async fn text_output_streams_as_text_without_partials() {
    let model = FunctionModel::new_stream(|_, _| {
        vec![
            StreamEvent::Delta(ResponseDelta::Text {
                part: 0,
                text: "{\"a\": 1}".into(),
            }),
            StreamEvent::Done(ModelResponse::text("{\"a\": 1}")),
        ]
    });
    let agent = Agent::<(), String>::builder(model).build().unwrap();
    let (events, error) = drain(agent.run_stream("Hi", ())).await;
    assert!(error.is_none());
    assert!(partials(&events).is_empty());
}

/// A model that streams `items`, then waits forever for the rest.
#[derive(Debug)]
struct Stalling {
    items: Vec<StreamEvent>,
}

impl Model for Stalling {
    fn name(&self) -> &str {
        "stalling"
    }

    fn system(&self) -> &str {
        "test"
    }

    fn request<'a>(
        &'a self,
        _messages: &'a [Message],
        _params: &'a RequestParams,
    ) -> futures_util::future::BoxFuture<'a, Result<ModelResponse, ModelError>> {
        Box::pin(std::future::pending())
    }

    fn request_stream<'a>(
        &'a self,
        _messages: &'a [Message],
        _params: &'a RequestParams,
    ) -> ModelStream<'a> {
        let items = futures_util::stream::iter(self.items.clone().into_iter().map(Ok));
        let stream: BoxStream<'a, _> = Box::pin(items.chain(futures_util::stream::pending()));
        stream
    }
}

#[tokio::test]
async fn a_stop_mid_stream_keeps_what_arrived_as_an_incomplete_response() {
    let items = vec![
        StreamEvent::Delta(ResponseDelta::Text {
            part: 0,
            text: "Writing it".into(),
        }),
        StreamEvent::Delta(ResponseDelta::ToolCallStart {
            part: 1,
            tool_name: "final_result".into(),
            tool_call_id: "c1".into(),
        }),
        StreamEvent::Delta(ResponseDelta::ToolCallArgs {
            part: 1,
            args: r#"{"title": "Moon"#.into(),
        }),
    ];
    let agent = Agent::<(), Report>::builder(Stalling { items })
        .build()
        .unwrap();
    let token = CancellationToken::new();
    let mut run = agent
        .start("Report on 1969", ())
        .with_cancellation(token.clone());
    let mut events = run.events();
    let mut partial_seen = false;
    let mut error = None;
    while let Some(event) = events.next().await {
        match event {
            Ok(RunEvent::PartialOutput { partial, .. }) => {
                assert_eq!(partial.title.as_deref(), Some("Moon"));
                partial_seen = true;
                token.cancel();
            }
            Ok(_) => {}
            Err(stopped) => {
                error = Some(stopped);
                break;
            }
        }
    }
    drop(events);
    assert!(partial_seen);
    let error = error.expect("the run stopped");
    assert_eq!(error.stage(), Stage::Stopped);
    assert_eq!(error.stopped(), Some(&Stopped::Cancelled), "{error}");

    let mut incomplete = ModelResponse::new(vec![
        ResponsePart::Text(TextPart::new("Writing it")),
        ResponsePart::ToolCall(ToolCallPart::new(
            "final_result",
            r#"{"title": "Moon"#,
            "c1",
        )),
    ]);
    incomplete.finish_reason = Some(FinishReason::Incomplete);
    // The cut-off call is answered as not run, so the history stays valid to resume, and
    // the next request says the response was not used.
    assert_eq!(
        error.messages(),
        [
            Message::Request(ModelRequest::user_prompt("Report on 1969")),
            Message::from(incomplete),
            Message::Request(ModelRequest::new(vec![
                RequestPart::tool_return(
                    "final_result",
                    "c1",
                    "Not run: the run stopped before this call.",
                ),
                RequestPart::retry_prompt(
                    "The previous response was interrupted before it was complete; it was not used. Respond again."
                ),
            ])),
        ]
    );
    assert_eq!(error.usage().requests, 1);
    assert_eq!(error.usage().input_tokens + error.usage().output_tokens, 0);
}

/// The partials a run reports while the output call's arguments stream in `fragments`.
async fn streamed_partials<O>(fragments: &[&str]) -> Vec<O::Partial>
where
    O: Output,
    O::Partial: Clone,
{
    let fragments: Vec<String> = fragments
        .iter()
        .map(|&fragment| fragment.to_owned())
        .collect();
    let model = FunctionModel::new_stream(move |_, _| {
        let fragments: Vec<&str> = fragments.iter().map(String::as_str).collect();
        call_stream(&fragments, "c1")
    });
    let agent = Agent::<(), O>::builder(model)
        .build()
        .expect("a valid agent");
    let (events, error) = drain(agent.run_stream("Go", ())).await;
    assert!(error.is_none(), "{error:?}");
    partials(&events).into_iter().cloned().collect()
}

/// A trip: lists of structs, of plain values, of tagged enums, a nested list and a map.
#[golem::output]
#[derive(Debug, PartialEq)]
struct Trip {
    stops: Vec<Stop>,
    moods: Vec<Mood>,
    legs: Vec<Leg>,
    weeks: Vec<Vec<Mood>>,
    ratings: Vec<u32>,
    moods_by_city: std::collections::BTreeMap<String, Mood>,
}

#[golem::output]
#[derive(Debug, PartialEq)]
struct Stop {
    city: String,
    nights: u32,
}

#[golem::output]
#[derive(Debug, PartialEq)]
#[serde(tag = "by", rename_all = "snake_case")]
enum Leg {
    Train { line: String },
    Walk,
}

#[tokio::test]
async fn a_list_keeps_the_items_that_read_while_one_is_in_flight() {
    const TRIP: [&str; 8] = [
        r#"{"stops": [{"city": "Paris", "nights": 2}, {"city": "Ly"#,
        r#"on", "nights": 3}], "moods": ["calm", "ang"#,
        r#"ry"], "legs": [{"by": "train", "line": "TGV"}, {"by": "wa"#,
        r#"lk"}, {"line": "RE"#,
        r#"1", "by": "train"}], "weeks": [["calm"], ["angry", "ca"#,
        r#"lm"]], "ratings": [4, 5"#,
        r#"], "moods_by_city": {"Paris": "calm", "Lyon": "an"#,
        r#"gry"}}"#,
    ];
    let stop = |city: &str, nights| StopPartial {
        city: Some(city.to_owned()),
        nights,
    };
    let train = |line: &str| LegPartial::Train {
        line: Some(line.to_owned()),
    };
    let stops = Some(vec![stop("Paris", Some(2)), stop("Lyon", Some(3))]);
    let moods = Some(vec![MoodPartial::Calm, MoodPartial::Angry]);
    let legs = Some(vec![train("TGV"), LegPartial::Walk, train("RE1")]);
    let weeks = Some(vec![
        vec![MoodPartial::Calm],
        vec![MoodPartial::Angry, MoodPartial::Calm],
    ]);
    let done = TripPartial {
        stops: stops.clone(),
        moods: moods.clone(),
        legs: legs.clone(),
        weeks: weeks.clone(),
        ratings: Some(vec![4, 5]),
        moods_by_city: None,
    };
    assert_eq!(
        streamed_partials::<Trip>(&TRIP).await,
        [
            // The second stop is in flight: it reads as far as it has arrived.
            TripPartial {
                stops: Some(vec![stop("Paris", Some(2)), stop("Ly", None)]),
                ..TripPartial::default()
            },
            // "ang" is no mood yet: the list keeps the one before it.
            TripPartial {
                stops: stops.clone(),
                moods: Some(vec![MoodPartial::Calm]),
                ..TripPartial::default()
            },
            // A tagged leg whose tag is still arriving is left out.
            TripPartial {
                stops: stops.clone(),
                moods: moods.clone(),
                legs: Some(vec![train("TGV")]),
                ..TripPartial::default()
            },
            // So is one whose tag has not arrived.
            TripPartial {
                stops: stops.clone(),
                moods: moods.clone(),
                legs: Some(vec![train("TGV"), LegPartial::Walk]),
                ..TripPartial::default()
            },
            // An inner list keeps its prefix too.
            TripPartial {
                stops: stops.clone(),
                moods: moods.clone(),
                legs: legs.clone(),
                weeks: Some(vec![vec![MoodPartial::Calm], vec![MoodPartial::Angry]]),
                ..TripPartial::default()
            },
            // `5` may be the start of `50`: it waits.
            TripPartial {
                stops: stops.clone(),
                moods: moods.clone(),
                legs: legs.clone(),
                weeks: weeks.clone(),
                ratings: Some(vec![4]),
                ..TripPartial::default()
            },
            // A map keeps the entries that read.
            TripPartial {
                moods_by_city: Some([("Paris".to_owned(), MoodPartial::Calm)].into()),
                ..done.clone()
            },
            TripPartial {
                moods_by_city: Some(
                    [
                        ("Lyon".to_owned(), MoodPartial::Angry),
                        ("Paris".to_owned(), MoodPartial::Calm),
                    ]
                    .into(),
                ),
                ..done.clone()
            },
        ]
    );
}

/// A pair, as a JSON array.
#[golem::output]
#[derive(Debug, PartialEq)]
struct Pair(String, Vec<Mood>, u32);

#[tokio::test]
async fn a_tuple_struct_reads_the_elements_that_have_arrived() {
    const PAIR: [&str; 4] = [
        r#"{"response": ["Ro"#,
        r#"me", ["calm", "an"#,
        r#"gry"], 1"#,
        r#"2]}"#,
    ];
    assert_eq!(
        streamed_partials::<Pair>(&PAIR).await,
        [
            PairPartial(Some("Ro".to_owned()), None, None),
            PairPartial(Some("Rome".to_owned()), Some(vec![MoodPartial::Calm]), None),
            PairPartial(
                Some("Rome".to_owned()),
                Some(vec![MoodPartial::Calm, MoodPartial::Angry]),
                None
            ),
            PairPartial(
                Some("Rome".to_owned()),
                Some(vec![MoodPartial::Calm, MoodPartial::Angry]),
                Some(12)
            ),
        ]
    );
}

/// A tree: a field typed `Vec<Self>` names the twin's own type in the twin.
#[golem::output]
#[derive(Debug, PartialEq)]
struct Tree {
    name: String,
    children: Vec<Self>,
}

#[tokio::test]
async fn a_recursive_field_reads_as_the_twin() {
    const TREE: [&str; 3] = [
        r#"{"name": "root", "children": [{"name": "a", "children": []}, {"na"#,
        r#"me": "b", "chi"#,
        r#"ldren": []}]}"#,
    ];
    let leaf = |name: &str, children: Option<Vec<TreePartial>>| TreePartial {
        name: Some(name.to_owned()),
        children,
    };
    assert_eq!(
        streamed_partials::<Tree>(&TREE).await,
        [
            leaf(
                "root",
                Some(vec![leaf("a", Some(vec![])), TreePartial::default()])
            ),
            leaf("root", Some(vec![leaf("a", Some(vec![])), leaf("b", None)])),
            leaf(
                "root",
                Some(vec![leaf("a", Some(vec![])), leaf("b", Some(vec![]))])
            ),
        ]
    );
}

/// A log: one long list.
#[golem::output]
#[derive(Debug, PartialEq)]
struct Log {
    lines: Vec<String>,
}

#[tokio::test]
async fn a_long_answer_is_read_less_often_as_it_grows_and_last_as_a_whole() {
    let lines: Vec<String> = (0..300).map(|n| format!("line {n}")).collect();
    let mut fragments = vec![r#"{"lines": ["#.to_owned()];
    fragments.extend(lines.iter().map(|line| format!(r#""{line}", "#)));
    fragments.push(r#""end"]}"#.to_owned());
    let fragments: Vec<&str> = fragments.iter().map(String::as_str).collect();
    let seen = streamed_partials::<Log>(&fragments).await;
    let mut all = lines.clone();
    all.push("end".to_owned());
    let counts: Vec<usize> = seen
        .iter()
        .map(|partial| partial.lines.as_ref().map_or(0, Vec::len))
        .collect();
    // A partial after each of the first deltas...
    assert_eq!(counts[..20], (0..20).collect::<Vec<_>>());
    // ... then fewer as the answer grows, each the answer as far as it has arrived...
    assert!(seen.len() < 100, "{} partials for 302 deltas", seen.len());
    assert!(
        counts.windows(2).all(|pair| pair[0] < pair[1]),
        "{counts:?}"
    );
    for partial in &seen {
        let read = partial.lines.as_deref().unwrap_or_default();
        assert_eq!(read, &all[..read.len()]);
    }
    // ... and the last one the whole answer.
    assert_eq!(seen.last(), Some(&LogPartial { lines: Some(all) }));
}

/// An answer with a tuple variant.
#[golem::output]
#[derive(Debug, PartialEq)]
enum Move {
    Step(String, u32),
    Stay,
}

#[test]
fn a_tuple_variant_reads_the_elements_that_have_arrived() {
    assert_eq!(
        Move::decode_partial(serde_json::json!({"Step": ["north"]})),
        Some(MovePartial::Step(Some("north".to_owned()), None))
    );
    assert_eq!(
        Move::decode_partial(serde_json::json!({"Step": ["north", 3]})),
        Some(MovePartial::Step(Some("north".to_owned()), Some(3)))
    );
    assert_eq!(
        Move::decode_partial(serde_json::json!("Stay")),
        Some(MovePartial::Stay)
    );
}

/// A twin whose fields are renamed: it serializes under the names the answer uses.
#[golem::output]
#[derive(Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
struct Visit {
    city_name: String,
    #[serde(rename = "when")]
    date: Option<String>,
    moods: Vec<Mood>,
}

#[tokio::test]
async fn a_twin_serializes_as_the_json_that_has_arrived() {
    // Each partial of the streamed report, sent on as JSON: the fields still to come are
    // left out, the nested twin, the list and the enum are their JSON so far.
    let model = FunctionModel::new_stream(|_, _| call_stream(&FRAGMENTS, "c1"));
    let agent = Agent::<(), Report>::builder(model).build().unwrap();
    let (events, error) = drain(agent.run_stream("Report on 1969", ())).await;
    assert!(error.is_none());
    let sent: Vec<serde_json::Value> = partials(&events)
        .into_iter()
        .map(|partial| serde_json::to_value(partial).unwrap())
        .collect();
    let tags = serde_json::json!(["space", "history"]);
    assert_eq!(
        sent,
        [
            serde_json::json!({"title": "Moon"}),
            serde_json::json!({"title": "Moon landing", "tags": ["space", "hist"]}),
            serde_json::json!({"title": "Moon landing", "tags": tags, "author": {"name": "Ann"}}),
            serde_json::json!({
                "title": "Moon landing", "tags": tags, "author": {"name": "Ann", "age": 41},
            }),
            serde_json::json!({
                "title": "Moon landing", "tags": tags, "author": {"name": "Ann", "age": 41},
                "mood": "calm",
            }),
            serde_json::json!({
                "title": "Moon landing", "tags": tags, "author": {"name": "Ann", "age": 41},
                "mood": "calm", "score": {"points": 95},
            }),
        ]
    );

    // Renamed fields keep the answer's names; a tuple's elements keep their places.
    let visit = Visit::decode_partial(serde_json::json!({"cityName": "Ro", "moods": []}));
    assert_eq!(
        serde_json::to_value(visit.unwrap()).unwrap(),
        serde_json::json!({"cityName": "Ro", "moods": []})
    );
    let visit = Visit::decode_partial(serde_json::json!({"when": "May"})).unwrap();
    assert_eq!(visit.date.as_deref(), Some("May"));
    assert_eq!(
        serde_json::to_value(visit).unwrap(),
        serde_json::json!({"when": "May"})
    );
    assert_eq!(
        serde_json::to_value(PairPartial(Some("Rome".to_owned()), None, Some(12))).unwrap(),
        serde_json::json!(["Rome", null, 12])
    );
    assert_eq!(
        serde_json::to_value(MovePartial::Step(Some("north".to_owned()), None)).unwrap(),
        serde_json::json!({"Step": ["north", null]})
    );
}
