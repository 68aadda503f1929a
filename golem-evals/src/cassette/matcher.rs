//! Which recorded exchange answers a request.

use std::sync::Arc;

use serde_json::Value;

use super::RecordedRequest;

type Custom = Arc<dyn Fn(&RecordedRequest, &RecordedRequest) -> bool + Send + Sync>;

/// How a replaying cassette finds the exchange that answers a request.
///
/// The default, [`Matcher::body`], matches the method, the path and the body as JSON (key
/// order and whitespace do not matter), less the fields named by
/// [`ignoring`](Matcher::ignoring). Requests are answered by the first exchange that matches
/// and has not answered yet (unless the cassette
/// [allows repeats](super::CassetteBuilder::allow_repeats)), so the same request asked twice
/// gets the two recorded answers in order, and concurrent requests find theirs by content.
///
/// ```
/// use golem_evals::cassette::Matcher;
///
/// // A request's `metadata` and `user` change from run to run: leave them out.
/// let matcher = Matcher::body().ignoring("/metadata").ignoring("/user");
/// // Or decide yourself: (recorded, incoming).
/// let by_path = Matcher::custom(|recorded, incoming| recorded.path == incoming.path);
/// # let _ = (matcher, by_path);
/// ```
#[derive(Clone)]
pub struct Matcher {
    ignored: Vec<String>,
    custom: Option<Custom>,
}

impl std::fmt::Debug for Matcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Matcher")
            .field("ignored", &self.ignored)
            .field("custom", &self.custom.is_some())
            .finish()
    }
}

impl Default for Matcher {
    fn default() -> Self {
        Matcher::body()
    }
}

impl Matcher {
    /// Method, path and JSON body, compared whole.
    pub fn body() -> Matcher {
        Matcher {
            ignored: Vec::new(),
            custom: None,
        }
    }

    /// Leaves the body field at the JSON pointer `pointer` (e.g. `/metadata`,
    /// `/messages/0/content`) out of the comparison.
    pub fn ignoring(mut self, pointer: impl Into<String>) -> Matcher {
        self.ignored.push(pointer.into());
        self
    }

    /// A matcher of your own: `matches(recorded, incoming)`.
    pub fn custom(
        matches: impl Fn(&RecordedRequest, &RecordedRequest) -> bool + Send + Sync + 'static,
    ) -> Matcher {
        Matcher {
            ignored: Vec::new(),
            custom: Some(Arc::new(matches)),
        }
    }

    /// Whether `recorded` answers `incoming`.
    pub fn matches(&self, recorded: &RecordedRequest, incoming: &RecordedRequest) -> bool {
        if let Some(custom) = &self.custom {
            return custom(recorded, incoming);
        }
        recorded.method == incoming.method
            && recorded.path == incoming.path
            && self.without_ignored(&recorded.body) == self.without_ignored(&incoming.body)
    }

    fn without_ignored(&self, body: &Value) -> Value {
        let mut body = body.clone();
        for pointer in &self.ignored {
            remove(&mut body, pointer);
        }
        body
    }
}

/// Removes the value at `pointer` from `value`, if there is one.
fn remove(value: &mut Value, pointer: &str) {
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return;
    };
    let last = last.replace("~1", "/").replace("~0", "~");
    match value.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.remove(&last);
        }
        Some(Value::Array(items)) => {
            if let Ok(index) = last.parse::<usize>()
                && index < items.len()
            {
                items.remove(index);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request(body: Value) -> RecordedRequest {
        RecordedRequest {
            method: "POST".to_owned(),
            path: "/v1/chat/completions".to_owned(),
            body,
        }
    }

    #[test]
    fn bodies_match_as_json_less_the_ignored_fields() {
        let recorded = request(json!({"model": "m", "user": "a", "messages": [1, 2]}));
        let incoming = request(json!({"messages": [1, 2], "user": "b", "model": "m"}));
        assert!(!Matcher::body().matches(&recorded, &incoming));
        assert!(
            Matcher::body()
                .ignoring("/user")
                .matches(&recorded, &incoming)
        );
        let other = request(json!({"messages": [1, 3], "user": "a", "model": "m"}));
        assert!(!Matcher::body().ignoring("/user").matches(&recorded, &other));
        assert!(
            Matcher::body()
                .ignoring("/messages/1")
                .matches(&recorded, &other)
        );
    }
}
