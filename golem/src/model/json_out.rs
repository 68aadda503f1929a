//! Writing a request body's JSON straight into its buffer: the wires whose bodies are sent
//! on every turn write their fixed keys as literal text and their strings through
//! [`string`], instead of through serde's serializer, which escapes every key it writes and
//! every string byte by byte. The text is the one `serde_json` writes for the same value,
//! byte for byte (see the tests).

use serde::Serialize;
use serde_json::value::RawValue;

use super::ModelError;
#[cfg(any(feature = "gemini", feature = "anthropic"))]
use super::ToolArgs;

/// Appends `text` as a JSON string: as it is when nothing in it needs escaping (found in one
/// pass the compiler vectorizes), else escaped as `serde_json` escapes it.
pub(crate) fn string(out: &mut Vec<u8>, text: &str) {
    out.reserve(text.len() + 2);
    out.push(b'"');
    contents(out, text.as_bytes());
    out.push(b'"');
}

/// Appends one JSON string made of `pieces` one after the other: a text put together from
/// parts, written without putting it together first.
pub(crate) fn string_of(out: &mut Vec<u8>, pieces: &[&str]) {
    out.push(b'"');
    for piece in pieces {
        contents(out, piece.as_bytes());
    }
    out.push(b'"');
}

/// Appends `value` as the text a model reads for it, as one JSON string: a string as it is,
/// any other value as its JSON, escaped as it is written rather than written first.
#[cfg(any(feature = "openai", feature = "anthropic"))]
pub(crate) fn value_text(out: &mut Vec<u8>, value: &serde_json::Value) -> Result<(), ModelError> {
    if let serde_json::Value::String(text) = value {
        string(out, text);
        return Ok(());
    }
    out.push(b'"');
    serde_json::to_writer(Escaping(&mut *out), value).map_err(ModelError::other)?;
    out.push(b'"');
    Ok(())
}

/// A writer that appends what it is given escaped for a JSON string: escaping is byte by
/// byte, so it does not matter where the writes cut the text.
#[cfg(any(feature = "openai", feature = "anthropic"))]
struct Escaping<'o>(&'o mut Vec<u8>);

#[cfg(any(feature = "openai", feature = "anthropic"))]
impl std::io::Write for Escaping<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        contents(self.0, bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Appends `bytes` as the inside of a JSON string: as they are when nothing needs escaping,
/// else escaped.
fn contents(out: &mut Vec<u8>, bytes: &[u8]) {
    if needs_escape(bytes) {
        escaped(out, bytes);
    } else {
        out.extend_from_slice(bytes);
    }
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

/// Appends `key` (literal text, `,"name":`) and `value` as `serde_json` writes it, when
/// there is a value: a field a request has only when it is set.
#[cfg(any(feature = "openai", feature = "anthropic"))]
pub(crate) fn field<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    key: &[u8],
    value: Option<&T>,
) -> Result<(), ModelError> {
    if let Some(field) = value {
        out.extend_from_slice(key);
        self::value(out, field)?;
    }
    Ok(())
}

/// Closes the body object `out`, whose own fields are written, with the `extra` body
/// fields after them (as serde's `flatten` wrote them), but those named in `taken`, which
/// the wire wrote or left out itself. An extra field that names one the body has is
/// merged into it instead (objects key by key, anything else replacing), so that no key
/// goes twice: `text.verbosity` beside native output's `text.format`.
pub(crate) fn close_with_extra(
    mut out: Vec<u8>,
    extra: &serde_json::Map<String, serde_json::Value>,
    taken: &[&str],
) -> Result<Vec<u8>, ModelError> {
    use serde_json::{Map, Value};

    /// Merges `value` into `fields` under `key`: objects key by key, anything else
    /// replacing.
    fn merge(fields: &mut Map<String, Value>, key: &str, value: &Value) {
        match (fields.get_mut(key), value) {
            (Some(Value::Object(existing)), Value::Object(added)) => {
                for (key, value) in added {
                    merge(existing, key, value);
                }
            }
            _ => {
                fields.insert(key.to_owned(), value.clone());
            }
        }
    }

    let fields = || {
        extra
            .iter()
            .filter(|(name, _)| !taken.contains(&name.as_str()))
    };
    out.push(b'}');
    if fields().next().is_none() {
        return Ok(out);
    }
    // The body's own field names, its values skipped: the whole body is read as values only
    // when an extra field names one of them.
    let names: FieldNames = serde_json::from_slice(&out).map_err(ModelError::other)?;
    if fields().any(|(name, _)| names.0.contains(name)) {
        let mut own: Map<String, Value> =
            serde_json::from_slice(&out).map_err(ModelError::other)?;
        for (name, field) in fields() {
            merge(&mut own, name, field);
        }
        return serde_json::to_vec(&own).map_err(ModelError::other);
    }
    out.pop();
    for (name, field) in fields() {
        out.push(b',');
        entry(&mut out, name, field)?;
    }
    out.push(b'}');
    Ok(out)
}

/// Appends `[a,b,...]`: each of `items` by `write`.
#[cfg(any(feature = "openai", feature = "anthropic"))]
pub(crate) fn list<T>(
    out: &mut Vec<u8>,
    items: impl IntoIterator<Item = T>,
    mut write: impl FnMut(&mut Vec<u8>, T) -> Result<(), ModelError>,
) -> Result<(), ModelError> {
    out.push(b'[');
    for (index, item) in items.into_iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        write(out, item)?;
    }
    out.push(b']');
    Ok(())
}

