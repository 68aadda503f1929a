//! The transport the providers share: timeouts, retries with backoff, response checks,
//! and the redaction of credentials.
//!
//! Transport failures — HTTP 408, 429 and 5xx, timeouts, refused or reset connections —
//! are retried here with exponential backoff and jitter, honouring `retry-after-ms`,
//! `Retry-After` (up to a cap) and `x-should-retry` as the official SDKs do, within an
//! optional overall [`deadline`](HttpSettings::deadline). They are never charged to the
//! self-correction budgets: a run sees either a response or, once retries run out, a
//! [`ModelError`](crate::model::ModelError) with the status and the provider's message.
//!
//! # Streaming
//!
//! [`HttpModel`]'s [`request_stream`](crate::model::Model::request_stream) reads the
//! provider's server-sent events (parsed incrementally, each byte looked at once) into
//! deltas and, at the end, into the body the non-streamed API would have sent, decoded by
//! the same decoder as a whole response. Retries follow one rule: **only before the stream**. A status,
//! timeout or reset before the response headers is retried under the [`RetryPolicy`]
//! within the deadline; once a 200 event stream has begun, nothing is retried, even before
//! its first delta reached the caller. The attempt's timeout bounds only the wait for the
//! response headers. A stream that breaks, ends early, stays silent past
//! [`HttpSettings::idle_timeout`], outlives the deadline, carries
//! a corrupt chunk or an error event, or is not an event stream at all ends in a
//! [`ModelError::Stream`](crate::model::ModelError::Stream) naming its
//! [`StreamFault`](crate::model::StreamFault). Every event's data is redacted before it
//! is read, each part's deltas are redacted as a stream (a secret split across events is
//! held back until it is whole), and the assembled response is redacted whole. Dropping the
//! stream closes the connection.
//!
//! # Credentials never leave
//!
//! Every string that leaves the transport — the response body handed to a provider's
//! decoder, every error message (HTTP errors, body snippets, decode errors) and every
//! tracing field — passes one [`Redactor`] holding each credential golem sends (the API
//! key, and every header marked secret), so a server or proxy that echoes request headers
//! cannot make a key appear in a `RunError`, its `Debug`, its `source()` chain or a log.
//!
//! # TLS
//!
//! HTTPS uses rustls. The cargo feature `rustls-tls` (on by default) trusts the bundled
//! Mozilla roots (`webpki-roots`); `rustls-tls-native-roots` trusts the platform's
//! certificate store instead, or as well when both are on (for corporate proxies with
//! their own root). With neither feature only plain `http://` URLs work.

mod model;
mod redact;
mod retry;
mod settings;
mod sse;
mod transport;

pub(crate) use model::sealed::Wire;
pub use model::{HttpBuilder, HttpModel, WireFormat};
pub use redact::{ApiKey, REDACTED, Redactor};
pub use retry::RetryPolicy;
pub use settings::{DEFAULT_IDLE_TIMEOUT, HttpSettings};
pub(crate) use sse::{Assemble, Deltas, Fault};
pub(crate) use transport::{TimedOut, Transport};
