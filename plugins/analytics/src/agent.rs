//! A visitor's user agent as the stats show it: browser, operating system
//! and device class, from woothee (a maintained parser over a shared
//! dataset). Bots are refused here, the one place: a user agent that
//! woothee calls a crawler, that names a bot of the firewall's lists
//! (`plateau_waf_expr::bots`: AI, search and SEO crawlers, HTTP clients),
//! that says `bot`, `spider`, `crawl` or `headless`, or that is empty.

use std::sync::OnceLock;

use woothee::parser::Parser;

/// The parts of a user agent the stats break down by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Agent {
    /// `Chrome`, `Firefox`, `Safari`, ... or `Unknown`.
    pub browser: String,
    /// `Windows 10`, `Mac OSX`, `Android`, `iPhone`, `Linux`, ... or `Unknown`.
    pub os: String,
    /// `desktop`, `mobile`, `appliance` or `unknown`.
    pub device: String,
}

fn parser() -> &'static Parser {
    static PARSER: OnceLock<Parser> = OnceLock::new();
    PARSER.get_or_init(Parser::new)
}

/// Words that mark a client as automated in user agents no list names.
const BOT_WORDS: [&str; 6] = ["bot", "spider", "crawl", "headless", "lighthouse", "slurp"];

/// The agent of a human visitor's browser; `None` for a bot.
pub fn parse(user_agent: &str) -> Option<Agent> {
    let ua = user_agent.trim();
    if ua.is_empty() || plateau_waf_expr::bots::classify(ua).is_some() {
        return None;
    }
    let lower = ua.to_ascii_lowercase();
    if BOT_WORDS.iter().any(|w| lower.contains(w)) {
        return None;
    }
    let Some(found) = parser().parse(ua) else {
        return Some(unknown());
    };
    if found.category == "crawler" {
        return None;
    }
    let device = match found.category {
        "pc" => "desktop",
        "smartphone" | "mobilephone" => "mobile",
        "appliance" => "appliance",
        _ => "unknown",
    };
    Some(Agent {
        browser: known(found.name),
        os: known(found.os),
        device: device.to_owned(),
    })
}

fn known(value: &str) -> String {
    if value.is_empty() || value == woothee::woothee::VALUE_UNKNOWN {
        "Unknown".to_owned()
    } else {
        value.to_owned()
    }
}

fn unknown() -> Agent {
    Agent {
        browser: "Unknown".to_owned(),
        os: "Unknown".to_owned(),
        device: "unknown".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIREFOX: &str =
        "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0";
    const IPHONE: &str = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) \
         AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1";

    #[test]
    fn browsers_are_named_with_their_os_and_device() {
        let firefox = parse(FIREFOX).unwrap();
        assert_eq!(firefox.browser, "Firefox");
        assert_eq!(firefox.os, "Linux");
        assert_eq!(firefox.device, "desktop");
        let iphone = parse(IPHONE).unwrap();
        assert_eq!(iphone.browser, "Safari");
        assert_eq!(iphone.device, "mobile");
        assert_eq!(parse("SomethingNew/1.0").unwrap().browser, "Unknown");
    }

    #[test]
    fn bots_are_refused() {
        for ua in [
            "",
            "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)",
            "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)",
            "curl/8.5.0",
            "python-requests/2.32.3",
            "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/120.0.0.0 Safari/537.36",
        ] {
            assert_eq!(parse(ua), None, "{ua}");
        }
    }
}
