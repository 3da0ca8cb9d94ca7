//! The body of `POST /email/send` and its validation into an [`Outgoing`]
//! message: every address parsed, subject and custom headers that cannot
//! carry a line break (so no header can be injected), at least one body
//! and one recipient, attachments decoded from base64 within the limits of
//! [`crate::limits`].
//!
//! Attachment contents are borrowed from the request body while parsing,
//! so a large message is held in memory once as base64 and once decoded.

/// A validated attachment is the `smtp` capability's own.
pub use plateau_sdk::smtp::Attachment;
use std::borrow::Cow;

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
use plateau_sdk::serde_json::{Map, Value};
use plateau_sdk::{ApiError, Request, Validator, contract};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::address::Mailbox;
use crate::limits::{
    MAX_ATTACHMENT_BYTES, MAX_ATTACHMENTS, MAX_BODY_BYTES, MAX_HEADER_VALUE, MAX_HEADERS,
    MAX_RECIPIENTS,
};

/// `POST /email/send`, as sent.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SendRequest<'a> {
    pub from: Option<String>,
    #[serde(default)]
    pub to: OneOrMany,
    #[serde(default)]
    pub cc: OneOrMany,
    #[serde(default)]
    pub bcc: OneOrMany,
    pub subject: Option<String>,
    pub text: Option<String>,
    pub html: Option<String>,
    pub reply_to: Option<String>,
    /// Custom headers, name to value.
    #[serde(default)]
    pub headers: Map<String, Value>,
    #[serde(default, borrow)]
    pub attachments: Vec<AttachmentRequest<'a>>,
}

/// An address list sent as one string or an array of strings.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum OneOrMany {
    #[default]
    None,
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn into_vec(self) -> Vec<String> {
        match self {
            OneOrMany::None => Vec::new(),
            OneOrMany::One(one) => vec![one],
            OneOrMany::Many(many) => many,
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AttachmentRequest<'a> {
    pub filename: String,
    /// Default `application/octet-stream`.
    pub content_type: Option<String>,
    /// Base64 (standard alphabet, padding optional, line breaks allowed).
    #[serde(borrow)]
    pub content: Cow<'a, str>,
}

/// A validated message, ready to store and send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    pub from: Mailbox,
    pub reply_to: Option<Mailbox>,
    pub to: Vec<Mailbox>,
    pub cc: Vec<Mailbox>,
    pub bcc: Vec<Mailbox>,
    pub subject: String,
    pub text: Option<String>,
    pub html: Option<String>,
    pub headers: Vec<(String, String)>,
    pub attachments: Vec<Attachment>,
}

impl Outgoing {
    /// Every recipient, to then cc then bcc.
    pub fn recipients(&self) -> impl Iterator<Item = &Mailbox> {
        self.to.iter().chain(&self.cc).chain(&self.bcc)
    }
}

/// Parses the body of `req` borrowing from it, by the platform's rules for
/// JSON bodies (`plateau_contract::json`): 415 for a body not sent as
/// JSON, 400 `invalid_json` for one that is not JSON, 400
/// `validation_failed` naming a field of the wrong type.
pub fn parse(req: &Request) -> Result<SendRequest<'_>, ApiError> {
    let body = contract::json_body(req.header("content-type"), &req.body)?;
    contract::parse_json_borrowed(body)
}

