//! Query strings, percent-decoding and encoding, headers and the caller.

use plateau_sdk::{Caller, Method, Query, Request, percent_decode, percent_encode};

#[test]
fn query_strings_decode() {
    let cases: &[(&str, &[(&str, &str)])] = &[
        ("", &[]),
        ("a=1&b=2", &[("a", "1"), ("b", "2")]),
        ("q=x%20y+z", &[("q", "x y z")]),
        ("flag", &[("flag", "")]),
        ("a=1&&b=", &[("a", "1"), ("b", "")]),
        ("k%3D=v%3D1", &[("k=", "v=1")]),
        ("bad=%zz%4", &[("bad", "%zz%4")]),
        ("sign=%2B1", &[("sign", "+1")]),
        ("utf=%C3%A9t%C3%A9", &[("utf", "été")]),
        ("half=%+1", &[("half", "% 1")]),
    ];
    for (raw, pairs) in cases {
        let q = Query::parse(raw);
        let got: Vec<(&str, &str)> = q
            .pairs()
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        assert_eq!(got, *pairs, "{raw:?}");
    }
}

#[test]
fn repeated_and_typed_parameters() {
    let q = Query::parse("tag=a&tag=b&days=7&on=true&neg=-2");
    assert_eq!(q.get("tag"), Some("a"));
    assert_eq!(q.get_all("tag"), ["a", "b"]);
    assert!(q.contains("on") && !q.contains("off"));
    assert_eq!(q.parse_as::<u32>("days").unwrap(), Some(7));
    assert_eq!(q.parse_as::<bool>("on").unwrap(), Some(true));
    assert_eq!(q.parse_as::<u32>("missing").unwrap(), None);
    let error = q.parse_as::<u32>("neg").unwrap_err();
    assert_eq!(error.code().as_str(), "bad_request");
    assert_eq!(
        error.detail(),
        "query parameter neg has the invalid value \"-2\": expected a non-negative integer"
    );
}

#[test]
fn percent_encoding_round_trips() {
    for raw in ["plain", "a b/c?d&e=f", "é+%", "kv.6e6f74653a.6e31"] {
        assert_eq!(percent_decode(&percent_encode(raw)), raw);
    }
    assert_eq!(percent_encode("a b/é"), "a%20b%2F%C3%A9");
    assert_eq!(percent_decode("a+b%2"), "a+b%2");
}

#[test]
fn requests_expose_headers_and_query() {
    let req =
        Request::new(Method::Get, "/notes?limit=2&cursor=abc").with_header("X-Request-Id", "r1");
    assert_eq!(
        (req.path.as_str(), req.query.as_str()),
        ("/notes", "limit=2&cursor=abc")
    );
    assert_eq!(req.header("x-request-id"), Some("r1"));
    assert_eq!(req.header("X-REQUEST-ID"), Some("r1"));
    assert_eq!(req.header("accept"), None);
    assert_eq!(req.query().get("cursor"), Some("abc"));
}

#[test]
fn callers_and_scopes() {
    let caller = Caller::new("org_1", &["notes:read"]);
    assert_eq!(caller.organization().unwrap(), "org_1");
    assert!(caller.has_scope("notes:read") && !caller.has_scope("notes:write"));
    assert_eq!(
        caller.require_scope("notes:write").unwrap_err().scope(),
        Some("notes:write")
    );
    assert!(Caller::new("org_1", &["*"]).has_scope("anything:at_all"));

    let anonymous = Caller::anonymous();
    assert!(anonymous.is_anonymous());
    assert_eq!(anonymous.organization().unwrap_err().status(), 401);
}
