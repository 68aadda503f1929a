//! Reading a streaming answer as it grows: each byte is scanned once, and the answer is
//! parsed again only as often as its [`PartialCadence`] allows.

use serde_json::Value;

/// How many bytes of reading a run spends per byte of the answer received, by default.
const DEFAULT_FACTOR: u32 = 16;

/// How often a run reads a streaming structured answer for its partial form.
///
/// Each read parses everything that has arrived of the answer, so reading after every delta
/// costs time quadratic in the answer's length. By default a run spends at most 16 bytes
/// of reading per byte received ([`proportional(16)`](Self::proportional)): while the
/// answer is short (up to about 16 deltas), that is a read after every delta; as it grows,
/// reads space out in proportion to its length, and the cost per delta stays the same at
/// a hundred deltas and at ten thousand. Whatever the cadence, a delta that adds nothing
/// readable (whitespace, more digits of a number at the very end) is not read, and the
/// answer is read once it is complete.
///
/// ```
/// use golem::output::PartialCadence;
///
/// // A partial after every delta that adds to the answer, at quadratic cost.
/// let every = PartialCadence::every_delta();
/// // More frequent partials than the default, at four times its cost per delta.
/// let finer = PartialCadence::proportional(64);
/// // Only the complete answer.
/// let once = PartialCadence::proportional(0);
/// assert_ne!(every, PartialCadence::default());
/// # let _ = (finer, once);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PartialCadence {
    /// Bytes of reading allowed per byte received; `None` reads after every delta.
    factor: Option<u32>,
}

impl PartialCadence {
    /// A read after every delta that adds to what reads of the answer. Each read parses
    /// the whole answer so far: a long answer costs time quadratic in its length.
    #[must_use]
    pub const fn every_delta() -> Self {
        PartialCadence { factor: None }
    }

    /// Reads that parse at most `factor` bytes for each byte of the answer received, so
    /// the cost per delta does not grow with the answer: a read after a delta when the
    /// bytes received since the last read, times `factor`, cover the answer's length
    /// (what was not spent carries over). `0` reads only the complete answer.
    #[must_use]
    pub const fn proportional(factor: u32) -> Self {
        PartialCadence {
            factor: Some(factor),
        }
    }
}

impl Default for PartialCadence {
    /// [`proportional(16)`](Self::proportional).
    fn default() -> Self {
        Self::proportional(DEFAULT_FACTOR)
    }
}

/// Reads an answer while it grows: [`read`](Self::read) is given the whole text so far
/// each time (what it was given before, and more), scans only what was added, and parses
/// the text when the cadence allows.
#[derive(Debug, Default)]
pub(crate) struct Reader {
    scan: Scan,
    /// The length of the text the last read parsed.
    read_len: Option<usize>,
    /// Bytes of reading earned and not yet spent.
    credit: u64,
}

impl Reader {
    /// The answer `text` as far as it reads, if the cadence allows a read now and something
    /// was added since the last one; `None` otherwise.
    pub(crate) fn read(&mut self, text: &str, cadence: PartialCadence) -> Option<Value> {
        if text.len() < self.scan.len {
            // Not the text read before: start again.
            *self = Reader::default();
        }
        let added = &text.as_bytes()[self.scan.len..];
        self.scan.advance(added);
        let end = self.scan.readable_end();
        if let Some(factor) = cadence.factor {
            let earned = (added.len() as u64).saturating_mul(u64::from(factor));
            self.credit = self.credit.saturating_add(earned);
        }
        if self.read_len == Some(end) {
            return None;
        }
        if cadence.factor.is_some() {
            let cost = end as u64;
            if self.credit < cost && !self.scan.complete {
                return None;
            }
            self.credit = self.credit.saturating_sub(cost);
        }
        self.read_len = Some(end);
        super::parse_readable(&text[..end])
    }
}

/// What a scan of the text so far knows, byte by byte: whether it ends inside a string,
/// where a number it ends in starts, and whether its top-level value has closed.
#[derive(Debug, Default, Clone)]
pub(super) struct Scan {
    /// Bytes scanned.
    len: usize,
    in_string: bool,
    escaped: bool,
    depth: usize,
    /// Whether the top-level list or object has closed.
    complete: bool,
    /// Where the run of number characters the text ends in starts (outside strings).
    token_start: usize,
    /// Whether that run starts as a number does (a digit or `-`).
    token_is_number: bool,
    /// Whether anything but whitespace comes before it.
    content_before_token: bool,
    content: bool,
    /// Where the text ends without the whitespace it ends in (outside strings).
    content_end: usize,
}