/// The field names of a JSON object, read without its values.
struct FieldNames(Vec<String>);

impl<'de> serde::Deserialize<'de> for FieldNames {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;

        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = FieldNames;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<FieldNames, A::Error> {
                let mut names = Vec::new();
                while let Some(name) = map.next_key::<String>()? {
                    map.next_value::<serde::de::IgnoredAny>()?;
                    names.push(name);
                }
                Ok(FieldNames(names))
            }
        }

        deserializer.deserialize_map(Visitor)
    }
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

/// A call's arguments read from a response, as the text `serde_json` writes for them: kept
/// as they came when they already are that text (see [`as_written`]), as they usually are,
/// else read and written again.
#[cfg(any(feature = "gemini", feature = "anthropic"))]
pub(crate) fn args_text(raw: &RawValue) -> Result<ToolArgs, serde_json::Error> {
    if as_written(raw) {
        return Ok(ToolArgs::from(raw.get()));
    }
    serde_json::from_str::<serde_json::Value>(raw.get()).map(ToolArgs::from)
}

/// Whether `raw` is already the text `serde_json` writes for the value it holds, so that it
/// can be kept as it is instead of read and written again. Checked for the common shape of
/// a call's arguments: one object of strings without escapes, integers of at most 18
/// digits, booleans and nulls, with no space and no name twice (names in ascending order
/// when `serde_json`'s objects sort them). Anything else is not.
#[cfg(any(feature = "gemini", feature = "anthropic"))]
fn as_written(raw: &RawValue) -> bool {
    let Some(inner) = raw
        .get()
        .as_bytes()
        .strip_prefix(b"{")
        .and_then(|rest| rest.strip_suffix(b"}"))
    else {
        return false;
    };
    if inner.is_empty() {
        return true;
    }
    let mut names: [&[u8]; 16] = [&[]; 16];
    let mut count = 0;
    let mut at = 0;
    loop {
        let Some(name) = plain_string(inner, &mut at) else {
            return false;
        };
        let fits = match names[..count].last() {
            None => true,
            Some(_) if names_keep_their_order() => {
                count < names.len() && !names[..count].contains(&name)
            }
            Some(&last) => count < names.len() && last < name,
        };
        if !fits || inner.get(at) != Some(&b':') {
            return false;
        }
        names[count] = name;
        count += 1;
        at += 1;
        if !scalar(inner, &mut at) {
            return false;
        }
        match inner.get(at) {
            None => return true,
            Some(b',') => at += 1,
            Some(_) => return false,
        }
    }
}

