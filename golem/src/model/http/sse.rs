//! A response stream: the bytes of an HTTP response read under the idle timeout, the
//! deadline and the size limit, cut into server-sent events by `eventsource-stream`,
//! redacted, and handed to a wire format's [`Assemble`]r, which turns each event into
//! deltas and, at the end, into the body the non-streamed API would have sent, for the
//! wire's own decoder.

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures_util::future::BoxFuture;
use futures_util::stream::{self, BoxStream, StreamExt};
use tokio::time::Instant;

use super::Transport;
use crate::model::{
    ModelError, ModelResponse, ModelStream, ResponseDelta, StreamEvent, StreamFault,
};

/// What a wire format does with the events of its stream: a state machine with no I/O.
pub trait Assemble: Send + 'static {
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
    Deadline,
    TooLarge(usize),
    Transport(reqwest::Error),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Idle(idle) => write!(f, "no byte arrived for {} ms", idle.as_millis()),
            ReadError::Deadline => f.write_str("the request's deadline passed"),
            ReadError::TooLarge(limit) => {
                write!(f, "the stream exceeds the limit of {limit} bytes")
            }
            ReadError::Transport(error) => write!(f, "{error}"),
        }
    }
}

/// The body's chunks, each awaited for at most the idle timeout (and never past the
/// deadline), until `limit` bytes in all.
fn chunks(
    response: reqwest::Response,
    idle: Option<Duration>,
    deadline: Option<Instant>,
    limit: usize,
) -> impl futures_util::Stream<Item = Result<Bytes, ReadError>> + Send {
    stream::unfold(Some((response, 0_usize)), move |state| async move {
        let (mut response, read) = state?;
        let wait = match (idle, deadline) {
            (Some(idle), Some(deadline)) => {
                Some(idle.min(deadline.saturating_duration_since(Instant::now())))
            }
            (Some(idle), None) => Some(idle),
            (None, Some(deadline)) => Some(deadline.saturating_duration_since(Instant::now())),
            (None, None) => None,
        };
        let next = match wait {
            None => response.chunk().await,
            Some(wait) => match tokio::time::timeout(wait, response.chunk()).await {
                Ok(next) => next,
                Err(_) => {
                    let error = match (idle, deadline) {
                        (Some(_), Some(deadline)) if Instant::now() >= deadline => {
                            ReadError::Deadline
                        }
                        (Some(idle), _) => ReadError::Idle(idle),
                        (None, _) => ReadError::Deadline,
                    };
                    return Some((Err(error), None));
                }
            },
        };
        match next {
            Ok(Some(chunk)) if read + chunk.len() > limit => {
                Some((Err(ReadError::TooLarge(limit)), None))
            }
            Ok(Some(chunk)) => {
                let read = read + chunk.len();
                Some((Ok(chunk), Some((response, read))))
            }
            Ok(None) => None,
            Err(error) => Some((Err(ReadError::Transport(error)), None)),
        }
    })
}

type Events = BoxStream<'static, Result<Event, EventStreamError<ReadError>>>;

/// Where a stream is.
enum State<'a, A, D> {
    /// The request, not sent yet.
    Opening {
        open: BoxFuture<'a, Result<(reqwest::Response, Option<Instant>), ModelError>>,
        assembler: A,
        decode: D,
    },
    Streaming {
        events: Events,
        assembler: A,
        deltas: VecDeque<ResponseDelta>,
        decode: D,
    },
    /// The response is complete; its deltas are passed on before it.
    Finishing {
        deltas: VecDeque<ResponseDelta>,
        response: Box<ModelResponse>,
    },
    Ended,
}

/// The stream of one request: `open` sends it (with the transport's retries), `assembler`
/// reads its events, `decode` reads the body they add up to.
pub(crate) fn stream<'a, A, D>(
    transport: &'a Transport,
    open: BoxFuture<'a, Result<(reqwest::Response, Option<Instant>), ModelError>>,
    assembler: A,
    decode: D,
) -> ModelStream<'a>
where
    A: Assemble,
    D: Fn(&[u8]) -> Result<ModelResponse, ModelError> + Send + Sync + 'a,
{
    let state = State::Opening {
        open,
        assembler,
        decode,
    };
    stream::unfold(state, move |state| step(transport, state)).boxed()
}

async fn step<'a, A, D>(
    transport: &'a Transport,
    mut state: State<'a, A, D>,
) -> Option<(Result<StreamEvent, ModelError>, State<'a, A, D>)>
where
    A: Assemble,
    D: Fn(&[u8]) -> Result<ModelResponse, ModelError> + Send + Sync + 'a,
{
    loop {
        state = match state {
            State::Opening {
                open,
                assembler,
                decode,
            } => match open.await {
                Ok((response, deadline)) => {
                    let settings = transport.settings();
                    let events = chunks(
                        response,
                        settings.idle_timeout,
                        deadline,
                        settings.max_response_bytes,
                    )
                    .eventsource()
                    .boxed();
                    State::Streaming {
                        events,
                        assembler,
                        deltas: VecDeque::new(),
                        decode,
                    }
                }
                Err(error) => return Some((Err(error), State::Ended)),
            },
            State::Streaming {
                mut events,
                mut assembler,
                mut deltas,
                decode,
            } => {
                if let Some(delta) = deltas.pop_front() {
                    let item = Ok(StreamEvent::Delta(delta));
                    return Some((
                        item,
                        State::Streaming {
                            events,
                            assembler,
                            deltas,
                            decode,
                        },
                    ));
                }
                let event = match events.next().await {
                    Some(Ok(event)) => event,
                    Some(Err(error)) => {
                        return Some((Err(read_error(transport, error)), State::Ended));
                    }
                    None => {
                        let error = transport.stream_error(
                            StreamFault::EndedEarly,
                            "the stream ended before the response was complete",
                            None,
                        );
                        return Some((Err(error), State::Ended));
                    }
                };
                let data = transport.redactor().redact(&event.data);
                let complete = match assembler.event(&event.event, &data, &mut deltas) {
                    Ok(complete) => complete,
                    Err(fault) => {
                        let error = transport.stream_error(fault.fault, fault.message, None);
                        return Some((Err(error), State::Ended));
                    }
                };
                if complete {
                    // Dropping the events closes the connection; nothing after the end
                    // is read.
                    drop(events);
                    let body = match assembler.finish() {
                        Ok(body) => body,
                        Err(fault) => {
                            let error = transport.stream_error(fault.fault, fault.message, None);
                            return Some((Err(error), State::Ended));
                        }
                    };
                    match decode(&body) {
                        Ok(response) => State::Finishing {
                            deltas,
                            response: Box::new(response),
                        },
                        Err(error) => return Some((Err(error), State::Ended)),
                    }
                } else {
                    State::Streaming {
                        events,
                        assembler,
                        deltas,
                        decode,
                    }
                }
            }
            State::Finishing {
                mut deltas,
                response,
            } => match deltas.pop_front() {
                Some(delta) => {
                    return Some((
                        Ok(StreamEvent::Delta(delta)),
                        State::Finishing { deltas, response },
                    ));
                }
                None => return Some((Ok(StreamEvent::Done(*response)), State::Ended)),
            },
            State::Ended => return None,
        };
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
        EventStreamError::Transport(error @ ReadError::Deadline) => {
            transport.stream_error(StreamFault::TimedOut, error.to_string(), None)
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
