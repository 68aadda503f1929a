//! OpenAI's strict mode: a schema's strict form, and the way back for the arguments a
//! model writes against it.
//!
//! Strict mode wants every property required; [`to_strict_schema`] makes the optional
//! ones nullable instead. A model then writes `null` for a field it leaves out, which a
//! `#[serde(default)]` field does not accept: [`drop_added_nulls`] removes exactly those
//! `null`s, the properties the strict form made nullable, so the arguments deserialize as
//! the model meant them.

// Only the OpenAI provider reads strict arguments back.
#![cfg_attr(not(feature = "openai"), allow(dead_code))]

use serde_json::Value;

use super::{all_children, each_child_mut, is_object_type};

/// Whether OpenAI's strict mode accepts `schema`: every object lists all its properties as
/// required and forbids others (a map, whose values have a schema of their own, is refused),
/// and no keyword strict mode refuses (`oneOf`, `default`) or a schema of anything is in it.
pub(crate) fn is_strict_compatible(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            if map.contains_key("oneOf") || map.contains_key("default") || accepts_anything(map) {
                return false;
            }
            if is_object_type(map) && map.get("additionalProperties") != Some(&Value::Bool(false)) {
                return false;
            }
            if let Some(Value::Object(properties)) = map.get("properties") {
                let required: Vec<&str> = map
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|names| names.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if map.get("additionalProperties") != Some(&Value::Bool(false))
                    || properties
                        .keys()
                        .any(|name| !required.contains(&name.as_str()))
                {
                    return false;
                }
            }
            all_children(map, is_strict_compatible)
        }
        Value::Array(items) => items.iter().all(is_strict_compatible),
        // `true` is a schema of anything; `false` (no other property) is what strict mode
        // wants.
        Value::Bool(anything) => !anything,
        _ => true,
    }
}

/// Whether the schema object `map` says nothing of what its value is (`{}`, or a
/// description alone): a `serde_json::Value`, which strict mode cannot take.
fn accepts_anything(map: &serde_json::Map<String, Value>) -> bool {
    const CONSTRAINING: [&str; 8] = [
        "type", "$ref", "anyOf", "oneOf", "allOf", "enum", "const", "not",
    ];
    !CONSTRAINING.iter().any(|key| map.contains_key(*key))
}

/// `schema` in the form OpenAI's strict mode accepts: every object lists all its properties
/// as required, and a property that was optional may be `null` instead (which golem reads as
/// absent for `Option` fields).
///
/// ```
/// use serde_json::json;
///
/// let optional = json!({
///     "type": "object",
///     "properties": {"city": {"type": "string"}, "days": {"type": ["integer", "null"]}},
///     "required": ["city"],
///     "additionalProperties": false
/// });
/// assert_eq!(
///     golem::schema::to_strict_schema(&optional)["required"],
///     json!(["city", "days"])
/// );
/// ```
pub fn to_strict_schema(schema: &Value) -> Value {
    let mut strict = schema.clone();
    make_strict(&mut strict);
    strict
}

fn make_strict(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            // Strict mode refuses `default`, and `oneOf`: its variants (an enum's, which
            // serde tells apart) go as `anyOf`.
            map.remove("default");
            if !map.contains_key("anyOf")
                && let Some(variants) = map.remove("oneOf")
            {
                map.insert("anyOf".into(), variants);
            }
            if map.get("properties").is_some_and(Value::is_object) {
                let required: Vec<String> = map
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|names| {
                        names
                            .iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default();
                let mut all = Vec::new();
                if let Some(Value::Object(properties)) = map.get_mut("properties") {
                    for (name, property) in properties.iter_mut() {
                        if !required.contains(name) {
                            make_nullable(property);
                        }
                        all.push(Value::String(name.clone()));
                    }
                }
                map.insert("required".into(), Value::Array(all));
                map.insert("additionalProperties".into(), Value::Bool(false));
            }
            each_child_mut(map, make_strict);
        }
        Value::Array(items) => items.iter_mut().for_each(make_strict),
        _ => {}
    }
}

