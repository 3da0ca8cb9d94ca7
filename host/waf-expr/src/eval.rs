//! Running a [`Program`] on the head of a request: fields are read
//! lazily, borrowed where they can be, and `and`/`or` stop early.

use std::borrow::Cow;
use std::net::IpAddr;

use percent_encoding::percent_decode_str;

use crate::compile::{Cmp, IntTest, IntValue, IpTest, Node, Program, StrField, StrTest, StrValue};

/// The head of a request, as a rule sees it.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub method: &'a str,
    /// Percent-encoded as sent.
    pub path: &'a str,
    /// Without the `?`.
    pub query: &'a str,
    /// Lowercase, without a port.
    pub host: &'a str,
    /// Names lowercase.
    pub headers: &'a [(String, String)],
    /// The client's address, when known (rules on `ip.src` do not match
    /// without it).
    pub ip: Option<IpAddr>,
}

impl Program {
    /// Whether the request matches.
    pub fn matches(&self, request: &Request<'_>) -> bool {
        node(&self.root, request)
    }
}

fn node(n: &Node, r: &Request<'_>) -> bool {
    match n {
        Node::Any(all) => all.iter().any(|n| node(n, r)),
        Node::All(all) => all.iter().all(|n| node(n, r)),
        Node::Not(inner) => !node(inner, r),
        Node::Str(value, test) => {
            let s = string(value, r);
            match test {
                StrTest::Eq(want) => *s == **want,
                StrTest::Contains(want) => s.contains(want.as_str()),
                StrTest::Matches(re) => re.is_match(&s),
                StrTest::In(set) => set.contains(&*s),
            }
        }
        Node::Int(value, test) => {
            let n = int(value, r);
            match test {
                IntTest::Cmp(cmp, want) => match cmp {
                    Cmp::Eq => n == *want,
                    Cmp::Lt => n < *want,
                    Cmp::Le => n <= *want,
                    Cmp::Gt => n > *want,
                    Cmp::Ge => n >= *want,
                },
                IntTest::In(set) => set.contains(&n),
            }
        }
        Node::Ip(test) => match (r.ip, test) {
            (None, _) => false,
            (Some(ip), IpTest::Eq(want)) => canonical(ip) == canonical(*want),
            (Some(ip), IpTest::In(nets)) => {
                let ip = canonical(ip);
                nets.iter().any(|net| net.contains(&ip))
            }
        },
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it carries.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn int(value: &IntValue, r: &Request<'_>) -> i64 {
    match value {
        IntValue::Len(s) => i64::try_from(string(s, r).len()).unwrap_or(i64::MAX),
    }
}

fn string<'a>(value: &StrValue, r: &Request<'a>) -> Cow<'a, str> {
    match value {
        StrValue::Field(field) => read(field, r),
        StrValue::Lower(inner) => {
            let s = string(inner, r);
            if s.chars().any(char::is_uppercase) {
                Cow::Owned(s.to_lowercase())
            } else {
                s
            }
        }
        StrValue::UrlDecode(inner) => Cow::Owned(url_decode(&string(inner, r))),
    }
}

/// `%XX` escapes and `+` decoded, invalid UTF-8 replaced.
pub(crate) fn url_decode(s: &str) -> String {
    let plus = s.replace('+', " ");
    percent_decode_str(&plus).decode_utf8_lossy().into_owned()
}

fn read<'a>(field: &StrField, r: &Request<'a>) -> Cow<'a, str> {
    match field {
        StrField::Method => Cow::Borrowed(r.method),
        StrField::Path => Cow::Borrowed(r.path),
        StrField::Query => Cow::Borrowed(r.query),
        StrField::Uri if r.query.is_empty() => Cow::Borrowed(r.path),
        StrField::Uri => Cow::Owned(format!("{}?{}", r.path, r.query)),
        StrField::Host => Cow::Borrowed(r.host),
        StrField::UserAgent => header(r, "user-agent", ", "),
        StrField::Referer => header(r, "referer", ", "),
        StrField::Cookie => header(r, "cookie", "; "),
        StrField::Header(name) => header(r, name, ", "),
        StrField::Arg(name) => r
            .query
            .split('&')
            .filter_map(|pair| {
                let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                (url_decode(k) == *name).then(|| Cow::Owned(url_decode(v)))
            })
            .next()
            .unwrap_or(Cow::Borrowed("")),
        StrField::CookieNamed(name) => {
            let cookies = header(r, "cookie", "; ");
            let found = cookies.split(';').find_map(|pair| {
                let (k, v) = pair.trim().split_once('=')?;
                (k == name).then(|| v.trim_matches('"').to_owned())
            });
            found.map_or(Cow::Borrowed(""), Cow::Owned)
        }
    }
}

/// A header's values, joined by `sep`; empty when absent.
fn header<'a>(r: &Request<'a>, name: &str, sep: &str) -> Cow<'a, str> {
    let mut values = r
        .headers
        .iter()
        .filter(|(n, _)| n == name)
        .map(|(_, v)| v.as_str());
    match (values.next(), values.next()) {
        (None, _) => Cow::Borrowed(""),
        (Some(one), None) => Cow::Borrowed(one),
        (Some(first), Some(second)) => {
            let mut all = vec![first, second];
            all.extend(values);
            Cow::Owned(all.join(sep))
        }
    }
}
