//! Exports golem's spans to an OpenTelemetry collector over OTLP (http/protobuf).
//!
//! golem traces every run with [`tracing`] spans named and attributed after the
//! OpenTelemetry GenAI semantic conventions: `invoke_agent {agent}` for the run, `chat
//! {model}` for each model request, `execute_tool {tool}` for each tool call, and a
//! `golem.retry.*` event for each rejection (see docs/observability.md for the attributes).
//! This crate turns them into OTLP spans with `tracing-opentelemetry` and sends them in
//! batches, from a thread of their own, with golem's HTTP client (rustls, no async runtime
//! needed). A program that does not use it pays for none of it.
//!
//! ```no_run
//! # fn main() -> Result<(), golem_otel::OtelError> {
//! // Sends to http://127.0.0.1:4318/v1/traces as `my-service`, until `exporter` is dropped.
//! let exporter = golem_otel::Exporter::builder()
//!     .endpoint("http://127.0.0.1:4318")
//!     .service_name("my-service")
//!     .install()?;
//! // ... run agents ...
//! exporter.shutdown()?; // sends what is left
//! # Ok(())
//! # }
//! ```
//!
//! To combine it with other layers (a log formatter, a filter), take its
//! [`layer`](Exporter::layer) instead of [`install`](ExporterBuilder::install)ing it:
//!
//! ```no_run
//! use tracing_subscriber::layer::SubscriberExt;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let exporter = golem_otel::Exporter::builder().build()?; // endpoint from OTEL_EXPORTER_OTLP_*
//! let subscriber = tracing_subscriber::registry().with(exporter.layer());
//! tracing::subscriber::set_global_default(subscriber)?;
//! # Ok(())
//! # }
//! ```
//!
//! What the spans say of the conversation itself (messages, tool arguments and results) is
//! left out unless the agent opts in with `AgentBuilder::capture_content`.

use std::collections::HashMap;
use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use tracing::Subscriber;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;

/// The service name spans carry when none is given.
pub const DEFAULT_SERVICE_NAME: &str = "golem";

/// What went wrong setting the exporter up, or sending what it holds.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtelError {
    /// The exporter cannot be built from its configuration (e.g. an endpoint that is not
    /// a URL).
    #[error("the OTLP exporter cannot be built: {0}")]
    Build(#[from] opentelemetry_otlp::ExporterBuildError),
    /// Flushing or shutting down failed (e.g. the collector could not be reached).
    #[error("the OTLP exporter failed: {0}")]
    Export(#[from] opentelemetry_sdk::error::OTelSdkError),
    /// Another subscriber is already the global default.
    #[error("the exporter cannot be installed: {0}")]
    Install(#[from] tracing::subscriber::SetGlobalDefaultError),
    /// golem's HTTP client cannot be built (e.g. no TLS backend).
    #[error("the exporter's HTTP client cannot be built: {0}")]
    Client(#[from] reqwest::Error),
}

/// How the exporter is set up: the collector's endpoint, the service's name, headers and a
/// timeout. Anything not set here is read from the standard `OTEL_EXPORTER_OTLP_*`
/// environment variables, else the OTLP defaults (`http://localhost:4318`, 10 s).
#[derive(Debug, Clone)]
#[must_use]
pub struct ExporterBuilder {
    endpoint: Option<String>,
    service_name: String,
    headers: HashMap<String, String>,
    timeout: Option<Duration>,
}

impl ExporterBuilder {
    /// The collector's OTLP/HTTP base URL, e.g. `http://127.0.0.1:4318`: spans go to its
    /// `/v1/traces`.
    pub fn endpoint(mut self, endpoint: impl Into<String>) -> Self {
        self.endpoint = Some(endpoint.into());
        self
    }

    /// The `service.name` of the resource the spans come from (default
    /// [`DEFAULT_SERVICE_NAME`]).
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = name.into();
        self
    }

    /// A header sent with every export, e.g. a collector's authorization.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }

    /// How long one export may take.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The exporter, not yet receiving spans: give its [`layer`](Exporter::layer) to a
    /// subscriber.
    ///
    /// # Errors
    /// [`OtelError::Build`] for a configuration the exporter cannot use,
    /// [`OtelError::Client`] when the HTTP client cannot be built.
    pub fn build(self) -> Result<Exporter, OtelError> {
        // The exporter gives a client of its own making its timeout; golem's client must
        // take it itself, or an export to a collector that does not answer waits reqwest's
        // 30 s while a flush or a shutdown gives up after 5 and loses what was left.
        let timeout = export_timeout(self.timeout);
        // Built on a thread of its own: a blocking client refuses to start inside an async
        // runtime, where programs often set their exporter up.
        let client = std::thread::spawn(move || {
            reqwest::blocking::Client::builder()
                .timeout(timeout)
                .build()
        })
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
        let mut exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(BlockingClient(client));
        if let Some(endpoint) = &self.endpoint {
            exporter =
                exporter.with_endpoint(format!("{}/v1/traces", endpoint.trim_end_matches('/')));
        }
        if !self.headers.is_empty() {
            exporter = exporter.with_headers(self.headers);
        }
        exporter = exporter.with_timeout(timeout);
        let exporter = exporter.build()?;
        let resource = Resource::builder()
            .with_service_name(self.service_name)
            .build();
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build();
        let tracer = provider.tracer("golem");
        Ok(Exporter { provider, tracer })
    }

    /// Builds the exporter and makes a subscriber exporting every span and event at `INFO`
    /// or above the process's global default.
    ///
    /// # Errors
    /// As for [`build`](Self::build), and [`OtelError::Install`] when a global default
    /// subscriber is already set.
    pub fn install(self) -> Result<Exporter, OtelError> {
        let exporter = self.build()?;
        let subscriber = tracing_subscriber::registry()
            .with(exporter.layer())
            .with(LevelFilter::INFO);
        tracing::subscriber::set_global_default(subscriber)?;
        Ok(exporter)
    }
}

/// Sends the spans of the subscribers it is a [`layer`](Self::layer) of to an OTLP
/// collector, in batches. Dropping it sends what is left; [`shutdown`](Self::shutdown)
/// does the same and says whether it worked.
pub struct Exporter {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
}

impl fmt::Debug for Exporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Exporter").finish_non_exhaustive()
    }
}

