//! Matching, substitution, order and the positions of errors.

use serde_json::json;

use super::*;

fn rules(v: serde_json::Value) -> RuleSet {
    let specs: Vec<RuleSpec> = serde_json::from_value(v).unwrap();
    RuleSet::compile(&specs).unwrap()
}

fn refused(v: serde_json::Value) -> (usize, RuleError) {
    let specs: Vec<RuleSpec> = serde_json::from_value(v).unwrap();
    RuleSet::compile(&specs).unwrap_err()
}

#[test]
fn patterns_capture_segments_and_rests() {
    let p = Pattern::parse("/blog/:year/:slug").unwrap();
    assert_eq!(
        p.matches("/blog/2026/hello"),
        Some(vec![
            ("year".into(), "2026".into()),
            ("slug".into(), "hello".into())
        ])
    );
    assert_eq!(p.matches("/blog/2026"), None);
    assert_eq!(p.matches("/blog/2026/hello/more"), None);
    assert_eq!(p.matches("/Blog/2026/hello"), None, "case-sensitive");
    let rest = Pattern::parse("/docs/:path*").unwrap();
    assert_eq!(
        rest.matches("/docs"),
        Some(vec![("path".into(), String::new())])
    );
    assert_eq!(
        rest.matches("/docs/a/b/c"),
        Some(vec![("path".into(), "a/b/c".into())])
    );
    let some = Pattern::parse("/files/:path+").unwrap();
    assert_eq!(some.matches("/files"), None);
    assert_eq!(
        some.matches("/files/x"),
        Some(vec![("path".into(), "x".into())])
    );
    let root = Pattern::parse("/").unwrap();
    assert!(root.matches("/").is_some());
    assert!(root.matches("/x").is_none());
}

#[test]
fn redirects_come_first_then_one_rewrite_and_every_header() {
    let set = rules(json!([
        { "source": "/old/:slug", "type": "rewrite", "destination": "/never/:slug" },
        { "source": "/old/:slug", "type": "redirect", "destination": "/new/:slug", "status": 308 },
        { "source": "/app/:rest*", "type": "rewrite", "destination": "/index.html" },
        { "source": "/app/:rest*", "type": "rewrite", "destination": "/second.html" },
        { "source": "/:any*", "type": "header", "header": "X-Frame-Options", "value": "DENY" },
        { "source": "/app/:rest*", "type": "header", "header": "Server" },
        { "source": "/go", "type": "redirect", "destination": "https://example.com:8443/to?x=1", "status": 302 },
    ]));
    assert_eq!(
        set.on_request("/old/post", Some("ref=mail")),
        Decision::Redirect {
            status: 308,
            location: "/new/post?ref=mail".into()
        }
    );
    assert_eq!(
        set.on_request("/go", Some("y=2")),
        Decision::Redirect {
            status: 302,
            location: "https://example.com:8443/to?x=1".into()
        }
    );
    assert_eq!(
        set.on_request("/app/settings/profile", None),
        Decision::Rewrite {
            path_and_query: "/index.html".into()
        }
    );
    assert_eq!(set.on_request("/other", None), Decision::Pass);
    assert_eq!(
        set.on_response("/app/x"),
        vec![
            HeaderChange::Set("x-frame-options".into(), "DENY".into()),
            HeaderChange::Remove("server".into())
        ]
    );
    assert_eq!(set.on_response("/other").len(), 1);
}

#[test]
fn errors_name_the_field_and_the_column() {
    let (i, e) = refused(json!([
        { "source": "/ok", "type": "rewrite", "destination": "/x" },
        { "source": "/a/:b*/c", "type": "rewrite", "destination": "/x" },
    ]));
    assert_eq!((i, e.field, e.column), (1, "source", 4), "{e}");
    let (_, e) = refused(json!([{ "source": "/a/:1x", "type": "rewrite", "destination": "/" }]));
    assert_eq!((e.field, e.column), ("source", 5), "{e}");
    let (_, e) = refused(json!([{ "source": "/a/:x/:x", "type": "rewrite", "destination": "/" }]));
    assert_eq!((e.field, e.column), ("source", 8), "{e}");
    let (_, e) = refused(json!([{ "source": "no-slash", "type": "rewrite", "destination": "/" }]));
    assert_eq!((e.field, e.column), ("source", 1), "{e}");
    let (_, e) = refused(json!([{ "source": "/a//b", "type": "rewrite", "destination": "/" }]));
    assert_eq!((e.field, e.column), ("source", 4), "{e}");
    let (_, e) = refused(json!([{ "source": "/a:b", "type": "rewrite", "destination": "/" }]));
    assert_eq!((e.field, e.column), ("source", 3), "{e}");
    let (_, e) =
        refused(json!([{ "source": "/p/:id", "type": "rewrite", "destination": "/q/:idx" }]));
    assert_eq!((e.field, e.column), ("destination", 4), "{e}");
    let (_, e) =
        refused(json!([{ "source": "/p", "type": "rewrite", "destination": "https://elsewhere" }]));
    assert_eq!((e.field, e.column), ("destination", 1), "{e}");
    let (_, e) = refused(
        json!([{ "source": "/p", "type": "redirect", "destination": "/q", "status": 200 }]),
    );
    assert_eq!(e.field, "status", "{e}");
    let (_, e) = refused(
        json!([{ "source": "/p", "type": "header", "header": "Content-Length", "value": "1" }]),
    );
    assert_eq!(e.field, "header", "{e}");
    let (_, e) =
        refused(json!([{ "source": "/p", "type": "header", "header": "X-A", "value": "a\r\nb" }]));
    assert_eq!((e.field, e.column), ("value", 2), "{e}");
}

#[test]
fn rules_round_trip_as_the_api_shows_them() {
    let spec: RuleSpec = serde_json::from_value(json!(
        { "source": "/a", "type": "redirect", "destination": "/b", "status": 301 }
    ))
    .unwrap();
    assert_eq!(
        serde_json::to_value(&spec).unwrap(),
        json!({ "source": "/a", "type": "redirect", "destination": "/b", "status": 301 })
    );
}
