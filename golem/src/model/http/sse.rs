//! A response stream: the bytes of an HTTP response read under the idle timeout, the
//! deadline and the size limit, cut into server-sent events by an incremental
//! [`EventParser`](parser::EventParser), redacted, and handed to a wire format's
//! [`Assemble`]r, which turns each event into deltas and, at the end, into the body the
//! non-streamed API would have sent, for the wire's own decoder.
//!
//! Secrets are redacted three times over: in each event's data, in each part's deltas by a
//! [`PartRedactor`] (which holds back a tail that could begin a secret split across events),
//! and in the assembled response as a whole.

mod body;
mod parser;

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use futures_util::future::{BoxFuture, FutureExt};
use tokio::time::{Instant, Sleep};

use self::body::{Body, ReadError};
use self::parser::{EventParser, ParseError, SseEvent};
use super::Transport;
use super::redact::PartRedactor;
use crate::model::{
    ModelError, ModelResponse, ModelStream, ResponseDelta, StreamEvent, StreamFault,
};

/// What a wire format does with the events of its stream: a state machine with no I/O.
pub trait Assemble: Send + Unpin + 'static {
    /// Reads one event (its `event:` name and its `data:`, redacted), pushing the deltas it
    /// carries. `Ok(true)` when the response is complete: no event is read after it.
    fn event(&mut self, name: &str, data: &str, deltas: &mut Deltas) -> Result<bool, Fault>;

    /// The body ended without the end event: whether what arrived is a complete response
    /// all the same, pushing the deltas still held back. No, unless the wire says so.
    fn body_ended(&mut self, _deltas: &mut Deltas) -> bool {
        false
    }

    /// The body the non-streamed API would have answered with, once complete.
    fn finish(self) -> Result<Vec<u8>, Fault>;
}

/// The deltas an event carries, and the parts it ends, in order: what an [`Assemble`]r
/// pushes for the stream to pass on.
#[derive(Debug, Default)]
pub struct Deltas {
    items: VecDeque<Item>,
}

#[derive(Debug)]
enum Item {
    Delta(ResponseDelta),
    /// The part with this number has ended: nothing more of it will arrive.
    #[cfg_attr(not(any(feature = "anthropic", feature = "gemini")), allow(dead_code))]
    End(usize),
}

impl Deltas {
    /// Adds a delta.
    pub(crate) fn push(&mut self, delta: ResponseDelta) {
        self.items.push_back(Item::Delta(delta));
    }

    /// Says that part `part` has ended, so what its redaction held back can go out.
    #[cfg_attr(not(any(feature = "anthropic", feature = "gemini")), allow(dead_code))]
    pub(crate) fn end(&mut self, part: usize) {
        self.items.push_back(Item::End(part));
    }

    /// The deltas pushed, without the ends.
    #[cfg(all(test, any(feature = "openai", feature = "gemini")))]
    pub(crate) fn into_deltas(self) -> Vec<ResponseDelta> {
        self.items
            .into_iter()
            .filter_map(|item| match item {
                Item::Delta(delta) => Some(delta),
                Item::End(_) => None,
            })
            .collect()
    }
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

/// How long a complete stream waits for its body's end (the last HTTP chunk, usually right
/// behind the end event) before it is dropped: a body read to its end gives its connection
/// back to the pool, a body dropped before closes it.
const END_GRACE: Duration = Duration::from_millis(500);

/// How many bytes one poll reads before it lets other tasks run: a stream whose bytes keep
/// coming must not hold its thread (and the timers of the streams beside it).
const BYTES_PER_POLL: usize = 256 * 1024;

/// What a delta's text belongs to within its part: a thinking part streams its text and
/// its signature, each redacted on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TextKind {
    Text,
    Thinking,
    Args,
    Signature,
}

impl TextKind {
    fn delta(self, part: usize, text: String) -> ResponseDelta {
        match self {
            TextKind::Text => ResponseDelta::Text { part, text },
            TextKind::Thinking => ResponseDelta::Thinking { part, text },
            TextKind::Args => ResponseDelta::ToolCallArgs { part, args: text },
            TextKind::Signature => ResponseDelta::ThinkingSignature {
                part,
                signature: text,
            },
        }
    }
}

type Open<'a> = BoxFuture<'a, Result<(reqwest::Response, Option<Instant>), ModelError>>;

