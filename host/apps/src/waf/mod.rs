//! The firewall on the edge: an app's firewall rules (its own and its
//! organisation's, enabled, lowest priority first) compiled once into a
//! host-native [`Filter`] that runs before the app's edge-filter
//! components.
//!
//! Actions: `log` records the match and goes on; `skip` records it and
//! lets the request through without the rules after it; `block` records
//! it and answers 403 (a problem body naming the rule); `challenge`
//! answers the interstitial of [`challenge`] unless the request carries a
//! valid cookie, in which case it goes on.
//!
//! Why host-native and not an edge-filter component: the rules are the
//! organisation's data, changed through the API at any time, and the
//! edge-filter world gives a component no configuration, no key to sign
//! the challenge cookie with and no place to write events (it is a pure
//! function of the head by design). The expression language is a pure
//! crate (`plateau-waf-expr`) that builds for `wasm32-wasip2`, so a
//! component can link it once the world carries configuration.

pub mod challenge;
pub mod events;

use std::net::IpAddr;

use plateau_contract::Problem;
use plateau_contract::edge::{Action, HeaderChanges, RequestHead, ResponseHead, Verdict};
use plateau_core::time;
use plateau_edge::Filter;
use plateau_edge::filters::FilterFuture;
use plateau_store::waf::RuleRow;
use plateau_waf_expr::{Program, Request};

pub use events::EventSink;

/// The name the firewall has among an app's filters.
pub const NAME: &str = "plateau-waf";

/// What a rule does on a match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, utoipa::ToSchema)]
#[schema(rename_all = "lowercase")]
pub enum WafAction {
    Block,
    Log,
    Skip,
    Challenge,
}

impl WafAction {
    pub fn parse(s: &str) -> Option<WafAction> {
        Some(match s {
            "block" => WafAction::Block,
            "log" => WafAction::Log,
            "skip" => WafAction::Skip,
            "challenge" => WafAction::Challenge,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            WafAction::Block => "block",
            WafAction::Log => "log",
            WafAction::Skip => "skip",
            WafAction::Challenge => "challenge",
        }
    }
}

struct Rule {
    id: String,
    action: WafAction,
    program: Program,
}

/// One app's firewall.
pub struct Waf {
    org_id: String,
    app_id: String,
    rules: Vec<Rule>,
    events: EventSink,
    key: [u8; 32],
}

impl Waf {
    /// The firewall of `rules` (already in order), then of the managed
    /// rule set when `managed` names its action; a stored rule that no
    /// longer compiles or names an unknown action is left out.
    pub fn new(
        org_id: &str,
        app_id: &str,
        rules: &[RuleRow],
        managed: Option<WafAction>,
        events: EventSink,
        key: [u8; 32],
    ) -> Waf {
        let mut rules: Vec<Rule> = rules
            .iter()
            .filter(|r| r.enabled == 1)
            .filter_map(|r| {
                let action = WafAction::parse(&r.action)?;
                let program = plateau_waf_expr::compile(&r.expression).ok()?;
                Some(Rule {
                    id: r.id.clone(),
                    action,
                    program,
                })
            })
            .collect();
        if let Some(action) = managed {
            rules.extend(plateau_waf_expr::managed::compiled().into_iter().map(
                |(rule, program)| Rule {
                    id: rule.id.to_owned(),
                    action,
                    program,
                },
            ));
        }
        Waf {
            org_id: org_id.to_owned(),
            app_id: app_id.to_owned(),
            rules,
            events,
            key,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The verdict on `head`, recording each match.
    pub fn decide(&self, head: &RequestHead) -> Verdict {
        let ip: Option<IpAddr> = head.client_ip.parse().ok();
        let request = Request {
            method: &head.method,
            path: &head.path,
            query: &head.query,
            host: &head.host,
            headers: &head.headers,
            ip,
        };
        let net = events::network(ip);
        let now = time::now_ms();
        for rule in &self.rules {
            if !rule.program.matches(&request) {
                continue;
            }
            match rule.action {
                WafAction::Log => self.record(rule, head, &net, now),
                WafAction::Skip => {
                    self.record(rule, head, &net, now);
                    return Verdict::pass();
                }
                WafAction::Block => {
                    self.record(rule, head, &net, now);
                    return blocked(&rule.id);
                }
                WafAction::Challenge => {
                    if !challenge::passed(&self.key, &self.app_id, &net, head, now) {
                        self.record(rule, head, &net, now);
                        return challenge::answer(&self.key, &self.app_id, &net, now);
                    }
                }
            }
        }
        Verdict::pass()
    }

    fn record(&self, rule: &Rule, head: &RequestHead, net: &str, now: i64) {
        self.events.push(events::row(
            (&self.org_id, &self.app_id),
            &rule.id,
            rule.action.as_str(),
            head,
            net,
            now,
        ));
    }
}

/// 403 with a problem body naming the rule.
fn blocked(rule_id: &str) -> Verdict {
    let problem = Problem::new(
        403,
        "blocked_by_firewall",
        format!("the firewall rule {rule_id} of this app blocked the request"),
    );
    Verdict {
        action: Action::Block {
            status: 403,
            content_type: plateau_contract::PROBLEM_CONTENT_TYPE.to_owned(),
            body: problem.to_json(),
        },
        facts: Vec::new(),
    }
}

impl Filter for Waf {
    fn name(&self) -> &str {
        NAME
    }

    fn on_request(&self, head: RequestHead) -> FilterFuture<'_, Verdict> {
        let verdict = self.decide(&head);
        Box::pin(async move { Ok(verdict) })
    }

    fn response_phase(&self) -> bool {
        false
    }

    fn on_response(&self, _: RequestHead, _: ResponseHead) -> FilterFuture<'_, HeaderChanges> {
        Box::pin(async { Ok(HeaderChanges::default()) })
    }
}
