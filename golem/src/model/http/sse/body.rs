//! The body of a streamed response, read chunk by chunk under the stream's bounds: the idle
//! timeout (no byte for too long), the request's overall deadline and the size limit.
//!
//! The request's own timeout bounds only the wait for the response headers; a healthy
//! stream may last as long as the deadline allows.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::Body as _;
use tokio::time::{Instant, Sleep};

/// Why reading the body stopped.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// No byte arrived for this long.
    Idle(Duration),
    /// The request's overall deadline passed.
    Deadline,
    /// The body grew past this many bytes.
    TooLarge(usize),
    /// The connection failed.
    Transport(reqwest::Error),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Idle(idle) => write!(f, "no byte arrived for {} ms", idle.as_millis()),
            ReadError::Deadline => f.write_str("the deadline passed while the response streamed"),
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
pub(crate) struct Body {
    body: reqwest::Body,
    idle: Option<Idle>,
    /// The request's deadline: checked at each chunk, and a timer while none arrives.
    deadline: Option<(Instant, Pin<Box<Sleep>>)>,
    read: usize,
    limit: usize,
}

impl Body {
    /// The body of `response`, each chunk awaited for at most `idle`, all of it by
    /// `deadline`, `limit` bytes in all.
    pub(crate) fn new(
        response: reqwest::Response,
        idle: Option<Duration>,
        deadline: Option<Instant>,
        limit: usize,
    ) -> Self {
        let now = Instant::now();
        Body {
            body: reqwest::Body::from(response),
            idle: idle.map(|idle| Idle {
                idle,
                timer: Box::pin(tokio::time::sleep_until(now + idle)),
                last: now,
            }),
            deadline: deadline
                .map(|deadline| (deadline, Box::pin(tokio::time::sleep_until(deadline)))),
            read: 0,
            limit,
        }
    }

    /// The next chunk; `None` at the body's end. Once it returned an error or `None`, the
    /// body is not polled again.
    pub(crate) fn poll_chunk(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, ReadError>>> {
        loop {
            match Pin::new(&mut self.body).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    // Trailers carry nothing an event stream needs.
                    let Ok(chunk) = frame.into_data() else {
                        continue;
                    };
                    if self.idle.is_some() || self.deadline.is_some() {
                        let now = Instant::now();
                        if let Some(idle) = &mut self.idle {
                            idle.last = now;
                        }
                        if self.deadline.as_ref().is_some_and(|(at, _)| now >= *at) {
                            return Poll::Ready(Some(Err(ReadError::Deadline)));
                        }
                    }
                    if self.read + chunk.len() > self.limit {
                        return Poll::Ready(Some(Err(ReadError::TooLarge(self.limit))));
                    }
                    self.read += chunk.len();
                    return Poll::Ready(Some(Ok(chunk)));
                }
                Poll::Ready(Some(Err(error))) => {
                    return Poll::Ready(Some(Err(ReadError::Transport(error))));
                }
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => break,
            }
        }
        // Nothing to read: the timers wake the task if nothing arrives in time.
        if let Some((_, timer)) = &mut self.deadline
            && timer.as_mut().poll(cx).is_ready()
        {
            return Poll::Ready(Some(Err(ReadError::Deadline)));
        }
        if let Some(idle) = &mut self.idle {
            while idle.timer.as_mut().poll(cx).is_ready() {
                let due = idle.last + idle.idle;
                if Instant::now() >= due {
                    return Poll::Ready(Some(Err(ReadError::Idle(idle.idle))));
                }
                idle.timer.as_mut().reset(due);
            }
        }
        Poll::Pending
    }
}
