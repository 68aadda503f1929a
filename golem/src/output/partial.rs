//! Typed partial output: what a structured answer holds while it streams.
//!
//! `#[golem::output]` gives each output type a partial twin (`VerdictPartial` for
//! `Verdict`): the same fields, each an `Option` that is `None` until it arrives; strings
//! grow as their text streams, lists as their items do, nested outputs fill in field by
//! field. [`PartialValue`] maps a field's type to its partial form.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::Hash;

use serde::de::{Deserialize, DeserializeOwned, Deserializer};
use serde_json::{Map, Number, Value};

mod reader;

pub use reader::PartialCadence;
pub(crate) use reader::Reader;

/// A type whose incomplete JSON has a typed form, [`Partial`](Self::Partial): what of a
/// value has arrived while it streams.
///
/// Implemented for strings (the text so far), numbers, `bool`, `char`, `Option`, `Vec`,
/// `Box`, maps with string-like keys, [`serde_json::Value`], and by `#[golem::output]` and
/// `#[golem::args]` for the types they are on (a generic type's partial form is its JSON,
/// [`serde_json::Value`]). A field of an output whose type has no partial form is marked
/// `#[golem(whole)]`: it is read as its own type from what has arrived.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no partial form for streamed output",
    label = "golem cannot tell how much of a `{Self}` has arrived",
    note = "put `#[golem::output]` or `#[golem::args]` on `{Self}` instead of deriving `Deserialize` and `JsonSchema` by hand, or mark the field `#[golem(whole)]` to read it as its own type"
)]
pub trait PartialValue {
    /// The value so far.
    type Partial: DeserializeOwned + fmt::Debug + Clone + PartialEq + Send + 'static;

    /// Reads what has arrived of a value, `json` (open strings, lists and objects closed
    /// where they stop), as far as it reads; `None` when it does not read yet.
    ///
    /// The default deserializes [`Partial`](Self::Partial) from `json`. Lists and maps
    /// read their items with their element type's `read_partial`, so an item still in
    /// flight hides no item before it.
    fn read_partial(json: Value) -> Option<Self::Partial> {
        Self::Partial::deserialize(json).ok()
    }
}

/// The partial output of an output that has none: plain text streams as
/// [`RunEvent::Delta`](crate::run::RunEvent::Delta)s instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NoPartial {}

macro_rules! whole {
    ($($ty:ty),* $(,)?) => {
        $(impl PartialValue for $ty {
            type Partial = $ty;
        })*
    };
}

whole!(
    String,
    bool,
    char,
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    f32,
    f64,
    (),
    Value,
);

impl<T: PartialValue> PartialValue for Option<T> {
    type Partial = Option<T::Partial>;

    fn read_partial(json: Value) -> Option<Self::Partial> {
        match json {
            Value::Null => Some(None),
            json => T::read_partial(json).map(Some),
        }
    }
}

impl<T: PartialValue> PartialValue for Vec<T> {
    type Partial = Vec<T::Partial>;

    /// The items that read, up to the first that does not: the item in flight, as far as
    /// it reads, or nothing of it when it does not read yet (a tagged enum whose tag is
    /// still arriving). Items keep their indices in the final list.
    fn read_partial(json: Value) -> Option<Self::Partial> {
        match json {
            Value::Array(items) => Some(items.into_iter().map_while(T::read_partial).collect()),
            _ => None,
        }
    }
}

impl<T: PartialValue> PartialValue for Box<T> {
    type Partial = Box<T::Partial>;

    fn read_partial(json: Value) -> Option<Self::Partial> {
        T::read_partial(json).map(Box::new)
    }
}

impl<K, V> PartialValue for BTreeMap<K, V>
where
    K: DeserializeOwned + fmt::Debug + Clone + Ord + Send + 'static,
    V: PartialValue,
{
    type Partial = BTreeMap<K, V::Partial>;

    /// The entries whose values read; the one in flight is left out until it does.
    fn read_partial(json: Value) -> Option<Self::Partial> {
        let entries = BTreeMap::<K, Value>::deserialize(json).ok()?;
        let entries = entries.into_iter();
        Some(
            entries
                .filter_map(|(key, value)| Some((key, V::read_partial(value)?)))
                .collect(),
        )
    }
}

impl<K, V> PartialValue for HashMap<K, V>
where
    K: DeserializeOwned + fmt::Debug + Clone + Eq + Hash + Send + 'static,
    V: PartialValue,
{
    type Partial = HashMap<K, V::Partial>;

    /// The entries whose values read; the one in flight is left out until it does.
    fn read_partial(json: Value) -> Option<Self::Partial> {
        let entries = HashMap::<K, Value>::deserialize(json).ok()?;
        let entries = entries.into_iter();
        Some(
            entries
                .filter_map(|(key, value)| Some((key, V::read_partial(value)?)))
                .collect(),
        )
    }
}

