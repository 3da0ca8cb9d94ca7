//! Sentry's wire formats, as the official SDKs send them: the body's
//! `Content-Encoding` (gzip, deflate), the public key of the DSN (the
//! `X-Sentry-Auth` header, the `sentry_key` query parameter, or the
//! envelope header's `dsn`), and the envelope itself: a JSON header line,
//! then items, each a JSON header line and a payload of `length` bytes
//! (or up to the next newline when the header has no length).

use std::io::Read;

use flate2::read::{GzDecoder, ZlibDecoder};
use plateau_sdk::serde_json::{self, Value};
use plateau_sdk::{ApiError, Query};

/// The most bytes a body may decode to: Sentry's own limit for an event is
/// 1 MiB; an envelope carries one event and a few small items.
pub const MAX_DECODED_BYTES: usize = 4 << 20;

/// The body as sent, decoded from its `Content-Encoding` (none, `gzip`,
/// `deflate`): 415 naming the header for another encoding, 400 for a body
/// that does not decode, 413 over [`MAX_DECODED_BYTES`].
pub fn decode_body(encoding: Option<&str>, body: &[u8]) -> Result<Vec<u8>, ApiError> {
    let encoding = encoding.map(|e| e.trim().to_ascii_lowercase());
    let mut out = Vec::new();
    let limit = MAX_DECODED_BYTES as u64 + 1;
    let read = match encoding.as_deref() {
        None | Some("") | Some("identity") => return check_size(body.to_vec()),
        Some("gzip") | Some("x-gzip") => GzDecoder::new(body).take(limit).read_to_end(&mut out),
        Some("deflate") => ZlibDecoder::new(body).take(limit).read_to_end(&mut out),
        Some(other) => {
            return Err(ApiError::unsupported_media_type(format!(
                "content-encoding {other} is not supported: send gzip, deflate or no encoding"
            )));
        }
    };
    read.map_err(|e| ApiError::validation("body", format!("does not decode: {e}")))?;
    check_size(out)
}

fn check_size(body: Vec<u8>) -> Result<Vec<u8>, ApiError> {
    if body.len() > MAX_DECODED_BYTES {
        return Err(ApiError::payload_too_large(format!(
            "the decoded body is over {MAX_DECODED_BYTES} bytes"
        )));
    }
    Ok(body)
}

/// The DSN's public key the request carries: `sentry_key` of the
/// `X-Sentry-Auth` header (`Sentry sentry_key=..., sentry_version=7`),
/// else of the query, else the user part of the envelope header's `dsn`.
pub fn public_key(auth_header: Option<&str>, query: &Query, dsn: Option<&str>) -> Option<String> {
    let from_header = auth_header.and_then(|h| {
        let h = h.trim();
        let pairs = h
            .strip_prefix("Sentry ")
            .or_else(|| h.strip_prefix("sentry "))
            .unwrap_or(h);
        pairs.split(',').find_map(|pair| {
            let (k, v) = pair.trim().split_once('=')?;
            (k.trim() == "sentry_key").then(|| v.trim().to_owned())
        })
    });
    let from_dsn = || {
        let rest = dsn?.split_once("://")?.1;
        let user = rest.split_once('@')?.0;
        Some(user.split(':').next().unwrap_or(user).to_owned())
    };
    from_header
        .or_else(|| query.get("sentry_key").map(str::to_owned))
        .or_else(from_dsn)
        .filter(|k| !k.is_empty())
}

/// One item of an envelope.
#[derive(Debug, Clone, PartialEq)]
pub struct Item<'a> {
    /// `event`, `transaction`, `attachment`, `session`, `client_report`...
    pub kind: String,
    pub payload: &'a [u8],
}

/// An envelope: its header and its items.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope<'a> {
    pub header: Value,
    pub items: Vec<Item<'a>>,
}

fn line(body: &[u8], at: usize) -> (&[u8], usize) {
    match body[at..].iter().position(|b| *b == b'\n') {
        Some(n) => (&body[at..at + n], at + n + 1),
        None => (&body[at..], body.len()),
    }
}

