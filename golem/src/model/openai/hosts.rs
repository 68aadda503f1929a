//! OpenAI-compatible hosts by name: the base URL and the key variable of each, for
//! [`infer`](crate::model::infer) strings such as `groq:llama-3.3-70b-versatile`.
//!
//! ```
//! use golem::model::openai::hosts;
//!
//! let groq = hosts::find("groq").expect("a known host");
//! assert_eq!(groq.base_url, "https://api.groq.com/openai/v1");
//! assert_eq!(groq.api_key_env, Some("GROQ_API_KEY"));
//!
//! // A local server needs no key:
//! let model = hosts::find("ollama").unwrap().model("llama3.2")?;
//! assert_eq!(model.profile(), golem::model::openai::ServerProfile::Ollama);
//! # Ok::<_, golem::model::ProviderError>(())
//! ```

use super::{OpenAiModel, ServerProfile};
use crate::model::ProviderError;
use crate::model::provider::env_var;

/// An OpenAI-compatible host golem knows by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompatibleHost {
    /// The name, as the prefix of a model string (`groq`).
    pub name: &'static str,
    /// The host's Chat Completions base URL.
    pub base_url: &'static str,
    /// Where the key is read from; `None` for a local server that takes none.
    pub api_key_env: Option<&'static str>,
    /// Where a base URL other than [`base_url`](Self::base_url) is read from.
    pub base_url_env: &'static str,
    /// The server profile.
    pub profile: ServerProfile,
    /// Whether a streamed request asks for its usage (see
    /// [`OpenAiBuilder::stream_usage`](super::OpenAiBuilder::stream_usage)): off for
    /// a host that refuses `stream_options` and reports the usage on its own (Mistral).
    pub stream_usage: bool,
    /// Whether a response's reasoning goes back (see
    /// [`OpenAiBuilder::send_reasoning`](super::OpenAiBuilder::send_reasoning)): on for a
    /// host whose thinking mode requires it (DeepSeek).
    pub send_reasoning: bool,
}

/// The hosts golem knows by name.
pub const HOSTS: &[CompatibleHost] = &[
    hosted(
        "groq",
        "https://api.groq.com/openai/v1",
        "GROQ_API_KEY",
        "GROQ_BASE_URL",
    ),
    // DeepSeek's thinking mode answers 400 to a tool call's turn sent back without its
    // `reasoning_content`.
    CompatibleHost {
        send_reasoning: true,
        ..hosted(
            "deepseek",
            "https://api.deepseek.com/v1",
            "DEEPSEEK_API_KEY",
            "DEEPSEEK_BASE_URL",
        )
    },
    hosted(
        "openrouter",
        "https://openrouter.ai/api/v1",
        "OPENROUTER_API_KEY",
        "OPENROUTER_BASE_URL",
    ),
    hosted(
        "together",
        "https://api.together.xyz/v1",
        "TOGETHER_API_KEY",
        "TOGETHER_BASE_URL",
    ),
    // Mistral answers 422 to `stream_options` ("extra_forbidden") and sends a stream's
    // usage in its last chunk unasked; it takes call ids of nine letters or digits only.
    CompatibleHost {
        profile: ServerProfile::Mistral,
        stream_usage: false,
        ..hosted(
            "mistral",
            "https://api.mistral.ai/v1",
            "MISTRAL_API_KEY",
            "MISTRAL_BASE_URL",
        )
    },
    CompatibleHost {
        name: "ollama",
        base_url: "http://localhost:11434/v1",
        api_key_env: None,
        base_url_env: "OLLAMA_BASE_URL",
        profile: ServerProfile::Ollama,
        stream_usage: true,
        send_reasoning: false,
    },
    CompatibleHost {
        name: "llamacpp",
        base_url: "http://localhost:8080/v1",
        api_key_env: None,
        base_url_env: "LLAMACPP_BASE_URL",
        profile: ServerProfile::LlamaCpp,
        stream_usage: true,
        send_reasoning: false,
    },
];

const fn hosted(
    name: &'static str,
    base_url: &'static str,
    api_key_env: &'static str,
    base_url_env: &'static str,
) -> CompatibleHost {
    CompatibleHost {
        name,
        base_url,
        api_key_env: Some(api_key_env),
        base_url_env,
        profile: ServerProfile::Compatible,
        stream_usage: true,
        send_reasoning: false,
    }
}

/// The host called `name`, if golem knows it.
pub fn find(name: &str) -> Option<&'static CompatibleHost> {
    HOSTS.iter().find(|host| host.name == name)
}

impl CompatibleHost {
    /// The base URL a value of [`base_url_env`](Self::base_url_env) names: as it is, but
    /// Ollama's root (`http://localhost:11434`, as `OLLAMA_BASE_URL` is set for other
    /// tools) gets its compatible endpoint's `/v1`.
    fn base_url_from_env(&self, url: String) -> String {
        let root = url.trim_end_matches('/');
        if self.profile == ServerProfile::Ollama && !root.ends_with("/v1") {
            format!("{root}/v1")
        } else {
            url
        }
    }

