//! The grammar and the matcher, input then expected output.

use super::*;

#[test]
fn the_grammar_accepts_and_refuses() {
    let cases: &[(&str, Result<(), &str>)] = &[
        ("/flags", Ok(())),
        ("/flags/{key}", Ok(())),
        ("/flags/ingest/{rest...}", Ok(())),
        ("/files/v1.2/a_b-c~d", Ok(())),
        ("flags", Err("must start with /")),
        ("/", Err("segment ``")),
        ("/flags/", Ok(())),
        ("/flags/{id}/envelope/", Ok(())),
        ("/flags/{rest...}/", Err("only the last segment")),
        ("/flags//x", Err("segment ``")),
        ("/flags/{rest...}/x", Err("only the last segment")),
        ("/flags/a{b}", Err("segment `a{b}`")),
        ("/flags/{Key}", Err("parameter `Key`")),
        ("/flags/{1st}", Err("parameter `1st`")),
        ("/flags/{}", Err("parameter ``")),
        ("/flags/{a-b}", Err("parameter `a-b`")),
        ("/flags/{id}/x/{id}", Err("`id` is used twice")),
    ];
    for (text, expected) in cases {
        match (Pattern::parse(text), expected) {
            (Ok(_), Ok(())) => {}
            (Err(why), Err(part)) => assert!(why.contains(part), "{text}: {why}"),
            (got, _) => panic!("{text}: expected {expected:?}, got {got:?}"),
        }
    }
}

fn table() -> Vec<(&'static str, &'static str)> {
    vec![
        ("GET", "/flags/{key}"),
        ("PUT", "/flags/{key}"),
        ("GET", "/flags/evaluators"),
        ("POST", "/flags/ofrep/v1/evaluate/flags/{key}"),
        ("GET", "/files/{rest...}"),
        ("GET", "/files/{dir}/{name}"),
        ("DELETE", "/flags"),
        ("GET", "/flags"),
        ("POST", "/ingest/{id}/envelope/"),
    ]
}

fn outcome(method: &str, path: &str) -> String {
    let routes = table();
    let segments = path_segments(path);
    match find(&routes, method, &segments, |r| (r.0, r.1)) {
        Found::Route { route, captures } => {
            let values: Vec<String> = captures
                .iter()
                .map(|c| format!("{}={}", c.name, c.segments.join("/")))
                .collect();
            format!("{} {}", route.1, values.join(" "))
                .trim()
                .to_owned()
        }
        Found::WrongMethod(allowed) => {
            let allowed: Vec<&str> = allowed.iter().map(|m| m.as_str()).collect();
            format!("405 {}", allowed.join(", "))
        }
        Found::NoRoute => "404".to_owned(),
    }
}

#[test]
fn the_most_specific_route_wins() {
    let cases = [
        ("GET", "/flags/evaluators", "/flags/evaluators"),
        ("GET", "/flags/checkout", "/flags/{key} key=checkout"),
        ("GET", "/flags", "/flags"),
        ("GET", "/files/a/b", "/files/{dir}/{name} dir=a name=b"),
        ("GET", "/files/a/b/c", "/files/{rest...} rest=a/b/c"),
        ("GET", "/files/a", "/files/{rest...} rest=a"),
        (
            "POST",
            "/flags/ofrep/v1/evaluate/flags/x",
            "/flags/ofrep/v1/evaluate/flags/{key} key=x",
        ),
        ("DELETE", "/flags/checkout", "405 GET, PUT"),
        ("POST", "/flags", "405 GET, DELETE"),
        ("HEAD", "/flags", "405 GET, DELETE"),
        ("GET", "/flags/", "404"),
        ("GET", "/flags/a/b", "404"),
        ("GET", "/files", "404"),
        ("GET", "/files/a//b", "404"),
        ("GET", "/flagsx", "404"),
        ("POST", "/ingest/7/envelope/", "/ingest/{id}/envelope/ id=7"),
        ("POST", "/ingest/7/envelope", "404"),
        ("POST", "/ingest/7/envelope//", "404"),
    ];
    for (method, path, expected) in cases {
        assert_eq!(outcome(method, path), expected, "{method} {path}");
    }
}

#[test]
fn same_shape_ignores_parameter_names_only() {
    let shape = |a: &str, b: &str| {
        Pattern::parse(a)
            .unwrap()
            .same_shape(&Pattern::parse(b).unwrap())
    };
    assert!(shape("/n/{id}", "/n/{key}"));
    assert!(shape("/n/{a...}", "/n/{b...}"));
    assert!(!shape("/n/{id}", "/n/{id...}"));
    assert!(!shape("/n/{id}", "/n/new"));
    assert!(!shape("/n/{id}", "/n/{id}/x"));
}
