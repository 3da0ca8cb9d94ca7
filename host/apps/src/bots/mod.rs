//! The bot policy on the edge (issue 35): an app's policy (its own, else
//! its organisation's) as a host-native [`Filter`] that runs after the
//! firewall and before the app's edge-filter components.
//!
//! For each request, from its user agent (`plateau_waf_expr::bots`):
//! 1. A search engine's crawler whose address DNS verifies ([`verify`]:
//!    forward-confirmed reverse DNS, the name under one of that engine's
//!    suffixes) passes, without the rest of the policy. One that does not
//!    verify is an impostor or not yet verified, and meets
//!    `unverifiedCrawlers`.
//! 2. AI crawlers, SEO crawlers and HTTP clients meet their class's action.
//! 3. Every client but a verified crawler draws from its address's token
//!    bucket ([`rate`]); over the rate it meets `rateAction` (a block is a
//!    429).
//!
//! Actions: `allow` goes on; `log` records and goes on; `block` records
//! and answers 403 (429 for the rate); `challenge` answers the firewall's
//! interstitial ([`crate::waf::challenge`], same cookie) unless the request
//! carries a valid cookie. Decisions are recorded like the firewall's
//! matches, through its event queue into `waf_events`, under the rule ids
//! `bots.<class>` (`bots.ai`, `bots.seo`, `bots.http-client`,
//! `bots.unverified-crawler`, `bots.rate`); verified crawlers' passes and
//! `allow` are not recorded.
//!
//! Why host-native, as the firewall: the policy is the organisation's
//! data, changed through the API at any time; the decision needs DNS (the
//! edge-filter world gives a component no network by design), state that
//! outlives a call (the buckets, the verification cache), the key that
//! signs the challenge cookie, and the event queue. The lists are a pure
//! module (`plateau_waf_expr::bots`), as the expression language is.

pub mod rate;
pub mod verify;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use plateau_contract::Problem;
use plateau_contract::edge::{Action, HeaderChanges, RequestHead, ResponseHead, Verdict};
use plateau_core::time;
use plateau_edge::Filter;
use plateau_edge::filters::FilterFuture;
use plateau_waf_expr::bots::{self as list, Class};
use serde::{Deserialize, Serialize};

use crate::waf::{EventSink, challenge, events};
use rate::RateTable;
use verify::Verifier;

/// The name the bot policy has among an app's filters.
pub const NAME: &str = "plateau-bots";
/// How long a request waits for the verification of its address before
/// it counts as unverified (the lookup goes on for the next request).
pub const VERIFY_WAIT: Duration = Duration::from_millis(300);

/// What the policy does with a class of requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum BotAction {
    Allow,
    Log,
    Challenge,
    Block,
}

impl BotAction {
    pub fn parse(s: &str) -> Option<BotAction> {
        Some(match s {
            "allow" => BotAction::Allow,
            "log" => BotAction::Log,
            "challenge" => BotAction::Challenge,
            "block" => BotAction::Block,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            BotAction::Allow => "allow",
            BotAction::Log => "log",
            BotAction::Challenge => "challenge",
            BotAction::Block => "block",
        }
    }
}

/// An organisation's or an app's bot policy, as stored and shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BotPolicy {
    /// Off: the edge applies none of it.
    pub enabled: bool,
    /// Requests announcing a search engine's crawler from an address that
    /// DNS does not verify.
    pub unverified_crawlers: BotAction,
    pub ai_crawlers: BotAction,
    pub seo_crawlers: BotAction,
    pub http_clients: BotAction,
    /// Requests per client address per minute (a token bucket holding a
    /// minute's worth); 0: no limit.
    pub rate_per_minute: u32,
    /// Over the rate: `log`, `challenge` or `block` (429).
    pub rate_action: BotAction,
}

impl Default for BotPolicy {
    fn default() -> BotPolicy {
        BotPolicy {
            enabled: false,
            unverified_crawlers: BotAction::Block,
            ai_crawlers: BotAction::Block,
            seo_crawlers: BotAction::Allow,
            http_clients: BotAction::Allow,
            rate_per_minute: 0,
            rate_action: BotAction::Block,
        }
    }
}

/// What the agent keeps across chains: the verification cache and each
/// app's rate table.
pub struct BotState {
    pub verifier: Arc<Verifier>,
    rates: std::sync::Mutex<std::collections::HashMap<String, Arc<RateTable>>>,
}

impl BotState {
    pub fn new(verifier: Verifier) -> BotState {
        BotState {
            verifier: Arc::new(verifier),
            rates: Default::default(),
        }
    }

    /// `app_id`'s rate table, made on first use.
    pub fn rates(&self, app_id: &str) -> Arc<RateTable> {
        let mut rates = self.rates.lock().unwrap_or_else(|e| e.into_inner());
        rates.entry(app_id.to_owned()).or_default().clone()
    }
}

