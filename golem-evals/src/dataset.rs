//! [`Dataset`]s of [`Case`]s, loaded from and saved to YAML or JSON.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One case of a dataset: a name, the input the task runs on, the output expected (if
/// the case has one) and free-form metadata for evaluators and reports.
///
/// ```
/// use golem_evals::Case;
///
/// let case = Case::new("capital of France", "What is the capital of France?".to_owned())
///     .expect("Paris".to_owned())
///     .meta("difficulty", "easy");
/// assert_eq!(case.expected.as_deref(), Some("Paris"));
/// assert_eq!(case.metadata["difficulty"], "easy");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(
    description = "One case: a name, the input the task runs on, the output expected (if any) and metadata."
)]
pub struct Case<I, E> {
    /// The case's name, unique in its dataset: reports and comparisons match cases by it.
    pub name: String,
    /// What the task runs on.
    pub input: I,
    /// The output expected, for the evaluators that compare with one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<E>,
    /// Anything else about the case (a difficulty, a tag, a source), for evaluators and
    /// readers.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metadata: BTreeMap<String, Value>,
}

impl<I, E> Case<I, E> {
    /// A case named `name` on `input`, with no expected output and no metadata.
    pub fn new(name: impl Into<String>, input: I) -> Self {
        Case {
            name: name.into(),
            input,
            expected: None,
            metadata: BTreeMap::new(),
        }
    }

    /// Sets the output expected.
    #[must_use]
    pub fn expect(mut self, expected: E) -> Self {
        self.expected = Some(expected);
        self
    }

    /// Adds one metadata entry.
    #[must_use]
    pub fn meta(mut self, key: impl Into<String>, value: impl Into<Value>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }
}

/// A list of [`Case`]s, with an optional name: what an [`Experiment`](crate::Experiment)
/// runs over.
///
/// The file format is the same in YAML and JSON; `golem-evals/dataset.schema.json` is its
/// JSON schema for editors (with any input and expected output), and
/// [`Dataset::json_schema`] gives the schema of a dataset of particular types.
///
/// ```
/// use golem_evals::Dataset;
///
/// let yaml = "
/// name: arithmetic
/// cases:
///   - name: two plus two
///     input: What is 2 + 2?
///     expected: 4
///     metadata:
///       topic: addition
/// ";
/// let dataset: Dataset<String, u32> = Dataset::from_yaml(yaml)?;
/// assert_eq!(dataset.cases[0].expected, Some(4));
/// let again: Dataset<String, u32> = Dataset::from_json(&dataset.to_json()?)?;
/// assert_eq!(again, dataset);
/// # Ok::<_, golem_evals::DatasetError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(description = "A golem-evals dataset: a list of cases, with an optional name.")]
pub struct Dataset<I, E> {
    /// The dataset's name, shown in reports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The cases, in the order reports list them.
    pub cases: Vec<Case<I, E>>,
}

impl<I, E> Default for Dataset<I, E> {
    fn default() -> Self {
        Dataset {
            name: None,
            cases: Vec::new(),
        }
    }
}

impl<I, E> Dataset<I, E> {
    /// A dataset of `cases`, without a name.
    pub fn new(cases: impl IntoIterator<Item = Case<I, E>>) -> Self {
        Dataset {
            name: None,
            cases: cases.into_iter().collect(),
        }
    }

    /// Sets the name.
    #[must_use]
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Adds a case.
    #[must_use]
    pub fn case(mut self, case: Case<I, E>) -> Self {
        self.cases.push(case);
        self
    }

    /// Checks that case names are unique.
    ///
    /// # Errors
    /// [`DatasetError::DuplicateCase`] naming the first name seen twice.
    pub fn check(&self) -> Result<(), DatasetError> {
        let mut seen = std::collections::BTreeSet::new();
        for case in &self.cases {
            if !seen.insert(case.name.as_str()) {
                return Err(DatasetError::DuplicateCase {
                    name: case.name.clone(),
                });
            }
        }
        Ok(())
    }
}

