//! OpenAI's Responses API (`/v1/responses`): the wire OpenAI's reasoning models want, whose
//! reasoning is carried from one turn to the next.
//!
//! ```no_run
//! use golem::model::openai::responses::OpenAiResponsesModel;
//!
//! // OPENAI_API_KEY and, optionally, OPENAI_BASE_URL from the environment:
//! let model = OpenAiResponsesModel::from_env("o4-mini")?;
//!
//! // Reasoning effort and summaries; stored by OpenAI instead of carried by golem:
//! let stored = OpenAiResponsesModel::builder("o4-mini")
//!     .api_key("sk-...")
//!     .reasoning_effort("high")
//!     .reasoning_summary("auto")
//!     .store(true)
//!     .build()?;
//! # Ok::<_, golem::model::ProviderError>(())
//! ```
//!
//! golem's history becomes the request's `input` items: prompts and answers as messages,
//! each tool call as a `function_call` and its result as the `function_call_output` with
//! the same `call_id`, and the model's reasoning items, in the place they came, as
//! [`ThinkingPart`](crate::model::ThinkingPart)s with their ids. By default golem keeps the
//! conversation itself: requests go with `store: false` and ask a reasoning model for
//! `reasoning.encrypted_content` (see [`encrypted_reasoning`](HttpBuilder::encrypted_reasoning)),
//! which the next request sends back, so the model keeps its reasoning across tool calls
//! without OpenAI storing anything. With
//! [`store(true)`](HttpBuilder::store), reasoning items go back by id only.
//!
//! A response `incomplete` at the output limit ends the run with
//! [`ModelError::Truncated`], one withheld by the
//! content filter with [`ModelError::ContentFilter`];
//! a `failed` response is an error naming its code. Streamed responses are read from the
//! API's typed events (`response.output_text.delta`,
//! `response.function_call_arguments.delta`, `response.completed`, `error`, ...) into the
//! response the non-streamed API answers with, decoded by the same decoder.

use std::fmt;

use reqwest::header::HeaderMap;

use super::super::http::{ApiKey, HttpBuilder, HttpModel, Wire};
use super::super::tool_forms::ToolForms;
use super::super::{
    Message, ModelError, ModelResponse, ModelSettings, ProviderError, RequestParams,
};
use super::{API_KEY_ENV, BASE_URL_ENV, DEFAULT_BASE_URL, PROVIDER, openai_headers};

mod read;
mod stream;
mod wire;

/// A Responses API model: an [`HttpModel`] speaking [`Responses`]. Cheap to clone; clones
/// share one connection pool.
pub type OpenAiResponsesModel = HttpModel<Responses>;

/// Configures an [`OpenAiResponsesModel`]: the setters every provider has
/// ([`HttpBuilder`]), and the Responses API's own (`store`, `strict_tools`,
/// `reasoning_effort`, `reasoning_summary`, `organization`, `project`).
pub type OpenAiResponsesBuilder = HttpBuilder<Responses>;

/// The Responses wire format, and what an [`OpenAiResponsesModel`] keeps for it.
#[derive(Default)]
pub struct Responses {
    organization: Option<String>,
    project: Option<String>,
    /// Whether OpenAI stores responses (`store: true`); golem carries them otherwise.
    store: bool,
    strict_tools: bool,
    reasoning_effort: Option<String>,
    reasoning_summary: Option<String>,
    /// Whether to ask for the reasoning's encrypted content when nothing is stored; `None`
    /// asks for it when the model reasons (see [`HttpBuilder::encrypted_reasoning`]).
    encrypted_reasoning: Option<bool>,
    /// Whether the base URL is OpenAI's, whose limits (`max_output_tokens` of 16 or more)
    /// are checked before sending; other servers of the API keep their own.
    openai: bool,
    /// Each tool as sent, serialized once per tool definition.
    tool_forms: ToolForms,
}

impl Responses {
    /// Whether a request to `model` asks for the reasoning's encrypted content: when
    /// nothing is stored and the model reasons, by what the builder was told or else by
    /// the model's name (OpenAI refuses the request for a model that does not reason).
    fn asks_encrypted_reasoning(&self, model: &str) -> bool {
        !self.store
            && self.encrypted_reasoning.unwrap_or_else(|| {
                self.reasoning_effort.is_some()
                    || self.reasoning_summary.is_some()
                    || reasons(model)
            })
    }

    /// Whether `model` is sent reasoning items: not when the builder says it does not
    /// reason, nor when its name says so (`gpt-4.1`, after a fallback from `o4-mini`): OpenAI
    /// refuses them for such a model ("Reasoning input items can only be provided to a
    /// reasoning or computer use model"). A name that does not tell (an Azure deployment's)
    /// is sent them.
    fn takes_reasoning(&self, model: &str) -> bool {
        self.encrypted_reasoning.unwrap_or_else(|| {
            self.reasoning_effort.is_some()
                || self.reasoning_summary.is_some()
                || reasons(model)
                || !gpt(model)
        })
    }
}

