//! The OTLP/HTTP wire: a body's encoding (`application/x-protobuf` or
//! `application/json`, optionally `Content-Encoding: gzip`) to a message,
//! and the answer in the encoding the client used. Errors follow the
//! OTLP/HTTP specification: 415 for another content type, 413 for a body
//! over [`MAX_DECODED`] once decompressed, 400 for one that does not
//! decode; a protobuf client gets a `google.rpc.Status` message, a JSON
//! client a problem body, both naming what is wrong.

use std::io::Read;

use plateau_sdk::{ApiError, PROBLEM_CONTENT_TYPE, Request, Response};
use prost::Message;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// The most bytes a request may decompress to.
pub const MAX_DECODED: usize = 8 * 1024 * 1024;

/// How a request is encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Protobuf,
    Json,
}

impl Encoding {
    fn content_type(self) -> &'static str {
        match self {
            Encoding::Protobuf => "application/x-protobuf",
            Encoding::Json => "application/json",
        }
    }
}

/// A failure of an OTLP request: its status and what to say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireError {
    pub status: u16,
    pub code: &'static str,
    pub message: String,
}

impl WireError {
    pub fn bad(message: impl Into<String>) -> Self {
        WireError {
            status: 400,
            code: "bad_request",
            message: message.into(),
        }
    }

    /// The answer: a `google.rpc.Status` to a protobuf client, a problem
    /// body otherwise.
    pub fn response(&self, encoding: Option<Encoding>) -> Response {
        if encoding == Some(Encoding::Protobuf) {
            let status = RpcStatus {
                code: grpc_code(self.status),
                message: self.message.clone(),
            };
            return Response {
                status: self.status,
                headers: vec![("content-type".into(), "application/x-protobuf".into())],
                body: status.encode_to_vec(),
            };
        }
        let problem = plateau_sdk::Problem::new(self.status, self.code, &self.message);
        Response {
            status: self.status,
            headers: vec![("content-type".into(), PROBLEM_CONTENT_TYPE.into())],
            body: problem.to_json(),
        }
    }
}

impl From<ApiError> for WireError {
    fn from(e: ApiError) -> Self {
        WireError {
            status: e.status(),
            code: e.code().as_str(),
            message: e.detail().to_owned(),
        }
    }
}

/// `google.rpc.Status` without its details.
#[derive(Clone, PartialEq, Message)]
struct RpcStatus {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
}

fn grpc_code(status: u16) -> i32 {
    match status {
        400 | 413 | 415 => 3, // INVALID_ARGUMENT
        401 => 16,            // UNAUTHENTICATED
        403 => 7,             // PERMISSION_DENIED
        429 => 8,             // RESOURCE_EXHAUSTED
        503 => 14,            // UNAVAILABLE
        _ => 13,              // INTERNAL
    }
}

/// The encoding named by the request's `content-type`, if it is one OTLP
/// allows.
pub fn encoding(req: &Request) -> Result<Encoding, WireError> {
    let raw = req.header("content-type").unwrap_or_default();
    let media = raw.split(';').next().unwrap_or_default().trim();
    match media.to_ascii_lowercase().as_str() {
        "application/x-protobuf" | "application/protobuf" => Ok(Encoding::Protobuf),
        "application/json" => Ok(Encoding::Json),
        _ => Err(WireError {
            status: 415,
            code: "unsupported_media_type",
            message: format!(
                "content-type {raw:?} is not OTLP: send application/x-protobuf or application/json"
            ),
        }),
    }
}