fn header_json(bytes: &[u8], field: &str) -> Result<Value, ApiError> {
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|e| ApiError::validation(field, format!("is not JSON: {e}")))?;
    if !value.is_object() {
        return Err(ApiError::validation(field, "must be a JSON object"));
    }
    Ok(value)
}

/// Parses an envelope; a 400 names the part that is wrong (`header`,
/// `items[1].header`, `items[1].length`).
pub fn parse(body: &[u8]) -> Result<Envelope<'_>, ApiError> {
    let (first, mut at) = line(body, 0);
    let header = header_json(first, "header")?;
    let mut items = Vec::new();
    while at < body.len() {
        let (head, next) = line(body, at);
        at = next;
        if head.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let n = items.len();
        let item_header = header_json(head, &format!("items[{n}].header"))?;
        let kind = item_header["type"].as_str().unwrap_or_default().to_owned();
        if kind.is_empty() {
            return Err(ApiError::validation(
                format!("items[{n}].type"),
                "is required",
            ));
        }
        let payload = match item_header.get("length").and_then(Value::as_u64) {
            Some(length) => {
                let end = at.saturating_add(length as usize);
                if end > body.len() {
                    return Err(ApiError::validation(
                        format!("items[{n}].length"),
                        format!("is {length} but only {} bytes follow", body.len() - at),
                    ));
                }
                let payload = &body[at..end];
                at = if body.get(end) == Some(&b'\n') {
                    end + 1
                } else {
                    end
                };
                payload
            }
            None => {
                let (payload, next) = line(body, at);
                at = next;
                payload
            }
        };
        items.push(Item { kind, payload });
    }
    Ok(Envelope { header, items })
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use flate2::Compression;
    use flate2::write::GzEncoder;

    use super::*;

    #[test]
    fn items_with_and_without_length() {
        let body = b"{\"event_id\":\"e1\"}\n{\"type\":\"event\",\"length\":7}\n{\"a\":1}\n{\"type\":\"attachment\"}\nhello\n";
        let envelope = parse(body).unwrap();
        assert_eq!(envelope.header["event_id"], "e1");
        assert_eq!(envelope.items.len(), 2);
        assert_eq!(envelope.items[0].kind, "event");
        assert_eq!(envelope.items[0].payload, b"{\"a\":1}");
        assert_eq!(envelope.items[1].kind, "attachment");
        assert_eq!(envelope.items[1].payload, b"hello");
        // The last item may end without a newline.
        let envelope = parse(b"{}\n{\"type\":\"event\",\"length\":2}\n{}").unwrap();
        assert_eq!(envelope.items[0].payload, b"{}");
    }

    #[test]
    fn a_bad_envelope_names_its_part() {
        let field = |body: &[u8]| parse(body).unwrap_err().errors()[0].field.clone();
        assert_eq!(field(b"nope\n"), "header");
        assert_eq!(field(b"{}\n[1]\n"), "items[0].header");
        assert_eq!(field(b"{}\n{\"length\":1}\nx\n"), "items[0].type");
        assert_eq!(
            field(b"{}\n{\"type\":\"event\",\"length\":99}\n{}\n"),
            "items[0].length"
        );
    }

    #[test]
    fn bodies_decode_and_keys_are_found() {
        let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
        gz.write_all(b"{}").unwrap();
        let zipped = gz.finish().unwrap();
        assert_eq!(decode_body(Some("gzip"), &zipped).unwrap(), b"{}");
        assert_eq!(decode_body(None, b"{}").unwrap(), b"{}");
        assert_eq!(decode_body(Some("br"), b"x").unwrap_err().status(), 415);
        assert_eq!(decode_body(Some("gzip"), b"x").unwrap_err().status(), 400);

        let q = Query::parse("sentry_key=k2&sentry_version=7");
        let none = Query::parse("");
        let header = "Sentry sentry_key=k1, sentry_version=7, sentry_client=sentry.python/2.0";
        assert_eq!(public_key(Some(header), &q, None).as_deref(), Some("k1"));
        assert_eq!(public_key(None, &q, None).as_deref(), Some("k2"));
        let dsn = Some("http://k3@localhost/api/v1/errors/ingest/12");
        assert_eq!(public_key(None, &none, dsn).as_deref(), Some("k3"));
        assert_eq!(public_key(None, &none, None), None);
    }
}
