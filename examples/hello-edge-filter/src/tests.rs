//! The filter's verdicts, run through the SDK's in-process harness.

use plateau_sdk::edge::testing::{self, HeadExt};
use plateau_sdk::edge::{Action, ResponseHead, Verdict};

use crate::HelloFilter;

#[test]
fn admin_paths_are_blocked_with_the_rule_recorded() {
    for path in ["/admin", "/admin/users", "/ADMIN/x"] {
        let verdict = testing::run::<HelloFilter>(&testing::request("GET", path));
        let Action::Block { status, body, .. } = &verdict.action else {
            panic!("{path} should be blocked: {verdict:?}");
        };
        assert_eq!(*status, 403);
        assert!(String::from_utf8_lossy(body).contains("admin"));
        assert_eq!(verdict.facts[0].name, "rule");
        assert_eq!(verdict.facts[0].value, "no-admin");
    }
}

#[test]
fn other_paths_pass_with_a_header() {
    for path in ["/", "/administrator", "/app/admin"] {
        let head = testing::request("POST", path).with_header("User-Agent", "curl/8");
        assert_eq!(
            testing::run::<HelloFilter>(&head),
            Verdict::set_header("x-hello-filter", "passed"),
            "{path}"
        );
    }
}

#[test]
fn old_paths_redirect_keeping_the_query() {
    let verdict = testing::run::<HelloFilter>(&testing::request("GET", "/old/a/b?x=1"));
    assert_eq!(verdict, Verdict::redirect(308, "/new/a/b?x=1"));
}

#[test]
fn answers_get_nosniff() {
    let changes = testing::run_response::<HelloFilter>(
        &testing::request("GET", "/"),
        &ResponseHead {
            status: 200,
            headers: Vec::new(),
        },
    );
    assert_eq!(
        changes.set,
        vec![("x-content-type-options".to_owned(), "nosniff".to_owned())]
    );
}