/// The name of OpenAI's model `model`, without a path and, for a fine-tuned model
/// (`ft:o4-mini:org::id`), its base.
fn base_name(model: &str) -> &str {
    let model = model.rsplit('/').next().unwrap_or(model);
    match model.get(..3) {
        Some(head) if head.eq_ignore_ascii_case("ft:") => {
            let tuned = &model[3..];
            tuned.split(':').next().unwrap_or(tuned)
        }
        _ => model,
    }
}

/// Whether `model` starts with `prefix`, whatever its case.
fn starts(model: &str, prefix: &str) -> bool {
    model
        .get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
}

/// Whether `model` is one of OpenAI's GPT models by its name (`gpt-4.1`, `chatgpt-4o-latest`).
fn gpt(model: &str) -> bool {
    let model = base_name(model);
    starts(model, "gpt-") || starts(model, "chatgpt-")
}

/// Whether OpenAI's model `model` reasons, by its name: the o-series (`o1`, `o3-mini`,
/// `o4-mini`), GPT-5 but its chat models (`gpt-5`, `gpt-5.1-codex`, not
/// `gpt-5-chat-latest`), Codex and computer use; a fine-tuned model (`ft:o4-mini:org::id`)
/// by its base.
fn reasons(model: &str) -> bool {
    // Read in place, whatever its case: this runs on every request.
    let model = base_name(model);
    let o_series = starts(model, "o") && model[1..].starts_with(|c: char| c.is_ascii_digit());
    let chat = model
        .as_bytes()
        .windows("-chat".len())
        .any(|window| window.eq_ignore_ascii_case(b"-chat"));
    o_series
        || (starts(model, "gpt-5") && !chat)
        || starts(model, "codex")
        || starts(model, "computer-use")
}

impl fmt::Debug for Responses {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Responses")
            .field("organization", &self.organization)
            .field("project", &self.project)
            .field("store", &self.store)
            .field("strict_tools", &self.strict_tools)
            .field("reasoning_effort", &self.reasoning_effort)
            .field("reasoning_summary", &self.reasoning_summary)
            .field("encrypted_reasoning", &self.encrypted_reasoning)
            .finish()
    }
}

impl Wire for Responses {
    const PROVIDER: &'static str = PROVIDER;
    const TYPE_NAME: &'static str = "OpenAiResponsesModel";
    const API_KEY_ENV: &'static str = API_KEY_ENV;
    const BASE_URL_ENV: &'static str = BASE_URL_ENV;
    const DEFAULT_BASE_URL: &'static str = DEFAULT_BASE_URL;
    const PATH: &'static str = "/responses";

    fn requires_key(base_url: &str) -> bool {
        base_url == DEFAULT_BASE_URL
    }

    fn prepare(
        &mut self,
        key: Option<&ApiKey>,
        base_url: &str,
        headers: &mut HeaderMap,
    ) -> Result<(), ProviderError> {
        self.openai = base_url.contains("api.openai.com");
        openai_headers(
            key,
            self.organization.as_deref(),
            self.project.as_deref(),
            headers,
        )
    }

    type Assembler = stream::Events;

    fn body(
        &self,
        model: &str,
        settings: &ModelSettings,
        messages: &[Message],
        params: &RequestParams,
        stream: bool,
        capacity: usize,
    ) -> Result<Vec<u8>, ModelError> {
        wire::body(self, model, settings, messages, params, stream, capacity)
    }

    fn assembler(&self, _params: &RequestParams) -> stream::Events {
        stream::Events::default()
    }

    fn parse(&self, body: &[u8], params: &RequestParams) -> Result<ModelResponse, String> {
        read::parse(body, params, self.strict_tools)
    }
}

impl OpenAiResponsesBuilder {
    /// Sends `OpenAI-Organization`.
    pub fn organization(mut self, organization: impl Into<String>) -> Self {
        self.wire.organization = Some(organization.into());
        self
    }

    /// Sends `OpenAI-Project`.
    pub fn project(mut self, project: impl Into<String>) -> Self {
        self.wire.project = Some(project.into());
        self
    }

    /// Whether OpenAI stores each response (`store: true`). Off by default: golem sends the
    /// whole conversation with every request, and asks a reasoning model for its
    /// reasoning's encrypted content (`include: ["reasoning.encrypted_content"]`, see
    /// [`encrypted_reasoning`](Self::encrypted_reasoning)) to send it back, which works
    /// for organizations with zero data retention too. On, reasoning items go back by id
    /// and OpenAI looks them up.
    pub fn store(mut self, store: bool) -> Self {
        self.wire.store = store;
        self
    }