    /// `model` on this host: its base URL (or the one in
    /// [`base_url_env`](Self::base_url_env)), its key from
    /// [`api_key_env`](Self::api_key_env), its profile.
    ///
    /// # Errors
    /// [`ProviderError::MissingApiKey`] when the host takes a key and none is set; an
    /// invalid base URL.
    pub fn model(&self, model: &str) -> Result<OpenAiModel, ProviderError> {
        let base_url = env_var(self.base_url_env)
            .map(|url| self.base_url_from_env(url))
            .unwrap_or_else(|| self.base_url.to_owned());
        let mut builder = OpenAiModel::builder(model)
            .base_url(base_url)
            .profile(self.profile)
            .stream_usage(self.stream_usage)
            .send_reasoning(self.send_reasoning)
            .host(self.name, self.api_key_env.unwrap_or(super::API_KEY_ENV));
        if let Some(key_env) = self.api_key_env {
            let Some(key) = env_var(key_env) else {
                return Err(ProviderError::MissingApiKey {
                    provider: self.name,
                    env_var: key_env,
                });
            };
            builder = builder.api_key(key);
        }
        builder.build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_host_has_a_distinct_name_and_variables_of_its_own() {
        for (index, host) in HOSTS.iter().enumerate() {
            assert_eq!(find(host.name), Some(host));
            assert!(
                HOSTS[index + 1..]
                    .iter()
                    .all(|other| other.name != host.name)
            );
            let prefix = host.name.to_ascii_uppercase();
            assert!(host.base_url_env.starts_with(&prefix), "{host:?}");
            if let Some(key) = host.api_key_env {
                assert!(key.starts_with(&prefix), "{host:?}");
            }
        }
        assert_eq!(find("vllm"), None);
    }

    #[test]
    fn a_hosted_server_without_its_key_names_the_variable() {
        let host = CompatibleHost {
            name: "example",
            base_url: "https://api.example.com/v1",
            api_key_env: Some("GOLEM_TEST_EXAMPLE_API_KEY_NEVER_SET"),
            base_url_env: "GOLEM_TEST_EXAMPLE_BASE_URL_NEVER_SET",
            profile: ServerProfile::Compatible,
            stream_usage: true,
            send_reasoning: false,
        };
        let error = host.model("m").expect_err("no key");
        assert_eq!(
            error.to_string(),
            "no example API key: set GOLEM_TEST_EXAMPLE_API_KEY_NEVER_SET, or pass one to the builder"
        );
    }

    #[test]
    fn mistral_is_not_asked_for_a_streams_usage_which_it_refuses() {
        for host in HOSTS {
            assert_eq!(host.stream_usage, host.name != "mistral", "{host:?}");
            assert_eq!(
                host.profile == ServerProfile::Mistral,
                host.name == "mistral",
                "{host:?}"
            );
            assert_eq!(host.send_reasoning, host.name == "deepseek", "{host:?}");
        }
        let mistral = CompatibleHost {
            api_key_env: None,
            ..*find("mistral").expect("known")
        };
        let model = mistral
            .model("mistral-large-latest")
            .expect("no key needed");
        assert!(
            format!("{model:?}").contains("stream_usage: false"),
            "{model:?}"
        );
    }

    #[test]
    fn ollamas_root_gets_its_compatible_endpoint() {
        let ollama = find("ollama").expect("known");
        for (value, base_url) in [
            ("http://gpu-box:11434", "http://gpu-box:11434/v1"),
            ("http://gpu-box:11434/", "http://gpu-box:11434/v1"),
            ("http://gpu-box:11434/v1", "http://gpu-box:11434/v1"),
        ] {
            assert_eq!(ollama.base_url_from_env(value.to_owned()), base_url);
        }
        let groq = find("groq").expect("known");
        assert_eq!(
            groq.base_url_from_env("https://proxy.example.com/groq".to_owned()),
            "https://proxy.example.com/groq"
        );
    }

    #[test]
    fn a_local_server_takes_no_key_and_keeps_its_profile() {
        let model = find("llamacpp")
            .expect("known")
            .model("qwen2.5")
            .expect("no key needed");
        assert_eq!(model.profile(), ServerProfile::LlamaCpp);
        assert_eq!(crate::model::Model::name(&model), "qwen2.5");
        assert_eq!(crate::model::Model::system(&model), "llamacpp");
    }

    #[tokio::test]
    async fn a_hosts_errors_name_the_host_and_its_key_variable() {
        use crate::model::{Model, RequestParams};

        let server = wiremock::MockServer::start().await;
        wiremock::Mock::given(wiremock::matchers::any())
            .respond_with(
                wiremock::ResponseTemplate::new(401)
                    .set_body_json(serde_json::json!({"error": {"message": "Invalid API Key"}})),
            )
            .mount(&server)
            .await;
        let model = OpenAiModel::builder("llama-3.3-70b-versatile")
            .base_url(format!("{}/openai/v1", server.uri()))
            .api_key("gsk-wrong")
            .host("groq", "GROQ_API_KEY")
            .build()
            .expect("valid");

        let error = model
            .request(&[], &RequestParams::text(Vec::new()))
            .await
            .expect_err("refused");

        assert_eq!(model.system(), "groq");
        assert_eq!(
            error.to_string(),
            "groq refused the credentials (HTTP 401): Invalid API Key; check GROQ_API_KEY"
        );
    }
}
