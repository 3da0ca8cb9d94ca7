//! The `challenge` action: an interstitial page that a browser passes by
//! running its script, which stores a signed cookie and reloads; later
//! requests carrying a valid cookie pass the challenge rules of that app.
//!
//! The cookie, `plateau_waf=<expires>.<signature>`, is an HMAC-SHA256 of
//! the app, the client's network (/24 or /48) and the expiry under the
//! agents' key, so it is bound to one app and one network for
//! [`VALID_FOR`]. It proves that the client ran the page's script, no
//! more: a client that scripts the page passes too. It filters clients
//! that do not run JavaScript (most scanners and scrapers), as the
//! non-interactive challenges of other edges do.

use hmac::{Hmac, Mac};
use plateau_contract::edge::{Action, RequestHead, Verdict};
use sha2::Sha256;

/// The cookie's name.
pub const COOKIE: &str = "plateau_waf";
/// How long a passed challenge lasts, in milliseconds.
pub const VALID_FOR: i64 = 3_600_000;

type HmacSha256 = Hmac<Sha256>;

fn signature(key: &[u8; 32], app_id: &str, net: &str, expires: i64) -> String {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(format!("waf-challenge\n{app_id}\n{net}\n{expires}").as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// The cookie value for a client of network `net` passing now.
pub fn token(key: &[u8; 32], app_id: &str, net: &str, now: i64) -> String {
    let expires = now + VALID_FOR;
    format!("{expires}.{}", signature(key, app_id, net, expires))
}

/// Whether `value` is a cookie this app issued to network `net` that has
/// not expired.
pub fn valid(key: &[u8; 32], app_id: &str, net: &str, value: &str, now: i64) -> bool {
    let Some((expires, sig)) = value.split_once('.') else {
        return false;
    };
    let Ok(expires) = expires.parse::<i64>() else {
        return false;
    };
    if expires <= now || expires > now + VALID_FOR {
        return false;
    }
    let Ok(sig) = hex::decode(sig) else {
        return false;
    };
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(format!("waf-challenge\n{app_id}\n{net}\n{expires}").as_bytes());
    mac.verify_slice(&sig).is_ok()
}

/// The interstitial: 403, an HTML page whose script sets the cookie and
/// reloads; without a script it says what to do.
pub fn interstitial(token: &str) -> Verdict {
    let body = format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>Checking your browser</title>\
         <meta name=\"robots\" content=\"noindex\"></head>\n<body>\
         <p>Checking your browser before going on. This takes a moment.</p>\
         <noscript><p>Turn JavaScript on and reload the page.</p></noscript>\n\
         <script>document.cookie = \"{COOKIE}={token}; path=/; max-age=3600; SameSite=Lax\"; \
         location.reload();</script>\n</body></html>\n"
    );
    Verdict {
        action: Action::Block {
            status: 403,
            content_type: "text/html; charset=utf-8".to_owned(),
            body: body.into_bytes(),
        },
        facts: Vec::new(),
    }
}

/// Whether `head` carries a valid cookie of this app for network `net`.
pub fn passed(key: &[u8; 32], app_id: &str, net: &str, head: &RequestHead, now: i64) -> bool {
    head.header("cookie")
        .and_then(|c| cookie(c, COOKIE))
        .is_some_and(|v| valid(key, app_id, net, v, now))
}

/// The interstitial with a fresh cookie for network `net`.
pub fn answer(key: &[u8; 32], app_id: &str, net: &str, now: i64) -> Verdict {
    interstitial(&token(key, app_id, net, now))
}

/// The value of cookie `name` in a Cookie header.
pub fn cookie<'a>(header: &'a str, name: &str) -> Option<&'a str> {
    header.split(';').find_map(|pair| {
        let (k, v) = pair.trim().split_once('=')?;
        (k == name).then_some(v)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cookie_is_valid_for_its_app_and_network_until_it_expires() {
        let key = [7; 32];
        let t = token(&key, "app_a", "192.0.2.0/24", 1_000);
        assert!(valid(&key, "app_a", "192.0.2.0/24", &t, 2_000));
        assert!(!valid(&key, "app_b", "192.0.2.0/24", &t, 2_000));
        assert!(!valid(&key, "app_a", "198.51.100.0/24", &t, 2_000));
        assert!(!valid(&[8; 32], "app_a", "192.0.2.0/24", &t, 2_000));
        assert!(!valid(&key, "app_a", "192.0.2.0/24", &t, 1_000 + VALID_FOR));
        let forged = format!("{}.{}", 1_000 + VALID_FOR - 1, t.split_once('.').unwrap().1);
        assert!(!valid(&key, "app_a", "192.0.2.0/24", &forged, 2_000));
        assert!(!valid(&key, "app_a", "192.0.2.0/24", "garbage", 2_000));
        assert_eq!(cookie("a=1; plateau_waf=x.y", COOKIE), Some("x.y"));
    }
}