/// Whether `serde_json`'s objects keep their names in the order read (its `preserve_order`
/// feature, which any crate in the build may turn on) rather than sorted.
#[cfg(any(feature = "gemini", feature = "anthropic"))]
fn names_keep_their_order() -> bool {
    static KEEPS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *KEEPS.get_or_init(|| {
        let mut map = serde_json::Map::new();
        map.insert("b".to_owned(), serde_json::Value::Null);
        map.insert("a".to_owned(), serde_json::Value::Null);
        map.keys().next().is_some_and(|first| first == "b")
    })
}

/// The string at `at` when it has no escape: its content, with `at` moved past it.
#[cfg(any(feature = "gemini", feature = "anthropic"))]
fn plain_string<'t>(bytes: &'t [u8], at: &mut usize) -> Option<&'t [u8]> {
    let rest = bytes.get(*at..)?.strip_prefix(b"\"")?;
    let end = rest
        .iter()
        .position(|&byte| byte == b'"' || byte == b'\\')?;
    if rest[end] != b'"' {
        return None;
    }
    *at += end + 2;
    Some(&rest[..end])
}

/// Whether the value at `at` is a string without escapes, an integer `serde_json` writes as
/// read, a boolean or null; `at` moved past it.
#[cfg(any(feature = "gemini", feature = "anthropic"))]
fn scalar(bytes: &[u8], at: &mut usize) -> bool {
    let rest = &bytes[*at..];
    let length = match rest.first() {
        Some(b'"') => return plain_string(bytes, at).is_some(),
        Some(b't') if rest.starts_with(b"true") => 4,
        Some(b'f') if rest.starts_with(b"false") => 5,
        Some(b'n') if rest.starts_with(b"null") => 4,
        Some(b'-' | b'0'..=b'9') => {
            let sign = usize::from(rest[0] == b'-');
            let digits = rest[sign..]
                .iter()
                .take_while(|byte| byte.is_ascii_digit())
                .count();
            // `-0` is read as a float and written `-0.0`; longer integers may not fit.
            let plain = (1..=18).contains(&digits)
                && !(sign == 1 && rest[1] == b'0')
                && !matches!(rest.get(sign + digits), Some(b'.' | b'e' | b'E'));
            if !plain {
                return false;
            }
            sign + digits
        }
        _ => return false,
    };
    *at += length;
    true
}

/// Whether a byte of `bytes` needs escaping in a JSON string: a control character, a quote
/// or a backslash. No early exit, so that the loop runs over whole vectors of bytes.
fn needs_escape(bytes: &[u8]) -> bool {
    bytes.iter().fold(false, |found, &byte| {
        found | (byte < 0x20) | (byte == b'"') | (byte == b'\\')
    })
}

/// Appends `bytes` escaped: runs that need nothing are copied whole, blocks of 16 bytes
/// that need nothing are passed over without looking at each byte, and a block that needs
/// something is gone through byte by byte with a table, as `serde_json` does.
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
        let end = bytes.len().min(index + 16);
        while index < end {
            let byte = bytes[index];
            let short = ESCAPE[usize::from(byte)];
            index += 1;
            if short == 0 {
                continue;
            }
            out.extend_from_slice(&bytes[start..index - 1]);
            start = index;
            if short == b'u' {
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
    }
    out.extend_from_slice(&bytes[start..]);
}

