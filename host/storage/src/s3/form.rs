//! Browser POST uploads (HTML forms) before `s3s` parses them: the
//! fields ahead of the file are read (at most [`MAX_HEAD`] bytes), a
//! `key` holding `${filename}` gets the file's name, a policy whose
//! `expiration` is not an ISO 8601 UTC time is refused (400
//! InvalidPolicyDocument), as S3 does, and the XML `tagging` field (which
//! s3s does not read) reaches PutObject as a [`FormTagging`] extension.
//! The file itself streams on.

use std::pin::Pin;
use std::task::{Context, Poll};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::{Bytes, BytesMut};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::{Frame, SizeHint};
use plateau_listen::{Body, BodyError};

/// The most bytes of form fields read ahead of the file.
const MAX_HEAD: usize = 64 * 1024;

/// A request body, with the bytes already read (and maybe rewritten)
/// ahead of the rest.
pub struct FormBody {
    head: Option<Bytes>,
    rest: Body,
}

impl FormBody {
    pub fn plain(body: Body) -> FormBody {
        FormBody {
            head: None,
            rest: body,
        }
    }
}

impl hyper::body::Body for FormBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = self.get_mut();
        if let Some(head) = this.head.take() {
            return Poll::Ready(Some(Ok(Frame::data(head))));
        }
        Pin::new(&mut this.rest).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.head.is_none() && self.rest.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        match &self.head {
            None => self.rest.size_hint(),
            Some(_) => SizeHint::default(),
        }
    }
}

fn boundary(req: &Request<Body>) -> Option<String> {
    let ct = req
        .headers()
        .get(http::header::CONTENT_TYPE)?
        .to_str()
        .ok()?;
    if req.method() != Method::POST || !ct.to_ascii_lowercase().starts_with("multipart/form-data") {
        return None;
    }
    let b = ct
        .split(';')
        .find_map(|p| p.trim().strip_prefix("boundary="))?;
    Some(b.trim_matches('"').to_owned())
}

/// The request as `s3s` should see it, or the refusal to send instead.
pub async fn prepare(req: Request<Body>) -> Result<Request<FormBody>, Response<s3s::Body>> {
    let Some(boundary) = boundary(&req) else {
        return Ok(req.map(FormBody::plain));
    };
    let (mut parts, mut body) = req.into_parts();
    let mut head = BytesMut::new();
    let file_start = loop {
        if let Some(at) = file_fields_end(&head, &boundary) {
            break Some(at);
        }
        if head.len() > MAX_HEAD {
            break None;
        }
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    head.extend_from_slice(&data);
                }
            }
            // The error reaches s3s as the body's.
            Some(Err(_)) | None => break None,
        }
    };
    let mut head = head.freeze();
    if let Some(at) = file_start {
        let (fields, file) = head.split_at(at);
        if let Some(problem) = check_policy(fields, &boundary) {
            return Err(xml_error(
                StatusCode::BAD_REQUEST,
                "InvalidPolicyDocument",
                &problem,
            ));
        }
        if let Some(xml) = tagging(fields, &boundary) {
            parts.extensions.insert(FormTagging(xml));
        }
        let name = file_name(fields, &boundary).unwrap_or_default();
        let needle = b"${filename}";
        if fields.windows(needle.len()).any(|w| w == needle) {
            let text = String::from_utf8_lossy(fields).replace("${filename}", &name);
            let mut out = BytesMut::from(text.as_bytes());
            out.extend_from_slice(file);
            let delta = out.len() as i64 - head.len() as i64;
            head = out.freeze();
            let length = parts
                .headers
                .get(http::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<i64>().ok());
            if let Some(v) =
                length.and_then(|l| HeaderValue::from_str(&(l + delta).to_string()).ok())
            {
                parts.headers.insert(http::header::CONTENT_LENGTH, v);
            }
        }
    }
    Ok(Request::from_parts(
        parts,
        FormBody {
            head: Some(head),
            rest: body,
        },
    ))
}

/// Where the headers of the part named `file` start (S3 wants the file
/// last). Not the first part with a `filename`: clients (Python's
/// requests with `files=`) send every field as a file.
fn file_part(buf: &[u8]) -> Option<usize> {
    find(buf, b"; name=\"file\"")
}

