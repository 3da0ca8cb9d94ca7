//! The bot policy's user-agent classes (issue 35): which class a user
//! agent announces, from the lists kept as data files in this crate:
//! `data/ai-robots.txt` (AI crawlers and agents, from the ai.robots.txt
//! project, with its commit and date) and `data/bots.txt` (search engines'
//! crawlers with the host-name suffixes that verify them, SEO crawlers,
//! HTTP libraries; maintained here).
//!
//! A name matches a user agent that contains it, case-insensitively, with
//! no ASCII letter or digit right before or after it (`GPTBot/1.2` and
//! `compatible; GPTBot` match `GPTBot`, `NotGPTBots` does not). Classes are
//! tried in the order search, AI, SEO, HTTP client, so `Applebot` (on both
//! the search and the AI lists) is a search crawler, which DNS verifies.
//!
//! Pure, like the expression language: an edge-filter component can link
//! it.

use std::sync::OnceLock;

const AI_LIST: &str = include_str!("../data/ai-robots.txt");
const OWN_LIST: &str = include_str!("../data/bots.txt");

/// Where the AI crawlers' list comes from, as its file says.
pub const AI_LIST_SOURCE: &str =
    "https://github.com/ai-robots-txt/ai.robots.txt (robots.json at commit cfd62dbc3b81)";
/// The date of that commit.
pub const AI_LIST_DATE: &str = "2026-08-22";

/// A class of user agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// A search engine's crawler: allowed when DNS verifies it.
    Search,
    /// An AI crawler, assistant or agent.
    Ai,
    /// An SEO or marketing crawler.
    Seo,
    /// An HTTP library or command-line client.
    HttpClient,
}

impl Class {
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Search => "search",
            Class::Ai => "ai",
            Class::Seo => "seo",
            Class::HttpClient => "http-client",
        }
    }

    fn parse(s: &str) -> Option<Class> {
        Some(match s {
            "search" => Class::Search,
            "ai" => Class::Ai,
            "seo" => Class::Seo,
            "http-client" => Class::HttpClient,
            _ => return None,
        })
    }
}

/// One listed user agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bot {
    pub class: Class,
    /// As listed (`GPTBot`).
    pub name: String,
    /// For a search crawler, the host names its addresses' PTR records
    /// end with (`googlebot.com`); empty otherwise.
    pub suffixes: Vec<String>,
    lower: String,
}

impl Bot {
    /// Whether `host` (a PTR name, with or without the final dot) is one
    /// of this crawler's: equal to a suffix or ending with `.suffix`.
    pub fn owns_host(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.suffixes.iter().any(|s| {
            host == *s
                || (host.len() > s.len()
                    && host.ends_with(s.as_str())
                    && host.as_bytes()[host.len() - s.len() - 1] == b'.')
        })
    }
}

/// Every listed user agent, in the order they are tried.
pub fn all() -> &'static [Bot] {
    static ALL: OnceLock<Vec<Bot>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut all = read_own(OWN_LIST);
        all.extend(lines(AI_LIST).map(|name| Bot {
            class: Class::Ai,
            name: name.to_owned(),
            lower: name.to_ascii_lowercase(),
            suffixes: Vec::new(),
        }));
        // Stable: each list keeps its order within a class.
        all.sort_by_key(|b| match b.class {
            Class::Search => 0,
            Class::Ai => 1,
            Class::Seo => 2,
            Class::HttpClient => 3,
        });
        all
    })
}

fn lines(list: &str) -> impl Iterator<Item = &str> {
    list.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
}

fn read_own(list: &str) -> Vec<Bot> {
    lines(list)
        .filter_map(|line| {
            let mut fields = line.split('|').map(str::trim);
            let class = Class::parse(fields.next()?)?;
            let name = fields.next().filter(|n| !n.is_empty())?.to_owned();
            let suffixes = fields
                .next()
                .unwrap_or("")
                .split_whitespace()
                .map(str::to_ascii_lowercase)
                .collect();
            Some(Bot {
                class,
                lower: name.to_ascii_lowercase(),
                name,
                suffixes,
            })
        })
        .collect()
}

/// The listed bot `user_agent` announces, if any.
pub fn classify(user_agent: &str) -> Option<&'static Bot> {
    if user_agent.is_empty() {
        return None;
    }
    let ua = user_agent.to_ascii_lowercase();
    all().iter().find(|b| contains_name(&ua, &b.lower))
}

/// Whether lowercase `ua` contains lowercase `name` with no letter or
/// digit on either side.
fn contains_name(ua: &str, name: &str) -> bool {
    let bytes = ua.as_bytes();
    let mut from = 0;
    while let Some(at) = ua[from..].find(name) {
        let start = from + at;
        let end = start + name.len();
        let before = start == 0 || !bytes[start - 1].is_ascii_alphanumeric();
        let after = end == bytes.len() || !bytes[end].is_ascii_alphanumeric();
        if before && after {
            return true;
        }
        from = start + 1;
        while !ua.is_char_boundary(from) {
            from += 1;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(ua: &str) -> Option<(Class, &'static str)> {
        classify(ua).map(|b| (b.class, b.name.as_str()))
    }

    #[test]
    fn user_agents_fall_in_their_classes() {
        let google = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
        assert_eq!(class(google), Some((Class::Search, "Googlebot")));
        let gpt = "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; GPTBot/1.2; +https://openai.com/gptbot)";
        assert_eq!(class(gpt), Some((Class::Ai, "GPTBot")));
        assert_eq!(class("ClaudeBot/1.0"), Some((Class::Ai, "ClaudeBot")));
        assert_eq!(
            class("Mozilla/5.0 (compatible; AhrefsBot/7.0)"),
            Some((Class::Seo, "AhrefsBot"))
        );
        assert_eq!(class("curl/8.5.0"), Some((Class::HttpClient, "curl")));
        assert_eq!(
            class("Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"),
            None
        );
        // On both lists: the search crawler, which DNS verifies.
        assert_eq!(
            class("Mozilla/5.0 (Macintosh) Safari (Applebot/0.1)").map(|c| c.0),
            Some(Class::Search)
        );
        // A name inside a longer word is not that name.
        assert_eq!(class("NotGPTBots/1.0"), None);
        assert_eq!(class(""), None);
        assert_eq!(class("é GPTBot é"), Some((Class::Ai, "GPTBot")));
    }

    #[test]
    fn both_lists_are_read_whole() {
        let all = all();
        assert!(all.iter().filter(|b| b.class == Class::Ai).count() > 100);
        let google = all.iter().find(|b| b.name == "Googlebot").unwrap();
        assert_eq!(
            google.suffixes,
            ["googlebot.com", "google.com", "googleusercontent.com"]
        );
        assert!(all.iter().all(|b| !b.name.is_empty()));
        assert!(
            all.iter()
                .filter(|b| b.class == Class::Search)
                .all(|b| !b.suffixes.is_empty())
        );
        assert!(AI_LIST.contains("cfd62dbc3b81") && AI_LIST.contains(AI_LIST_DATE));
    }

    #[test]
    fn a_crawler_owns_the_hosts_under_its_suffixes() {
        let google = classify("Googlebot/2.1").unwrap();
        assert!(google.owns_host("crawl-66-249-66-1.googlebot.com."));
        assert!(google.owns_host("googlebot.com"));
        assert!(google.owns_host("rate-limited-proxy-1.google.com"));
        assert!(!google.owns_host("crawl.googlebot.com.evil.example"));
        assert!(!google.owns_host("notgooglebot.com"));
        assert!(!google.owns_host("search.msn.com"));
    }
}
