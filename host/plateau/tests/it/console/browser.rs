//! The console in headless Chromium, driven through chromedriver the way a
//! person would: sign in with a token, deploy an app from an image and
//! open its URL, create a database and run a query in its SQL console,
//! create an access key and a bucket and upload a file, then visit every
//! other page and sign in as the operator. Every page is checked with
//! axe-core (WCAG 2.2 AA, no violation allowed) and screenshotted under
//! `target/console-screenshots/`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use plateau_testkit::Backend;
use serde_json::json;
use tokio::process::{Child, Command};

use crate::apps::Apps;

/// The axe-core release the checks run (npm).
const AXE_VERSION: &str = "4.10.3";
/// The rules of WCAG 2.2 AA and everything below it.
const AXE_TAGS: &[&str] = &["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"];

fn target_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .to_owned()
}

/// axe-core's script, which `cargo xtask test` installs from npm under
/// `target/npm-clients` (with the suite's other npm packages).
fn axe_source() -> String {
    let file = target_dir().join("npm-clients/node_modules/axe-core/axe.min.js");
    std::fs::read_to_string(&file).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; cargo xtask test installs axe-core@{AXE_VERSION}",
            file.display()
        )
    })
}

/// chromedriver on a free port, and a headless Chromium session of it.
struct Browser {
    driver: Child,
    client: Client,
    _profile: tempfile::TempDir,
    axe: String,
    shots: PathBuf,
    violations: Vec<String>,
    pages: usize,
}

impl Browser {
    async fn start() -> Browser {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        let mut driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("chromedriver runs (apt-get install chromium chromium-driver)");
        let url = format!("http://127.0.0.1:{port}");
        let status = reqwest::Client::new();
        let mut ready = false;
        for _ in 0..200 {
            if status.get(format!("{url}/status")).send().await.is_ok() {
                ready = true;
                break;
            }
            if let Ok(Some(exit)) = driver.try_wait() {
                panic!("chromedriver ended: {exit}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(ready, "chromedriver never answered on {url}");
        let profile = tempfile::tempdir().unwrap();
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1280,900",
        ]
        .iter()
        .map(|a| a.to_string())
        .chain([format!("--user-data-dir={}", profile.path().display())])
        .collect::<Vec<_>>();
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({ "args": args, "binary": "/usr/bin/chromium" }),
        );
        let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(&url)
            .await
            .expect("a Chromium session");
        let shots = target_dir().join("console-screenshots");
        std::fs::create_dir_all(&shots).unwrap();
        Browser {
            driver,
            client,
            _profile: profile,
            axe: axe_source(),
            shots,
            violations: Vec::new(),
            pages: 0,
        }
    }

    /// Checks the page shown with axe-core and saves its screenshot.
    async fn check(&mut self, name: &str) {
        let script = format!(
            "{}\nreturn axe.run(document, {{ runOnly: {{ type: 'tag', values: {} }} }}).then(r => r.violations.map(v => v.id + ' (' + v.impact + '): ' + v.help + ' at ' + v.nodes.map(n => n.target.join(' ')).join(', ')));",
            self.axe,
            json!(AXE_TAGS)
        );
        let found = self
            .client
            .execute(&script, vec![])
            .await
            .expect("axe runs");
        for v in found.as_array().into_iter().flatten() {
            self.violations
                .push(format!("{name}: {}", v.as_str().unwrap_or_default()));
        }
        let png = self.client.screenshot().await.expect("a screenshot");
        std::fs::write(self.shots.join(format!("{name}.png")), png).unwrap();
        self.pages += 1;
    }

    async fn visit(&mut self, url: &str, name: &str) {
        self.client.goto(url).await.expect("the page loads");
        self.check(name).await;
    }

    async fn fill(&self, css: &str, text: &str) {
        let field = self
            .client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("{css}: {e}"));
        field.clear().await.ok();
        field.send_keys(text).await.unwrap();
    }

