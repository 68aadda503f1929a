//! Each tool as a wire sends it, serialized once per tool definition instead of once per
//! request: Chat Completions' tools (strict or not), Gemini's function declarations, the
//! Responses API's and Anthropic's tools.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use serde_json::value::RawValue;

use super::{ModelError, RequestParams};
use crate::tool::ToolDefinition;

/// How many tools' forms a cache keeps before it starts over.
const LIMIT: usize = 512;

/// The serialized wire form of each tool, keyed by name and kept with the definition it was
/// built from: a tool whose definition changed is built again. The forms of the last
/// sealed tool list asked for are kept with its mark (see
/// [`ToolsStamp`](super::ToolsStamp)), so the next request with that list takes them
/// without comparing its definitions.
#[derive(Default)]
pub(crate) struct ToolForms {
    cache: Mutex<Cache>,
}

#[derive(Default)]
struct Cache {
    forms: BTreeMap<String, Form>,
    /// The last sealed list's mark and forms.
    last: Option<(u64, Arc<[Arc<RawValue>]>)>,
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
    /// The form of each of `params`' tools, function tools first: those kept for its
    /// sealed tool list, or each from the cache, or built and serialized now by `build`.
    pub(crate) fn for_params(
        &self,
        params: &RequestParams,
        build: impl Fn(&ToolDefinition) -> Result<Box<RawValue>, serde_json::Error>,
    ) -> Result<Arc<[Arc<RawValue>]>, ModelError> {
        let stamp = params.tools_stamp.get();
        // A poisoned lock only means another request panicked mid-insert: the map is still a
        // valid cache.
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if let (Some(stamp), Some((last, forms))) = (stamp, &cache.last)
            && stamp == *last
        {
            return Ok(Arc::clone(forms));
        }
        let forms: Arc<[Arc<RawValue>]> = cache.get(params.all_tools(), build)?.into();
        if let Some(stamp) = stamp {
            cache.last = Some((stamp, Arc::clone(&forms)));
        }
        Ok(forms)
    }
}

impl Cache {
    /// The form of each of `tools`: from the cache, or built and serialized now by `build`.
    fn get<'a>(
        &mut self,
        tools: impl Iterator<Item = &'a ToolDefinition>,
        build: impl Fn(&ToolDefinition) -> Result<Box<RawValue>, serde_json::Error>,
    ) -> Result<Vec<Arc<RawValue>>, ModelError> {
        let forms = &mut self.forms;
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
    use crate::model::ToolsStamp;

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

    /// A `build` that counts what it builds.
    fn counting(
        built: &std::cell::Cell<u32>,
    ) -> impl Fn(&ToolDefinition) -> Result<Box<RawValue>, serde_json::Error> + '_ {
        |tool: &ToolDefinition| {
            built.set(built.get() + 1);
            serde_json::value::to_raw_value(&json!({"name": tool.name, "schema": tool.parameters}))
        }
    }

    #[test]
    fn a_changed_definition_is_built_again() {
        let forms = ToolForms::default();
        let built = std::cell::Cell::new(0);
        let first = RequestParams::text(vec![definition(json!({"type": "object"}))]);
        let changed = RequestParams::text(vec![definition(
            json!({"type": "object", "properties": {}}),
        )]);
        let sent = forms.for_params(&first, counting(&built)).unwrap();
        forms.for_params(&first, counting(&built)).unwrap();
        assert_eq!(built.get(), 1);
        let resent = forms.for_params(&changed, counting(&built)).unwrap();
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

    #[test]
    fn a_sealed_list_takes_its_kept_forms_and_a_copy_of_it_is_checked_again() {
        let forms = ToolForms::default();
        let built = std::cell::Cell::new(0);
        let mut sealed = RequestParams::text(vec![definition(json!({"type": "object"}))]);
        sealed.tools_stamp = ToolsStamp::fresh();
        let first = forms.for_params(&sealed, counting(&built)).unwrap();
        let again = forms.for_params(&sealed, counting(&built)).unwrap();
        assert!(Arc::ptr_eq(&first, &again), "the kept forms, as they were");
        assert_eq!(built.get(), 1);

        // A copy is unmarked: its changed tool is seen and built again.
        let mut copy = sealed.clone();
        copy.function_tools[0].parameters = json!({"type": "object", "properties": {}});
        let changed = forms.for_params(&copy, counting(&built)).unwrap();
        assert_eq!(built.get(), 2);
        assert_eq!(
            changed[0].get(),
            r#"{"name":"roll","schema":{"type":"object","properties":{}}}"#
        );
        // The sealed list's forms are still its own.
        let sealed_again = forms.for_params(&sealed, counting(&built)).unwrap();
        assert!(Arc::ptr_eq(&first, &sealed_again));
        assert_eq!(built.get(), 2);
    }
}
