//! The web console under `/console`: its session cookie and CSRF rule
//! over plain HTTP (`session`), and a person's path through it in
//! headless Chromium (`browser`).

mod browser;
mod session;

use plateau_testkit::Server;
use reqwest::header::{COOKIE, SET_COOKIE};
use reqwest::redirect::Policy;

/// A client that shows redirects instead of following them.
pub fn http() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(Policy::none())
        .build()
        .unwrap()
}

/// The `Set-Cookie` headers of `r` for cookie `name`.
pub fn set_cookie(r: &reqwest::Response, name: &str) -> Option<String> {
    r.headers()
        .get_all(SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(&format!("{name}=")))
        .map(str::to_owned)
}

/// The value part of a `Set-Cookie` header.
pub fn cookie_value(set_cookie: &str) -> String {
    let pair = set_cookie.split(';').next().unwrap();
    pair.split_once('=').unwrap().1.to_owned()
}

/// The value of the first hidden `csrf` field of a page.
pub fn csrf_of(html: &str) -> String {
    let at = html
        .find(r#"name="csrf" value=""#)
        .expect("the page has a csrf field");
    let rest = &html[at + r#"name="csrf" value=""#.len()..];
    rest[..rest.find('"').unwrap()].to_owned()
}

/// A signed-in console session over plain HTTP.
pub struct Session {
    pub base: String,
    /// `plateau_console=...`, for the Cookie header.
    pub cookie: String,
    pub csrf: String,
}

impl Session {
    /// Signs in with `fields` (`method` token or admin); panics unless
    /// the console answers with a session.
    pub async fn sign_in(server: &Server, fields: &[(&str, &str)]) -> Session {
        let c = http();
        let page = c
            .get(format!("{}/console/sign-in", server.url))
            .send()
            .await
            .unwrap();
        let pre = cookie_value(&set_cookie(&page, "plateau_console_pre").unwrap());
        let csrf = csrf_of(&page.text().await.unwrap());
        let mut form = vec![("csrf", csrf.as_str())];
        form.extend_from_slice(fields);
        let r = c
            .post(format!("{}/console/sign-in", server.url))
            .header(COOKIE, format!("plateau_console_pre={pre}"))
            .form(&form)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 303, "{}", r.text().await.unwrap());
        let cookie = set_cookie(&r, "plateau_console").expect("a session cookie");
        let cookie = format!("plateau_console={}", cookie_value(&cookie));
        let overview = c
            .get(format!("{}/console/", server.url))
            .header(COOKIE, &cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(overview.status(), 200);
        let csrf = csrf_of(&overview.text().await.unwrap());
        Session {
            base: server.url.clone(),
            cookie,
            csrf,
        }
    }

    pub async fn get(&self, path: &str) -> reqwest::Response {
        http()
            .get(format!("{}{path}", self.base))
            .header(COOKIE, &self.cookie)
            .send()
            .await
            .unwrap()
    }

    /// Posts a form with the session's CSRF secret added.
    pub async fn post(&self, path: &str, fields: &[(&str, &str)]) -> reqwest::Response {
        let mut form = vec![("csrf", self.csrf.as_str())];
        form.extend_from_slice(fields);
        http()
            .post(format!("{}{path}", self.base))
            .header(COOKIE, &self.cookie)
            .form(&form)
            .send()
            .await
            .unwrap()
    }
}