/// The request body, decompressed per `content-encoding`.
pub fn body(req: &Request) -> Result<Vec<u8>, WireError> {
    let coding = req
        .header("content-encoding")
        .unwrap_or("identity")
        .trim()
        .to_ascii_lowercase();
    match coding.as_str() {
        "" | "identity" => {
            if req.body.len() > MAX_DECODED {
                return Err(too_large());
            }
            Ok(req.body.clone())
        }
        "gzip" => {
            let mut out = Vec::new();
            let decoder = flate2::read::GzDecoder::new(req.body.as_slice());
            decoder
                .take(MAX_DECODED as u64 + 1)
                .read_to_end(&mut out)
                .map_err(|e| WireError::bad(format!("body is not valid gzip: {e}")))?;
            if out.len() > MAX_DECODED {
                return Err(too_large());
            }
            Ok(out)
        }
        other => Err(WireError {
            status: 415,
            code: "unsupported_media_type",
            message: format!("content-encoding {other:?} is not supported: send gzip or none"),
        }),
    }
}

fn too_large() -> WireError {
    WireError {
        status: 413,
        code: "payload_too_large",
        message: format!("the decompressed body is over {MAX_DECODED} bytes: send smaller batches"),
    }
}

/// The message in `bytes`; `what` names it in an error.
pub fn decode<T: Message + Default + DeserializeOwned>(
    encoding: Encoding,
    bytes: &[u8],
    what: &str,
) -> Result<T, WireError> {
    match encoding {
        Encoding::Protobuf => T::decode(bytes)
            .map_err(|e| WireError::bad(format!("body is not a protobuf {what}: {e}"))),
        Encoding::Json => plateau_sdk::serde_json::from_slice(bytes)
            .map_err(|e| WireError::bad(format!("body is not an OTLP/JSON {what}: {e}"))),
    }
}

/// 200 with `message` in the client's encoding.
pub fn answer<T: Message + Serialize>(encoding: Encoding, message: &T) -> Response {
    let body = match encoding {
        Encoding::Protobuf => message.encode_to_vec(),
        Encoding::Json => {
            plateau_sdk::serde_json::to_vec(message).unwrap_or_else(|_| b"{}".to_vec())
        }
    };
    Response {
        status: 200,
        headers: vec![("content-type".into(), encoding.content_type().into())],
        body,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use plateau_sdk::Method;
    use std::io::Write;

    fn post(content_type: &str, body: Vec<u8>) -> Request {
        Request::new(Method::Post, "/otel/ingest/v1/traces")
            .with_header("content-type", content_type)
            .with_body(body)
    }

    #[test]
    fn content_types_pick_the_encoding_or_415() {
        let json = post("application/json; charset=utf-8", vec![]);
        assert_eq!(encoding(&json), Ok(Encoding::Json));
        let pb = post("application/x-protobuf", vec![]);
        assert_eq!(encoding(&pb), Ok(Encoding::Protobuf));
        assert_eq!(
            encoding(&post("text/plain", vec![])).unwrap_err().status,
            415
        );
    }

    #[test]
    fn gzip_bodies_are_inflated_and_bombs_refused() {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(b"{}").unwrap();
        let req =
            post("application/json", gz.finish().unwrap()).with_header("content-encoding", "gzip");
        assert_eq!(body(&req).unwrap(), b"{}");
        let mut bomb = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        bomb.write_all(&vec![0u8; MAX_DECODED + 10]).unwrap();
        let req = post("application/x-protobuf", bomb.finish().unwrap())
            .with_header("content-encoding", "gzip");
        assert_eq!(body(&req).unwrap_err().status, 413);
        let req = post("application/json", vec![1, 2]).with_header("content-encoding", "gzip");
        assert_eq!(body(&req).unwrap_err().status, 400);
    }

    #[test]
    fn bad_payloads_are_400_in_the_clients_encoding() {
        let err =
            decode::<ExportTraceServiceRequest>(Encoding::Json, b"{\"resourceSpans\": 3}", "x")
                .unwrap_err();
        assert_eq!(err.status, 400);
        let response = err.response(Some(Encoding::Protobuf));
        let status = RpcStatus::decode(response.body.as_slice()).unwrap();
        assert_eq!(status.code, 3);
        assert!(status.message.contains("OTLP/JSON"));
        let problem = err.response(Some(Encoding::Json)).problem().unwrap();
        assert_eq!(problem.status, 400);
    }
}