/// Where the file's bytes start: after the headers of the `file` part.
fn file_fields_end(buf: &[u8], _boundary: &str) -> Option<usize> {
    let at = file_part(buf)?;
    let end = find(&buf[at..], b"\r\n\r\n")?;
    Some(at + end + 4)
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The form's fields before the file, as (name, value).
fn fields(head: &[u8], boundary: &str) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(head);
    let marker = format!("--{boundary}");
    text.split(marker.as_str())
        .filter_map(|part| {
            let (headers, value) = part.split_once("\r\n\r\n")?;
            let name = headers
                .split(';')
                .find_map(|p| p.trim().strip_prefix("name="))?
                .split("\r\n")
                .next()?
                .trim_matches('"')
                .to_owned();
            Some((name, value.trim_end_matches("\r\n").to_owned()))
        })
        .collect()
}

/// A form's XML `tagging` field (`<Tagging><TagSet>...`), which s3s
/// does not read (only `x-amz-tagging`): PutObject applies it.
#[derive(Clone, Debug)]
pub(super) struct FormTagging(pub String);

/// The form's `tagging` field.
fn tagging(head: &[u8], boundary: &str) -> Option<String> {
    fields(head, boundary)
        .into_iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("tagging"))
        .map(|(_, v)| v)
}

/// The file part's `filename`.
fn file_name(head: &[u8], _boundary: &str) -> Option<String> {
    let text = String::from_utf8_lossy(&head[file_part(head)?..]);
    let at = text.find("filename=\"")? + "filename=\"".len();
    let end = text[at..].find('"')?;
    Some(text[at..at + end].to_owned())
}

/// Why the policy is refused, or None (no policy, or a well-formed one:
/// what it allows is s3s's to check).
fn check_policy(head: &[u8], boundary: &str) -> Option<String> {
    let (_, policy) = fields(head, boundary)
        .into_iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("policy"))?;
    let decoded = BASE64.decode(policy.trim()).ok()?;
    let doc: serde_json::Value = serde_json::from_slice(&decoded).ok()?;
    let Some(expiration) = doc.get("expiration").and_then(|e| e.as_str()) else {
        return Some("the policy has no expiration".to_owned());
    };
    let strict = time::format_description::well_known::Iso8601::DEFAULT;
    let ok = expiration.ends_with('Z')
        && expiration.contains('T')
        && time::OffsetDateTime::parse(expiration, &strict).is_ok();
    (!ok).then(|| {
        format!("invalid policy expiration {expiration:?}: an ISO 8601 UTC time is expected")
    })
}

/// An S3 error answered before `s3s` sees the request.
pub(super) fn xml_error(status: StatusCode, code: &str, message: &str) -> Response<s3s::Body> {
    let xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code>\
         <Message>{}</Message></Error>",
        message
            .replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    );
    let mut resp = Response::new(s3s::Body::from(xml));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/xml"),
    );
    resp
}

#[cfg(test)]
mod tests {
    #[test]
    fn fields_and_file_name_are_found() {
        let head =
            b"--XX\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nup/${filename}\r\n\
--XX\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a b.txt\"\r\n\r\n";
        let f = super::fields(head, "XX");
        assert_eq!(f[0], ("key".to_owned(), "up/${filename}".to_owned()));
        assert_eq!(super::file_name(head, "XX").as_deref(), Some("a b.txt"));
        assert_eq!(super::file_fields_end(head, "XX"), Some(head.len()));
        assert_eq!(super::tagging(head, "XX"), None);
    }

    #[test]
    fn an_xml_tagging_field_is_found() {
        let head = b"--XX\r\nContent-Disposition: form-data; name=\"Tagging\"; filename=\"Tagging\"\r\n\r\n\
<Tagging><TagSet></TagSet></Tagging>\r\n\
--XX\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\n";
        assert_eq!(
            super::tagging(head, "XX").as_deref(),
            Some("<Tagging><TagSet></TagSet></Tagging>")
        );
        assert_eq!(super::file_fields_end(head, "XX"), Some(head.len()));
        assert_eq!(super::file_name(head, "XX").as_deref(), Some("a"));
    }
}