/// Lets `schema` also be `null`.
fn make_nullable(schema: &mut Value) {
    let null = Value::from("null");
    let Value::Object(map) = schema else {
        return;
    };
    match map.get_mut("type") {
        Some(Value::Array(types)) => {
            if !types.contains(&null) {
                types.push(null);
            }
        }
        Some(Value::String(single)) => {
            let single = Value::from(single.clone());
            if single != null {
                map.insert("type".into(), Value::Array(vec![single, null]));
            }
            if let Some(Value::Array(values)) = map.get_mut("enum")
                && !values.contains(&Value::Null)
            {
                values.push(Value::Null);
            }
        }
        _ => {
            let inner = std::mem::take(map);
            map.insert(
                "anyOf".into(),
                serde_json::json!([Value::Object(inner), {"type": "null"}]),
            );
        }
    }
}

/// Removes from `args` every `null` written for a property that `schema` (the original,
/// not the strict form) leaves optional and does not let be `null`: the ones
/// [`to_strict_schema`] made nullable. Returns whether anything was removed.
pub(crate) fn drop_added_nulls(args: &mut Value, schema: &Value) -> bool {
    drop_nulls_at(args, schema, schema, 0)
}

/// Deeper than this, arguments are left as they are (recursive schemas, hostile input).
const MAX_DEPTH: usize = 64;

fn drop_nulls_at(args: &mut Value, schema: &Value, root: &Value, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    let Value::Object(map) = schema else {
        return false;
    };
    if let Some(target) = map.get("$ref").and_then(Value::as_str) {
        return resolve(root, target)
            .is_some_and(|resolved| drop_nulls_at(args, resolved, root, depth + 1));
    }
    // An object's own properties; one that flattens an enum has them beside the variants.
    let own = map.get("properties").and_then(Value::as_object);
    let mut changed = false;
    if let Some(Value::Array(variants)) = map.get("anyOf").or_else(|| map.get("oneOf")) {
        // The variant the value was written for: of its JSON type, and, among several (an
        // enum's struct variants), the first whose properties and tags fit it.
        let of_type: Vec<&Value> = variants
            .iter()
            .filter(|variant| admits_type(variant, args))
            .collect();
        let chosen = of_type
            .iter()
            .find(|variant| fits(variant, args, own, root))
            .or(of_type.first());
        if let Some(variant) = chosen {
            changed = drop_nulls_at(args, variant, root, depth + 1);
        }
    }
    match (args, own) {
        (Value::Object(fields), Some(properties)) => {
            let required: Vec<&str> = map
                .get("required")
                .and_then(Value::as_array)
                .map(|names| names.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            fields.retain(|name, value| {
                let Some(property) = properties.get(name) else {
                    return true;
                };
                let added = value.is_null()
                    && !required.contains(&name.as_str())
                    && !accepts_null(property, root, depth);
                changed |= added;
                !added
            });
            for (name, value) in fields.iter_mut() {
                if let Some(property) = properties.get(name) {
                    changed |= drop_nulls_at(value, property, root, depth + 1);
                }
            }
        }
        (Value::Array(items), _) => {
            if let Some(item_schema) = map.get("items") {
                for item in items {
                    changed |= drop_nulls_at(item, item_schema, root, depth + 1);
                }
            }
        }
        _ => {}
    }
    changed
}

/// Whether the object `value` fits the object schema `variant` (through its `$ref`): each
/// of its fields is one of the variant's properties (or of the `own` properties of the
/// object that holds the variants), and each property the variant fixes (`const`, a tag)
/// has that value. Any other value fits.
fn fits(
    variant: &Value,
    value: &Value,
    own: Option<&serde_json::Map<String, Value>>,
    root: &Value,
) -> bool {
    let variant = match variant.get("$ref").and_then(Value::as_str) {
        Some(target) => match resolve(root, target) {
            Some(resolved) => resolved,
            None => return false,
        },
        None => variant,
    };
    let (Value::Object(fields), Some(Value::Object(properties))) =
        (value, variant.get("properties"))
    else {
        return true;
    };
    fields
        .keys()
        .all(|name| properties.contains_key(name) || own.is_some_and(|own| own.contains_key(name)))
        && properties.iter().all(|(name, property)| {
            property
                .get("const")
                .is_none_or(|tag| fields.get(name).is_none_or(|field| field == tag))
        })
}

/// A `#/$defs/Name` (or `#/definitions/Name`) reference's target.
fn resolve<'a>(root: &'a Value, target: &str) -> Option<&'a Value> {
    let pointer = target.strip_prefix('#')?;
    root.pointer(pointer)
}