/// One streamed response: the request being sent, then its events being read.
struct SseStream<'a, A, D> {
    transport: &'a Transport,
    open: Option<Open<'a>>,
    /// The body, while it is read (and, once the response is complete, drained).
    body: Option<Body>,
    parser: EventParser,
    events: VecDeque<SseEvent>,
    /// `None` once the response is complete or failed.
    assembler: Option<A>,
    /// What the assembler pushed, before redaction.
    pushed: Deltas,
    /// The redaction of each part's texts, while they may hold a tail back.
    parts: Vec<(usize, TextKind, PartRedactor)>,
    /// Deltas ready to be passed on.
    deltas: VecDeque<ResponseDelta>,
    /// The complete response, passed on after the last deltas and the body's end.
    done: Option<Box<ModelResponse>>,
    /// How long the body's end is waited for, once the response is complete.
    grace: Option<Pin<Box<Sleep>>>,
    decode: D,
}

/// The stream of one request: `open` sends it (with the transport's retries) and returns
/// the response with the deadline the body must end by, `assembler` reads its events,
/// `decode` reads the body they add up to.
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
        body: None,
        parser: EventParser::default(),
        events: VecDeque::new(),
        assembler: Some(assembler),
        pushed: Deltas::default(),
        parts: Vec::new(),
        deltas: VecDeque::new(),
        done: None,
        grace: None,
        decode,
    })
}

