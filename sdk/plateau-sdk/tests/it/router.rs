//! Route matching, specificity, 404 and 405, access checks and the route list.

use std::panic::catch_unwind;

use plateau_sdk::{Access, ApiError, Caller, Method, Params, Request, Response, Router};

fn echo(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let params: Vec<(&str, &str)> = params.iter().collect();
    Ok(Response::ok(
        &serde_json::json!({ "route": req.path, "params": params }),
    ))
}

fn router() -> Router {
    Router::new()
        .get("/flags", echo)
        .scope("flags:read")
        .summary("List flags")
        .post("/flags", echo)
        .scope("flags:write")
        .get("/flags/{key}", echo)
        .scope("flags:read")
        .put("/flags/{key}", echo)
        .scope("flags:write")
        .get("/flags/new", echo)
        .scope("flags:read")
        .post("/flags/ofrep/v1/evaluate/flags/{key}", echo)
        .post("/flags/ofrep/v1/evaluate/flags", echo)
        .get("/flags/{key}/history", echo)
        .get("/flags/files/{rest...}", echo)
        .public()
}

/// Method, path, the pattern that must match, and its parameters.
type MatchCase<'a> = (&'a str, &'a str, &'a str, &'a [(&'a str, &'a str)]);

#[test]
fn paths_match_the_most_specific_pattern() {
    let router = router();
    let cases: &[MatchCase] = &[
        ("GET", "/flags", "/flags", &[]),
        ("POST", "/flags", "/flags", &[]),
        (
            "GET",
            "/flags/new-checkout",
            "/flags/{key}",
            &[("key", "new-checkout")],
        ),
        ("GET", "/flags/new", "/flags/new", &[]),
        ("PUT", "/flags/new", "/flags/{key}", &[("key", "new")]),
        (
            "POST",
            "/flags/ofrep/v1/evaluate/flags/dark-mode",
            "/flags/ofrep/v1/evaluate/flags/{key}",
            &[("key", "dark-mode")],
        ),
        (
            "POST",
            "/flags/ofrep/v1/evaluate/flags",
            "/flags/ofrep/v1/evaluate/flags",
            &[],
        ),
        (
            "GET",
            "/flags/a%20b/history",
            "/flags/{key}/history",
            &[("key", "a b")],
        ),
        (
            "GET",
            "/flags/files/a",
            "/flags/files/{rest...}",
            &[("rest", "a")],
        ),
        (
            "GET",
            "/flags/files/a/b%2Fc/d",
            "/flags/files/{rest...}",
            &[("rest", "a/b/c/d")],
        ),
        ("GET", "/flags/files", "/flags/{key}", &[("key", "files")]),
    ];
    for (method, path, pattern, params) in cases {
        let matched = router
            .recognize(method, path)
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        assert_eq!(matched.pattern, *pattern, "{method} {path}");
        let got: Vec<(&str, &str)> = matched.params.iter().collect();
        assert_eq!(got, *params, "{method} {path}");
    }
}

#[test]
fn unknown_paths_are_404_and_other_methods_405() {
    let router = router();
    let cases: &[(&str, &str, u16, Option<&str>)] = &[
        ("GET", "/flags/a/b", 404, None),
        ("GET", "/flags/", 404, None),
        ("GET", "/flagsx", 404, None),
        ("GET", "/flags/files/a//b", 404, None),
        ("GET", "/other", 404, None),
        ("DELETE", "/flags", 405, Some("GET, POST")),
        ("DELETE", "/flags/x", 405, Some("GET, PUT")),
        ("GET", "/flags/ofrep/v1/evaluate/flags", 405, Some("POST")),
        ("PATCH", "/flags/new", 405, Some("GET, PUT")),
        ("HEAD", "/flags", 405, Some("GET, POST")),
    ];
    for (method, path, status, allow) in cases {
        let error = router.recognize(method, path).unwrap_err();
        assert_eq!(error.status(), *status, "{method} {path}");
        let res = error.into_response();
        assert_eq!(res.header("allow"), *allow, "{method} {path}");
    }
}

