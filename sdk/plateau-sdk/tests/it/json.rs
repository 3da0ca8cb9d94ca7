//! JSON bodies: media types, parse errors and JSON responses.

use plateau_sdk::{Method, Request, Response, is_json_content_type};
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, Serialize, PartialEq)]
struct Flag {
    key: String,
    enabled: bool,
}

#[test]
fn json_media_types() {
    let cases = [
        ("application/json", true),
        ("application/json; charset=utf-8", true),
        ("Application/JSON", true),
        ("application/merge-patch+json", true),
        ("application/problem+json", true),
        (" application/json ;charset=utf-8", true),
        ("text/plain", false),
        ("text/json", false),
        ("text/x+json", false),
        ("application/jsonp", false),
        ("application/x-www-form-urlencoded", false),
        ("", false),
    ];
    for (content_type, json) in cases {
        assert_eq!(is_json_content_type(content_type), json, "{content_type:?}");
    }
}

fn post(content_type: Option<&str>, body: &str) -> Request {
    let req = Request::new(Method::Post, "/flags").with_body(body);
    match content_type {
        Some(ct) => req.with_header("Content-Type", ct),
        None => req,
    }
}

/// Content type, body, and the flag or the (status, code, detail part).
type BodyCase<'a> = (
    Option<&'a str>,
    &'a str,
    Result<&'a Flag, (u16, &'a str, &'a str)>,
);

#[test]
fn bodies_parse_or_explain_why_not() {
    let ok = Flag {
        key: "a".into(),
        enabled: true,
    };
    let cases: &[BodyCase] = &[
        (
            Some("application/json"),
            r#"{"key":"a","enabled":true}"#,
            Ok(&ok),
        ),
        (
            None,
            r#"{"key":"a","enabled":true}"#,
            Err((
                415,
                "unsupported_media_type",
                "Content-Type: application/json",
            )),
        ),
        (
            Some("application/json"),
            r#"{"key":"a"}"#,
            Err((400, "validation_failed", "enabled is required")),
        ),
        (
            Some("application/json"),
            r#"{"key":"a","enabled":"yes"}"#,
            Err((
                400,
                "validation_failed",
                "enabled invalid type: string \"yes\"",
            )),
        ),
        (
            Some("application/json"),
            r#"{"key":"a","#,
            Err((400, "invalid_json", "end of input while parsing")),
        ),
        (
            Some("application/json"),
            "",
            Err((400, "validation_failed", "key is required")),
        ),
        (
            Some("text/plain"),
            r#"{"key":"a","enabled":true}"#,
            Err((
                415,
                "unsupported_media_type",
                "send JSON with Content-Type: application/json",
            )),
        ),
    ];
    for (content_type, body, expected) in cases {
        let got = post(*content_type, body).json::<Flag>();
        match (got, expected) {
            (Ok(flag), Ok(want)) => assert_eq!(&flag, *want),
            (Err(e), Err((status, code, detail))) => {
                assert_eq!((e.status(), e.code().as_str()), (*status, *code), "{body}");
                assert!(e.detail().contains(detail), "{body}: {}", e.detail());
                assert!(!e.detail().ends_with('.'), "{}", e.detail());
            }
            (got, _) => panic!("{body}: unexpected {got:?}"),
        }
    }
}

#[test]
fn json_responses() {
    let res = Response::created(&Flag {
        key: "a".into(),
        enabled: false,
    });
    assert_eq!(res.status, 201);
    assert_eq!(res.header("Content-Type"), Some("application/json"));
    assert_eq!(res.body, br#"{"key":"a","enabled":false}"#);
    assert_eq!(res.problem(), None);

    let res = Response::ok(&serde_json::json!([1, 2]));
    assert_eq!(
        (res.status, res.json_body::<Vec<u8>>().unwrap()),
        (200, vec![1, 2])
    );

    let mut bad = std::collections::HashMap::new();
    bad.insert(vec![1u8], 1);
    let res = Response::ok(&bad);
    assert_eq!(res.status, 500);
    assert_eq!(res.problem().unwrap().code, "internal");

    let res = Response::no_content().with_header("X-Trace", "1");
    assert_eq!(
        (res.status, res.body.len(), res.header("x-trace")),
        (204, 0, Some("1"))
    );
}
