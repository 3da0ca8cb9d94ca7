//! The bot policy (issue 35) through the edge, with a DNS server the test
//! controls as the platform's resolver and clients on their own loopback
//! addresses: a "Googlebot" whose address's PTR does not confirm is
//! unverified (blocked), one whose forward-confirmed name is Google's
//! passes (and is not rate limited), GPTBot is blocked and then
//! challenged, a burst over the rate is limited with 429, and the
//! decisions are listed.

use std::net::IpAddr;
use std::time::Duration;

use plateau_testkit::dns::{DnsAnswer, DnsServer};
use plateau_testkit::{Backend, ServerOptions};
use serde_json::{Value, json};

use super::{Apps, id, slug};

const GOOGLEBOT: &str = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
const GPTBOT: &str = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)";
const BROWSER: &str = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";

/// `GET /` at the app from source address `from` with `user_agent` (and
/// `cookie`): the status and the body.
async fn fetch(
    env: &Apps,
    slug: &str,
    from: &str,
    user_agent: &str,
    cookie: &str,
) -> (u16, String) {
    let from: IpAddr = from.parse().unwrap();
    let http = reqwest::Client::builder()
        .local_address(from)
        .build()
        .unwrap();
    let mut req = http
        .get(format!("{}/", env.server.edge_url))
        .header("host", format!("{slug}.apps.localhost"))
        .header("user-agent", user_agent);
    if !cookie.is_empty() {
        req = req.header("cookie", cookie);
    }
    let r = req.send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.text().await.unwrap())
}

/// Polls until a request answers `status`.
async fn until_status(env: &Apps, slug: &str, from: &str, user_agent: &str, status: u16) -> String {
    crate::eventually(
        &format!("{from} {user_agent:?} answered {status}"),
        Duration::from_secs(20),
        || async {
            let (got, body) = fetch(env, slug, from, user_agent, "").await;
            (got == status).then_some(body)
        },
    )
    .await
}

/// A PTR record for `ip` naming `host`, and `host`'s A record `points_to`.
fn reverse(dns: &DnsServer, ip: &str, host: &str, points_to: &str) {
    dns.add(
        &DnsServer::reverse_name(ip.parse().unwrap()),
        DnsAnswer::Ptr(host.to_owned()),
    );
    dns.add(host, DnsAnswer::Ip(points_to.parse().unwrap()));
}

