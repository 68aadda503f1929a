//! Recorded runs: a cassette records what a provider answered once, and answers the same
//! from the file ever after, so that tests and evals run deterministically, offline, through
//! golem's real provider code.
//!
//! A [`Cassette`] is an HTTP server on loopback that a provider's `base_url` points at. In
//! **record** mode it passes each request on to the real server (a provider or a local
//! llama.cpp), streams the answer back as it comes, and keeps the exchange: the request's
//! method, path and body, the response's status, the headers a client reads, and the body
//! whole or, for a server-sent event stream, its events in order. [`finish`](Cassette::finish)
//! writes them to a JSON file. In **replay** mode it answers each request with the recorded
//! exchange that [matches](Matcher) it, event streams one event a chunk, so the streamed
//! and the unstreamed code paths both run as they would against the provider. A request the
//! cassette does not hold is answered with HTTP 400 (a run sees a `ModelError` saying so, and
//! no retry) and makes `finish` fail with [`CassetteError::Mismatch`].
//!
//! Recording at the HTTP edge, not around a `Model`, is what keeps every wire's reading and
//! streaming in the test: the bytes replayed are the provider's.
//!
//! **Secrets.** Request headers are never written (credentials travel there). The values of
//! the credential headers and query parameters a request carried (`Authorization`,
//! `x-api-key`, `x-goog-api-key`, `api-key`, `?key=`), and those given to
//! [`CassetteBuilder::secret`], are replaced by `[redacted]` wherever they appear; then a
//! check refuses to write a file that still holds a known secret or a string shaped like a
//! provider key (`sk-…`, `AIza…`, a bearer token): [`CassetteError::Secret`], nothing written.
//!
//! ```
//! use golem::Agent;
//! use golem::model::openai::OpenAiModel;
//! use golem_evals::cassette::{Cassette, Exchange, RecordedBody, RecordedRequest, RecordedResponse, Tape};
//! use serde_json::json;
//!
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! # let dir = std::env::temp_dir().join(format!("golem-cassette-doc-{}", std::process::id()));
//! # let path = dir.join("greeting.json");
//! # let request = json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Say hello"}]});
//! # let answer = json!({"id": "c1", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini",
//! #     "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Hello!"}}],
//! #     "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}});
//! # let tape = Tape { version: 1, exchanges: vec![Exchange {
//! #     request: RecordedRequest { method: "POST".into(), path: "/v1/chat/completions".into(), body: request },
//! #     response: RecordedResponse { status: 200, headers: [("content-type".to_owned(), "application/json".to_owned())].into(), body: RecordedBody::Body(answer) },
//! # }] };
//! # tape.save(&path)?;
//! // Recorded once with `Cassette::record(&path, "https://api.openai.com")`; replayed here.
//! let cassette = Cassette::replay(&path).await?;
//! let model = OpenAiModel::builder("gpt-4o-mini")
//!     .api_key("sk-not-needed-to-replay")
//!     .base_url(format!("{}/v1", cassette.url()))
//!     .build()?;
//! let agent = Agent::<(), String>::builder(model).build()?;
//! assert_eq!(agent.run("Say hello", ()).await?.output, "Hello!");
//! cassette.finish().await?;
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```

mod file;
mod matcher;
mod secrets;
mod server;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

pub use file::{Exchange, FORMAT_VERSION, RecordedBody, RecordedRequest, RecordedResponse, Tape};
pub use matcher::Matcher;
use secrets::Secrets;

/// Whether a cassette records or replays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Requests go on to the real server; the exchanges are written by `finish`.
    Record,
    /// Requests are answered from the file.
    Replay,
}

/// A request a replaying cassette held no answer for.
#[derive(Clone, Debug, PartialEq)]
pub struct Miss {
    /// The request, as it would have been recorded.
    pub request: RecordedRequest,
}

/// What a cassette did, once finished.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Finished {
    /// Recorded or replayed.
    pub mode: Mode,
    /// The exchanges the file holds.
    pub exchanges: usize,
    /// The exchanges no request asked for (replay; always 0 when recording).
    pub unused: usize,
}

/// Why a cassette could not start, record or replay.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CassetteError {
    /// The file could not be read or written.
    #[error("cassette {path}: {source}")]
    Io {
        /// The cassette file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a cassette.
    #[error("cassette {path} cannot be read: {source}")]
    Corrupt {
        /// The cassette file.
        path: PathBuf,
        /// Why it cannot be read.
        #[source]
        source: serde_json::Error,
    },
    /// The file was written in a format version this crate does not read.
    #[error(
        "cassette {path} has format version {found}; this version of golem-evals reads {FORMAT_VERSION}"
    )]
    Version {
        /// The cassette file.
        path: PathBuf,
        /// Its version.
        found: u32,
    },
    /// The loopback server could not start.
    #[error("the cassette's server cannot start: {0}")]
    Serve(#[source] std::io::Error),
    /// The HTTP client that passes requests on could not be built.
    #[error("the cassette's HTTP client cannot be built: {0}")]
    Client(#[source] reqwest::Error),
    /// A recorded exchange still holds a secret after scrubbing; nothing was written.
    #[error(
        "cassette {path} was not written: exchange {exchange} holds {what}; \
         name it with `CassetteBuilder::secret` to have it redacted"
    )]
    Secret {
        /// The cassette file.
        path: PathBuf,
        /// The exchange's index.
        exchange: usize,
        /// What kind of secret (never its value).
        what: &'static str,
    },
    /// Requests arrived that the cassette holds no answer for.
    #[error(
        "cassette {path} holds no answer for {} request(s), the first {} {}; record it again \
         (GOLEM_RECORD=1) or loosen the matcher",
        misses.len(),
        misses[0].request.method,
        misses[0].request.path
    )]
    Mismatch {
        /// The cassette file.
        path: PathBuf,
        /// The requests without an answer, in order.
        misses: Vec<Miss>,
    },
}

/// Options of a cassette before it starts.
#[derive(Debug)]
pub struct CassetteBuilder {
    path: PathBuf,
    matcher: Matcher,
    allow_repeats: bool,
    secrets: Secrets,
}

impl CassetteBuilder {
    /// How a replayed request finds its exchange ([`Matcher::body`] by default).
    pub fn matcher(mut self, matcher: Matcher) -> Self {
        self.matcher = matcher;
        self
    }

    /// Lets an exchange answer more than once (the last matching one answers once all have
    /// answered): for code that repeats a request a varying number of times.
    pub fn allow_repeats(mut self, allow: bool) -> Self {
        self.allow_repeats = allow;
        self
    }

    /// A value to redact wherever it appears, beside the credentials the requests carry.
    pub fn secret(mut self, value: impl AsRef<str>) -> Self {
        self.secrets.add(value.as_ref());
        self
    }

    /// Starts recording: requests go on to `upstream` (its scheme, host and port, e.g.
    /// `https://api.openai.com`; the request's path is kept).
    pub async fn record(self, upstream: impl Into<String>) -> Result<Cassette, CassetteError> {
        let client = reqwest::Client::builder()
            .build()
            .map_err(CassetteError::Client)?;
        let upstream = upstream.into().trim_end_matches('/').to_owned();
        self.start(Mode::Record, Tape::default(), Some((upstream, client)))
            .await
    }

    /// Starts replaying the file.
    pub async fn replay(self) -> Result<Cassette, CassetteError> {
        let tape = Tape::load(&self.path)?;
        self.start(Mode::Replay, tape, None).await
    }

    /// Records when the environment variable `GOLEM_RECORD` is set (and not `0`), replays
    /// otherwise: tests replay in CI and record again on request.
    pub async fn from_env(self, upstream: impl Into<String>) -> Result<Cassette, CassetteError> {
        let record =
            std::env::var("GOLEM_RECORD").is_ok_and(|value| !value.is_empty() && value != "0");
        if record {
            self.record(upstream).await
        } else {
            self.replay().await
        }
    }

    async fn start(
        self,
        mode: Mode,
        tape: Tape,
        upstream: Option<(String, reqwest::Client)>,
    ) -> Result<Cassette, CassetteError> {
        let used = vec![false; tape.exchanges.len()];
        let shared = Arc::new(Shared {
            path: self.path,
            mode,
            matcher: self.matcher,
            allow_repeats: self.allow_repeats,
            upstream,
            state: Mutex::new(State {
                tape,
                used,
                secrets: self.secrets,
                misses: Vec::new(),
                recording: Vec::new(),
            }),
        });
        let (url, server) = server::serve(Arc::clone(&shared))
            .await
            .map_err(CassetteError::Serve)?;
        Ok(Cassette {
            shared,
            url,
            server,
        })
    }
}