/// One app's bot policy at the edge.
pub struct Bots {
    org_id: String,
    app_id: String,
    policy: BotPolicy,
    verifier: Arc<Verifier>,
    rates: Arc<RateTable>,
    events: EventSink,
    key: [u8; 32],
}

impl Bots {
    pub fn new(
        (org_id, app_id): (&str, &str),
        policy: BotPolicy,
        state: &BotState,
        events: EventSink,
        key: [u8; 32],
    ) -> Bots {
        Bots {
            org_id: org_id.to_owned(),
            app_id: app_id.to_owned(),
            policy,
            verifier: state.verifier.clone(),
            rates: state.rates(app_id),
            events,
            key,
        }
    }

    /// The verdict on `head`, recording each decision but `allow`.
    pub async fn decide(&self, head: &RequestHead) -> Verdict {
        let ip: Option<IpAddr> = head.client_ip.parse().ok();
        let net = events::network(ip);
        let bot = list::classify(head.header("user-agent").unwrap_or(""));
        if let Some(bot) = bot {
            let (rule, action) = match bot.class {
                Class::Search => {
                    let host = match ip {
                        Some(ip) => self.verifier.confirmed_host(ip, VERIFY_WAIT).await,
                        None => None,
                    };
                    if host.is_some_and(|h| bot.owns_host(&h)) {
                        return Verdict::pass();
                    }
                    ("bots.unverified-crawler", self.policy.unverified_crawlers)
                }
                Class::Ai => ("bots.ai", self.policy.ai_crawlers),
                Class::Seo => ("bots.seo", self.policy.seo_crawlers),
                Class::HttpClient => ("bots.http-client", self.policy.http_clients),
            };
            let detail = || {
                format!(
                    "the bot policy of this app blocks {} ({})",
                    bot.name,
                    class_words(bot.class)
                )
            };
            if let Some(verdict) = self.act(rule, action, head, &net, detail, 403) {
                return verdict;
            }
        }
        let per_minute = self.policy.rate_per_minute;
        if per_minute > 0
            && let Some(ip) = ip
            && !self.rates.take(ip, per_minute, Instant::now())
        {
            let detail =
                || format!("more than {per_minute} requests a minute from this address; slow down");
            if let Some(verdict) = self.act(
                "bots.rate",
                self.policy.rate_action,
                head,
                &net,
                detail,
                429,
            ) {
                return verdict;
            }
        }
        Verdict::pass()
    }

    /// Applies `action`: the answer, or None to go on.
    fn act(
        &self,
        rule: &str,
        action: BotAction,
        head: &RequestHead,
        net: &str,
        detail: impl FnOnce() -> String,
        status: u16,
    ) -> Option<Verdict> {
        let now = time::now_ms();
        let record = || {
            let ids = (self.org_id.as_str(), self.app_id.as_str());
            self.events
                .push(events::row(ids, rule, action.as_str(), head, net, now));
        };
        match action {
            BotAction::Allow => None,
            BotAction::Log => {
                record();
                None
            }
            BotAction::Challenge => {
                if challenge::passed(&self.key, &self.app_id, net, head, now) {
                    return None;
                }
                record();
                Some(challenge::answer(&self.key, &self.app_id, net, now))
            }
            BotAction::Block => {
                record();
                Some(refused(status, &detail()))
            }
        }
    }
}

fn class_words(class: Class) -> &'static str {
    match class {
        Class::Search => "a search engine's crawler that DNS does not verify",
        Class::Ai => "an AI crawler",
        Class::Seo => "an SEO crawler",
        Class::HttpClient => "an HTTP client",
    }
}

/// 403 `blocked_bot` or 429 `rate_limited`, with a problem body.
fn refused(status: u16, detail: &str) -> Verdict {
    let code = if status == 429 {
        "rate_limited"
    } else {
        "blocked_bot"
    };
    Verdict {
        action: Action::Block {
            status,
            content_type: plateau_contract::PROBLEM_CONTENT_TYPE.to_owned(),
            body: Problem::new(status, code, detail).to_json(),
        },
        facts: Vec::new(),
    }
}

impl Filter for Bots {
    fn name(&self) -> &str {
        NAME
    }

    fn on_request(&self, head: RequestHead) -> FilterFuture<'_, Verdict> {
        Box::pin(async move { Ok(self.decide(&head).await) })
    }

    fn response_phase(&self) -> bool {
        false
    }

    fn on_response(&self, _: RequestHead, _: ResponseHead) -> FilterFuture<'_, HeaderChanges> {
        Box::pin(async { Ok(HeaderChanges::default()) })
    }
}