/// Whether `schema` itself lets the value be `null`.
fn accepts_null(schema: &Value, root: &Value, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return true;
    }
    let Value::Object(map) = schema else {
        // `true` (anything) accepts null; `false` accepts nothing.
        return schema.as_bool().unwrap_or(false);
    };
    if let Some(target) = map.get("$ref").and_then(Value::as_str) {
        return resolve(root, target)
            .is_none_or(|resolved| accepts_null(resolved, root, depth + 1));
    }
    if let Some(Value::Array(variants)) = map.get("anyOf").or_else(|| map.get("oneOf")) {
        return variants
            .iter()
            .any(|variant| accepts_null(variant, root, depth + 1));
    }
    match map.get("type") {
        Some(Value::String(single)) => single == "null",
        Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
        // No type: anything, null included (`serde_json::Value`, a bare enum of values).
        _ => map
            .get("enum")
            .and_then(Value::as_array)
            .is_none_or(|values| values.contains(&Value::Null)),
    }
}

/// Whether `variant` is a schema for values of `value`'s JSON type.
fn admits_type(variant: &Value, value: &Value) -> bool {
    let kind = match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let matches = |t: &Value| t == kind || (kind == "integer" && t == "number");
    match variant.get("type") {
        Some(Value::Array(types)) => types.iter().any(matches),
        Some(single) => matches(single),
        None => variant.get("$ref").is_some() && kind == "object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn strict_schemas_make_optional_properties_nullable_at_every_depth() {
        let schema = json!({
            "type": "object",
            "properties": {
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "node": {"$ref": "#/$defs/Node"},
                "inner": {
                    "type": ["object", "null"],
                    "properties": {"a": {"type": "string"}},
                    "additionalProperties": false
                }
            },
            "additionalProperties": false,
            "$defs": {"Node": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}}
        });
        let strict = to_strict_schema(&schema);
        assert_eq!(strict["required"], json!(["mode", "node", "inner"]));
        assert_eq!(
            strict["properties"]["mode"]["type"],
            json!(["string", "null"])
        );
        assert_eq!(
            strict["properties"]["mode"]["enum"],
            json!(["fast", "slow", null])
        );
        assert_eq!(
            strict["properties"]["node"],
            json!({"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]})
        );
        assert_eq!(strict["properties"]["inner"]["required"], json!(["a"]));
        assert_eq!(
            strict["properties"]["inner"]["properties"]["a"]["type"],
            json!(["string", "null"])
        );
        assert_eq!(
            strict["$defs"]["Node"]["additionalProperties"],
            json!(false)
        );
        assert!(is_strict_compatible(&strict));
    }

    #[test]
    fn strict_mode_needs_every_property_required() {
        assert!(is_strict_compatible(&json!({
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "required": ["a"],
            "additionalProperties": false
        })));
        assert!(!is_strict_compatible(&json!({
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": ["string", "null"]}},
            "required": ["a"],
            "additionalProperties": false
        })));
    }

    #[test]
    fn strict_mode_refuses_maps_anything_one_of_and_defaults() {
        let object = |property: Value| {
            json!({
                "type": "object",
                "properties": {"a": property},
                "required": ["a"],
                "additionalProperties": false
            })
        };
        for refused in [
            // A map: its values have a schema of their own.
            json!({"type": "object", "additionalProperties": {"type": "integer"}}),
            // Anything (`serde_json::Value`), as `true` or as a bare description.
            json!(true),
            json!({"description": "any value"}),
            // An enum with data, which schemars writes with `oneOf`.
            json!({"oneOf": [{"type": "string", "const": "A"}, {"type": "integer"}]}),
            json!({"type": "integer", "default": 0}),
        ] {
            assert!(!is_strict_compatible(&object(refused.clone())), "{refused}");
        }
        assert!(is_strict_compatible(&object(json!({"type": "integer"}))));
        // A boolean keyword is no schema of anything.
        assert!(is_strict_compatible(&object(
            json!({"type": "integer", "deprecated": true})
        )));
    }

    #[test]
    fn the_strict_form_has_any_of_for_one_of_and_no_defaults() {
        let schema = json!({
            "type": "object",
            "properties": {
                "days": {"type": "integer", "default": 0},
                "pick": {"oneOf": [{"type": "string"}, {"type": "integer"}]}
            },
            "required": ["pick"]
        });
        let strict = to_strict_schema(&schema);
        assert_eq!(
            strict["properties"],
            json!({
                "days": {"type": ["integer", "null"]},
                "pick": {"anyOf": [{"type": "string"}, {"type": "integer"}]}
            })
        );
        assert!(is_strict_compatible(&strict));
    }

    #[test]
    fn nulls_are_dropped_in_the_variant_the_value_was_written_for() {
        let by_id = json!({
            "type": "object",
            "properties": {"id": {"type": "integer"}},
            "required": ["id"]
        });
        let by_name = json!({
            "type": "object",
            "properties": {"name": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["name"]
        });
        let schema = json!({"anyOf": [by_id, by_name]});
        let mut args = json!({"name": "x", "limit": null});
        assert!(drop_added_nulls(&mut args, &schema));
        assert_eq!(args, json!({"name": "x"}));
        // Tagged variants are told apart by their tags; an object that flattens them keeps
        // its own properties' nulls in hand too.
        let tagged = json!({
            "type": "object",
            "properties": {"speed": {"type": "integer"}},
            "oneOf": [
                {"type": "object", "properties": {"kind": {"const": "A"}, "a": {"type": "integer"}}, "required": ["kind"]},
                {"type": "object", "properties": {"kind": {"const": "B"}, "b": {"type": "integer"}}, "required": ["kind"]}
            ]
        });
        let mut args = json!({"speed": null, "kind": "B", "b": null});
        assert!(drop_added_nulls(&mut args, &tagged));
        assert_eq!(args, json!({"kind": "B"}));
    }

    #[test]
    fn nulls_the_strict_form_allowed_are_dropped_and_no_others() {
        let schema = json!({
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "count": {"type": "integer", "default": 0},
                "note": {"type": ["string", "null"]},
                "inner": {
                    "type": "object",
                    "properties": {"depth": {"type": "integer", "default": 1}},
                    "additionalProperties": false
                },
                "list": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
                "either": {"anyOf": [{"type": "object", "properties": {"x": {"type": "number"}}}, {"type": "string"}]}
            },
            "required": ["city"],
            "additionalProperties": false,
            "$defs": {"Item": {"type": "object", "properties": {"tag": {"type": "string", "default": ""}}}}
        });
        let mut args = json!({
            "city": null,
            "count": null,
            "note": null,
            "inner": {"depth": null},
            "list": [{"tag": null}, {"tag": "a"}],
            "either": {"x": null}
        });
        assert!(drop_added_nulls(&mut args, &schema));
        assert_eq!(
            args,
            json!({
                // Required: the model's error to see, not golem's to hide.
                "city": null,
                // `Option`: null is its own answer.
                "note": null,
                "inner": {},
                "list": [{}, {"tag": "a"}],
                "either": {}
            })
        );
        let mut clean = json!({"city": "Oslo"});
        assert!(!drop_added_nulls(&mut clean, &schema));
    }

    #[test]
    fn recursive_schemas_and_hostile_depths_end() {
        let schema = json!({
            "$ref": "#/$defs/Node",
            "$defs": {"Node": {"type": "object", "properties": {
                "next": {"$ref": "#/$defs/Node"},
                "n": {"type": "integer", "default": 0}
            }}}
        });
        let mut args = json!({"n": null});
        for _ in 0..200 {
            args = json!({"next": args, "n": null});
        }
        drop_added_nulls(&mut args, &schema);
        assert!(args.get("n").is_none());
        let mut loops = json!({"a": null});
        drop_added_nulls(&mut loops, &json!({"$ref": "#"}));
    }
}
