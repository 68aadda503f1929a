//! Writing a request body's JSON straight into its buffer: the wires whose bodies are sent
//! on every turn write their fixed keys as literal text and their strings through
//! [`string`], instead of through serde's serializer, which escapes every key it writes and
//! every string byte by byte. The text is the one `serde_json` writes for the same value,
//! byte for byte (see the tests).

use serde::Serialize;
use serde_json::value::RawValue;

use super::ModelError;

/// Appends `text` as a JSON string: as it is when nothing in it needs escaping (found in one
/// pass the compiler vectorizes), else escaped as `serde_json` escapes it.
pub(crate) fn string(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    if needs_escape(bytes) {
        escaped(out, bytes);
    } else {
        out.extend_from_slice(bytes);
    }
    out.push(b'"');
}

/// Appends `value` as `serde_json` writes it: for what has no writer of its own here (a
/// tool's result, settings, schemas).
pub(crate) fn value<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> Result<(), ModelError> {
    serde_json::to_writer(out, value).map_err(ModelError::other)
}

/// Appends `"name":value`, the name escaped: a field whose name is not one of the wire's own
/// (an extra body field, a field of a part sent back as it came).
pub(crate) fn entry<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    name: &str,
    field: &T,
) -> Result<(), ModelError> {
    string(out, name);
    out.push(b':');
    value(out, field)
}

/// Appends `[a,b,...]`: each of `values`, JSON already (a tool's cached form), as it is.
pub(crate) fn raw_list(out: &mut Vec<u8>, values: &[std::sync::Arc<RawValue>]) {
    out.push(b'[');
    for (index, value) in values.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        out.extend_from_slice(value.get().as_bytes());
    }
    out.push(b']');
}

/// Whether a byte of `bytes` needs escaping in a JSON string: a control character, a quote
/// or a backslash. No early exit, so that the loop runs over whole vectors of bytes.
fn needs_escape(bytes: &[u8]) -> bool {
    bytes.iter().fold(false, |found, &byte| {
        found | (byte < 0x20) | (byte == b'"') | (byte == b'\\')
    })
}

/// Appends `bytes` escaped: runs that need nothing are copied whole, and blocks of 16
/// bytes that need nothing are passed over without looking at each byte.
fn escaped(out: &mut Vec<u8>, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut start = 0;
    let mut index = 0;
    while index < bytes.len() {
        if let Some(block) = bytes[index..].first_chunk::<16>()
            && !needs_escape(block)
        {
            index += 16;
            continue;
        }
        let byte = bytes[index];
        let short = match byte {
            b'"' => b'"',
            b'\\' => b'\\',
            b'\n' => b'n',
            b'\r' => b'r',
            b'\t' => b't',
            0x08 => b'b',
            0x0c => b'f',
            0x00..=0x1f => 0,
            _ => {
                index += 1;
                continue;
            }
        };
        out.extend_from_slice(&bytes[start..index]);
        index += 1;
        start = index;
        if short == 0 {
            out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xf)],
            ]);
        } else {
            out.extend_from_slice(&[b'\\', short]);
        }
    }
    out.extend_from_slice(&bytes[start..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(text: &str) -> String {
        let mut out = Vec::new();
        string(&mut out, text);
        String::from_utf8(out).expect("JSON text is UTF-8")
    }

    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        let every_ascii: String = (0u8..128).map(char::from).collect();
        for text in [
            "",
            "plain words",
            "a \"quoted\" word",
            "back\\slash",
            "lines\nand\ttabs\r",
            "\u{8}\u{c}\u{0}\u{1f}\u{7f}",
            "é, 日本語, 🎲 and </script>",
            &every_ascii,
            "a long line of text that needs nothing, then \"one quote\" and more text after it",
            "\n sixteen bytes.\n sixteen bytes.\n",
            "0123456789abcdef\"0123456789abcde\"0123456789abcdef0123456789abcdef\u{1}",
        ] {
            assert_eq!(
                written(text),
                serde_json::to_string(text).expect("a string serializes"),
                "{text:?}"
            );
        }
    }

    #[test]
    fn a_value_is_written_after_what_is_already_there() {
        let mut out = b"{\"n\":".to_vec();
        value(&mut out, &serde_json::json!([1, "two"])).expect("a value serializes");
        out.push(b'}');
        assert_eq!(out, br#"{"n":[1,"two"]}"#);
    }
}