/// For each byte, what follows the backslash that escapes it: its short escape, `u` for
/// `\u00XX`, or 0 when it needs none.
static ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = b'u';
        byte += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_fields_go_after_the_bodys_own_or_into_the_one_they_name() {
        let extra = |value: serde_json::Value| value.as_object().cloned().unwrap_or_default();
        let body = br#"{"model":"m","text":{"format":{"type":"text"}}"#.to_vec();
        assert_eq!(
            close_with_extra(body.clone(), &extra(serde_json::json!({})), &[]).unwrap(),
            br#"{"model":"m","text":{"format":{"type":"text"}}}"#
        );
        assert_eq!(
            close_with_extra(
                body.clone(),
                &extra(serde_json::json!({"tier": "flex"})),
                &[]
            )
            .unwrap(),
            br#"{"model":"m","text":{"format":{"type":"text"}},"tier":"flex"}"#
        );
        // A field the wire took itself is not written again.
        assert_eq!(
            close_with_extra(
                body.clone(),
                &extra(serde_json::json!({"include": ["x"], "tier": "flex"})),
                &["include"]
            )
            .unwrap(),
            br#"{"model":"m","text":{"format":{"type":"text"}},"tier":"flex"}"#
        );
        let merged = close_with_extra(
            body,
            &extra(serde_json::json!({"text": {"verbosity": "low"}})),
            &[],
        )
        .unwrap();
        assert_eq!(
            serde_json::from_slice::<serde_json::Value>(&merged).unwrap(),
            serde_json::json!({"model": "m", "text": {"format": {"type": "text"}, "verbosity": "low"}})
        );
    }

    fn written(text: &str) -> String {
        let mut out = Vec::new();
        string(&mut out, text);
        String::from_utf8(out).expect("JSON text is UTF-8")
    }

    #[cfg(any(feature = "gemini", feature = "anthropic"))]
    #[test]
    fn text_is_kept_as_written_only_when_serde_json_would_write_it_so() {
        let rewritten = |text: &str| {
            let value: serde_json::Value = serde_json::from_str(text).expect("JSON");
            serde_json::to_string(&value).expect("JSON")
        };
        let kept = [
            "{}",
            r#"{"count":2,"sides":6}"#,
            r#"{"a":"é 🎲 </script>","b":true,"c":false,"d":null,"e":-12,"f":0}"#,
            r#"{"m":-999999999999999999,"n":999999999999999999}"#,
            r#"{"empty":""}"#,
        ];
        let not_kept = [
            r#"{"count": 2}"#,
            "{\n\"count\":2}",
            r#"{"text":"line\nbreak"}"#,
            r#"{"text":"\u00e9"}"#,
            r#"{"x":1.0}"#,
            r#"{"x":1e3}"#,
            r#"{"x":-0}"#,
            r#"{"x":1000000000000000000}"#,
            r#"{"x":[1]}"#,
            r#"{"x":{"y":1}}"#,
            r#"{"x":1,"x":2}"#,
            r#"[1]"#,
            r#""text""#,
            "7",
        ];
        for text in kept {
            let raw = RawValue::from_string(text.to_owned()).expect("JSON");
            assert!(as_written(&raw), "{text}");
            assert_eq!(rewritten(text), text);
        }
        for text in not_kept {
            let raw = RawValue::from_string(text.to_owned()).expect("JSON");
            assert!(!as_written(&raw), "{text}");
        }
        // Seventeen names is past what is checked.
        let many: Vec<String> = (0..17).map(|n| format!("\"k{n:02}\":{n}")).collect();
        let raw = RawValue::from_string(format!("{{{}}}", many.join(","))).expect("JSON");
        assert!(!as_written(&raw));
        // Names out of order are kept only when serde_json keeps them in order.
        let raw = RawValue::from_string(r#"{"b":1,"a":2}"#.to_owned()).expect("JSON");
        assert_eq!(as_written(&raw), rewritten(raw.get()) == raw.get());
    }

    #[test]
    fn a_text_in_pieces_is_the_string_serde_json_writes() {
        let mut out = Vec::new();
        string_of(
            &mut out,
            &["Feedback:\n", "a \"quoted\" \u{1}reason", "\n\nAgain."],
        );
        assert_eq!(
            out,
            serde_json::to_vec("Feedback:\na \"quoted\" \u{1}reason\n\nAgain.").expect("JSON")
        );
    }

    #[cfg(any(feature = "openai", feature = "anthropic"))]
    #[test]
    fn a_value_as_text_is_the_string_serde_json_writes() {
        for value in [
            serde_json::json!("plain \"text\""),
            serde_json::json!({"rolled": [3, 4], "note": "a \"b\"\n", "x": 0.1, "é": null}),
            serde_json::json!([1, "two", {"three": true}]),
            serde_json::json!(7),
        ] {
            let mut out = Vec::new();
            value_text(&mut out, &value).expect("written");
            let text = match &value {
                serde_json::Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            assert_eq!(out, serde_json::to_vec(&text).expect("JSON"), "{value}");
        }
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