/// A recording or replaying HTTP server on loopback; see the [module](self).
///
/// Dropping it stops the server; only [`finish`](Cassette::finish) writes a recording.
#[derive(Debug)]
pub struct Cassette {
    shared: Arc<Shared>,
    url: String,
    server: tokio::task::JoinHandle<()>,
}

#[derive(Debug)]
struct Shared {
    path: PathBuf,
    mode: Mode,
    matcher: Matcher,
    allow_repeats: bool,
    upstream: Option<(String, reqwest::Client)>,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// Replay: the file. Record: the exchanges so far, unscrubbed.
    tape: Tape,
    used: Vec<bool>,
    secrets: Secrets,
    misses: Vec<Miss>,
    /// Record: the exchanges still streaming.
    recording: Vec<tokio::task::JoinHandle<()>>,
}

impl Shared {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Cassette {
    /// Options for the cassette at `path`.
    pub fn builder(path: impl Into<PathBuf>) -> CassetteBuilder {
        CassetteBuilder {
            path: path.into(),
            matcher: Matcher::body(),
            allow_repeats: false,
            secrets: Secrets::default(),
        }
    }

    /// Records the exchanges with `upstream` into `path`, with the default options.
    pub async fn record(
        path: impl Into<PathBuf>,
        upstream: impl Into<String>,
    ) -> Result<Cassette, CassetteError> {
        Cassette::builder(path).record(upstream).await
    }

