//! An incremental parser of the event-stream format (the HTML standard's "server-sent
//! events"): bytes in, as they arrive, events out.
//!
//! Each byte is looked at once, however the stream is cut: a line that spans many reads
//! is appended to one buffer and searched for its end from where the last search stopped
//! (with `memchr`), never from its start. That keeps a 4 MiB event as cheap to read in
//! 8 KiB reads as in one, where a parser that re-reads its buffer per read is quadratic.

use std::collections::VecDeque;

/// One event: its type (`message` unless an `event:` field named one) and its data (the
/// `data:` fields joined by line feeds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    pub(crate) name: String,
    pub(crate) data: String,
}

/// What is wrong with an event stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ParseError {
    /// A line is not UTF-8.
    Utf8,
}

/// The state of one event stream being parsed.
#[derive(Debug, Default)]
pub(crate) struct EventParser {
    /// The start of a line whose end has not arrived yet: only the bytes that arrive
    /// after it are searched for the end.
    line: Vec<u8>,
    /// The last read ended in a carriage return: a line feed first in the next one
    /// belongs to it.
    after_cr: bool,
    /// The stream's first bytes were seen (a byte-order mark there is dropped).
    started: bool,
    /// The event being built.
    name: String,
    data: String,
    has_data: bool,
}

/// The byte-order mark, in UTF-8.
const BOM: &[u8] = b"\xEF\xBB\xBF";

impl EventParser {
    /// Reads `bytes`, the stream's next bytes, pushing each event they complete.
    pub(crate) fn feed(
        &mut self,
        mut bytes: &[u8],
        events: &mut VecDeque<SseEvent>,
    ) -> Result<(), ParseError> {
        if !self.started {
            // The mark may itself arrive split: wait for three bytes.
            if self.line.len() + bytes.len() < BOM.len() && BOM.starts_with(&self.line) {
                let joined = [self.line.as_slice(), bytes].concat();
                if BOM.starts_with(&joined) {
                    self.line = joined;
                    return Ok(());
                }
            }
            self.started = true;
            if !self.line.is_empty() {
                let mut joined = std::mem::take(&mut self.line);
                joined.extend_from_slice(bytes);
                let rest = joined.strip_prefix(BOM).unwrap_or(&joined);
                return self.feed_started(rest, events);
            }
            bytes = bytes.strip_prefix(BOM).unwrap_or(bytes);
        }
        self.feed_started(bytes, events)
    }

    fn feed_started(
        &mut self,
        mut bytes: &[u8],
        events: &mut VecDeque<SseEvent>,
    ) -> Result<(), ParseError> {
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        while !bytes.is_empty() {
            let Some(end) = memchr::memchr2(b'\n', b'\r', bytes) else {
                // No line end: the line goes on in the next read.
                self.line.extend_from_slice(bytes);
                return Ok(());
            };
            let after = match bytes[end] {
                b'\r' if end + 1 == bytes.len() => {
                    self.after_cr = true;
                    end + 1
                }
                b'\r' if bytes[end + 1] == b'\n' => end + 2,
                _ => end + 1,
            };
            if self.line.is_empty() {
                self.line_end(&bytes[..end], events)?;
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&bytes[..end]);
                let read = self.line_end(&line, events);
                // The buffer is kept for the next long line, unless it grew large.
                if line.capacity() <= 64 * 1024 {
                    line.clear();
                    self.line = line;
                }
                read?;
            }
            bytes = &bytes[after..];
        }
        Ok(())
    }

    /// Reads one whole line, without its end.
    fn line_end(&mut self, line: &[u8], events: &mut VecDeque<SseEvent>) -> Result<(), ParseError> {
        if line.is_empty() {
            self.dispatch(events);
            return Ok(());
        }
        if line[0] == b':' {
            // A comment (keep-alives are sent so).
            return Ok(());
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                let value = std::str::from_utf8(value).map_err(|_| ParseError::Utf8)?;
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            b"event" => {
                let value = std::str::from_utf8(value).map_err(|_| ParseError::Utf8)?;
                value.clone_into(&mut self.name);
            }
            // `id` and `retry` steer a browser's reconnection, which golem never does
            // (a stream that began is not retried); other fields are ignored, as the
            // standard says.
            _ => {}
        }
        Ok(())
    }

    /// A blank line: the event built so far is complete, if it has data.
    fn dispatch(&mut self, events: &mut VecDeque<SseEvent>) {
        let name = std::mem::take(&mut self.name);
        if !std::mem::take(&mut self.has_data) {
            return;
        }
        events.push_back(SseEvent {
            name: if name.is_empty() {
                "message".to_owned()
            } else {
                name
            },
            data: std::mem::take(&mut self.data),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(reads: &[&[u8]]) -> Result<Vec<SseEvent>, ParseError> {
        let mut parser = EventParser::default();
        let mut events = VecDeque::new();
        for read in reads {
            parser.feed(read, &mut events)?;
        }
        Ok(events.into())
    }

    fn event(name: &str, data: &str) -> SseEvent {
        SseEvent {
            name: name.to_owned(),
            data: data.to_owned(),
        }
    }

    #[test]
    fn events_are_read_however_the_bytes_are_cut() {
        let stream: &[u8] = b"\xEF\xBB\xBFdata: one\n\n: a comment\r\nevent: ping\r\ndata: {}\r\n\r\ndata:a\rdata:  b\r\rid: 7\nretry: 10\ndata\n\nevent: lost\n\n";
        let expected = [
            event("message", "one"),
            event("ping", "{}"),
            event("message", "a\n b"),
            event("message", ""),
        ];
        assert_eq!(parse(&[stream]).expect("valid"), expected);
        for cut in 1..stream.len() {
            let (head, tail) = stream.split_at(cut);
            assert_eq!(
                parse(&[head, tail]).expect("valid"),
                expected,
                "cut at {cut}"
            );
        }
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(parse(&bytes).expect("valid"), expected);
    }

    #[test]
    fn an_event_without_its_blank_line_is_not_dispatched() {
        assert_eq!(parse(&[b"data: cut off\n"]).expect("valid"), []);
        assert_eq!(parse(&[b"data: cut"]).expect("valid"), []);
    }

    #[test]
    fn a_long_line_over_many_reads_is_one_event() {
        let data = "é".repeat(100_000);
        let stream = format!("data: {data}\n\n");
        let reads: Vec<&[u8]> = stream.as_bytes().chunks(8191).collect();
        assert_eq!(parse(&reads).expect("valid"), [event("message", &data)]);
    }

    #[test]
    fn a_line_that_is_not_utf8_is_an_error() {
        assert_eq!(parse(&[b"data: \xFF\n\n"]), Err(ParseError::Utf8));
    }
}