impl<A, D> SseStream<'_, A, D>
where
    A: Assemble,
    D: Fn(&[u8]) -> Result<ModelResponse, ModelError>,
{
    /// Ends the stream with `error`; what redaction held back is dropped with the rest.
    fn fail(&mut self, error: ModelError) -> Poll<Option<Result<StreamEvent, ModelError>>> {
        self.body = None;
        self.assembler = None;
        self.events.clear();
        self.deltas.clear();
        self.parts.clear();
        Poll::Ready(Some(Err(error)))
    }

    fn fault(&self, fault: Fault) -> ModelError {
        self.transport
            .stream_error(fault.fault, fault.message, None)
    }

    /// Reads one event into the assembler; a complete response is decoded.
    fn read(&mut self, event: &SseEvent) -> Result<(), ModelError> {
        let Some(assembler) = &mut self.assembler else {
            return Ok(());
        };
        let data = self.transport.redactor().redact(&event.data);
        let complete = assembler
            .event(&event.name, &data, &mut self.pushed)
            .map_err(|fault| self.fault(fault))?;
        self.release();
        if complete {
            self.complete()?;
        }
        Ok(())
    }

    /// The response is complete: it is assembled, decoded and redacted whole, and what
    /// the parts' redaction held back goes out.
    fn complete(&mut self) -> Result<(), ModelError> {
        let Some(assembler) = self.assembler.take() else {
            return Ok(());
        };
        self.events.clear();
        let body = assembler.finish().map_err(|fault| self.fault(fault))?;
        let mut response = (self.decode)(&body)?;
        self.transport.redactor().redact_response(&mut response);
        for (part, text, mut redactor) in std::mem::take(&mut self.parts) {
            let held = redactor.finish();
            if !held.is_empty() {
                self.deltas.push_back(text.delta(part, held));
            }
        }
        self.done = Some(Box::new(response));
        Ok(())
    }

    /// Passes on what the assembler pushed, each part's text redacted as a stream.
    fn release(&mut self) {
        let redactor = self.transport.redactor();
        while let Some(item) = self.pushed.items.pop_front() {
            let delta = match item {
                Item::End(part) => {
                    let mut index = 0;
                    while index < self.parts.len() {
                        if self.parts[index].0 == part {
                            let (part, text, mut held) = self.parts.swap_remove(index);
                            let held = held.finish();
                            if !held.is_empty() {
                                self.deltas.push_back(text.delta(part, held));
                            }
                        } else {
                            index += 1;
                        }
                    }
                    continue;
                }
                Item::Delta(delta) if redactor.is_empty() => delta,
                Item::Delta(ResponseDelta::ToolCallStart {
                    part,
                    mut tool_name,
                    mut tool_call_id,
                }) => {
                    redactor.redact_in_place(&mut tool_name);
                    redactor.redact_in_place(&mut tool_call_id);
                    ResponseDelta::ToolCallStart {
                        part,
                        tool_name,
                        tool_call_id,
                    }
                }
                Item::Delta(delta) => {
                    let (part, kind, piece) = match delta {
                        ResponseDelta::Text { part, text } => (part, TextKind::Text, text),
                        ResponseDelta::Thinking { part, text } => (part, TextKind::Thinking, text),
                        ResponseDelta::ToolCallArgs { part, args } => (part, TextKind::Args, args),
                        ResponseDelta::ThinkingSignature { part, signature } => {
                            (part, TextKind::Signature, signature)
                        }
                        other => {
                            self.deltas.push_back(other);
                            continue;
                        }
                    };
                    // A part's other text ends here (a thinking part's text before its
                    // signature): what it held goes out first, in order.
                    for (known, text, held) in &mut self.parts {
                        if *known == part && *text != kind && held.is_holding() {
                            self.deltas.push_back(text.delta(part, held.finish()));
                        }
                    }
                    let index = match self
                        .parts
                        .iter()
                        .position(|(known, text, _)| *known == part && *text == kind)
                    {
                        Some(index) => index,
                        None => {
                            self.parts.push((part, kind, PartRedactor::default()));
                            self.parts.len() - 1
                        }
                    };
                    let released = self.parts[index].2.push(redactor, piece);
                    if released.is_empty() {
                        continue;
                    }
                    kind.delta(part, released)
                }
            };
            self.deltas.push_back(delta);
        }
    }

    /// Reads the body on after the response is complete, for a short while, so that its
    /// end gives the connection back to the pool: `Ready` once the body is gone.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let Some(body) = &mut self.body else {
            return Poll::Ready(());
        };
        let mut drained = 0;
        loop {
            match body.poll_chunk(cx) {
                // Nothing after the end event is read; a server that sends on past it
                // loses the connection.
                Poll::Ready(Some(Ok(chunk))) if drained + chunk.len() <= BYTES_PER_POLL => {
                    drained += chunk.len();
                }
                Poll::Ready(_) => break,
                Poll::Pending => {
                    let grace = self
                        .grace
                        .get_or_insert_with(|| Box::pin(tokio::time::sleep(END_GRACE)));
                    if grace.as_mut().poll(cx).is_pending() {
                        return Poll::Pending;
                    }
                    break;
                }
            }
        }
        self.body = None;
        self.grace = None;
        Poll::Ready(())
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
        let mut read = 0;
        loop {
            if let Some(delta) = this.deltas.pop_front() {
                return Poll::Ready(Some(Ok(StreamEvent::Delta(delta))));
            }
            if this.done.is_some() {
                ready!(this.drain(cx));
                if let Some(response) = this.done.take() {
                    return Poll::Ready(Some(Ok(StreamEvent::Done(*response))));
                }
            }
            if let Some(open) = &mut this.open {
                let opened = ready!(open.poll_unpin(cx));
                this.open = None;
                match opened {
                    Ok((response, deadline)) => {
                        let settings = this.transport.settings();
                        this.body = Some(Body::new(
                            response,
                            settings.idle_timeout,
                            deadline,
                            settings.max_response_bytes,
                        ));
                    }
                    Err(error) => return this.fail(error),
                }
            }
            if let Some(event) = this.events.pop_front() {
                if let Err(error) = this.read(&event) {
                    return this.fail(error);
                }
                continue;
            }
            if this.assembler.is_none() {
                return Poll::Ready(None);
            }
            let Some(body) = &mut this.body else {
                return Poll::Ready(None);
            };
            if read >= BYTES_PER_POLL {
                // Other tasks' turn; this one is polled again right after.
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            match ready!(body.poll_chunk(cx)) {
                Some(Ok(chunk)) => {
                    read += chunk.len();
                    if this.parser.feed(&chunk, &mut this.events).is_err() {
                        let error = parse_error(this.transport, ParseError::Utf8);
                        return this.fail(error);
                    }
                }
                Some(Err(error)) => {
                    let error = read_error(this.transport, error);
                    return this.fail(error);
                }
                None => {
                    this.body = None;
                    let complete = this
                        .assembler
                        .as_mut()
                        .is_some_and(|assembler| assembler.body_ended(&mut this.pushed));
                    if complete {
                        this.release();
                        if let Err(error) = this.complete() {
                            return this.fail(error);
                        }
                        continue;
                    }
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

/// An event stream that cannot be parsed, as the error the caller gets. The input is not
/// quoted.
fn parse_error(transport: &Transport, error: ParseError) -> ModelError {
    match error {
        ParseError::Utf8 => {
            transport.stream_error(StreamFault::Corrupt, "the stream is not UTF-8", None)
        }
    }
}

/// A failure to read the stream as the error the caller gets.
fn read_error(transport: &Transport, error: ReadError) -> ModelError {
    match error {
        ReadError::Transport(error) => transport.stream_error(
            StreamFault::Disconnected,
            "the connection broke before the response was complete",
            Some(error),
        ),
        error @ ReadError::Deadline => {
            transport.stream_error(StreamFault::TimedOut, error.to_string(), None)
        }
        error @ ReadError::Idle(_) => {
            transport.stream_error(StreamFault::Idle, error.to_string(), None)
        }
        error @ ReadError::TooLarge(_) => {
            transport.stream_error(StreamFault::Corrupt, error.to_string(), None)
        }
    }
}