fn problem_code(body: &str) -> String {
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    v["type"]
        .as_str()
        .unwrap_or("")
        .rsplit('/')
        .next()
        .unwrap_or("")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bot_policy_verifies_crawlers_blocks_ai_and_limits_the_rate() {
    let dns = DnsServer::start().await;
    // Google's crawler: PTR under googlebot.com, which points back.
    reverse(
        &dns,
        "127.0.0.7",
        "crawl-127-0-0-7.googlebot.com",
        "127.0.0.7",
    );
    // An impostor: a PTR under googlebot.com that does not point back.
    reverse(&dns, "127.0.0.8", "crawl-fake.googlebot.com", "127.0.0.99");
    // Forward-confirmed, but not Google's name.
    reverse(&dns, "127.0.0.9", "crawler.example.test", "127.0.0.9");
    let options =
        ServerOptions::new(Backend::Sqlite).env("PLATEAU_DNS_RESOLVER", &dns.addr.to_string());
    let env = Apps::start_with(options).await;
    let c = env.client();
    let app = env.deployed("Crawled", &env.v1).await;
    let (app_id, slug) = (id(&app), slug(&app));

    // No policy: off.
    let r = c.get(&format!("/bots/policy?appId={app_id}")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["source"], "default");
    assert_eq!(r.json()["policy"]["enabled"], false);
    assert!(
        r.json()["aiListSource"]
            .as_str()
            .unwrap()
            .contains("ai.robots.txt")
    );
    assert_eq!(fetch(&env, &slug, "127.0.0.10", GPTBOT, "").await.0, 200);

    // Bad input names the field.
    for (body, field) in [
        (
            json!({ "enabled": true, "aiCrawlers": "sideways" }),
            "aiCrawlers",
        ),
        (
            json!({ "enabled": true, "ratePerMinute": -1 }),
            "ratePerMinute",
        ),
        (
            json!({ "enabled": true, "rateAction": "allow" }),
            "rateAction",
        ),
        (json!({ "enabled": true, "appId": "" }), "appId"),
    ] {
        let r = c.put("/bots/policy", body).await;
        assert_eq!(r.status, 400, "{}", r.text());
        assert_eq!(r.json()["errors"][0]["field"], field, "{}", r.text());
    }
    let r = c
        .put(
            "/bots/policy",
            json!({ "enabled": true, "appId": "app_nope" }),
        )
        .await;
    assert_eq!(r.status, 404, "{}", r.text());

    // The organisation's policy, then the app's own, which replaces it.
    let r = c
        .put(
            "/bots/policy",
            json!({ "enabled": true, "aiCrawlers": "log" }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["source"], "organization");
    let r = c
        .put(
            "/bots/policy",
            json!({ "enabled": true, "appId": app_id, "aiCrawlers": "block", "ratePerMinute": 30 }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let policy = r.json();
    assert_eq!(policy["source"], "app");
    assert_eq!(policy["policy"]["unverifiedCrawlers"], "block");
    assert_eq!(policy["policy"]["rateAction"], "block");

    // GPTBot is blocked.
    let body = until_status(&env, &slug, "127.0.0.10", GPTBOT, 403).await;
    assert_eq!(problem_code(&body), "blocked_bot", "{body}");
    assert!(body.contains("GPTBot"), "{body}");

    // A "Googlebot" whose PTR does not point back, or whose name is not
    // Google's, is unverified: blocked, each time.
    for from in ["127.0.0.8", "127.0.0.9", "127.0.0.8"] {
        let (status, body) = fetch(&env, &slug, from, GOOGLEBOT, "").await;
        assert_eq!(status, 403, "{from}: {body}");
        assert!(body.contains("DNS does not verify"), "{body}");
    }
    // Forward-confirmed under googlebot.com: it passes, and a verified
    // crawler is not rate limited.
    until_status(&env, &slug, "127.0.0.7", GOOGLEBOT, 200).await;
    let mut crawler_refused = 0;
    for _ in 0..40 {
        if fetch(&env, &slug, "127.0.0.7", GOOGLEBOT, "").await.0 != 200 {
            crawler_refused += 1;
        }
    }
    eprintln!("verified crawler: {crawler_refused} of 40 requests refused");
    assert_eq!(crawler_refused, 0);

    // A burst over 30 a minute from one browser is limited.
    let (mut passed, mut limited) = (0, 0);
    let mut last = String::new();
    for _ in 0..60 {
        let (status, body) = fetch(&env, &slug, "127.0.0.11", BROWSER, "").await;
        match status {
            200 => passed += 1,
            429 => {
                limited += 1;
                last = body;
            }
            other => panic!("{other}: {body}"),
        }
    }
    eprintln!("burst of 60 at 30 a minute: {passed} passed, {limited} limited (429)");
    assert!(
        limited > 0 && passed > 0,
        "{passed} passed, {limited} limited"
    );
    assert_eq!(problem_code(&last), "rate_limited", "{last}");
    // Another address has its own bucket.
    assert_eq!(fetch(&env, &slug, "127.0.0.12", BROWSER, "").await.0, 200);

    // Challenged instead: the firewall's interstitial, whose cookie passes.
    let r = c
        .put(
            "/bots/policy",
            json!({ "enabled": true, "appId": app_id, "aiCrawlers": "challenge" }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let page = crate::eventually("GPTBot challenged", Duration::from_secs(20), || async {
        let (status, body) = fetch(&env, &slug, "127.0.0.10", GPTBOT, "").await;
        (status == 403 && body.contains("document.cookie")).then_some(body)
    })
    .await;
    let start = page.find("plateau_waf=").unwrap();
    let cookie = page[start..].split(';').next().unwrap().to_owned();
    assert_eq!(
        fetch(&env, &slug, "127.0.0.10", GPTBOT, &cookie).await.0,
        200
    );

    // The decisions, listed.
    let listed = crate::until(&c, "/bots/events", "the bot policy's events", |page| {
        let items = page["items"].as_array().unwrap();
        ["bots.ai", "bots.unverified-crawler", "bots.rate"]
            .iter()
            .all(|rule| items.iter().any(|e| e["ruleId"] == *rule))
    })
    .await;
    let items = listed["items"].as_array().unwrap();
    eprintln!("{} bot policy events listed", items.len());
    let ai = items.iter().find(|e| e["ruleId"] == "bots.ai").unwrap();
    assert_eq!(ai["appId"], app_id.as_str());
    assert_eq!(ai["clientNetwork"], "127.0.0.0/24");
    assert!(ai["userAgent"].as_str().unwrap().contains("GPTBot"));
    assert!(
        items
            .iter()
            .any(|e| e["ruleId"] == "bots.ai" && e["action"] == "challenge")
    );
    let rate = c.get("/bots/events?ruleId=bots.rate&limit=5").await.json();
    let rate = rate["items"].as_array().unwrap();
    assert!(
        !rate.is_empty()
            && rate
                .iter()
                .all(|e| e["ruleId"] == "bots.rate" && e["action"] == "block")
    );

    // Scopes: reading the policy needs bots:read.
    let waf_only = crate::mint_for(&env, &["waf:read"]).await;
    let r = plateau_testkit::Client::new(&env.server.url)
        .with_token(&waf_only)
        .get("/bots/policy")
        .await;
    assert_eq!(r.status, 403, "{}", r.text());

    // Without its own policy the app follows the organisation's again.
    let path = format!("/bots/policy?appId={app_id}");
    let r = c.delete(&path).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["source"], "organization");
    assert_eq!(c.delete(&path).await.status, 404);
    until_status(&env, &slug, "127.0.0.13", GPTBOT, 200).await;
}
