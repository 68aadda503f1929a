//! Provider-friendly JSON schemas for tool parameters and outputs.
//!
//! Schemas come from [`schemars`] and are then made acceptable to OpenAI function calling
//! and to Anthropic: subschemas are inlined (only recursive types keep `$defs`), `$schema`
//! and `title` are dropped, every object gets `additionalProperties: false`, integers and
//! numbers lose schemars' `format` annotations, and an `Option<T>` field is an optional
//! property. Build a schema once, not per call: golem does so when an agent is built.

use schemars::generate::SchemaSettings;

/// The trait of types with a JSON schema (schemars 1.x), for bounds in your own code
/// (`fn tool_for<A: JsonSchema>()`). Derive it with [`#[golem::args]`](crate::args) or
/// [`#[golem::output]`](macro@crate::output), which need no `schemars` dependency; with your own
/// `schemars` 1.x dependency, `#[derive(schemars::JsonSchema)]` works too.
pub use schemars::JsonSchema;
use serde_json::{Map, Value};

mod gemini;
mod strict;

pub use gemini::to_gemini_schema;
pub use strict::to_strict_schema;
#[cfg(feature = "openai")]
pub(crate) use strict::{drop_added_nulls, is_strict_compatible};

/// The provider-friendly JSON schema of `T`.
///
/// ```
/// use serde_json::json;
///
/// /// Where to look.
/// #[golem::args]
/// struct Query {
///     /// The city.
///     city: String,
///     days: Option<u8>,
/// }
///
/// assert_eq!(
///     golem::schema::schema_for::<Query>(),
///     json!({
///         "type": "object",
///         "description": "Where to look.",
///         "properties": {
///             "city": {"type": "string", "description": "The city."},
///             "days": {"type": ["integer", "null"], "minimum": 0, "maximum": 255}
///         },
///         "required": ["city"],
///         "additionalProperties": false
///     })
/// );
/// ```
pub fn schema_for<T: JsonSchema + ?Sized>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.inline_subschemas = true;
            settings.meta_schema = None;
        })
        .for_deserialize()
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    clean_schema(&mut schema);
    schema
}

/// Whether `schema` describes a JSON object (and can be a tool's parameters as it is).
pub fn is_object_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

/// Wraps a non-object schema as `{"response": schema}`, since tool parameters must be an
/// object.
pub(crate) fn wrap_in_object(mut schema: Value) -> Value {
    // `$defs` of recursive types move to the new root, where their `#/$defs/...` references
    // point.
    let mut defs = schema.as_object_mut().and_then(|map| map.remove("$defs"));
    // A type that holds itself refers to the root (`"$ref": "#"`), which is now the
    // wrapper: such references, and those of the definitions, follow it to `response`.
    repoint_root_references(&mut schema);
    if let Some(Value::Object(definitions)) = &mut defs {
        definitions.values_mut().for_each(repoint_root_references);
    }
    let mut properties = Map::new();
    properties.insert("response".into(), schema);
    let mut wrapped = serde_json::json!({
        "type": "object",
        "properties": properties,
        "required": ["response"],
        "additionalProperties": false
    });
    if let (Some(defs), Some(map)) = (defs, wrapped.as_object_mut()) {
        map.insert("$defs".into(), defs);
    }
    wrapped
}

/// Points every reference into the root of `schema` (`#`, `#/oneOf/1`; not `#/$defs/…`,
/// which stay at the root) at the same place under the wrapper's `response` property.
fn repoint_root_references(schema: &mut Value) {
    const RESPONSE: &str = "#/properties/response";
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get_mut("$ref")
                && let Some(rest) = target.strip_prefix('#')
                && !rest.starts_with("/$defs/")
                && !rest.starts_with("/definitions/")
            {
                *target = format!("{RESPONSE}{rest}");
            }
            each_child_mut(map, repoint_root_references);
        }
        Value::Array(items) => items.iter_mut().for_each(repoint_root_references),
        _ => {}
    }
}

/// Keys whose values map names to schemas: the schemas are walked, the names kept.
const NAMED_SCHEMAS: [&str; 5] = [
    "properties",
    "$defs",
    "definitions",
    "patternProperties",
    "dependentSchemas",
];

