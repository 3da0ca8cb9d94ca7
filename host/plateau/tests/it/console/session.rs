//! The console's session cookie and CSRF rule, over plain HTTP: the
//! cookie's attributes, sign-in with a token and as the operator, changes
//! refused without the form's secret or from another origin, a forged or
//! altered cookie refused, sign-out, and a read-only token's console
//! refused what the token may not do.

use plateau_testkit::Backend;
use reqwest::header::{COOKIE, LOCATION, ORIGIN};
use serde_json::json;

use super::{Session, cookie_value, csrf_of, http, set_cookie};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cookie_and_csrf() {
    let server = crate::start(Backend::Sqlite).await;
    let base = &server.url;
    let c = http();

    // Without a session every page leads to the sign-in page; `/` leads
    // to the console.
    let r = c
        .get(format!("{base}/console/projects"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);
    assert_eq!(r.headers()[LOCATION], "/console/sign-in");
    let r = c.get(format!("{base}/")).send().await.unwrap();
    assert_eq!(r.headers()[LOCATION], "/console/");

    // The sign-in form's own secret is in an HttpOnly, SameSite=Strict
    // cookie, Secure only when the request came over HTTPS.
    let page = c
        .get(format!("{base}/console/sign-in"))
        .send()
        .await
        .unwrap();
    let pre = set_cookie(&page, "plateau_console_pre").unwrap();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/console"] {
        assert!(pre.contains(attribute), "{pre}");
    }
    assert!(!pre.contains("Secure"), "{pre}");
    assert!(
        page.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("frame-ancestors 'none'")
    );
    let pre_value = cookie_value(&pre);
    let csrf = csrf_of(&page.text().await.unwrap());
    let sign_in = |fields: Vec<(&'static str, String)>, cookie: String| {
        let c = c.clone();
        async move {
            c.post(format!("{base}/console/sign-in"))
                .header(COOKIE, cookie)
                .header("x-forwarded-proto", "https")
                .form(&fields)
                .send()
                .await
                .unwrap()
        }
    };
    let pre_cookie = format!("plateau_console_pre={pre_value}");
    // No secret, or another one: refused before the token is looked at.
    let r = sign_in(
        vec![("method", "token".into()), ("token", server.token.clone())],
        pre_cookie.clone(),
    )
    .await;
    assert_eq!(r.status(), 403);
    let r = sign_in(
        vec![
            ("csrf", "x".repeat(40)),
            ("method", "token".into()),
            ("token", server.token.clone()),
        ],
        pre_cookie.clone(),
    )
    .await;
    assert_eq!(r.status(), 403);
    // A wrong token: the API's 401, on the sign-in page.
    let r = sign_in(
        vec![
            ("csrf", csrf.clone()),
            ("method", "token".into()),
            ("token", plateau_testkit::random_token()),
        ],
        pre_cookie.clone(),
    )
    .await;
    assert_eq!(r.status(), 401);
    assert!(r.text().await.unwrap().contains("role=\"alert\""));
    // The right one, over HTTPS (as a proxy says): a Secure session cookie.
    let r = sign_in(
        vec![
            ("csrf", csrf.clone()),
            ("method", "token".into()),
            ("token", server.token.clone()),
        ],
        pre_cookie,
    )
    .await;
    assert_eq!(r.status(), 303);
    let session = set_cookie(&r, "plateau_console").unwrap();
    for attribute in ["HttpOnly", "SameSite=Strict", "Path=/console", "Secure"] {
        assert!(session.contains(attribute), "{session}");
    }
    assert!(
        !session.contains(&server.token),
        "the cookie is sealed, not the token"
    );

    // Over plain HTTP, the session works and every change needs its secret.
    let s = Session::sign_in(&server, &[("method", "token"), ("token", &server.token)]).await;
    let r = http()
        .post(format!("{base}/console/projects"))
        .header(COOKIE, &s.cookie)
        .form(&[("name", "no-secret")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let r = http()
        .post(format!("{base}/console/projects"))
        .header(COOKIE, &s.cookie)
        .header(ORIGIN, "http://attacker.example")
        .form(&[("csrf", s.csrf.as_str()), ("name", "cross-origin")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let r = http()
        .post(format!("{base}/console/projects"))
        .header(COOKIE, &s.cookie)
        .header("sec-fetch-site", "cross-site")
        .form(&[("csrf", s.csrf.as_str()), ("name", "cross-site")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    // The secret of another session is not this one's.
    let other = Session::sign_in(&server, &[("method", "token"), ("token", &server.token)]).await;
    assert_ne!(other.csrf, s.csrf);
    let r = http()
        .post(format!("{base}/console/projects"))
        .header(COOKIE, &s.cookie)
        .form(&[("csrf", other.csrf.as_str()), ("name", "other-secret")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let r = s
        .post("/console/projects", &[("name", "from-console")])
        .await;
    assert_eq!(r.status(), 303, "{}", r.text().await.unwrap());
    let projects = server.client().get("/projects").await.json();
    let names: Vec<&str> = projects["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"from-console"), "{names:?}");
    assert!(
        !names
            .iter()
            .any(|n| ["no-secret", "cross-origin", "cross-site", "other-secret"].contains(n)),
        "{names:?}"
    );
    // The API's refusal shows as the page, with its status and field.
    let r = s.post("/console/projects", &[("name", "")]).await;
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("role=\"alert\""));

    // An altered cookie is no session.
    let mut altered = s.cookie.clone();
    let last = altered.pop().unwrap();
    altered.push(if last == 'A' { 'B' } else { 'A' });
    let r = http()
        .get(format!("{base}/console/account"))
        .header(COOKIE, &altered)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 303);

    // Sign-out clears the cookie (and needs the secret too).
    let r = s.post("/console/sign-out", &[]).await;
    assert_eq!(r.status(), 303);
    let cleared = set_cookie(&r, "plateau_console").unwrap();
    assert!(cleared.contains("Max-Age=0"), "{cleared}");

    // A read-only token's console reads, and is refused what the token may not do.
    let reader = crate::mint(
        &server,
        json!({ "name": "reader", "scopes": ["projects:read"] }),
    )
    .await;
    let s = Session::sign_in(&server, &[("method", "token"), ("token", &reader)]).await;
    let r = s.get("/console/projects").await;
    assert_eq!(r.status(), 200);
    assert!(r.text().await.unwrap().contains("from-console"));
    let r = s.post("/console/projects", &[("name", "by-reader")]).await;
    assert_eq!(r.status(), 403);
    assert!(r.text().await.unwrap().contains("projects:write"));

    // The operator signs in with the admin password; a wrong one is refused.
    let page = c
        .get(format!("{base}/console/sign-in"))
        .send()
        .await
        .unwrap();
    let pre = cookie_value(&set_cookie(&page, "plateau_console_pre").unwrap());
    let csrf = csrf_of(&page.text().await.unwrap());
    let r = sign_in(
        vec![
            ("csrf", csrf),
            ("method", "admin".into()),
            ("password", "wrong".into()),
        ],
        format!("plateau_console_pre={pre}"),
    )
    .await;
    assert_eq!(r.status(), 401);
    let admin = Session::sign_in(
        &server,
        &[("method", "admin"), ("password", &server.admin_password)],
    )
    .await;
    let r = admin.get("/console/admin/organizations").await;
    assert_eq!(r.status(), 200);
    let r = admin
        .post(
            "/console/admin/organizations",
            &[("name", "from-console-org"), ("plan", "free")],
        )
        .await;
    assert_eq!(r.status(), 200);
    assert!(
        r.text().await.unwrap().contains("plt_"),
        "the owner token is shown once"
    );
    // Signing out ends the operator's session on the server too.
    let admin_cookie = admin.cookie.clone();
    let r = admin.post("/console/sign-out", &[]).await;
    assert_eq!(r.status(), 303);
    let r = http()
        .get(format!("{base}/console/admin/organizations"))
        .header(COOKIE, &admin_cookie)
        .send()
        .await
        .unwrap();
    let text = r.text().await.unwrap();
    assert!(
        !text.contains("from-console-org"),
        "the old cookie no longer reads as the operator"
    );
    assert!(text.contains("role=\"alert\""), "{text}");
}
