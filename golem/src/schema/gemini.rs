//! Gemini's schema dialect: the OpenAPI subset its `Schema` object takes, for function
//! declarations' `parameters` and for native structured output's `responseSchema`.
//!
//! Gemini refuses `$ref`, `$defs`, `additionalProperties` and most of JSON Schema's
//! vocabulary; [`to_gemini_schema`] rewrites a golem schema into the subset, keeping what
//! the model needs to answer in the right shape.

use serde_json::{Map, Value};

/// The keys of Gemini's `Schema` object golem carries over; every other key is dropped.
const KEPT: [&str; 14] = [
    "description",
    "format",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "default",
    "example",
    "title",
];

/// The `format`s Gemini documents, by type: any other format is dropped.
fn format_allowed(kind: &str, format: &str) -> bool {
    match kind {
        "STRING" => matches!(format, "enum" | "date-time"),
        "INTEGER" => matches!(format, "int32" | "int64"),
        "NUMBER" => matches!(format, "float" | "double"),
        _ => false,
    }
}

/// How deep a recursive type is unrolled before its next level becomes an open object.
const RECURSION_DEPTH: usize = 2;

/// `schema` in Gemini's dialect: references to `$defs` (or `definitions`) inlined, with a
/// recursive type unrolled twice and then left an open object; `additionalProperties`,
/// `$schema`, `const`-only tricks and other keys outside Gemini's subset dropped; types
/// upper-case (`OBJECT`, `STRING`), a `null` type becoming `nullable: true`, several types
/// becoming `anyOf`; `oneOf` read as `anyOf`; `const` becoming a one-value `enum`; an enum
/// of strings kept as `enum` on a `STRING` (Gemini takes enums of strings only), and an
/// enum holding other values kept as its type with the allowed values in the description.
///
/// ```
/// use serde_json::json;
///
/// let schema = json!({
///     "type": "object",
///     "properties": {
///         "colour": {"$ref": "#/$defs/Colour"},
///         "note": {"type": ["string", "null"]}
///     },
///     "required": ["colour"],
///     "additionalProperties": false,
///     "$defs": {"Colour": {"type": "string", "enum": ["red", "green"]}}
/// });
/// assert_eq!(
///     golem::schema::to_gemini_schema(&schema),
///     json!({
///         "type": "OBJECT",
///         "properties": {
///             "colour": {"type": "STRING", "enum": ["red", "green"]},
///             "note": {"type": "STRING", "nullable": true}
///         },
///         "required": ["colour"]
///     })
/// );
/// ```
pub fn to_gemini_schema(schema: &Value) -> Value {
    let mut path = Vec::new();
    convert(schema, schema, &mut path)
}