impl Scan {
    pub(super) fn advance(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            let at = self.len;
            self.len += 1;
            let numeric =
                !self.in_string && matches!(byte, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E');
            if self.in_string || !byte.is_ascii_whitespace() {
                self.content_end = at + 1;
            }
            if self.in_string {
                if self.escaped {
                    self.escaped = false;
                } else if byte == b'\\' {
                    self.escaped = true;
                } else if byte == b'"' {
                    self.in_string = false;
                }
            } else {
                match byte {
                    b'"' => self.in_string = true,
                    b'{' | b'[' => self.depth += 1,
                    b'}' | b']' => {
                        self.depth = self.depth.saturating_sub(1);
                        self.complete |= self.depth == 0;
                    }
                    _ => {}
                }
            }
            if !byte.is_ascii_whitespace() {
                self.content = true;
            }
            if !numeric {
                self.token_start = at + 1;
                self.content_before_token = self.content;
            } else if at == self.token_start {
                self.token_is_number = byte.is_ascii_digit() || byte == b'-';
            }
        }
    }

    /// Where the text that reads ends: before a number the text ends in, unless it is
    /// nothing but that number, since more digits may follow (`12` of a coming `125` is no
    /// value yet), and before whitespace it ends in, which adds nothing. Inside an open
    /// string, digits and spaces at the end are text.
    pub(super) fn readable_end(&self) -> usize {
        if self.in_string {
            return self.len;
        }
        let ends_in_number =
            self.token_start < self.len && self.token_is_number && self.content_before_token;
        if ends_in_number {
            self.token_start
        } else {
            self.content_end
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// What `reader` reads after each of `deltas`, at `cadence`.
    fn reads(cadence: PartialCadence, deltas: &[&str]) -> Vec<Option<Value>> {
        let mut reader = Reader::default();
        let mut text = String::new();
        deltas
            .iter()
            .map(|delta| {
                text.push_str(delta);
                reader.read(&text, cadence)
            })
            .collect()
    }

    #[test]
    fn a_delta_that_adds_nothing_readable_is_not_read() {
        let deltas = [
            r#"{"a": "x"#,
            r#"y ", "n": 1"#,
            "2",
            " ",
            r#", "b": true}"#,
            "  \n",
        ];
        assert_eq!(
            reads(PartialCadence::every_delta(), &deltas),
            [
                Some(json!({"a": "x"})),
                // `1` may be the start of `12`.
                Some(json!({"a": "xy "})),
                None,
                Some(json!({"a": "xy ", "n": 12})),
                Some(json!({"a": "xy ", "n": 12, "b": true})),
                None,
            ]
        );
    }

    #[test]
    fn proportional_reads_spend_what_the_bytes_received_earn() {
        let deltas = [r#"["a", "#, r#""b", "#, r#""c", "#, r#""d", "#, r#""e"]"#];
        // Two bytes of reading per byte received: the fourth delta's 5 bytes and the 2
        // left over do not pay for reading 20, and the complete answer is always read.
        assert_eq!(
            reads(PartialCadence::proportional(2), &deltas),
            [
                Some(json!(["a"])),
                Some(json!(["a", "b"])),
                Some(json!(["a", "b", "c"])),
                None,
                Some(json!(["a", "b", "c", "d", "e"])),
            ]
        );
        assert_eq!(
            reads(PartialCadence::proportional(0), &deltas),
            [
                None,
                None,
                None,
                None,
                Some(json!(["a", "b", "c", "d", "e"]))
            ]
        );
    }

    #[test]
    fn a_long_answer_is_read_less_often_as_it_grows() {
        let deltas: Vec<String> = (0..1000).map(|n| format!(r#""item {n}", "#)).collect();
        let mut deltas: Vec<&str> = deltas.iter().map(String::as_str).collect();
        deltas.insert(0, "[");
        deltas.push(r#""last"]"#);
        let read = reads(PartialCadence::default(), &deltas);
        let lengths: Vec<usize> = read
            .iter()
            .flatten()
            .map(|list| list.as_array().map_or(0, Vec::len))
            .collect();
        // Every delta is read while the answer is short (the first, `[`, reads as `[]`)...
        assert_eq!(lengths[..30], (0..30).collect::<Vec<_>>());
        // ... then reads space out: together they parse at most 16 bytes per byte received,
        // and the complete answer once more.
        assert!(lengths.len() < 100, "{} reads", lengths.len());
        let mut received = 0;
        let mut parsed = 0;
        for (delta, read) in deltas.iter().zip(&read) {
            received += delta.len();
            parsed += if read.is_some() { received } else { 0 };
        }
        assert!(
            parsed <= 17 * received,
            "{parsed} bytes parsed for {received}"
        );
        // The complete answer is read.
        assert_eq!(lengths.last(), Some(&1001));
    }
}
