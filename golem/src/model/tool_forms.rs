//! Each tool as a wire sends it, serialized once per tool definition instead of once per
//! request: Chat Completions' tools (strict or not), Gemini's function declarations, the
//! Responses API's and Anthropic's tools.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use serde_json::value::RawValue;

use super::ModelError;
use crate::tool::ToolDefinition;

/// How many tools' forms a cache keeps before it starts over.
const LIMIT: usize = 512;

/// The serialized wire form of each tool, keyed by name and kept with the definition it was
/// built from: a tool whose definition changed is built again.
#[derive(Default)]
pub(crate) struct ToolForms {
    forms: Mutex<BTreeMap<String, Form>>,
}

impl std::fmt::Debug for ToolForms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolForms").finish_non_exhaustive()
    }
}

struct Form {
    definition: ToolDefinition,
    json: Arc<RawValue>,
}

impl ToolForms {
    /// The form of each of `tools`: from the cache, or built and serialized now by `build`.
    pub(crate) fn get<'a>(
        &self,
        tools: impl Iterator<Item = &'a ToolDefinition>,
        build: impl Fn(&ToolDefinition) -> Result<Box<RawValue>, serde_json::Error>,
    ) -> Result<Vec<Arc<RawValue>>, ModelError> {
        // A poisoned lock only means another request panicked mid-insert: the map is
        // still a valid cache.
        let mut forms = self.forms.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out = Vec::new();
        for tool in tools {
            if let Some(form) = forms.get(&tool.name)
                && same_definition(&form.definition, tool)
            {
                out.push(Arc::clone(&form.json));
                continue;
            }
            let json: Arc<RawValue> = build(tool).map_err(ModelError::other)?.into();
            if forms.len() >= LIMIT {
                forms.clear();
            }
            forms.insert(
                tool.name.clone(),
                Form {
                    definition: tool.clone(),
                    json: Arc::clone(&json),
                },
            );
            out.push(json);
        }
        Ok(out)
    }
}

/// Whether two definitions are the same. Two copies of one schema hold their keys in the same
/// order, so the schemas are first compared key by key in order, which hashes nothing; only
/// schemas that differ that way are compared as maps.
fn same_definition(a: &ToolDefinition, b: &ToolDefinition) -> bool {
    a.name == b.name
        && a.description == b.description
        && (same_in_order(&a.parameters, &b.parameters) || a.parameters == b.parameters)
}

fn same_in_order(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|((ka, va), (kb, vb))| ka == kb && same_in_order(va, vb))
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same_in_order(a, b))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn definition(parameters: Value) -> ToolDefinition {
        ToolDefinition {
            name: "roll".to_owned(),
            description: Some("Roll dice.".to_owned()),
            parameters,
        }
    }

    #[test]
    fn schemas_are_the_same_whatever_the_order_of_their_keys() {
        let a = definition(json!({"type": "object", "properties": {"n": {"type": "integer"}}}));
        let b = definition(json!({"properties": {"n": {"type": "integer"}}, "type": "object"}));
        let c = definition(json!({"type": "object", "properties": {"n": {"type": "string"}}}));
        assert!(same_definition(&a, &a.clone()));
        assert!(same_definition(&a, &b));
        assert!(!same_definition(&a, &c));
    }

    #[test]
    fn a_changed_definition_is_built_again() {
        let forms = ToolForms::default();
        let built = std::cell::Cell::new(0);
        let build = |tool: &ToolDefinition| {
            built.set(built.get() + 1);
            serde_json::value::to_raw_value(&json!({"name": tool.name, "schema": tool.parameters}))
        };
        let first = definition(json!({"type": "object"}));
        let changed = definition(json!({"type": "object", "properties": {}}));
        let sent = forms.get([&first].into_iter(), build).unwrap();
        forms.get([&first].into_iter(), build).unwrap();
        assert_eq!(built.get(), 1);
        let resent = forms.get([&changed].into_iter(), build).unwrap();
        assert_eq!(built.get(), 2);
        assert_eq!(
            sent[0].get(),
            r#"{"name":"roll","schema":{"type":"object"}}"#
        );
        assert_eq!(
            resent[0].get(),
            r#"{"name":"roll","schema":{"type":"object","properties":{}}}"#
        );
    }
}