    /// Replays `path`, with the default options.
    pub async fn replay(path: impl Into<PathBuf>) -> Result<Cassette, CassetteError> {
        Cassette::builder(path).replay().await
    }

    /// The server's URL, `http://127.0.0.1:PORT`: a provider's base URL is this with the
    /// provider's path prefix (`/v1` for OpenAI and Anthropic, `/v1beta` for Gemini).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Recording or replaying.
    pub fn mode(&self) -> Mode {
        self.shared.mode
    }

    /// The cassette file.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// The requests that found no answer so far (replay).
    pub fn misses(&self) -> Vec<Miss> {
        self.shared.state().misses.clone()
    }

    /// Stops the server. Recording: waits for the exchanges still streaming, redacts the
    /// secrets, checks that none is left and writes the file. Replaying: fails if a request
    /// found no answer.
    pub async fn finish(self) -> Result<Finished, CassetteError> {
        self.server.abort();
        let recording = std::mem::take(&mut self.shared.state().recording);
        for exchange in recording {
            let _ = exchange.await;
        }
        let state = self.shared.state();
        let path = self.shared.path.clone();
        match self.shared.mode {
            Mode::Record => {
                let mut tape = Tape {
                    version: FORMAT_VERSION,
                    exchanges: Vec::with_capacity(state.tape.exchanges.len()),
                };
                for (index, exchange) in state.tape.exchanges.iter().enumerate() {
                    let text = serde_json::to_string(exchange).unwrap_or_default();
                    let scrubbed = state.secrets.scrub(&text);
                    if let Some(what) = state.secrets.find(&scrubbed) {
                        return Err(CassetteError::Secret {
                            path,
                            exchange: index,
                            what,
                        });
                    }
                    let exchange = serde_json::from_str(&scrubbed).map_err(|source| {
                        CassetteError::Corrupt {
                            path: path.clone(),
                            source,
                        }
                    })?;
                    tape.exchanges.push(exchange);
                }
                tape.save(&path)?;
                Ok(Finished {
                    mode: Mode::Record,
                    exchanges: tape.exchanges.len(),
                    unused: 0,
                })
            }
            Mode::Replay => {
                if !state.misses.is_empty() {
                    return Err(CassetteError::Mismatch {
                        path,
                        misses: state.misses.clone(),
                    });
                }
                Ok(Finished {
                    mode: Mode::Replay,
                    exchanges: state.tape.exchanges.len(),
                    unused: state.used.iter().filter(|used| !**used).count(),
                })
            }
        }
    }
}

impl Drop for Cassette {
    fn drop(&mut self) {
        self.server.abort();
    }
}
