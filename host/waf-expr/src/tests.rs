//! The language's tests, data-driven: expressions against requests, and
//! broken expressions against the line, column and message they give.

use crate::{Request, SyntaxError, compile};

fn headers() -> Vec<(String, String)> {
    [
        ("user-agent", "Mozilla/5.0 (X11; Linux) sqlmap/1.7"),
        ("cookie", "session=abc; theme=dark"),
        ("x-forwarded-for", "203.0.113.9"),
        ("accept", "text/html"),
        ("accept", "application/json"),
    ]
    .into_iter()
    .map(|(n, v)| (n.to_owned(), v.to_owned()))
    .collect()
}

fn request(headers: &[(String, String)]) -> Request<'_> {
    Request {
        method: "POST",
        path: "/Admin/users%2F..%2Fetc",
        query: "id=1%27%20OR%201%3D1&q=a+b&empty=",
        host: "shop.example.com",
        headers,
        ip: Some("192.0.2.77".parse().unwrap()),
    }
}

#[test]
fn expressions_match_as_written() {
    let headers = headers();
    let r = request(&headers);
    for (expression, want) in [
        (r#"http.request.method eq "POST""#, true),
        (r#"http.request.method == "GET""#, false),
        (r#"http.request.method ne "GET""#, true),
        (r#"http.request.method in {"GET" "HEAD"}"#, false),
        (r#"http.request.method in {"GET", "POST"}"#, true),
        (r#"http.request.uri.path contains "/admin""#, false),
        (r#"lower(http.request.uri.path) contains "/admin""#, true),
        (
            r#"url_decode(http.request.uri.path) contains "../etc""#,
            true,
        ),
        (r#"http.request.uri.path matches "^/[A-Z]""#, true),
        (r#"http.request.uri.path ~ "^/admin""#, false),
        (
            r#"http.request.uri eq "/Admin/users%2F..%2Fetc?id=1%27%20OR%201%3D1&q=a+b&empty=""#,
            true,
        ),
        (r#"http.request.uri.args["id"] contains "' OR 1=1""#, true),
        (r#"http.request.uri.args["q"] eq "a b""#, true),
        (r#"http.request.uri.args["missing"] eq """#, true),
        (
            r#"http.host eq "shop.example.com" and ip.src in {192.0.2.0/24}"#,
            true,
        ),
        ("ip.src in {10.0.0.0/8 172.16.0.0/12}", false),
        ("ip.src eq 192.0.2.77", true),
        ("ip.src ne 192.0.2.77", false),
        ("not ip.src in {192.0.2.0/25}", false),
        ("!(ip.src in {192.0.2.0/25})", false),
        (r#"http.user_agent contains "sqlmap""#, true),
        (
            r#"http.request.headers["User-Agent"] contains "Linux""#,
            true,
        ),
        (
            r#"http.request.headers["accept"] eq "text/html, application/json""#,
            true,
        ),
        (r#"http.request.cookies["session"] eq "abc""#, true),
        (r#"http.request.cookies["theme"] eq "light""#, false),
        (r#"http.cookie contains "theme=dark""#, true),
        (r#"http.referer eq """#, true),
        ("len(http.request.uri.query) gt 10", true),
        ("len(http.request.uri.query) <= 10", false),
        ("len(http.referer) in {0 1}", true),
        (
            r#"http.request.method eq "GET" or http.request.method eq "POST" and ip.src eq 192.0.2.77"#,
            true,
        ),
        (
            r#"(http.request.method eq "GET" or http.request.method eq "POST") and ip.src eq 192.0.2.1"#,
            false,
        ),
        (
            r#"http.request.method eq "GET" || not http.host eq "x" && true_is_no_field eq "1""#,
            false,
        ),
        (r#"http.request.uri.path matches "\.\./""#, false),
        (r#"url_decode(http.request.uri.path) matches "\.\./""#, true),
        (r#"http.user_agent contains "say \"hi\"""#, false),
    ] {
        match compile(expression) {
            Ok(program) => assert_eq!(program.matches(&r), want, "{expression}"),
            Err(e) if expression.contains("true_is_no_field") => {
                assert!(e.message.contains("unknown field"), "{e}")
            }
            Err(e) => panic!("{expression}: {e}"),
        }
    }
}

#[test]
fn ipv4_mapped_addresses_match_ipv4_networks() {
    let headers = headers();
    let mut r = request(&headers);
    r.ip = Some("::ffff:10.1.2.3".parse().unwrap());
    assert!(compile("ip.src in {10.0.0.0/8}").unwrap().matches(&r));
    r.ip = None;
    assert!(!compile("ip.src in {0.0.0.0/0 ::/0}").unwrap().matches(&r));
}

#[test]
fn errors_point_at_line_and_column() {
    let mut wrong = Vec::new();
    for (expression, line, column, message) in [
        ("", 1, 1, "expected a field or a function"),
        ("http.host", 1, 10, "expected an operator"),
        ("http.host eq", 1, 13, "expected a string in double quotes"),
        ("http.host eq \"a", 1, 14, "closing `\"`"),
        (
            "http.host eq \"a\" and",
            1,
            21,
            "expected a field or a function",
        ),
        (
            "http.host eq \"a\" xor ip.src eq 1.2.3.4",
            1,
            18,
            "expected `and`, `or`",
        ),
        ("(http.host eq \"a\"", 1, 18, "expected `)`"),
        ("http.hots eq \"a\"", 1, 1, "unknown field http.hots"),
        (
            "http.host\n  and ip.src eq 1.2.3.4",
            2,
            3,
            "expected an operator",
        ),
        (
            "http.host eq \"a\"\n  and ip.src eq 300.1.1.1",
            2,
            17,
            "expected an IP address",
        ),
        (
            "http.host eq \"a\" or\n\tip.src in {10.0.0.0/33}",
            2,
            13,
            "network",
        ),
        (
            "http.host contains 1",
            1,
            20,
            "expected a string in double quotes",
        ),
        ("http.host lt \"a\"", 1, 11, "not lt"),
        ("len(http.host) contains \"a\"", 1, 16, "not contains"),
        ("len(ip.src) eq 1", 1, 5, "len takes a string"),
        ("upper(http.host) eq \"A\"", 1, 1, "unknown function upper"),
        ("http.request.headers eq \"a\"", 1, 1, "needs a key"),
        ("http.host[\"a\"] eq \"a\"", 1, 1, "takes no key"),
        (
            "http.request.uri.path matches \"(unclosed\"",
            1,
            31,
            "invalid regular expression",
        ),
        ("ip.src eq 10.0.0.0/8", 1, 11, "use `in {...}`"),
        ("ip.src contains \"1\"", 1, 8, "not contains"),
        ("http.host in {\"a\" 1}", 1, 19, "expected a string"),
        ("http.host in \"a\"", 1, 14, "expected `{`"),
        (
            "http.host eq \"é\" and é",
            1,
            22,
            "expected a field or a function",
        ),
    ] {
        let e: SyntaxError = compile(expression).expect_err(expression);
        if (e.line, e.column) != (line, column) || !e.message.contains(message) {
            wrong.push(format!("{expression:?}: {e}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn deep_nesting_and_long_input_are_refused_before_parsing() {
    let deep = format!("{}http.host eq \"a\"{}", "(".repeat(40), ")".repeat(40));
    assert!(
        compile(&deep)
            .unwrap_err()
            .message
            .contains("nested deeper")
    );
    let nots = format!("{}http.host eq \"a\"", "not ".repeat(40));
    assert!(
        compile(&nots)
            .unwrap_err()
            .message
            .contains("nested deeper")
    );
    let ok = format!("{}http.host eq \"a\"{}", "(".repeat(20), ")".repeat(20));
    assert!(compile(&ok).is_ok());
    let long = format!("http.host eq \"{}\"", "a".repeat(5000));
    assert!(compile(&long).unwrap_err().message.contains("at most"));
    // A string may hold parentheses and `not` freely.
    let quoted = format!("http.host eq \"{}\"", "(not ".repeat(100));
    assert!(compile(&quoted).is_ok());
}

#[test]
fn regex_is_linear_on_a_pathological_input() {
    // (a+)+$ is the classic catastrophic-backtracking pattern; the regex
    // crate answers in linear time.
    let program = compile(r#"http.request.uri.path matches "^(a+)+$""#).unwrap();
    let path = format!("/{}!", "a".repeat(100_000));
    let headers = Vec::new();
    let r = Request {
        path: &path,
        ..request(&headers)
    };
    let started = std::time::Instant::now();
    assert!(!program.matches(&r));
    eprintln!("(a+)+$ over 100k characters: {:?}", started.elapsed());
}