/// Keys whose values are data, not schemas (a boolean among them is no `true` schema).
const DATA: [&str; 9] = [
    "default",
    "examples",
    "const",
    "enum",
    "required",
    "deprecated",
    "readOnly",
    "writeOnly",
    "uniqueItems",
];

/// Calls `walk` on each child of the schema object `map` that holds schemas: every schema
/// of a named map (`properties`, `$defs`, ...) and every other value that is not data (a
/// schema, or an array of them, which `walk` handles). The one place that knows which keys
/// hold schemas, for every walker of schemas in golem.
pub(crate) fn each_child_mut(map: &mut Map<String, Value>, mut walk: impl FnMut(&mut Value)) {
    each_keyed_child_mut(map, |_, child| walk(child));
}

/// The first `find` answers for a child of the schema object `map` that holds schemas (see
/// [`each_child_mut`]), given with its path under `map` (`properties/name`, `anyOf`).
#[cfg_attr(not(feature = "anthropic"), allow(dead_code))]
pub(crate) fn find_in_children<T>(
    map: &Map<String, Value>,
    mut find: impl FnMut(String, &Value) -> Option<T>,
) -> Option<T> {
    map.iter().find_map(|(key, child)| {
        if NAMED_SCHEMAS.contains(&key.as_str()) {
            child.as_object().and_then(|named| {
                named
                    .iter()
                    .find_map(|(name, schema)| find(format!("{key}/{name}"), schema))
            })
        } else if DATA.contains(&key.as_str()) {
            None
        } else {
            find(key.clone(), child)
        }
    })
}

/// As [`each_child_mut`], with the key each child is under (`properties` for each
/// property).
fn each_keyed_child_mut(map: &mut Map<String, Value>, mut walk: impl FnMut(&str, &mut Value)) {
    for (key, child) in map.iter_mut() {
        if NAMED_SCHEMAS.contains(&key.as_str()) {
            if let Value::Object(named) = child {
                named.values_mut().for_each(|schema| walk(key, schema));
            }
        } else if !DATA.contains(&key.as_str()) {
            walk(key, child);
        }
    }
}

/// Whether `check` holds for each child of `map` that holds schemas (see
/// [`each_child_mut`]).
#[cfg_attr(not(feature = "openai"), allow(dead_code))]
pub(crate) fn all_children(
    map: &Map<String, Value>,
    mut check: impl FnMut(&Value) -> bool,
) -> bool {
    map.iter().all(|(key, child)| {
        if NAMED_SCHEMAS.contains(&key.as_str()) {
            child
                .as_object()
                .is_none_or(|named| named.values().all(&mut check))
        } else {
            DATA.contains(&key.as_str()) || check(child)
        }
    })
}

fn clean_schema(value: &mut Value) {
    clean(value, false);
}

/// Whether the schema object `map` is of objects: `"type": "object"`, or a list of types
/// with it (`Option<Struct>`: `["object", "null"]`).
pub(crate) fn is_object_type(map: &Map<String, Value>) -> bool {
    match map.get("type") {
        Some(Value::String(kind)) => kind == "object",
        Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "object"),
        _ => false,
    }
}

/// Combinators whose variants an object's own properties may go with (a flattened enum).
const COMBINATORS: [&str; 3] = ["oneOf", "anyOf", "allOf"];