impl Exporter {
    /// Starts setting an exporter up.
    pub fn builder() -> ExporterBuilder {
        ExporterBuilder {
            endpoint: None,
            service_name: DEFAULT_SERVICE_NAME.to_owned(),
            headers: HashMap::new(),
            timeout: None,
        }
    }

    /// A `tracing` layer that hands every span it sees to this exporter: golem's
    /// `otel.name`, `otel.kind` and `otel.status_code` fields become the spans' names,
    /// kinds and statuses, their other fields attributes, and events inside a span that
    /// span's events.
    pub fn layer<S>(&self) -> tracing_opentelemetry::OpenTelemetryLayer<S, SdkTracer>
    where
        S: Subscriber + for<'span> LookupSpan<'span>,
    {
        tracing_opentelemetry::layer().with_tracer(self.tracer.clone())
    }

    /// Sends the spans that ended and are not sent yet, and waits until they are.
    ///
    /// # Errors
    /// [`OtelError::Export`] when they could not be sent.
    pub fn flush(&self) -> Result<(), OtelError> {
        Ok(self.provider.force_flush()?)
    }

    /// Sends what is left and stops the exporter: spans that end afterwards are dropped.
    ///
    /// # Errors
    /// [`OtelError::Export`] when what was left could not be sent.
    pub fn shutdown(self) -> Result<(), OtelError> {
        Ok(self.provider.shutdown()?)
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        // After an explicit shutdown this only says it was done already.
        let _ = self.provider.shutdown();
    }
}

/// How long one export may take: `configured`, else `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT`, else
/// `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds), else OTLP's 10 s, as the exporter reads them.
fn export_timeout(configured: Option<Duration>) -> Duration {
    configured
        .or_else(|| {
            [
                "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
                "OTEL_EXPORTER_OTLP_TIMEOUT",
            ]
            .iter()
            .find_map(|name| std::env::var(name).ok()?.trim().parse().ok())
            .map(Duration::from_millis)
        })
        .unwrap_or(Duration::from_secs(10))
}

/// golem's reqwest, blocking, as the OTLP exporter's HTTP client: the batch processor sends
/// from its own thread, so no async runtime is involved.
#[derive(Debug)]
struct BlockingClient(reqwest::blocking::Client);

#[async_trait::async_trait]
impl HttpClient for BlockingClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let response = self
            .0
            .request(parts.method, parts.uri.to_string())
            .headers(parts.headers)
            .body(body.to_vec())
            .send()?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.bytes()?;
        let mut answer = Response::builder().status(status).body(body)?;
        *answer.headers_mut() = headers;
        Ok(answer)
    }
}
