//! The problem body: exact bytes, statuses, titles and extension members.

use plateau_sdk::{ApiError, ErrorCode, FieldError, Method, Validator};

fn body(error: ApiError) -> String {
    String::from_utf8(error.into_response().body).unwrap()
}

#[test]
fn codes_have_their_status_and_title() {
    let table = [
        ("bad_request", 400, "Bad Request"),
        ("validation_failed", 400, "Bad Request"),
        ("invalid_json", 400, "Bad Request"),
        ("invalid_cursor", 400, "Bad Request"),
        ("invalid_limit", 400, "Bad Request"),
        ("unauthenticated", 401, "Unauthorized"),
        ("missing_scope", 403, "Forbidden"),
        ("forbidden", 403, "Forbidden"),
        ("not_found", 404, "Not Found"),
        ("method_not_allowed", 405, "Method Not Allowed"),
        ("request_timeout", 408, "Request Timeout"),
        ("conflict", 409, "Conflict"),
        ("payload_too_large", 413, "Payload Too Large"),
        ("unsupported_media_type", 415, "Unsupported Media Type"),
        ("unprocessable", 422, "Unprocessable Entity"),
        ("rate_limited", 429, "Too Many Requests"),
        ("internal", 500, "Internal Server Error"),
        ("unavailable", 503, "Service Unavailable"),
    ];
    assert_eq!(table.len(), ErrorCode::ALL.len());
    for (code, status, title) in table {
        let parsed = ErrorCode::parse(code).unwrap_or_else(|| panic!("{code} is not a code"));
        assert_eq!(parsed.as_str(), code);
        assert_eq!((parsed.status(), parsed.title()), (status, title), "{code}");
    }
    assert_eq!(ErrorCode::parse("teapot"), None);
}

#[test]
fn not_found_body_is_byte_exact() {
    let res = ApiError::not_found("flag new-checkout does not exist").into_response();
    assert_eq!(res.status, 404);
    assert_eq!(res.header("content-type"), Some("application/problem+json"));
    assert_eq!(
        String::from_utf8(res.body).unwrap(),
        r#"{"type":"https://plateau.dev/problems/not_found","title":"Not Found","status":404,"code":"not_found","detail":"flag new-checkout does not exist"}"#
    );
}

#[test]
fn validation_lists_fields() {
    assert_eq!(
        body(ApiError::validation(
            "defaultVariant",
            "must name one of the variants"
        )),
        r#"{"type":"https://plateau.dev/problems/validation_failed","title":"Bad Request","status":400,"code":"validation_failed","detail":"defaultVariant must name one of the variants","errors":[{"field":"defaultVariant","message":"must name one of the variants"}]}"#
    );

    let mut v = Validator::new();
    v.check(true, "name", "must not be empty");
    v.check(false, "variants[0].name", "must not be empty");
    v.error("rollout", "must be between 0 and 100");
    let error = v.finish().unwrap_err();
    assert_eq!(error.status(), 400);
    assert_eq!(error.detail(), "fix the 2 invalid fields listed in errors");
    assert_eq!(
        error.errors(),
        [
            FieldError {
                field: "variants[0].name".into(),
                message: "must not be empty".into()
            },
            FieldError {
                field: "rollout".into(),
                message: "must be between 0 and 100".into()
            },
        ]
    );
    assert!(Validator::new().finish().is_ok());
}

#[test]
fn missing_scope_names_the_scope() {
    let error = ApiError::missing_scope("flags:write");
    assert_eq!(error.scope(), Some("flags:write"));
    assert_eq!(
        body(error),
        r#"{"type":"https://plateau.dev/problems/missing_scope","title":"Forbidden","status":403,"code":"missing_scope","detail":"use a token with the scope flags:write","scope":"flags:write"}"#
    );
}

#[test]
fn headers_of_special_errors() {
    let res = ApiError::rate_limited("too many evaluations: slow down", 30).into_response();
    assert_eq!((res.status, res.header("retry-after")), (429, Some("30")));

    let res = ApiError::method_not_allowed("PUT", &[Method::Get, Method::Delete]).into_response();
    assert_eq!(
        (res.status, res.header("allow")),
        (405, Some("GET, DELETE"))
    );
    assert_eq!(
        res.problem().unwrap().detail,
        "method PUT is not allowed here: use GET, DELETE"
    );
}

#[test]
fn problem_reads_back() {
    let res = ApiError::conflict("key new-checkout is taken: choose another key").into_response();
    let problem = res.problem().expect("a problem body");
    assert_eq!(
        problem.problem_type,
        "https://plateau.dev/problems/conflict"
    );
    assert_eq!((problem.status, problem.code.as_str()), (409, "conflict"));
    assert!(problem.errors.is_empty() && problem.scope.is_none());
    assert_eq!(ApiError::conflict("x").to_string(), "conflict: x");
}