impl SendRequest<'_> {
    /// Checks every field and decodes the attachments; all invalid fields
    /// are reported at once (400 `validation_failed`), attachments over the
    /// size limit with 413.
    pub fn validate(self) -> Result<Outgoing, ApiError> {
        let mut v = Validator::new();
        let from = match self.from.as_deref() {
            None => {
                v.error("from", "is required: one of the allowed senders");
                None
            }
            Some(raw) => mailbox(&mut v, "from", raw),
        };
        let reply_to = self
            .reply_to
            .as_deref()
            .and_then(|raw| mailbox(&mut v, "replyTo", raw));
        let raw = [
            ("to", self.to.into_vec()),
            ("cc", self.cc.into_vec()),
            ("bcc", self.bcc.into_vec()),
        ];
        let count = raw.iter().map(|(_, list)| list.len()).sum::<usize>();
        let lists = raw.map(|(field, raw)| {
            raw.iter()
                .enumerate()
                .filter_map(|(i, a)| mailbox(&mut v, &format!("{field}[{i}]"), a))
                .collect::<Vec<_>>()
        });
        v.check(
            count > 0,
            "to",
            "name at least one recipient in to, cc or bcc",
        );
        v.check(
            count <= MAX_RECIPIENTS,
            "to",
            format!("at most {MAX_RECIPIENTS} recipients in to, cc and bcc together"),
        );
        let subject = self.subject.unwrap_or_default();
        v.check(!subject.trim().is_empty(), "subject", "is required");
        if let Err(why) = header_value(&subject) {
            v.error("subject", why);
        }
        v.check(
            self.text.is_some() || self.html.is_some(),
            "text",
            "give text, html or both",
        );
        for (field, body) in [("text", &self.text), ("html", &self.html)] {
            let size = body.as_ref().map_or(0, String::len);
            v.check(
                size <= MAX_BODY_BYTES,
                field,
                format!("must be at most {} MiB", MAX_BODY_BYTES >> 20),
            );
        }
        let headers = custom_headers(&mut v, self.headers);
        v.check(
            self.attachments.len() <= MAX_ATTACHMENTS,
            "attachments",
            format!("at most {MAX_ATTACHMENTS} attachments"),
        );
        let mut attachments = Vec::with_capacity(self.attachments.len());
        let mut total = 0usize;
        for (i, attachment) in self.attachments.into_iter().enumerate() {
            if let Some(decoded) = decode_attachment(&mut v, i, attachment)? {
                total += decoded.content.len();
                if total > MAX_ATTACHMENT_BYTES {
                    return Err(too_large());
                }
                attachments.push(decoded);
            }
        }
        v.finish()?;
        let [to, cc, bcc] = lists;
        Ok(Outgoing {
            from: from.ok_or_else(|| ApiError::internal("from passed validation unparsed"))?,
            reply_to,
            to,
            cc,
            bcc,
            subject,
            text: self.text,
            html: self.html,
            headers,
            attachments,
        })
    }
}

fn too_large() -> ApiError {
    ApiError::payload_too_large(format!(
        "attachments are over {} MiB together (decoded): send smaller files or a link",
        MAX_ATTACHMENT_BYTES >> 20
    ))
}

fn mailbox(v: &mut Validator, field: &str, raw: &str) -> Option<Mailbox> {
    match Mailbox::parse(raw) {
        Ok(mailbox) => Some(mailbox),
        Err(why) => {
            v.error(field, why);
            None
        }
    }
}

/// A subject or header value: no line break or other control character
/// (tabs aside), at most 998 bytes.
pub fn header_value(value: &str) -> Result<(), String> {
    if value.chars().any(|c| c.is_control() && c != '\t') {
        return Err("must not contain line breaks or control characters".into());
    }
    if value.len() > MAX_HEADER_VALUE {
        return Err(format!("must be at most {MAX_HEADER_VALUE} bytes"));
    }
    Ok(())
}

fn custom_headers(v: &mut Validator, headers: Map<String, Value>) -> Vec<(String, String)> {
    if headers.len() > MAX_HEADERS {
        v.error("headers", format!("at most {MAX_HEADERS} custom headers"));
    }
    let mut seen: Vec<String> = Vec::new();
    let mut out = Vec::with_capacity(headers.len());
    for (name, value) in headers {
        let field = format!("headers.{name}");
        let lower = name.to_ascii_lowercase();
        if !plateau_sdk::smtp::is_header_name(&name) {
            v.error(&field, "a header name is 1 to 76 letters, digits or -");
            continue;
        }
        if plateau_sdk::smtp::is_reserved_header(&lower) {
            v.error(
                &field,
                "is set by the relay: use the message's own fields (from, to, subject, replyTo...)",
            );
            continue;
        }
        if seen.contains(&lower) {
            v.error(&field, "is given twice (names compare without case)");
            continue;
        }
        let Value::String(value) = value else {
            v.error(&field, "must be a string");
            continue;
        };
        if let Err(why) = header_value(&value) {
            v.error(&field, why);
            continue;
        }
        seen.push(lower);
        out.push((name, value));
    }
    out
}

const BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// The decoded attachment; `None` when a field is invalid (recorded in
/// `v`), 413 when its content alone is over the limit.
fn decode_attachment(
    v: &mut Validator,
    i: usize,
    attachment: AttachmentRequest<'_>,
) -> Result<Option<Attachment>, ApiError> {
    let field = |name: &str| format!("attachments[{i}].{name}");
    let filename = attachment.filename.trim().to_owned();
    let filename_ok = !filename.is_empty()
        && filename.len() <= 255
        && !filename
            .chars()
            .any(|c| c.is_control() || c == '/' || c == '\\');
    v.check(
        filename_ok,
        field("filename"),
        "must be 1 to 255 bytes without control characters, / or \\",
    );
    let content_type = attachment
        .content_type
        .unwrap_or_else(|| "application/octet-stream".to_owned());
    v.check(
        is_mime_type(&content_type),
        field("contentType"),
        "must be a MIME type such as application/pdf or text/csv; charset=utf-8",
    );
    let encoded: Cow<'_, str> = if attachment.content.bytes().any(|b| b.is_ascii_whitespace()) {
        Cow::Owned(
            attachment
                .content
                .chars()
                .filter(|c| !c.is_ascii_whitespace())
                .collect(),
        )
    } else {
        attachment.content
    };
    if encoded.len() / 4 * 3 > MAX_ATTACHMENT_BYTES + 3 {
        // Refuse before decoding what cannot fit anyway.
        return Err(too_large());
    }
    let content = match BASE64.decode(encoded.as_bytes()) {
        Ok(content) => content,
        Err(_) => {
            v.error(field("content"), "must be base64 (standard alphabet)");
            return Ok(None);
        }
    };
    Ok(
        (filename_ok && is_mime_type(&content_type)).then_some(Attachment {
            filename,
            content_type,
            content,
        }),
    )
}

/// `type/subtype` with optional `; name=value` parameters.
fn is_mime_type(raw: &str) -> bool {
    let token = |s: &str| {
        !s.is_empty()
            && s.len() <= 127
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&^_.+-".contains(&b))
    };
    let mut parts = raw.split(';');
    let essence = parts.next().unwrap_or("").trim();
    let type_ok = essence
        .split_once('/')
        .is_some_and(|(t, s)| token(t) && token(s));
    let params_ok = parts.all(|param| {
        let param = param.trim();
        param.split_once('=').is_some_and(|(name, value)| {
            let value = value.trim();
            let quoted = value.len() >= 2
                && value.starts_with('"')
                && value.ends_with('"')
                && !value[1..value.len() - 1].contains(['"', '\\']);
            token(name.trim()) && (token(value) || quoted) && !value.chars().any(char::is_control)
        })
    });
    type_ok && params_ok && raw.len() <= 255
}

#[cfg(test)]
mod tests {
    use super::*;
    use plateau_sdk::Method;
    use plateau_sdk::serde_json::json;

    fn validate(body: Value) -> Result<Outgoing, ApiError> {
        let req = Request::new(Method::Post, "/email/send").with_json(&body);
        parse(&req)?.validate()
    }

    fn minimal() -> Value {
        json!({"from": "ann@example.com", "to": "bob@example.org", "subject": "Hi", "text": "Hello"})
    }

    fn fields(error: &ApiError) -> Vec<&str> {
        error.errors().iter().map(|e| e.field.as_str()).collect()
    }

    #[test]
    fn a_full_message_validates() {
        let out = validate(json!({
            "from": "Ann <ann@example.com>",
            "to": ["bob@example.org", "Carl <carl@example.org>"],
            "cc": "dan@example.org",
            "bcc": ["eve@example.net"],
            "replyTo": "support@example.com",
            "subject": "Invoice 42",
            "text": "see attached",
            "html": "<p>see attached</p>",
            "headers": {"X-Campaign": "november", "List-Unsubscribe": "<mailto:u@example.com>"},
            "attachments": [{"filename": "a.txt", "contentType": "text/plain; charset=utf-8", "content": "aGVsbG8="},
                            {"filename": "b.bin", "content": "AAEC\r\nAw"}],
        }))
        .unwrap();
        assert_eq!(out.from.to_string(), "Ann <ann@example.com>");
        assert_eq!(out.recipients().count(), 4);
        assert_eq!(out.headers.len(), 2);
        assert_eq!(out.attachments[0].content, b"hello");
        assert_eq!(out.attachments[1].content, [0, 1, 2, 3]);
        assert_eq!(out.attachments[1].content_type, "application/octet-stream");
    }