/// Cleans `value`; an `open` object (a variant of an object that flattens an enum) is not
/// closed.
fn clean(value: &mut Value, open: bool) {
    match value {
        Value::Object(map) => {
            map.remove("$schema");
            map.remove("title");
            let numeric = matches!(
                map.get("type").and_then(Value::as_str),
                Some("integer" | "number")
            ) || map
                .get("type")
                .and_then(Value::as_array)
                .is_some_and(|types| {
                    types
                        .iter()
                        .any(|t| t.as_str() == Some("integer") || t.as_str() == Some("number"))
                });
            if numeric {
                map.remove("format");
            }
            let object = is_object_type(map);
            // An object that flattens an enum has its properties beside the enum's variants,
            // which add theirs: neither it nor its variants may forbid the others' fields.
            let flattens = object && COMBINATORS.iter().any(|key| map.contains_key(*key));
            if object && !open && !flattens && !map.contains_key("additionalProperties") {
                map.insert("additionalProperties".into(), Value::Bool(false));
            }
            // The variants stay open, and so do those of a variant that is no object itself
            // (two flattened enums are an `allOf` of two `oneOf`s).
            let variants_open = flattens || (open && !object);
            each_keyed_child_mut(map, |key, child| {
                clean(child, variants_open && COMBINATORS.contains(&key));
            });
        }
        Value::Array(items) => items.iter_mut().for_each(|item| clean(item, open)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Inner {
        /// A title that is a field, not a keyword.
        title: String,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    enum Colour {
        Red,
        Green,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Outer {
        inner: Inner,
        items: Vec<Inner>,
        colour: Colour,
        count: i64,
    }

    #[test]
    fn nested_types_are_inlined_and_cleaned() {
        assert_eq!(
            schema_for::<Outer>(),
            json!({
                "type": "object",
                "properties": {
                    "inner": {
                        "type": "object",
                        "properties": {"title": {"type": "string", "description": "A title that is a field, not a keyword."}},
                        "required": ["title"],
                        "additionalProperties": false
                    },
                    "items": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"title": {"type": "string", "description": "A title that is a field, not a keyword."}},
                            "required": ["title"],
                            "additionalProperties": false
                        }
                    },
                    "colour": {"type": "string", "enum": ["Red", "Green"]},
                    "count": {"type": "integer"}
                },
                "required": ["inner", "items", "colour", "count"],
                "additionalProperties": false
            })
        );
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Node {
        children: Vec<Node>,
    }

    #[test]
    fn wrapping_moves_the_definitions_of_recursive_types_to_the_root() {
        let wrapped = wrap_in_object(schema_for::<Vec<Node>>());
        let node = &wrapped["properties"]["response"]["items"];
        assert_eq!(
            node["properties"]["children"]["items"]["$ref"],
            "#/$defs/Node"
        );
        assert!(wrapped["properties"]["response"].get("$defs").is_none());
        assert_eq!(wrapped["$defs"]["Node"]["type"], "object");
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    enum Tree {
        Leaf(u32),
        Branch(Vec<Tree>),
    }

    #[test]
    fn wrapping_a_type_that_holds_itself_points_its_references_at_the_response() {
        let schema = schema_for::<Tree>();
        assert!(!is_object_schema(&schema));
        assert!(schema.to_string().contains(r##""$ref":"#""##), "{schema}");
        let wrapped = wrap_in_object(schema);
        let text = wrapped.to_string();
        assert!(!text.contains(r##""$ref":"#""##), "{text}");
        assert!(
            text.contains(r##""$ref":"#/properties/response""##),
            "{text}"
        );
        // Inlined for Gemini, a branch holds trees, not wrappers: `response` is named once.
        let inlined = to_gemini_schema(&wrapped).to_string();
        assert_eq!(inlined.matches("\"response\":").count(), 1, "{inlined}");
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Move {
        speed: u32,
        #[serde(flatten)]
        target: Target,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(tag = "kind")]
    #[allow(dead_code)]
    enum Target {
        Point { x: i32 },
        Named { name: String },
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Aim {
        #[serde(flatten)]
        target: Target,
        #[serde(flatten)]
        speed: Speed,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(tag = "pace")]
    #[allow(dead_code)]
    enum Speed {
        Fast { fast: bool },
        Slow { slow: u8 },
    }

    #[test]
    fn two_flattened_enums_and_their_variants_stay_open() {
        let schema = schema_for::<Aim>();
        let text = schema.to_string();
        assert!(!text.contains("\"additionalProperties\":false"), "{text}");
        assert!(text.contains("\"fast\""), "{text}");
    }

    #[test]
    fn an_object_that_flattens_an_enum_and_its_variants_stay_open() {
        let schema = schema_for::<Move>();
        assert_eq!(schema["properties"]["speed"]["type"], "integer");
        assert!(schema.get("additionalProperties").is_none(), "{schema}");
        let variants = schema["oneOf"].as_array().expect("the variants");
        assert_eq!(variants.len(), 2);
        for variant in variants {
            assert!(variant.get("additionalProperties").is_none(), "{variant}");
        }
    }

    #[test]
    fn scalars_are_wrapped_for_tool_parameters() {
        let schema = schema_for::<Vec<u8>>();
        assert!(!is_object_schema(&schema));
        let wrapped = wrap_in_object(schema);
        assert!(is_object_schema(&wrapped));
        assert_eq!(wrapped["properties"]["response"]["type"], "array");
    }
}