/// Reads incomplete JSON text: what has arrived, with open strings, lists and objects
/// closed where they stop (jiter's partial mode); `None` when nothing has.
#[cfg(test)]
pub(crate) fn parse(raw: &str) -> Option<Value> {
    let mut scan = reader::Scan::default();
    scan.advance(raw.as_bytes());
    parse_readable(&raw[..scan.readable_end()])
}

/// Parses `raw`, incomplete JSON that does not end in a number still arriving.
fn parse_readable(raw: &str) -> Option<Value> {
    let value = jiter::JsonValue::parse_with_config(
        raw.as_bytes(),
        false,
        jiter::PartialMode::TrailingStrings,
    )
    .ok()?;
    Some(to_serde(value))
}

fn to_serde(value: jiter::JsonValue<'_>) -> Value {
    match value {
        jiter::JsonValue::Null => Value::Null,
        jiter::JsonValue::Bool(bool) => Value::Bool(bool),
        jiter::JsonValue::Int(int) => Value::Number(int.into()),
        // Past `i64`: a `u64` if it fits, else the nearest float.
        jiter::JsonValue::BigInt(int) => match u64::try_from(&int) {
            Ok(int) => Value::Number(int.into()),
            Err(_) => int
                .to_string()
                .parse::<f64>()
                .ok()
                .and_then(Number::from_f64)
                .map_or(Value::Null, Value::Number),
        },
        jiter::JsonValue::Float(float) => {
            Number::from_f64(float).map_or(Value::Null, Value::Number)
        }
        jiter::JsonValue::Str(text) => Value::String(text.into_owned()),
        jiter::JsonValue::Array(items) => Value::Array(
            std::sync::Arc::unwrap_or_clone(items)
                .into_iter()
                .map(to_serde)
                .collect(),
        ),
        jiter::JsonValue::Object(fields) => Value::Object(
            std::sync::Arc::unwrap_or_clone(fields)
                .into_iter()
                .map(|(key, value)| (key.into_owned(), to_serde(value)))
                .collect::<Map<String, Value>>(),
        ),
    }
}

/// A field of a partial twin: the value if it reads as `T` so far, else `None` (it has not
/// arrived, or too little of it has), so one unreadable field never hides the others.
#[doc(hidden)]
pub fn lenient<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    let value = Value::deserialize(deserializer)?;
    Ok(T::deserialize(value).ok())
}

/// A field of a partial twin in its partial form: [`read`](Self::read) reads it with its
/// type's [`PartialValue::read_partial`], so one unreadable field never hides the others.
#[doc(hidden)]
#[derive(Debug)]
pub struct Lenient<T>(std::marker::PhantomData<T>);

impl<T> Lenient<T> {
    /// The field's partial form so far, or `None` if it does not read yet.
    ///
    /// # Errors
    /// Only when what the deserializer holds is no JSON value (never, from the twin's
    /// derive reading a [`Value`]).
    // The bound sits on the fn, not the impl, so a field with no partial form gets the
    // trait's own diagnostic.
    pub fn read<'de, D>(deserializer: D) -> Result<Option<T::Partial>, D::Error>
    where
        T: PartialValue,
        D: Deserializer<'de>,
    {
        let value = Value::deserialize(deserializer)?;
        Ok(T::read_partial(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn incomplete_json_reads_as_far_as_it_goes() {
        let cases = [
            (r#"{"winner": "An"#, serde_json::json!({"winner": "An"})),
            (
                r#"{"winner": "Ann", "scores": [1, 2"#,
                serde_json::json!({"winner": "Ann", "scores": [1]}),
            ),
            (r#"{"a": true"#, serde_json::json!({"a": true})),
            (r#"{"a": "route 66"#, serde_json::json!({"a": "route 66"})),
            (
                r#"{"winner": "Ann", "sco"#,
                serde_json::json!({"winner": "Ann"}),
            ),
            (
                r#"{"a": {"b": [true, {"c": nu"#,
                serde_json::json!({"a": {"b": [true, {}]}}),
            ),
        ];
        for (raw, expected) in cases {
            assert_eq!(parse(raw), Some(expected), "{raw}");
        }
        // A number at the very end may still grow; one followed by anything is complete.
        assert_eq!(
            parse(r#"{"a": "x", "n": 12"#),
            Some(serde_json::json!({"a": "x"}))
        );
        assert_eq!(parse(r#"{"n": 12 "#), Some(serde_json::json!({"n": 12})));
        assert_eq!(parse(r#"[1, 2"#), Some(serde_json::json!([1])));
        assert_eq!(parse("7"), Some(serde_json::json!(7)));
        assert_eq!(
            parse(r#"{"id": 18446744073709551615, "s": "a"#),
            Some(serde_json::json!({"id": 18446744073709551615_u64, "s": "a"}))
        );
        assert_eq!(parse(""), None);
        assert_eq!(parse("   "), None);
    }
}
