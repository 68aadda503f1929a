//! Reading a tool's arguments object into the tuple of its parameters, by name.
//!
//! `#[golem::tool]` used to derive `Deserialize` on a struct per tool; serde's derive is
//! most of what a tool costs to compile. This one generic visitor, implemented here once
//! per tuple arity, reads `{"a": .., "b": ..}` into `(A, B)` given the names `["a", "b"]`
//! with serde's derive semantics: a missing field is `None` for an `Option` and an error
//! ("missing field `a`") otherwise, a duplicate field is an error, unknown fields are
//! ignored. Paths in errors still come from `serde_path_to_error`.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, Visitor};

/// A tuple of parameter types that can be read from an arguments object by name.
#[diagnostic::on_unimplemented(
    message = "the arguments of this golem tool cannot be read from JSON",
    label = "a parameter's type does not implement `Deserialize`",
    note = "the error at the parameter's type says which one"
)]
pub trait ArgFields: Sized {
    /// Reads the fields named `names` (one per tuple element) from a map.
    ///
    /// # Errors
    /// The deserializer's error for a bad, missing or duplicate field.
    fn read<'de, A: MapAccess<'de>>(
        map: A,
        names: &'static [&'static str],
    ) -> Result<Self, A::Error>;
}

/// The seed that reads an arguments object into `T` by `names`.
pub struct NamedFields<T> {
    names: &'static [&'static str],
    marker: PhantomData<fn() -> T>,
}

impl<T> Clone for NamedFields<T> {
    fn clone(&self) -> Self {
        NamedFields {
            names: self.names,
            marker: PhantomData,
        }
    }
}

impl<T> fmt::Debug for NamedFields<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamedFields")
            .field("names", &self.names)
            .finish()
    }
}

impl<T> NamedFields<T> {
    /// Reads the fields `names`, in the order of `T`'s elements.
    pub fn new(names: &'static [&'static str]) -> Self {
        NamedFields {
            names,
            marker: PhantomData,
        }
    }
}

impl<'de, T: ArgFields> DeserializeSeed<'de> for NamedFields<T> {
    type Value = T;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, T: ArgFields> Visitor<'de> for NamedFields<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object with the tool's arguments")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::read(map, self.names)
    }
}

/// A field absent from the object: `None` for an `Option` (through `deserialize_option`),
/// "missing field" for anything else, as serde's derive does.
struct Missing<E> {
    name: &'static str,
    marker: PhantomData<E>,
}

impl<'de, E: de::Error> de::Deserializer<'de> for Missing<E> {
    type Error = E;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, E> {
        Err(E::missing_field(self.name))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        visitor.visit_none()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier
        ignored_any
    }
}

/// The value of an absent field.
fn missing<T: DeserializeOwned, E: de::Error>(name: &'static str) -> Result<T, E> {
    T::deserialize(Missing {
        name,
        marker: PhantomData,
    })
}

/// The index of `key` in `names`.
fn position(names: &[&str], key: &str) -> Option<usize> {
    names.iter().position(|name| *name == key)
}

/// Reads a key as the index of its name in `names` (`None` for an unknown key), without
/// allocating it: keys are compared where the deserializer holds them.
struct FieldIndex(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for FieldIndex {
    type Value = Option<usize>;

    fn deserialize<D: de::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl Visitor<'_> for FieldIndex {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an argument name")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(position(self.0, key))
    }

    fn visit_bytes<E: de::Error>(self, key: &[u8]) -> Result<Self::Value, E> {
        Ok(std::str::from_utf8(key)
            .ok()
            .and_then(|key| position(self.0, key)))
    }
}

macro_rules! arg_fields {
    ($($T:ident $i:tt),+) => {
        impl<$($T: DeserializeOwned),+> ArgFields for ($($T,)+) {
            fn read<'de, A: MapAccess<'de>>(
                mut map: A,
                names: &'static [&'static str],
            ) -> Result<Self, A::Error> {
                let mut slots: ($(Option<$T>,)+) = Default::default();
                while let Some(index) = map.next_key_seed(FieldIndex(names))? {
                    match index {
                        $(Some($i) => {
                            if slots.$i.is_some() {
                                return Err(de::Error::duplicate_field(names[$i]));
                            }
                            slots.$i = Some(map.next_value()?);
                        })+
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(($(
                    match slots.$i {
                        Some(value) => value,
                        None => missing::<$T, A::Error>(names[$i])?,
                    },
                )+))
            }
        }
    };
}

arg_fields!(T0 0);
arg_fields!(T0 0, T1 1);
arg_fields!(T0 0, T1 1, T2 2);
arg_fields!(T0 0, T1 1, T2 2, T3 3);
arg_fields!(T0 0, T1 1, T2 2, T3 3, T4 4);
arg_fields!(T0 0, T1 1, T2 2, T3 3, T4 4, T5 5);
arg_fields!(T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6);
arg_fields!(T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6, T7 7);
arg_fields!(T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6, T7 7, T8 8);
arg_fields!(T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6, T7 7, T8 8, T9 9);
arg_fields!(T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6, T7 7, T8 8, T9 9, T10 10);
arg_fields!(T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6, T7 7, T8 8, T9 9, T10 10, T11 11);

/// The most parameters a tool's arguments are read by [`ArgFields`]; a tool with more
/// derives `Deserialize` on its arguments struct instead.
pub const MAX_FIELDS: usize = 12;

#[cfg(test)]
mod tests {
    use super::*;

    fn read<T: ArgFields>(names: &'static [&'static str], raw: &str) -> Result<T, String> {
        crate::output::decode_json_seed(raw, NamedFields::<T>::new(names))
            .map_err(|(message, _)| message)
    }

    #[test]
    fn fields_are_read_by_name_in_any_order_and_unknown_ones_ignored() {
        let (a, b, label): (i64, String, Option<String>) =
            read(&["a", "b", "label"], r#"{"b": "x", "extra": [1], "a": 2}"#).expect("valid");
        assert_eq!((a, b.as_str(), label), (2, "x", None));
    }

    #[test]
    fn errors_name_the_field_as_serde_derive_does() {
        let names: &[&str] = &["a", "b"];
        assert_eq!(
            read::<(i64, i64)>(names, r#"{"a": 1}"#).unwrap_err(),
            "missing field `b` at line 1 column 8"
        );
        assert_eq!(
            read::<(i64, i64)>(names, r#"{"a": 1, "b": 2, "a": 3}"#).unwrap_err(),
            "duplicate field `a` at line 1 column 20"
        );
        assert_eq!(
            read::<(i64, Vec<i64>)>(names, r#"{"a": 1, "b": [1, "x"]}"#).unwrap_err(),
            "at `b[1]`: invalid type: string \"x\", expected i64 at line 1 column 21"
        );
        assert_eq!(
            read::<(i64, i64)>(names, "[1, 2]").unwrap_err(),
            "invalid type: sequence, expected an object with the tool's arguments at line 1 column 0"
        );
    }
}