impl<I, E> Dataset<I, E>
where
    I: DeserializeOwned,
    E: DeserializeOwned,
{
    /// Reads a dataset from YAML text, and [checks](Self::check) it.
    ///
    /// # Errors
    /// [`DatasetError::Yaml`] for text that is not a dataset of these types, with the
    /// parser's message and location; [`DatasetError::DuplicateCase`].
    pub fn from_yaml(yaml: &str) -> Result<Self, DatasetError> {
        let dataset: Self = serde_saphyr::from_str(yaml).map_err(|error| DatasetError::Yaml {
            message: error.to_string(),
        })?;
        dataset.check()?;
        Ok(dataset)
    }

    /// Reads a dataset from JSON text, and [checks](Self::check) it.
    ///
    /// # Errors
    /// [`DatasetError::Json`] for text that is not a dataset of these types;
    /// [`DatasetError::DuplicateCase`].
    pub fn from_json(json: &str) -> Result<Self, DatasetError> {
        let dataset: Self = serde_json::from_str(json).map_err(|error| DatasetError::Json {
            message: error.to_string(),
        })?;
        dataset.check()?;
        Ok(dataset)
    }

    /// Reads a dataset from a file: YAML for `.yaml` and `.yml`, JSON for `.json`.
    ///
    /// # Errors
    /// [`DatasetError::Io`], [`DatasetError::UnknownFormat`] for another extension, and
    /// those of [`from_yaml`](Self::from_yaml) and [`from_json`](Self::from_json).
    pub fn load(path: impl AsRef<Path>) -> Result<Self, DatasetError> {
        let path = path.as_ref();
        let format = Format::of(path)?;
        let text = std::fs::read_to_string(path).map_err(|error| DatasetError::Io {
            path: path.to_owned(),
            message: error.to_string(),
        })?;
        match format {
            Format::Yaml => Self::from_yaml(&text),
            Format::Json => Self::from_json(&text),
        }
    }
}

impl<I, E> Dataset<I, E>
where
    I: Serialize,
    E: Serialize,
{
    /// The dataset as YAML text.
    ///
    /// # Errors
    /// [`DatasetError::Yaml`] when an input or expected output cannot be written as YAML.
    pub fn to_yaml(&self) -> Result<String, DatasetError> {
        serde_saphyr::to_string(self).map_err(|error| DatasetError::Yaml {
            message: error.to_string(),
        })
    }

    /// The dataset as pretty-printed JSON text.
    ///
    /// # Errors
    /// [`DatasetError::Json`] when an input or expected output cannot be written as JSON.
    pub fn to_json(&self) -> Result<String, DatasetError> {
        serde_json::to_string_pretty(self).map_err(|error| DatasetError::Json {
            message: error.to_string(),
        })
    }

    /// Writes the dataset to a file, in the format its extension names (see
    /// [`load`](Self::load)).
    ///
    /// # Errors
    /// [`DatasetError::UnknownFormat`], [`DatasetError::Io`], and those of
    /// [`to_yaml`](Self::to_yaml) and [`to_json`](Self::to_json).
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), DatasetError> {
        let path = path.as_ref();
        let text = match Format::of(path)? {
            Format::Yaml => self.to_yaml()?,
            Format::Json => self.to_json()? + "\n",
        };
        std::fs::write(path, text).map_err(|error| DatasetError::Io {
            path: path.to_owned(),
            message: error.to_string(),
        })
    }
}

impl<I: JsonSchema, E: JsonSchema> Dataset<I, E> {
    /// The JSON schema of a dataset file of these types, for editors.
    ///
    /// ```
    /// use golem_evals::Dataset;
    ///
    /// let schema = Dataset::<String, u32>::json_schema();
    /// assert_eq!(schema["required"], serde_json::json!(["cases"]));
    /// ```
    pub fn json_schema() -> Value {
        schemars::schema_for!(Dataset<I, E>).to_value()
    }
}

/// The file formats a dataset is read from and written to.
#[derive(Debug, Clone, Copy)]
enum Format {
    Yaml,
    Json,
}

impl Format {
    fn of(path: &Path) -> Result<Format, DatasetError> {
        match path.extension().and_then(|extension| extension.to_str()) {
            Some("yaml" | "yml") => Ok(Format::Yaml),
            Some("json") => Ok(Format::Json),
            _ => Err(DatasetError::UnknownFormat {
                path: path.to_owned(),
            }),
        }
    }
}

/// Why a dataset could not be read or written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DatasetError {
    /// The YAML text is not a dataset of the expected types, or could not be written.
    #[error("YAML dataset: {message}")]
    Yaml {
        /// The parser's (or writer's) message, with the location.
        message: String,
    },
    /// The JSON text is not a dataset of the expected types, or could not be written.
    #[error("JSON dataset: {message}")]
    Json {
        /// serde_json's message, with the line and column.
        message: String,
    },
    /// Two cases have the same name.
    #[error("two cases are named `{name}`: case names must be unique")]
    DuplicateCase {
        /// The name.
        name: String,
    },
    /// The file's extension is not `.yaml`, `.yml` or `.json`.
    #[error("{}: a dataset file ends in .yaml, .yml or .json", path.display())]
    UnknownFormat {
        /// The file.
        path: PathBuf,
    },
    /// The file could not be read or written.
    #[error("{}: {message}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The system's message.
        message: String,
    },
}