    /// Sends every function tool with `"strict": true` and its schema in the form strict
    /// mode accepts (see [`to_strict_schema`](super::to_strict_schema)); the `null`s strict
    /// mode makes the model write for optional fields are removed from its arguments again.
    /// Off by default: tools go with `"strict": false` (the Responses API's own default is
    /// strict, which refuses many ordinary schemas).
    pub fn strict_tools(mut self, strict: bool) -> Self {
        self.wire.strict_tools = strict;
        self
    }

    /// Sets how hard a reasoning model thinks (`reasoning.effort`: `minimal`, `low`,
    /// `medium`, `high`).
    pub fn reasoning_effort(mut self, effort: impl Into<String>) -> Self {
        self.wire.reasoning_effort = Some(effort.into());
        self
    }

    /// Asks for summaries of the reasoning (`reasoning.summary`: `auto`, `concise`,
    /// `detailed`), which arrive as [`ThinkingPart`](crate::model::ThinkingPart)s.
    pub fn reasoning_summary(mut self, summary: impl Into<String>) -> Self {
        self.wire.reasoning_summary = Some(summary.into());
        self
    }

    /// Whether requests ask for the reasoning's encrypted content
    /// (`include: ["reasoning.encrypted_content"]`) when nothing is stored. By default they
    /// do for a model that reasons: one given a reasoning effort or summary, or one whose
    /// name says so (`o1`, `o3`, `o4-mini`, `gpt-5` but its `-chat` models, `codex`,
    /// `computer-use`; a fine-tuned model by its base);
    /// OpenAI refuses the field for any other model. Set it for a model the name does not
    /// tell (a fine-tuned or a proxied one).
    ///
    /// ```
    /// use golem::model::openai::responses::OpenAiResponsesModel;
    ///
    /// let tuned = OpenAiResponsesModel::builder("ft:my-reasoner")
    ///     .api_key("sk-...")
    ///     .encrypted_reasoning(true)
    ///     .build()?;
    /// # Ok::<_, golem::model::ProviderError>(())
    /// ```
    pub fn encrypted_reasoning(mut self, ask: bool) -> Self {
        self.wire.encrypted_reasoning = Some(ask);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reasoning_models_are_known_by_their_names() {
        for model in [
            "o1",
            "o3-mini",
            "o4-mini-2025-04-16",
            "gpt-5",
            "gpt-5.1-codex",
            "openai/gpt-5-mini",
            "codex-mini-latest",
            "ft:o4-mini-2025-04-16:org::abc123",
            "computer-use-preview",
            "O3-Mini",
        ] {
            assert!(reasons(model), "{model}");
        }
        for model in [
            "gpt-4.1",
            "gpt-4o-mini",
            "gpt-5-chat-latest",
            "omni-moderation",
            "ft:gpt-4.1-mini:org::abc123",
            "GPT-5-Chat-Latest",
        ] {
            assert!(!reasons(model), "{model}");
        }
    }

    #[test]
    fn reasoning_goes_to_every_model_but_those_known_not_to_reason() {
        let wire = Responses::default();
        for model in ["o4-mini", "prod-reasoner", "my-azure-deployment"] {
            assert!(wire.takes_reasoning(model), "{model}");
        }
        for model in ["gpt-4.1", "ft:gpt-4o:org::x", "chatgpt-4o-latest"] {
            assert!(!wire.takes_reasoning(model), "{model}");
        }
        let told = Responses {
            encrypted_reasoning: Some(true),
            ..Responses::default()
        };
        assert!(told.takes_reasoning("gpt-4.1"));
    }

    #[test]
    fn the_encrypted_reasoning_is_asked_for_when_nothing_is_stored_and_the_model_reasons() {
        let wire = |store, effort: Option<&str>, ask| Responses {
            store,
            reasoning_effort: effort.map(str::to_owned),
            encrypted_reasoning: ask,
            ..Responses::default()
        };
        assert!(wire(false, None, None).asks_encrypted_reasoning("o4-mini"));
        assert!(!wire(false, None, None).asks_encrypted_reasoning("gpt-4.1"));
        assert!(wire(false, Some("low"), None).asks_encrypted_reasoning("my-proxy"));
        assert!(wire(false, None, Some(true)).asks_encrypted_reasoning("ft:mine"));
        assert!(!wire(false, None, Some(false)).asks_encrypted_reasoning("o4-mini"));
        assert!(!wire(true, None, None).asks_encrypted_reasoning("o4-mini"));
    }
}
