//! Each rule of a self-description, one edit of a valid one at a time.

use crate::description::{Access, Description, Route, Schedule, ScopeInfo};

fn valid() -> Description {
    Description {
        name: "flags".into(),
        version: "1.0.0".into(),
        prefixes: vec!["/flags".into()],
        routes: vec![
            Route {
                method: "GET".into(),
                path: "/flags/{key}".into(),
                access: Access::Scope("flags:read".into()),
                summary: "read a flag".into(),
            },
            Route {
                method: "POST".into(),
                path: "/flags/ingest/{rest...}".into(),
                access: Access::Public,
                summary: String::new(),
            },
        ],
        scopes: vec![ScopeInfo {
            name: "flags:read".into(),
            description: "read flags".into(),
        }],
        capabilities: vec!["kv".into()],
        subscriptions: vec!["flags.*".into()],
        schedules: vec![Schedule {
            name: "sweep".into(),
            every_seconds: 60,
        }],
    }
}

#[test]
fn a_valid_description_has_no_problems() {
    assert_eq!(valid().problems(), Vec::<String>::new());
}

#[test]
fn each_mistake_is_reported() {
    type Edit = Box<dyn FnOnce(&mut Description)>;
    let cases: Vec<(Edit, &str)> = vec![
        (Box::new(|d| d.name = "Flags".into()), "name `Flags`"),
        (Box::new(|d| d.name = "9lives".into()), "name `9lives`"),
        (Box::new(|d| d.prefixes.clear()), "at least one prefix"),
        (
            Box::new(|d| d.prefixes = vec!["flags".into()]),
            "prefix `flags`",
        ),
        (Box::new(|d| d.prefixes.push("/".into())), "prefix `/`"),
        (Box::new(|d| d.prefixes.push("/a/".into())), "prefix `/a/`"),
        (
            Box::new(|d| d.routes[0].method = "TRACE".into()),
            "route TRACE /flags/{key}: method must be",
        ),
        (
            Box::new(|d| d.routes[0].method = "get".into()),
            "method must be",
        ),
        (
            Box::new(|d| d.routes[0].path = "/other/{key}".into()),
            "under none of the declared prefixes",
        ),
        (
            Box::new(|d| d.routes[0].path = "/flags/{rest...}/x".into()),
            "must be a pattern such as /flags/{key}: only the last segment",
        ),
        (
            Box::new(|d| d.routes[0].access = Access::Scope("flags:write".into())),
            "scope `flags:write` is not declared",
        ),
        (
            Box::new(|d| d.scopes[0].name = "flags".into()),
            "`area:verb`",
        ),
        (
            Box::new(|d| d.capabilities.push("disk".into())),
            "unknown capability `disk`",
        ),
        (
            Box::new(|d| d.subscriptions.push("fl*ags".into())),
            "subscription `fl*ags`",
        ),
        (Box::new(|d| d.schedules[0].every_seconds = 0), "at least 1"),
        (
            Box::new(|d| d.schedules.push(d.schedules[0].clone())),
            "needs a unique name",
        ),
        (
            Box::new(|d| d.routes.push(d.routes[0].clone())),
            "route GET /flags/{key}: declared twice",
        ),
        (
            Box::new(|d| {
                let mut other = d.routes[0].clone();
                other.path = "/flags/{name}".into();
                d.routes.push(other);
            }),
            "route GET /flags/{name}: declared twice",
        ),
    ];
    for (edit, expected) in cases {
        let mut d = valid();
        edit(&mut d);
        let problems = d.problems();
        assert!(
            problems.iter().any(|p| p.contains(expected)),
            "expected a problem with {expected:?}, got {problems:?}"
        );
    }
}
