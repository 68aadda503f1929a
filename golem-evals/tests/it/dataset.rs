//! Datasets: YAML and JSON, loaded and saved, errors, and the committed schema.
//!
//! The schema file is checked against what the code generates; after a deliberate change
//! to the format, regenerate it with `GOLEM_BLESS=1 cargo test -p golem-evals --test
//! dataset` and review the diff.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use golem_evals::{Case, Dataset, DatasetError};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
struct Question {
    text: String,
    language: String,
}

fn dataset() -> Dataset<Question, u32> {
    Dataset::new([
        Case::new(
            "two plus two",
            Question {
                text: "What is 2 + 2?".to_owned(),
                language: "en".to_owned(),
            },
        )
        .expect(4)
        .meta("difficulty", "easy"),
        Case::new(
            "open",
            Question {
                text: "Combien font 3 + 3 ?".to_owned(),
                language: "fr".to_owned(),
            },
        ),
    ])
    .named("arithmetic")
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("golem-evals-dataset");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn yaml_reads_typed_inputs_expected_outputs_and_metadata() {
    let yaml = "\
name: arithmetic
cases:
  - name: two plus two
    input:
      text: What is 2 + 2?
      language: en
    expected: 4
    metadata:
      difficulty: easy
  - name: open
    input: {text: Combien font 3 + 3 ?, language: fr}
";
    assert_eq!(
        Dataset::<Question, u32>::from_yaml(yaml).unwrap(),
        dataset()
    );
}

#[test]
fn a_dataset_saved_as_yaml_or_json_loads_back_the_same() {
    for name in ["sums.yaml", "sums.yml", "sums.json"] {
        let path = scratch(name);
        dataset().save(&path).unwrap();
        assert_eq!(
            Dataset::<Question, u32>::load(&path).unwrap(),
            dataset(),
            "{name}"
        );
    }
    let json: Value = serde_json::from_str(&dataset().to_json().unwrap()).unwrap();
    assert_eq!(
        json,
        json!({
            "name": "arithmetic",
            "cases": [
                {
                    "name": "two plus two",
                    "input": {"text": "What is 2 + 2?", "language": "en"},
                    "expected": 4,
                    "metadata": {"difficulty": "easy"}
                },
                {"name": "open", "input": {"text": "Combien font 3 + 3 ?", "language": "fr"}}
            ]
        })
    );
}

#[test]
fn bad_files_are_typed_errors() {
    let unknown =
        Dataset::<String, String>::from_yaml("cases:\n  - name: a\n    input: x\n    expect: y\n")
            .unwrap_err();
    assert!(
        matches!(&unknown, DatasetError::Yaml { message } if message.contains("unknown field `expect`")),
        "{unknown}"
    );
    let wrong_type = Dataset::<String, u32>::from_json(
        r#"{"cases": [{"name": "a", "input": "x", "expected": "four"}]}"#,
    )
    .unwrap_err();
    assert_eq!(
        wrong_type.to_string(),
        "JSON dataset: invalid type: string \"four\", expected u32 at line 1 column 57"
    );
    let twice = Dataset::<String, String>::from_yaml(
        "cases:\n  - {name: a, input: x}\n  - {name: a, input: y}\n",
    )
    .unwrap_err();
    assert_eq!(
        twice,
        DatasetError::DuplicateCase {
            name: "a".to_owned()
        }
    );
    assert_eq!(
        twice.to_string(),
        "two cases are named `a`: case names must be unique"
    );
    let format = Dataset::<String, String>::load("cases.toml").unwrap_err();
    assert_eq!(
        format.to_string(),
        "cases.toml: a dataset file ends in .yaml, .yml or .json"
    );
    let missing = Dataset::<String, String>::load(scratch("missing.yaml")).unwrap_err();
    assert!(matches!(missing, DatasetError::Io { .. }), "{missing}");
}

#[test]
fn the_committed_schema_is_the_one_the_code_generates() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/dataset.schema.json");
    let generated =
        serde_json::to_string_pretty(&Dataset::<Value, Value>::json_schema()).unwrap() + "\n";
    if std::env::var_os("GOLEM_BLESS").is_some() {
        std::fs::write(path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert_eq!(
        committed, generated,
        "dataset.schema.json is stale: run `GOLEM_BLESS=1 cargo test -p golem-evals --test it dataset::` and review the diff"
    );
}

#[test]
fn the_typed_schema_describes_the_inputs_and_expected_outputs() {
    let schema = Dataset::<Question, u32>::json_schema();
    let case = &schema["$defs"]["Case"];
    assert_eq!(case["required"], json!(["name", "input"]));
    assert_eq!(case["additionalProperties"], json!(false));
    assert_eq!(
        schema["$defs"]["Question"]["required"],
        json!(["text", "language"])
    );
}
