//! A response stream: the bytes of an HTTP response read under the idle timeout and the
//! size limit (the request's timeout, which carries the deadline, bounds the whole body),
//! cut into server-sent events by `eventsource-stream`,
//! redacted, and handed to a wire format's [`Assemble`]r, which turns each event into
//! deltas and, at the end, into the body the non-streamed API would have sent, for the
//! wire's own decoder.

use std::collections::VecDeque;
use std::pin::{Pin, pin};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures_util::future::{self, BoxFuture, Either, FutureExt};
use futures_util::stream::{self, BoxStream, StreamExt};
use tokio::time::{Instant, Sleep};

use super::Transport;
use crate::model::{
    ModelError, ModelResponse, ModelStream, ResponseDelta, StreamEvent, StreamFault,
};

/// What a wire format does with the events of its stream: a state machine with no I/O.
pub trait Assemble: Send + Unpin + 'static {
    /// Reads one event (its `event:` name and its `data:`, redacted), pushing the deltas it
    /// carries. `Ok(true)` when the response is complete: no event is read after it.
    fn event(
        &mut self,
        name: &str,
        data: &str,
        deltas: &mut VecDeque<ResponseDelta>,
    ) -> Result<bool, Fault>;

    /// The body the non-streamed API would have answered with, once complete.
    fn finish(self) -> Result<Vec<u8>, Fault>;
}

/// What is wrong with a stream, as a wire format sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub(crate) fault: StreamFault,
    pub(crate) message: String,
}

impl Fault {
    pub(crate) fn new(fault: StreamFault, message: impl Into<String>) -> Self {
        Fault {
            fault,
            message: message.into(),
        }
    }

    pub(crate) fn corrupt(message: impl Into<String>) -> Self {
        Fault::new(StreamFault::Corrupt, message)
    }
}

/// Why reading the bytes stopped.
#[derive(Debug)]
enum ReadError {
    Idle(Duration),
    TooLarge(usize),
    Transport(reqwest::Error),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Idle(idle) => write!(f, "no byte arrived for {} ms", idle.as_millis()),
            ReadError::TooLarge(limit) => {
                write!(f, "the stream exceeds the limit of {limit} bytes")
            }
            ReadError::Transport(error) => write!(f, "{error}"),
        }
    }
}

/// The idle timeout of one stream: one timer, armed once and moved on only when it fires
/// early, so a chunk costs a clock read rather than a timer registration.
struct Idle {
    idle: Duration,
    timer: Pin<Box<Sleep>>,
    last: Instant,
}

/// A response body being read.
struct Body {
    response: reqwest::Response,
    idle: Option<Idle>,
    read: usize,
    limit: usize,
}

impl Body {
    async fn next(&mut self) -> Option<Result<Bytes, ReadError>> {
        let next = match &mut self.idle {
            None => self.response.chunk().await,
            Some(idle) => {
                let mut chunk = pin!(self.response.chunk());
                loop {
                    match future::select(chunk.as_mut(), idle.timer.as_mut()).await {
                        Either::Left((next, _)) => break next,
                        Either::Right(((), _)) => {
                            let due = idle.last + idle.idle;
                            if Instant::now() >= due {
                                return Some(Err(ReadError::Idle(idle.idle)));
                            }
                            idle.timer.as_mut().reset(due);
                        }
                    }
                }
            }
        };
        if let Some(idle) = &mut self.idle {
            idle.last = Instant::now();
        }
        match next {
            Ok(Some(chunk)) if self.read + chunk.len() > self.limit => {
                Some(Err(ReadError::TooLarge(self.limit)))
            }
            Ok(Some(chunk)) => {
                self.read += chunk.len();
                Some(Ok(chunk))
            }
            Ok(None) => None,
            Err(error) => Some(Err(ReadError::Transport(error))),
        }
    }
}

/// The body's chunks, each awaited for at most the idle timeout, until `limit` bytes in
/// all. The request's own timeout (the deadline's rest, at most
/// [`HttpSettings::timeout`](super::HttpSettings::timeout)) bounds the whole body.
fn chunks(
    response: reqwest::Response,
    idle: Option<Duration>,
    limit: usize,
) -> impl futures_util::Stream<Item = Result<Bytes, ReadError>> + Send {
    let body = Body {
        response,
        idle: idle.map(|idle| Idle {
            idle,
            timer: Box::pin(tokio::time::sleep(idle)),
            last: Instant::now(),
        }),
        read: 0,
        limit,
    };
    stream::unfold(Some(body), |body| async move {
        let mut body = body?;
        match body.next().await? {
            Ok(chunk) => Some((Ok(chunk), Some(body))),
            Err(error) => Some((Err(error), None)),
        }
    })
}

type Events = BoxStream<'static, Result<Event, EventStreamError<ReadError>>>;
type Open<'a> = BoxFuture<'a, Result<reqwest::Response, ModelError>>;

/// One streamed response: the request being sent, then its events being read.
struct SseStream<'a, A, D> {
    transport: &'a Transport,
    open: Option<Open<'a>>,
    events: Option<Events>,
    /// `None` once the response is complete or failed.
    assembler: Option<A>,
    deltas: VecDeque<ResponseDelta>,
    /// The complete response, passed on after the last deltas.
    done: Option<Box<ModelResponse>>,
    decode: D,
}

