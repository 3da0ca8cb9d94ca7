//! The records of an edge filter (`plateau:edge-filter/edge@0.1.0`) and the
//! rules both sides hold them to: what a verdict may answer, and how a chain
//! of verdicts combines. The host's runtime and edge and the SDK's guest
//! glue and test harness all use these, so a rule changes in one place.

use serde::{Deserialize, Serialize};

/// An HTTP header, name lowercase.
pub type Header = (String, String);

/// The head of a request to an app.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestHead {
    pub method: String,
    /// As sent, percent-encoded.
    pub path: String,
    /// Without the leading `?`.
    pub query: String,
    /// Without a port.
    pub host: String,
    pub headers: Vec<Header>,
    pub client_ip: String,
    pub app_id: String,
}

impl RequestHead {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Applies `changes`: removals first, then each set replaces every
    /// header of its name.
    pub fn apply(&mut self, changes: &HeaderChanges) {
        apply_headers(&mut self.headers, changes);
    }
}

/// The head of an app's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResponseHead {
    pub status: u16,
    pub headers: Vec<Header>,
}

/// Headers to set (replacing those of the same name) and to remove.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeaderChanges {
    pub set: Vec<Header>,
    pub remove: Vec<String>,
}

impl HeaderChanges {
    pub fn is_empty(&self) -> bool {
        self.set.is_empty() && self.remove.is_empty()
    }
}

/// Removes then sets, names compared without case; set names are stored
/// lowercase.
pub fn apply_headers(headers: &mut Vec<Header>, changes: &HeaderChanges) {
    headers.retain(|(n, _)| {
        !changes.remove.iter().any(|r| r.eq_ignore_ascii_case(n))
            && !changes.set.iter().any(|(s, _)| s.eq_ignore_ascii_case(n))
    });
    for (name, value) in &changes.set {
        headers.push((name.to_ascii_lowercase(), value.clone()));
    }
}

/// What a filter does with a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Action {
    Pass,
    Block {
        status: u16,
        content_type: String,
        body: Vec<u8>,
    },
    Redirect {
        status: u16,
        location: String,
    },
    Modify(HeaderChanges),
}

/// Something a filter observed, recorded by the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fact {
    pub name: String,
    pub value: String,
}

/// A filter's answer to a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    pub action: Action,
    pub facts: Vec<Fact>,
}

impl Verdict {
    pub fn pass() -> Verdict {
        Verdict {
            action: Action::Pass,
            facts: Vec::new(),
        }
    }

    /// A block with a plain-text body.
    pub fn block(status: u16, body: impl Into<String>) -> Verdict {
        Verdict {
            action: Action::Block {
                status,
                content_type: "text/plain; charset=utf-8".into(),
                body: body.into().into_bytes(),
            },
            facts: Vec::new(),
        }
    }

    pub fn redirect(status: u16, location: impl Into<String>) -> Verdict {
        Verdict {
            action: Action::Redirect {
                status,
                location: location.into(),
            },
            facts: Vec::new(),
        }
    }

    /// Hands the request on with `name: value` set.
    pub fn set_header(name: impl Into<String>, value: impl Into<String>) -> Verdict {
        Verdict {
            action: Action::Modify(HeaderChanges {
                set: vec![(name.into(), value.into())],
                remove: Vec::new(),
            }),
            facts: Vec::new(),
        }
    }

    /// This verdict recording `name` = `value`.
    pub fn fact(mut self, name: impl Into<String>, value: impl Into<String>) -> Verdict {
        self.facts.push(Fact {
            name: name.into(),
            value: value.into(),
        });
        self
    }

    /// Why the host refuses this verdict, if it does: a block outside
    /// 400..=599, a redirect status that is not one, a location or header
    /// that is no valid header value, or over [`MAX_FACTS`] facts. A refused
    /// verdict counts as a failure of the filter.
    pub fn problem(&self) -> Option<String> {
        if self.facts.len() > MAX_FACTS {
            return Some(format!("a verdict records at most {MAX_FACTS} facts"));
        }
        match &self.action {
            Action::Pass => None,
            Action::Block { status, .. } if !(400..=599).contains(status) => Some(format!(
                "a block answers a status from 400 to 599, not {status}"
            )),
            Action::Redirect { status, .. } if !REDIRECTS.contains(status) => Some(format!(
                "a redirect answers 301, 302, 303, 307 or 308, not {status}"
            )),
            Action::Redirect { location, .. } if !is_header_value(location) => {
                Some("a redirect's location must be a valid header value".into())
            }
            Action::Modify(changes) => changes_problem(changes),
            _ => None,
        }
    }
}

/// Why header changes are refused, if they are.
pub fn changes_problem(changes: &HeaderChanges) -> Option<String> {
    for (name, value) in &changes.set {
        if !is_header_name(name) || !is_header_value(value) {
            return Some(format!("the header {name:?} is not a valid header"));
        }
        if RESERVED.iter().any(|r| r.eq_ignore_ascii_case(name)) {
            return Some(format!("a filter may not set {name}"));
        }
    }
    for name in &changes.remove {
        if RESERVED.iter().any(|r| r.eq_ignore_ascii_case(name)) {
            return Some(format!("a filter may not remove {name}"));
        }
    }
    None
}

/// The most facts one verdict records.
pub const MAX_FACTS: usize = 16;

const REDIRECTS: [u16; 5] = [301, 302, 303, 307, 308];

/// Headers the edge owns: framing and the client's address.
const RESERVED: [&str; 6] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
    "x-forwarded-for",
];

fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn is_header_value(value: &str) -> bool {
    value
        .bytes()
        .all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
}

/// What a filter's owner wants when the filter traps, runs out of fuel or
/// time, or answers a refused verdict.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum FailMode {
    /// Hand the request on as if the filter had passed it.
    #[default]
    Open,
    /// Answer 503 without the app.
    Closed,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_the_host_refuses() {
        assert_eq!(Verdict::pass().problem(), None);
        assert_eq!(Verdict::block(403, "no").problem(), None);
        assert!(Verdict::block(200, "ok").problem().is_some());
        assert!(Verdict::redirect(200, "/x").problem().is_some());
        assert!(
            Verdict::redirect(302, "/x\r\nset-cookie: a")
                .problem()
                .is_some()
        );
        assert!(Verdict::set_header("x-ok", "1").problem().is_none());
        assert!(Verdict::set_header("bad name", "1").problem().is_some());
        assert!(Verdict::set_header("Host", "evil").problem().is_some());
        assert!(
            Verdict::set_header("x-a", "line\nbreak")
                .problem()
                .is_some()
        );
    }

    #[test]
    fn changes_remove_then_replace() {
        let mut head = RequestHead {
            headers: vec![
                ("x-a".into(), "1".into()),
                ("x-a".into(), "2".into()),
                ("cookie".into(), "c".into()),
            ],
            ..RequestHead::default()
        };
        head.apply(&HeaderChanges {
            set: vec![("X-A".into(), "3".into())],
            remove: vec!["Cookie".into()],
        });
        assert_eq!(head.headers, vec![("x-a".to_owned(), "3".to_owned())]);
        assert_eq!(head.header("X-a"), Some("3"));
    }
}