#[test]
fn dispatch_checks_access_before_the_handler() {
    let router = router();
    let reader = Caller::new("org_1", &["flags:read"]);
    let cases: &[(Method, &str, Caller, u16, Option<&str>)] = &[
        (Method::Get, "/flags/x", reader.clone(), 200, None),
        (
            Method::Put,
            "/flags/x",
            reader.clone(),
            403,
            Some("missing_scope"),
        ),
        (
            Method::Put,
            "/flags/x",
            Caller::new("org_1", &["*"]),
            200,
            None,
        ),
        (
            Method::Get,
            "/flags/x",
            Caller::anonymous(),
            401,
            Some("unauthenticated"),
        ),
        (
            Method::Post,
            "/flags/ofrep/v1/evaluate/flags",
            reader.clone(),
            200,
            None,
        ),
        (
            Method::Post,
            "/flags/ofrep/v1/evaluate/flags",
            Caller::anonymous(),
            401,
            Some("unauthenticated"),
        ),
        (
            Method::Get,
            "/flags/files/logo.png",
            Caller::anonymous(),
            200,
            None,
        ),
    ];
    for (method, path, caller, status, code) in cases {
        let res = router.handle(&Request::new(*method, path).with_caller(caller.clone()));
        assert_eq!(res.status, *status, "{method} {path}");
        assert_eq!(
            res.problem().map(|p| p.code).as_deref(),
            *code,
            "{method} {path}"
        );
    }
}

#[test]
fn route_list_follows_the_table() {
    let routes = router().routes();
    assert_eq!(routes.len(), 9);
    assert_eq!(
        (routes[0].method.as_str(), routes[0].path.as_str()),
        ("GET", "/flags")
    );
    assert_eq!(routes[0].access, Access::scope("flags:read"));
    assert_eq!(routes[0].summary, "List flags");
    assert_eq!(routes[1].access, Access::scope("flags:write"));
    assert_eq!(routes[5].access, Access::Authenticated);
    assert_eq!(routes[8].access, Access::Public);
}

#[test]
fn malformed_tables_panic() {
    let bad: [fn() -> Router; 8] = [
        || Router::new().get("flags", echo),
        || Router::new().get("/flags//x", echo),
        || Router::new().get("/flags/{rest...}/x", echo),
        || Router::new().get("/flags/{}", echo),
        || Router::new().get("/flags/x{key}", echo),
        || Router::new().get("/flags/{key}/{key}", echo),
        || {
            Router::new()
                .get("/flags/{key}", echo)
                .get("/flags/{name}", echo)
        },
        || Router::new().scope("flags:read"),
    ];
    for (i, build) in bad.into_iter().enumerate() {
        assert!(catch_unwind(build).is_err(), "table {i} should be refused");
    }
    assert!(
        catch_unwind(|| Router::new()
            .get("/flags/{key}", echo)
            .put("/flags/{name}", echo))
        .is_ok()
    );
}

#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
struct Thing {
    name: Option<String>,
}

#[test]
fn required_fields_are_marked_for_their_route_only() {
    let router = Router::new()
        .post("/things", echo)
        .request::<Thing>()
        .requires(&["name"])
        .patch("/things/{id}", echo)
        .request::<Thing>();
    let schema = router.api_schema();
    let create = schema.routes[0].request.as_ref().unwrap();
    assert_eq!(
        create["allOf"][0]["$ref"], "#/components/schemas/Thing",
        "{create}"
    );
    assert_eq!(create["allOf"][1]["required"][0], "name");
    let update = schema.routes[1].request.as_ref().unwrap();
    assert_eq!(update["$ref"], "#/components/schemas/Thing");
    assert!(
        schema.components["Thing"].get("required").is_none(),
        "the shared type stays optional"
    );
}

#[test]
fn requires_needs_a_json_request() {
    assert!(catch_unwind(|| Router::new().post("/things", echo).requires(&["name"])).is_err());
}