    /// Clicks `css`; when that submits a form, waits (at most 5 s) until
    /// the page it loads is complete, as a person waits to read it.
    async fn click(&self, css: &str) {
        let mark = "window.__plateauBefore = true; return true;";
        self.client.execute(mark, vec![]).await.unwrap();
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("{css}: {e}"))
            .click()
            .await
            .unwrap();
        let loaded =
            "return window.__plateauBefore !== true && document.readyState === 'complete';";
        for _ in 0..50 {
            if let Ok(v) = self.client.execute(loaded, vec![]).await
                && v == json!(true)
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn text(&self) -> String {
        self.client
            .find(Locator::Css("main"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    }

    /// Waits (without reloading) until the main text contains `want`, as
    /// a page a form posted to loads; that text.
    async fn until_text(&self, want: &str) -> String {
        for _ in 0..300 {
            if let Ok(main) = self.client.find(Locator::Css("main")).await
                && let Ok(text) = main.text().await
                && text.contains(want)
            {
                return text;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.text().await
    }

    /// Reloads the page until its main text contains `want`.
    async fn reload_until(&self, want: &str, what: &str) {
        for _ in 0..1200 {
            if self.text().await.contains(want) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
            self.client.refresh().await.unwrap();
        }
        panic!("waited for {what}; the page says: {}", self.text().await);
    }

    async fn stop(mut self) {
        let _ = self.client.close().await;
        let _ = self.driver.kill().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_in_chromium() {
    let env = Apps::start(Backend::Sqlite).await;
    let base = env.server.url.clone();
    let mut b = Browser::start().await;
    let started = Instant::now();

    // Sign in with the organisation's token.
    b.visit(&format!("{base}/console/sign-in"), "sign-in").await;
    b.fill("#f-token", &env.token).await;
    b.click("form:has(#f-token) button").await;
    assert!(b.text().await.contains("apps-pro"), "{}", b.text().await);
    b.check("overview").await;

    // Deploy an app from an image and open its URL.
    let step = Instant::now();
    b.visit(&format!("{base}/console/apps"), "apps").await;
    b.fill("#f-name", "Console app").await;
    b.fill("#f-image", &env.v1).await;
    b.click("main form button[type=submit]").await;
    b.reload_until("running", "the app to run").await;
    b.check("app").await;
    let deploy_secs = step.elapsed().as_secs_f64();
    let app_page = b.client.current_url().await.unwrap().to_string();
    let open = b
        .client
        .find(Locator::LinkText("Open the app"))
        .await
        .unwrap();
    let url = open.attr("href").await.unwrap().expect("the app's URL");
    b.client.goto(&url).await.unwrap();
    let body = b.client.source().await.unwrap();
    assert!(body.contains("hello from v1"), "{url} showed {body}");

    // Its logs, which the page's script follows by itself.
    b.visit(&format!("{app_page}/logs"), "app-logs").await;
    b.until_text("Updated at").await;
    let text = b.text().await;
    assert!(
        text.contains("Stop following") && text.contains("Updated at"),
        "the logs page follows itself: {text}"
    );
    b.check("app-logs-followed").await;

    // Create a database and run a query in its console.
    let step = Instant::now();
    b.visit(&format!("{base}/console/databases"), "databases")
        .await;
    b.fill("#f-name", "consoledb").await;
    b.click("main form button[type=submit]").await;
    b.reload_until("SQL console", "the database to run").await;
    let db_secs = step.elapsed().as_secs_f64();
    b.fill("#f-sql", "select 40 + 2 as answer").await;
    b.click("form:has(#f-sql) button").await;
    let text = b.until_text("rows").await;
    assert!(text.contains("answer") && text.contains("42"), "{text}");
    b.check("database").await;

    // Its backups: one taken now shows in the ledger.
    b.client
        .find(Locator::LinkText("Backups, restore and branches"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    b.until_text("Take a backup now").await;
    b.check("database-backups").await;
    b.click("form:has(#f-incremental) button").await;
    let text = b.until_text("is asked for").await;
    let page = b.client.current_url().await.unwrap();
    let taken = page
        .query_pairs()
        .find(|(k, _)| k == "taken")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_else(|| panic!("{page}: {text}"));
    assert!(
        b.ledger().await.contains(&taken),
        "backup {taken} is in the ledger: {text}"
    );
    b.check("database-backup-taken").await;
    let backups_page = b.client.current_url().await.unwrap().to_string();

    // An access key, a bucket, and a file uploaded to it.
    b.visit(&format!("{base}/console/storage"), "storage").await;
    b.fill("#f-name", "console-bucket").await;
    b.click("form[action='/console/storage/buckets'] button")
        .await;
    b.fill("#f-keyName", "console-key").await;
    b.click("form[action='/console/storage/keys'] button").await;
    assert!(b.text().await.contains("never shown again"));
    b.check("access-key").await;
    b.visit(&format!("{base}/console/storage"), "storage-with-bucket")
        .await;
    b.client
        .find(Locator::LinkText("console-bucket"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    let bucket_page = b.client.current_url().await.unwrap().to_string();
    let file = tempfile::NamedTempFile::new().unwrap();
    let content = format!("uploaded from Chromium at {:?}", started.elapsed());
    std::fs::write(file.path(), &content).unwrap();
    b.client
        .find(Locator::Css("#f-file"))
        .await
        .unwrap()
        .send_keys(&file.path().display().to_string())
        .await
        .unwrap();
    b.fill("form[data-upload] #f-key", "hello.txt").await;
    b.click("form[data-upload] button").await;
    b.reload_until_status("Uploaded hello.txt").await;
    b.fill("#f-downloadKey", "hello.txt").await;
    b.click("form[action$='/download'] button").await;
    let link = b.client.find(Locator::Css("a[download]")).await.unwrap();
    let href = link.attr("href").await.unwrap().unwrap();
    // `s3.localhost` is loopback (RFC 6761), which the system resolver
    // may not say; the browser knows it.
    let url = reqwest::Url::parse(&href).unwrap();
    let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], url.port().unwrap()));
    let client = reqwest::Client::builder()
        .resolve(url.host_str().unwrap(), loopback)
        .build()
        .unwrap();
    let got = client.get(url).send().await.unwrap().text().await.unwrap();
    assert_eq!(
        got, content,
        "the object downloaded through the presigned link"
    );
    b.check("bucket").await;
    // The object browser lists it, and deletes it.
    b.client.goto(&bucket_page).await.unwrap();
    let listed = b.until_text("1 objects and folders here").await;
    assert!(listed.contains("hello.txt"), "{listed}");
    b.check("bucket-objects").await;
    b.click("form[action$='/objects/delete'] button").await;
    let emptied = b.until_text("No objects here yet").await;
    assert!(emptied.contains("0 objects and folders here"), "{emptied}");

    // Every other page of the organisation.
    for (path, name) in [
        ("/console/account", "account"),
        ("/console/rewards", "rewards"),
        ("/console/projects", "projects"),
        ("/console/caches", "caches"),
        ("/console/areas/queues", "queues"),
        ("/console/areas/cron-jobs", "cron-jobs"),
        ("/console/areas/workflows", "workflows"),
        ("/console/areas/email", "email"),
        ("/console/areas/checks", "checks"),
        ("/console/areas/heartbeats", "heartbeats"),
        ("/console/areas/flags", "flags"),
        ("/console/areas/registry", "registry"),
        ("/console/areas/webhooks", "webhooks"),
        ("/console/areas/log-drains", "log-drains"),
        ("/console/areas/errors", "errors"),
        ("/console/areas/traces", "traces"),
        ("/console/areas/config", "config"),
        ("/console/areas/alarms", "alarms"),
        ("/console/areas/anomaly-monitors", "anomaly-monitors"),
        ("/console/areas/waf-rules", "waf-rules"),
        ("/console/analytics", "analytics"),
        ("/console/events", "events"),
        ("/console/audit", "audit"),
    ] {
        b.visit(&format!("{base}{path}"), name).await;
        // Each page reads its list: an API refusal would show as an alert.
        let alerts = b.client.find_all(Locator::Css("p.problem")).await.unwrap();
        assert!(
            alerts.is_empty(),
            "{path} shows a problem: {}",
            b.text().await
        );
    }

    // The status page: named in the console, then what a visitor sees.
    b.visit(&format!("{base}/console/status-pages"), "status-pages")
        .await;
    b.fill("#f-name", "Console status").await;
    b.fill("#f-slug", "console-status").await;
    b.click("form[action='/console/status-pages/page'] button")
        .await;
    b.fill("#f-componentName", "Public API").await;
    b.click("form[action='/console/status-pages/components'] button")
        .await;
    b.fill("#f-incidentName", "Slow uploads").await;
    b.fill("#f-body", "We are looking into slow uploads.").await;
    b.click("form[action='/console/status-pages/incidents'] button")
        .await;
    let text = b.until_text("Slow uploads").await;
    assert!(text.contains("Public API"), "{text}");
    b.check("status-pages-filled").await;
    let public = b
        .client
        .find(Locator::Css("main a[href*='/status-pages/public/']"))
        .await
        .unwrap()
        .attr("href")
        .await
        .unwrap()
        .expect("the public URL");
    let public = format!("{base}{public}");
    b.visit(&public, "status-page-public").await;
    let title = b.client.title().await.unwrap();
    assert_eq!(title, "Console status status");
    let seen = b.text().await;
    for want in [
        "Minor Service Outage",
        "Public API",
        "Operational",
        "Slow uploads",
        "We are looking into slow uploads.",
        "Get updates",
    ] {
        assert!(seen.contains(want), "a visitor sees {want}: {seen}");
    }
    b.client.set_window_size(390, 844).await.unwrap();
    b.visit(&public, "status-page-public-phone").await;
    let overflow = b
        .client
        .execute(
            "return document.documentElement.scrollWidth <= window.innerWidth;",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(overflow, json!(true), "the page fits a phone's width");
    b.client.set_window_size(1280, 900).await.unwrap();
    // Subscribing through the page's own form.
    b.fill("#email", "visitor@example.com").await;
    b.click("main form button").await;
    let answer = b.until_text("Check your inbox").await;
    assert!(answer.contains("Check your inbox"), "{answer}");
    b.check("status-page-subscribed").await;
    // A phone's width.
    b.client.set_window_size(390, 844).await.unwrap();
    b.visit(&format!("{base}/console/apps"), "apps-phone").await;
    b.visit(&format!("{app_page}/logs"), "app-logs-phone").await;
    b.visit(&backups_page, "database-backups-phone").await;
    b.client.set_window_size(1280, 900).await.unwrap();

    // Members: invite someone, who accepts through the link and is signed in.
    b.visit(&format!("{base}/console/members"), "members").await;
    b.fill("#f-email", "ann@example.com").await;
    b.click("form[action='/console/members/invites'] button")
        .await;
    let link = b
        .client
        .find(Locator::Css("#link"))
        .await
        .unwrap()
        .prop("value")
        .await
        .unwrap()
        .unwrap();
    b.check("invitation").await;
    b.click("nav form button").await;
    b.visit(&link, "invite-accept").await;
    b.fill("#f-name", "Ann").await;
    b.click("form:has(#f-name) button").await;
    let welcome = b.until_text("signed in").await;
    assert!(welcome.contains("as member"), "{welcome}");
    b.check("invite-accepted").await;
    b.visit(&format!("{base}/console/members"), "members-as-member")
        .await;
    assert!(b.text().await.contains("Ann"), "{}", b.text().await);

    // The operator's pages.
    b.click("nav form button").await;
    b.fill("#f-password", &env.server.admin_password).await;
    b.click("form:has(#f-password) button").await;
    assert!(b.text().await.contains("operator"), "{}", b.text().await);
    b.visit(
        &format!("{base}/console/admin/organizations"),
        "admin-organizations",
    )
    .await;
    b.client
        .find(Locator::Css(
            "table a[href^='/console/admin/organizations/']",
        ))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    b.until_text("Holdings against the plan").await;
    b.check("admin-organization").await;
    b.client
        .find(Locator::Css("#f-plan option[value='pro']"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    b.click("form[action$='/plan'] button").await;
    let changed = b.until_text("Holdings against the plan").await;
    assert!(changed.contains("pro"), "{changed}");
    b.visit(&format!("{base}/console/admin/plugins"), "admin-plugins")
        .await;
    assert!(b.text().await.contains("flags"), "{}", b.text().await);

    eprintln!(
        "console in Chromium: {} pages checked with axe-core, app running after {deploy_secs:.1} s, database after {db_secs:.1} s, {:.1} s in all; screenshots in {}",
        b.pages,
        started.elapsed().as_secs_f64(),
        b.shots.display()
    );
    let violations = std::mem::take(&mut b.violations);
    b.stop().await;
    assert!(
        violations.is_empty(),
        "axe-core found {} violations:\n{}",
        violations.len(),
        violations.join("\n")
    );
}

impl Browser {
    /// The text of the backup ledger's table shown.
    async fn ledger(&self) -> String {
        self.client
            .find(Locator::Css("[aria-label='Backup ledger'] table"))
            .await
            .expect("the ledger's table")
            .text()
            .await
            .unwrap()
    }

    /// Waits, without reloading, for the upload form's status to say `want`.
    async fn reload_until_status(&self, want: &str) {
        for _ in 0..1200 {
            let status = self
                .client
                .find(Locator::Css("form[data-upload] [role=status]"))
                .await
                .unwrap();
            let text = status.text().await.unwrap();
            if text.contains(want) {
                return;
            }
            assert!(!text.contains("failed"), "{text}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the upload never finished");
    }
}