    #[test]
    fn injection_is_refused_up_front() {
        let cases = [
            ("subject", json!("Hi\r\nBcc: eve@example.net")),
            ("subject", json!("Hi\nthere")),
            ("subject", json!("nul\u{0}")),
            ("from", json!("ann@example.com\r\nBcc: eve@example.net")),
            ("replyTo", json!("a@example.com\nX: y")),
        ];
        for (field, value) in cases {
            let mut body = minimal();
            body[field] = value.clone();
            let error = validate(body).unwrap_err();
            assert_eq!(error.status(), 400, "{field} {value}");
            assert_eq!(fields(&error), [field], "{value}");
        }
        let mut body = minimal();
        body["to"] = json!(["bob@example.org\r\nRCPT TO:<eve@example.net>"]);
        assert_eq!(fields(&validate(body).unwrap_err()), ["to[0]"]);
        let mut body = minimal();
        body["headers"] = json!({"X-A": "ok\r\nBcc: eve@example.net", "Bcc": "eve@example.net",
                                 "Content-Type": "text/html", "X Bad": "v", "x-b": "1", "X-C": 3});
        let error = validate(body).unwrap_err();
        let mut got = fields(&error);
        got.sort();
        assert_eq!(
            got,
            [
                "headers.Bcc",
                "headers.Content-Type",
                "headers.X Bad",
                "headers.X-A",
                "headers.X-C"
            ]
        );
    }

    #[test]
    fn required_parts_and_limits() {
        let error = validate(json!({"subject": ""})).unwrap_err();
        let mut got = fields(&error);
        got.sort();
        assert_eq!(got, ["from", "subject", "text", "to"]);
        let mut body = minimal();
        body["bcc"] = json!(
            (0..50)
                .map(|i| format!("r{i}@example.org"))
                .collect::<Vec<_>>()
        );
        assert_eq!(fields(&validate(body).unwrap_err()), ["to"]);
        let mut body = minimal();
        body["headers"] = Value::Object((0..21).map(|i| (format!("X-H{i}"), json!("v"))).collect());
        assert_eq!(fields(&validate(body).unwrap_err()), ["headers"]);
        let mut body = minimal();
        body["replyTo "] = json!("typo@example.com");
        let error = validate(body).unwrap_err();
        assert_eq!(error.code().as_str(), "validation_failed");
        assert_eq!(fields(&error), ["replyTo "]);
    }

    #[test]
    fn attachments_are_checked_and_capped() {
        let mut body = minimal();
        body["attachments"] = json!([
            {"filename": "../etc/passwd", "content": "aGk="},
            {"filename": "a.pdf", "contentType": "pdf", "content": "aGk="},
            {"filename": "b.pdf", "contentType": "application/pdf", "content": "not base64!"},
        ]);
        let error = validate(body).unwrap_err();
        assert_eq!(
            fields(&error),
            [
                "attachments[0].filename",
                "attachments[1].contentType",
                "attachments[2].content"
            ]
        );
        let big = BASE64.encode(vec![7u8; (MAX_ATTACHMENT_BYTES / 2) + 1]);
        let mut body = minimal();
        body["attachments"] =
            json!([{"filename": "a", "content": big}, {"filename": "b", "content": big}]);
        assert_eq!(validate(body).unwrap_err().status(), 413);
        let exact = BASE64.encode(vec![7u8; MAX_ATTACHMENT_BYTES]);
        let mut body = minimal();
        body["attachments"] = json!([{"filename": "a", "content": exact}]);
        assert_eq!(
            validate(body).unwrap().attachments[0].content.len(),
            MAX_ATTACHMENT_BYTES
        );
    }

    #[test]
    fn mime_types() {
        for ok in [
            "application/pdf",
            "text/csv; charset=utf-8",
            "text/plain; charset=\"utf-8\"",
            "image/svg+xml",
        ] {
            assert!(is_mime_type(ok), "{ok}");
        }
        for bad in [
            "pdf",
            "text/",
            "/plain",
            "text/plain; charset",
            "text/plain\r\nX: y",
            "text/plain; a=\"b\"c\"",
        ] {
            assert!(!is_mime_type(bad), "{bad}");
        }
    }
}
