//! A hello-world app: `GET /` answers `hello from <version>` (and the
//! `GREETING` variable when set), printing one line to stdout and one to
//! stderr per request. Under `/html` the answer is an HTML document (a
//! page view for the edge's analytics), plain text elsewhere.

use std::io::Write as _;

use wasip2::http::types::{
    Fields, IncomingRequest, OutgoingBody, OutgoingResponse, ResponseOutparam,
};

/// Answers `request` with `status` and the hello text of `version`.
pub fn answer(version: &str, status: u16, request: IncomingRequest, out: ResponseOutparam) {
    let path = request.path_with_query().unwrap_or_default();
    println!("{version} served {path}");
    eprintln!("{version} stderr {path}");
    let mut text = format!("hello from {version}");
    if let Ok(greeting) = std::env::var("GREETING") {
        text.push_str(&format!(", {greeting}"));
    }
    let content_type = if path.starts_with("/html") {
        "text/html; charset=utf-8"
    } else {
        "text/plain"
    };
    respond_as(status, content_type, &text, out);
}

/// Answers with `status` and `text` (plain text).
pub fn respond(status: u16, text: &str, out: ResponseOutparam) {
    respond_as(status, "text/plain", text, out);
}

/// Answers with `status` and `text` as `content_type`.
pub fn respond_as(status: u16, content_type: &str, text: &str, out: ResponseOutparam) {
    let headers = Fields::new();
    let _ = headers.set("content-type", &[content_type.as_bytes().to_vec()]);
    let response = OutgoingResponse::new(headers);
    let _ = response.set_status_code(status);
    let body = response.body().expect("a fresh response has a body");
    ResponseOutparam::set(out, Ok(response));
    let mut stream = body.write().expect("a fresh body has a stream");
    stream
        .write_all(text.as_bytes())
        .expect("the body takes the text");
    stream.flush().expect("the body flushes");
    drop(stream);
    OutgoingBody::finish(body, None).expect("the body finishes");
}