/// The stream of one request: `open` sends it (with the transport's retries), `assembler`
/// reads its events, `decode` reads the body they add up to.
pub(crate) fn stream<'a, A, D>(
    transport: &'a Transport,
    open: Open<'a>,
    assembler: A,
    decode: D,
) -> ModelStream<'a>
where
    A: Assemble,
    D: Fn(&[u8]) -> Result<ModelResponse, ModelError> + Send + Sync + Unpin + 'a,
{
    Box::pin(SseStream {
        transport,
        open: Some(open),
        events: None,
        assembler: Some(assembler),
        deltas: VecDeque::new(),
        done: None,
        decode,
    })
}

impl<A, D> SseStream<'_, A, D>
where
    A: Assemble,
    D: Fn(&[u8]) -> Result<ModelResponse, ModelError>,
{
    /// Ends the stream with `error`.
    fn fail(&mut self, error: ModelError) -> Poll<Option<Result<StreamEvent, ModelError>>> {
        self.events = None;
        self.assembler = None;
        self.deltas.clear();
        Poll::Ready(Some(Err(error)))
    }

    fn fault(&self, fault: Fault) -> ModelError {
        self.transport
            .stream_error(fault.fault, fault.message, None)
    }

    /// Reads one event into the assembler; a complete response is decoded.
    fn read(&mut self, event: &Event) -> Result<(), ModelError> {
        let Some(assembler) = &mut self.assembler else {
            return Ok(());
        };
        let data = self.transport.redactor().redact(&event.data);
        let complete = assembler
            .event(&event.event, &data, &mut self.deltas)
            .map_err(|fault| self.fault(fault))?;
        if !complete {
            return Ok(());
        }
        let Some(assembler) = self.assembler.take() else {
            return Ok(());
        };
        let body = assembler.finish().map_err(|fault| self.fault(fault))?;
        self.done = Some(Box::new((self.decode)(&body)?));
        Ok(())
    }
}

impl<A, D> futures_util::Stream for SseStream<'_, A, D>
where
    A: Assemble + Unpin,
    D: Fn(&[u8]) -> Result<ModelResponse, ModelError> + Unpin,
{
    type Item = Result<StreamEvent, ModelError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(delta) = this.deltas.pop_front() {
                return Poll::Ready(Some(Ok(StreamEvent::Delta(delta))));
            }
            if let Some(response) = this.done.take() {
                // Nothing after the end is read, but a body end already on its way is
                // taken (one poll, never a wait), so the connection can be reused; else
                // dropping the events closes it.
                if let Some(mut events) = this.events.take() {
                    let _ = events.poll_next_unpin(cx);
                }
                return Poll::Ready(Some(Ok(StreamEvent::Done(*response))));
            }
            if let Some(open) = &mut this.open {
                let opened = ready!(open.poll_unpin(cx));
                this.open = None;
                match opened {
                    Ok(response) => {
                        let settings = this.transport.settings();
                        let events =
                            chunks(response, settings.idle_timeout, settings.max_response_bytes)
                                .eventsource()
                                .boxed();
                        this.events = Some(events);
                    }
                    Err(error) => return this.fail(error),
                }
            }
            let Some(events) = &mut this.events else {
                return Poll::Ready(None);
            };
            match ready!(events.poll_next_unpin(cx)) {
                Some(Ok(event)) => {
                    if let Err(error) = this.read(&event) {
                        return this.fail(error);
                    }
                }
                Some(Err(error)) => {
                    let error = read_error(this.transport, error);
                    return this.fail(error);
                }
                None => {
                    let error = this.transport.stream_error(
                        StreamFault::EndedEarly,
                        "the stream ended before the response was complete",
                        None,
                    );
                    return this.fail(error);
                }
            }
        }
    }
}

/// A failure to read the stream as the error the caller gets.
fn read_error(transport: &Transport, error: EventStreamError<ReadError>) -> ModelError {
    match error {
        EventStreamError::Transport(ReadError::Transport(error)) => {
            let fault = if error.is_timeout() {
                StreamFault::TimedOut
            } else {
                StreamFault::Disconnected
            };
            let message = if error.is_timeout() {
                "the request timed out while the response streamed"
            } else {
                "the connection broke before the response was complete"
            };
            transport.stream_error(fault, message, Some(error))
        }
        EventStreamError::Transport(error @ ReadError::Idle(_)) => {
            transport.stream_error(StreamFault::Idle, error.to_string(), None)
        }
        EventStreamError::Transport(error @ ReadError::TooLarge(_)) => {
            transport.stream_error(StreamFault::Corrupt, error.to_string(), None)
        }
        // The parser's own messages quote the input: only what kind of error is said.
        EventStreamError::Utf8(_) => {
            transport.stream_error(StreamFault::Corrupt, "the stream is not UTF-8", None)
        }
        EventStreamError::Parser(_) => transport.stream_error(
            StreamFault::Corrupt,
            "the stream is not a valid event stream",
            None,
        ),
    }
}
