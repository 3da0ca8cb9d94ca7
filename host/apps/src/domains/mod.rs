//! Custom domains of apps (spec section 4.4): the one reading of a domain
//! name a user attaches ([`check_name`]), the DNS records they are asked
//! to set ([`records`]), and their check through the resolver the
//! operator configures ([`dns`]). The data plane's half is [`sync`] (the
//! edge's table of domains, certificates and challenges) and [`acme`]
//! (certificates, issued and renewed by the agent).
//!
//! A domain is verified once a TXT record at `_plateau-challenge.<domain>`
//! carries its token and the domain points at the edge: a CNAME to the
//! app's host name, or A/AAAA records all among the edge's addresses.

pub mod acme;
pub mod dns;
pub mod sync;

use std::net::IpAddr;

use serde::Serialize;
use utoipa::ToSchema;

/// The longest domain name (RFC 1035, in text form without the final dot).
const MAX_NAME: usize = 253;
/// The label under a domain that carries its ownership token.
pub const TXT_LABEL: &str = "_plateau-challenge";
/// What the TXT record says, before the token.
pub const TXT_PREFIX: &str = "plateau-verification=";

/// How custom domains are checked and pointed at on this platform.
#[derive(Clone, Debug, Default)]
pub struct DomainsConfig {
    /// The resolver that checks records (`PLATEAU_DNS_RESOLVER`); none:
    /// the system's.
    pub resolver: Option<Vec<std::net::SocketAddr>>,
    /// The edge's public addresses, for A and AAAA records
    /// (`PLATEAU_EDGE_ADDRESSES`).
    pub edge_addresses: Vec<IpAddr>,
}

/// One record a user sets at their DNS provider.
#[derive(Clone, Debug, Serialize, ToSchema, PartialEq, Eq)]
pub struct DnsRecord {
    /// CNAME, A, AAAA or TXT.
    #[serde(rename = "type")]
    pub record_type: String,
    pub name: String,
    pub value: String,
    /// What it is for: `routing` (one of them is enough) or `ownership`.
    pub purpose: String,
}

/// `name` as a domain to attach: lowercase, without a final dot; or why
/// it cannot be one (the platform's own apps domain and the names under
/// it are refused: they are served already).
pub fn check_name(name: &str, apps_domain: &str) -> Result<String, String> {
    let name = name.trim();
    let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    if name.is_empty() {
        return Err("must be a domain name such as www.example.com".to_owned());
    }
    if name.len() > MAX_NAME {
        return Err(format!("must be at most {MAX_NAME} characters"));
    }
    if name.parse::<IpAddr>().is_ok() {
        return Err("must be a domain name, not an IP address".to_owned());
    }
    let labels: Vec<&str> = name.split('.').collect();
    if labels.len() < 2 {
        return Err("must have at least two labels (www.example.com)".to_owned());
    }
    for label in &labels {
        if label.is_empty() || label.len() > 63 {
            return Err("each label must be 1 to 63 characters".to_owned());
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        {
            return Err(format!(
                "label {label:?} may hold only letters, digits and hyphens (write an \
                 international name in its xn-- form)"
            ));
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(format!(
                "label {label:?} must not start or end with a hyphen"
            ));
        }
    }
    if labels
        .last()
        .is_some_and(|tld| tld.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err("the last label must not be numeric".to_owned());
    }
    let apps = apps_domain.trim_matches('.').to_ascii_lowercase();
    if name == apps || name.ends_with(&format!(".{apps}")) {
        return Err(format!(
            "{name} is under the platform's apps domain {apps}, which serves every app already"
        ));
    }
    Ok(name)
}

/// The records that point `domain` at the app `host_name` and prove its
/// ownership with `token`.
pub fn records(
    domain: &str,
    host_name: &str,
    token: &str,
    edge_addresses: &[IpAddr],
) -> Vec<DnsRecord> {
    let routing = |record_type: &str, value: String| DnsRecord {
        record_type: record_type.to_owned(),
        name: domain.to_owned(),
        value,
        purpose: "routing".to_owned(),
    };
    let mut out = vec![routing("CNAME", host_name.to_owned())];
    for ip in edge_addresses {
        let kind = if ip.is_ipv4() { "A" } else { "AAAA" };
        out.push(routing(kind, ip.to_string()));
    }
    out.push(DnsRecord {
        record_type: "TXT".to_owned(),
        name: format!("{TXT_LABEL}.{domain}"),
        value: format!("{TXT_PREFIX}{token}"),
        purpose: "ownership".to_owned(),
    });
    out
}

/// A new ownership token: 40 random letters and digits.
pub fn new_token() -> String {
    plateau_core::secret::generate("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domain_names() {
        for (input, expected) in [
            ("www.Example.com.", Ok("www.example.com")),
            ("xn--bcher-kva.example", Ok("xn--bcher-kva.example")),
            ("a-b.c0.io", Ok("a-b.c0.io")),
            ("localhost", Err("at least two labels")),
            ("127.0.0.1", Err("not an IP address")),
            ("10.0.0.300", Err("not be numeric")),
            ("-a.example.com", Err("start or end with a hyphen")),
            ("a..example.com", Err("1 to 63")),
            ("*.example.com", Err("letters, digits and hyphens")),
            ("bücher.example", Err("xn--")),
            (
                "hello.apps.localhost",
                Err("under the platform's apps domain"),
            ),
            ("apps.localhost", Err("under the platform's apps domain")),
            ("myapps.localhost", Ok("myapps.localhost")),
        ] {
            match (check_name(input, "apps.localhost"), expected) {
                (Ok(name), Ok(want)) => assert_eq!(name, want, "{input}"),
                (Err(message), Err(part)) => assert!(message.contains(part), "{input}: {message}"),
                (got, want) => panic!("{input}: {got:?}, wanted {want:?}"),
            }
        }
        let long = format!("{}.com", "a.".repeat(130));
        assert!(check_name(&long, "apps.localhost").is_err());
    }

    #[test]
    fn records_point_at_the_app_and_carry_the_token() {
        let ips = ["192.0.2.1".parse().unwrap(), "2001:db8::1".parse().unwrap()];
        let rs = records("www.example.com", "shop.apps.example.net", "abc", &ips);
        let kinds: Vec<&str> = rs.iter().map(|r| r.record_type.as_str()).collect();
        assert_eq!(kinds, ["CNAME", "A", "AAAA", "TXT"]);
        assert_eq!(rs[0].value, "shop.apps.example.net");
        assert_eq!(rs[3].name, "_plateau-challenge.www.example.com");
        assert_eq!(rs[3].value, "plateau-verification=abc");
    }
}