/// Converts `schema`, resolving references against `root`; `path` holds the references
/// being expanded, to stop recursion.
fn convert(schema: &Value, root: &Value, path: &mut Vec<String>) -> Value {
    let Value::Object(map) = schema else {
        // `true` (anything) and `false`: Gemini has no such schemas; an open one is closest.
        return Value::Object(Map::new());
    };
    if let Some(target) = map.get("$ref").and_then(Value::as_str) {
        let expanded = path.iter().filter(|seen| *seen == target).count();
        let resolved = target
            .strip_prefix('#')
            .and_then(|pointer| root.pointer(pointer));
        let mut out = match resolved {
            Some(resolved) if expanded < RECURSION_DEPTH => {
                path.push(target.to_owned());
                let out = convert(resolved, root, path);
                path.pop();
                out
            }
            _ => serde_json::json!({"type": "OBJECT"}),
        };
        // Keywords beside the reference (a field's description) apply too.
        if let (Value::Object(out), Some(Value::String(description))) =
            (&mut out, map.get("description"))
        {
            out.insert("description".into(), Value::String(description.clone()));
        }
        return out;
    }
    let mut out = Map::new();
    let mut nullable = false;

    // Variants: `anyOf` / `oneOf`, with a `null` variant read as `nullable`.
    let variants = map
        .get("anyOf")
        .or_else(|| map.get("oneOf"))
        .and_then(Value::as_array);
    if let Some(variants) = variants {
        let mut kept = Vec::with_capacity(variants.len());
        for variant in variants {
            if variant.get("type").and_then(Value::as_str) == Some("null") {
                nullable = true;
            } else {
                kept.push(convert(variant, root, path));
            }
        }
        match <[Value; 1]>::try_from(kept) {
            Ok([only]) => {
                if let Value::Object(only) = only {
                    out = only;
                }
            }
            Err(kept) if kept.is_empty() => {}
            Err(kept) => {
                out.insert("anyOf".into(), Value::Array(kept));
            }
        }
    }
    // `allOf` of one schema (schemars' way to attach a description to a reference).
    if let Some([only]) = map
        .get("allOf")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        && let Value::Object(merged) = convert(only, root, path)
    {
        out.extend(merged);
    }

    // Types: one, or several (with `null` read as `nullable`).
    let mut types: Vec<&str> = match map.get("type") {
        Some(Value::String(single)) => vec![single.as_str()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if types.contains(&"null") {
        nullable = true;
        types.retain(|kind| *kind != "null");
    }
    match types.as_slice() {
        [] => {}
        [single] => {
            out.insert("type".into(), Value::from(single.to_ascii_uppercase()));
        }
        several => {
            let mut variants = Vec::with_capacity(several.len());
            for kind in several {
                let mut single = map.clone();
                single.insert("type".into(), Value::from(*kind));
                variants.push(convert(&Value::Object(single), root, path));
            }
            out.insert("anyOf".into(), Value::Array(variants));
            if nullable {
                out.insert("nullable".into(), Value::Bool(true));
            }
            return Value::Object(out);
        }
    }

    // Enums and constants.
    let values = match (map.get("enum"), map.get("const")) {
        (Some(Value::Array(values)), _) => Some(values.clone()),
        (None, Some(value)) => Some(vec![value.clone()]),
        _ => None,
    };
    if let Some(mut values) = values {
        if values.contains(&Value::Null) {
            nullable = true;
            values.retain(|value| !value.is_null());
        }
        if values.iter().all(Value::is_string) {
            out.insert("type".into(), Value::from("STRING"));
            out.insert("enum".into(), Value::Array(values));
        } else {
            let listed: Vec<String> = values.iter().map(Value::to_string).collect();
            let allowed = format!("One of: {}.", listed.join(", "));
            let description = match map.get("description").and_then(Value::as_str) {
                Some(description) => format!("{description} {allowed}"),
                None => allowed,
            };
            out.insert("description".into(), Value::String(description));
        }
    }

    for key in KEPT {
        if out.contains_key(key) {
            continue;
        }
        if let Some(value) = map.get(key) {
            out.insert(key.into(), value.clone());
        }
    }
    if let Some(Value::String(format)) = out.get("format") {
        let kind = out.get("type").and_then(Value::as_str).unwrap_or_default();
        if !format_allowed(kind, format) {
            out.remove("format");
        }
    }

    if let Some(Value::Object(properties)) = map.get("properties") {
        let converted: Map<String, Value> = properties
            .iter()
            .map(|(name, property)| (name.clone(), convert(property, root, path)))
            .collect();
        if let Some(Value::Array(required)) = map.get("required") {
            let required: Vec<Value> = required
                .iter()
                .filter(|name| {
                    name.as_str()
                        .is_some_and(|name| converted.contains_key(name))
                })
                .cloned()
                .collect();
            if !required.is_empty() {
                out.insert("required".into(), Value::Array(required));
            }
        }
        out.insert("properties".into(), Value::Object(converted));
    }
    match map.get("items") {
        Some(items @ Value::Object(_)) => {
            out.insert("items".into(), convert(items, root, path));
        }
        // A tuple (`prefixItems`, or draft-7 `items: [...]`): Gemini has none; any item.
        Some(Value::Array(_)) => {
            out.insert("items".into(), Value::Object(Map::new()));
        }
        None if map.contains_key("prefixItems") => {
            out.insert("items".into(), Value::Object(Map::new()));
        }
        // `items: true` (a list of anything, `Vec<serde_json::Value>`): Gemini wants the
        // field, so any item.
        Some(Value::Bool(_)) => {
            out.insert("items".into(), Value::Object(Map::new()));
        }
        _ => {}
    }
    if nullable {
        out.insert("nullable".into(), Value::Bool(true));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn references_are_inlined_and_recursion_ends_in_an_open_object() {
        let schema = json!({
            "type": "object",
            "properties": {
                "root": {"$ref": "#/$defs/Node", "description": "The top."}
            },
            "required": ["root", "missing"],
            "additionalProperties": false,
            "$defs": {"Node": {
                "type": "object",
                "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
                "required": ["children"],
                "additionalProperties": false
            }}
        });
        let leaf = json!({"type": "OBJECT"});
        let level = |inner: Value| {
            json!({
                "type": "OBJECT",
                "properties": {"children": {"type": "ARRAY", "items": inner}},
                "required": ["children"]
            })
        };
        let mut root = level(level(leaf));
        root["description"] = json!("The top.");
        assert_eq!(
            to_gemini_schema(&schema),
            json!({"type": "OBJECT", "properties": {"root": root}, "required": ["root"]})
        );
    }

    #[test]
    fn types_enums_and_variants_take_geminis_forms() {
        let schema = json!({
            "type": "object",
            "properties": {
                "count": {"type": "integer", "format": "uint8", "minimum": 0, "exclusiveMaximum": 9},
                "when": {"type": "string", "format": "date-time"},
                "level": {"type": "integer", "enum": [1, 2, 3], "description": "How loud."},
                "kind": {"const": "dice"},
                "either": {"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
                "many": {"type": ["string", "integer"]},
                "maybe": {"anyOf": [{"type": "boolean"}, {"type": "null"}]},
                "tags": {"type": "object", "additionalProperties": {"type": "string"}},
                "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
                "values": {"type": "array", "items": true},
                "any": true
            },
            "$schema": "https://json-schema.org/draft/2020-12/schema"
        });
        assert_eq!(
            to_gemini_schema(&schema),
            json!({
                "type": "OBJECT",
                "properties": {
                    "count": {"type": "INTEGER", "minimum": 0},
                    "when": {"type": "STRING", "format": "date-time"},
                    "level": {"type": "INTEGER", "description": "How loud. One of: 1, 2, 3."},
                    "kind": {"type": "STRING", "enum": ["dice"]},
                    "either": {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}], "nullable": true},
                    "many": {"anyOf": [{"type": "STRING"}, {"type": "INTEGER"}]},
                    "maybe": {"type": "BOOLEAN", "nullable": true},
                    "tags": {"type": "OBJECT"},
                    "pair": {"type": "ARRAY", "items": {}},
                    "values": {"type": "ARRAY", "items": {}},
                    "any": {}
                }
            })
        );
    }
}
