//! Email addresses as the relay accepts them: `user@example.com` or
//! `Display Name <user@example.com>`, ASCII (no SMTPUTF8), one address per
//! string, and sender patterns (`user@example.com` or `*@example.com`).
//!
//! The rules are stricter than RFC 5322 on purpose: no quoted local parts,
//! no comments, no groups, no address literals, and a domain with at least
//! one dot. What passes here also passes the host's parser, so a message
//! is refused with 400 when it is sent, not when it is delivered.

use std::fmt;

/// The longest address (RFC 5321's path limit, without the brackets).
pub const MAX_ADDRESS: usize = 254;
/// The longest display name, in bytes.
pub const MAX_DISPLAY_NAME: usize = 256;

/// One mailbox: an optional display name and an address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mailbox {
    pub name: Option<String>,
    /// `local@domain`, as written.
    pub address: String,
}

impl Mailbox {
    /// Parses `user@example.com` or `Name <user@example.com>`; the error
    /// says what is wrong, for a `validation_failed` message.
    pub fn parse(raw: &str) -> Result<Mailbox, String> {
        if raw.chars().any(char::is_control) {
            return Err("must not contain line breaks or control characters".into());
        }
        let raw = raw.trim();
        if raw.is_empty() {
            return Err("must be an address like user@example.com".into());
        }
        let (name, address) = match raw.strip_suffix('>') {
            Some(rest) => {
                let (name, address) = rest
                    .rsplit_once('<')
                    .ok_or("has a > without a matching <")?;
                (Some(display_name(name)?), address.trim())
            }
            None => (None, raw),
        };
        check_address(address)?;
        Ok(Mailbox {
            name: name.filter(|n| !n.is_empty()),
            address: address.to_owned(),
        })
    }

    /// The address lowercased, for comparisons (suppressions, senders).
    pub fn key(&self) -> String {
        self.address.to_ascii_lowercase()
    }

    /// The domain, lowercased.
    pub fn domain(&self) -> String {
        self.address
            .rsplit_once('@')
            .map_or_else(String::new, |(_, d)| d.to_ascii_lowercase())
    }
}

impl fmt::Display for Mailbox {
    /// `Name <user@example.com>` with the name quoted when it needs to be,
    /// or the bare address.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            None => f.write_str(&self.address),
            Some(name) if name.chars().all(is_atext_or_space) => {
                write!(f, "{name} <{}>", self.address)
            }
            Some(name) => {
                let escaped = name.replace('\\', "\\\\").replace('"', "\\\"");
                write!(f, "\"{escaped}\" <{}>", self.address)
            }
        }
    }
}

fn is_atext_or_space(c: char) -> bool {
    c == ' ' || is_atext(c)
}

/// The characters of an unquoted local part (RFC 5322 `atext`).
fn is_atext(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c)
}

/// A display name, unquoted; `"..."` quotes are removed with their escapes.
fn display_name(raw: &str) -> Result<String, String> {
    let raw = raw.trim();
    let name = match raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        Some(quoted) => {
            let mut out = String::with_capacity(quoted.len());
            let mut chars = quoted.chars();
            while let Some(c) = chars.next() {
                match c {
                    '\\' => out.push(chars.next().ok_or("ends with a lone backslash")?),
                    '"' => return Err("has an unescaped quote in the display name".into()),
                    c => out.push(c),
                }
            }
            out
        }
        None => {
            if raw.contains(['"', '<', '>', ',', ';', '@', ':']) {
                return Err(
                    "has a display name with special characters: put it in double quotes".into(),
                );
            }
            raw.to_owned()
        }
    };
    if name.len() > MAX_DISPLAY_NAME {
        return Err(format!("has a display name over {MAX_DISPLAY_NAME} bytes"));
    }
    Ok(name)
}

/// `local@domain`: a dot-atom local part of at most 64 bytes and a domain
/// of letter-digit-hyphen labels with at least one dot.
pub fn check_address(address: &str) -> Result<(), String> {
    let shape = "must be an address like user@example.com";
    if address.len() > MAX_ADDRESS {
        return Err(format!("must be at most {MAX_ADDRESS} bytes"));
    }
    if !address.is_ascii() {
        return Err(format!(
            "{shape}, in ASCII (internationalized addresses are not supported)"
        ));
    }
    let (local, domain) = address.rsplit_once('@').ok_or(shape)?;
    let local_ok = !local.is_empty()
        && local.len() <= 64
        && local
            .split('.')
            .all(|atom| !atom.is_empty() && atom.chars().all(is_atext));
    if !local_ok {
        return Err(format!("{shape} (the part before @ is not valid)"));
    }
    check_domain(domain).map_err(|why| format!("{shape} ({why})"))
}

/// A host name of letter-digit-hyphen labels with at least one dot.
pub fn check_domain(domain: &str) -> Result<(), String> {
    let labels: Vec<&str> = domain.split('.').collect();
    let label_ok = |label: &&str| {
        !label.is_empty()
            && label.len() <= 63
            && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    if domain.len() > 253 || labels.len() < 2 || !labels.iter().all(label_ok) {
        return Err("the domain is not a valid host name".into());
    }
    if labels
        .last()
        .is_some_and(|tld| tld.chars().all(|c| c.is_ascii_digit()))
    {
        return Err("the domain is not a valid host name".into());
    }
    Ok(())
}

/// An allowed sender: an exact address, or every address of a domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SenderPattern {
    Address(String),
    Domain(String),
}

impl SenderPattern {
    /// `user@example.com` or `*@example.com` (no display name).
    pub fn parse(raw: &str) -> Result<SenderPattern, String> {
        let raw = raw.trim();
        match raw.strip_prefix("*@") {
            Some(domain) => {
                check_domain(domain)
                    .map_err(|why| format!("must be user@example.com or *@example.com ({why})"))?;
                Ok(SenderPattern::Domain(domain.to_ascii_lowercase()))
            }
            None => {
                check_address(raw).map_err(|why| {
                    format!("{why}, or *@example.com for every address of a domain")
                })?;
                Ok(SenderPattern::Address(raw.to_ascii_lowercase()))
            }
        }
    }

    /// Whether `mailbox` may send; addresses compare without case.
    pub fn allows(&self, mailbox: &Mailbox) -> bool {
        match self {
            SenderPattern::Address(address) => *address == mailbox.key(),
            SenderPattern::Domain(domain) => *domain == mailbox.domain(),
        }
    }

    /// The plain address, for an exact pattern.
    pub fn address(&self) -> Option<&str> {
        match self {
            SenderPattern::Address(address) => Some(address),
            SenderPattern::Domain(_) => None,
        }
    }
}

impl fmt::Display for SenderPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SenderPattern::Address(address) => f.write_str(address),
            SenderPattern::Domain(domain) => write!(f, "*@{domain}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mailboxes_parse_or_say_why_not() {
        let ok = [
            ("ann@example.com", None, "ann@example.com"),
            ("  ann@example.com ", None, "ann@example.com"),
            ("Ann <ann@example.com>", Some("Ann"), "ann@example.com"),
            (
                "\"Doe, Ann\" <ann@example.com>",
                Some("Doe, Ann"),
                "ann@example.com",
            ),
            (
                "\"A \\\"B\\\" C\" <a.b+tag@mail.example.co>",
                Some("A \"B\" C"),
                "a.b+tag@mail.example.co",
            ),
            ("<ann@example.com>", None, "ann@example.com"),
        ];
        for (raw, name, address) in ok {
            let mailbox = Mailbox::parse(raw).unwrap_or_else(|e| panic!("{raw}: {e}"));
            assert_eq!(
                (mailbox.name.as_deref(), mailbox.address.as_str()),
                (name, address),
                "{raw}"
            );
        }
        let bad = [
            "",
            "ann",
            "ann@",
            "@example.com",
            "ann@localhost",
            "ann@example..com",
            "ann@-example.com",
            "ann@1.2.3.4",
            "ann..b@example.com",
            ".ann@example.com",
            "ann@example.com\r\nBcc: eve@example.com",
            "ann@example.com\nX: y",
            "ann@example.com, bob@example.com",
            "Ann, B <ann@example.com>",
            "Ann <ann@example.com",
            "ann@exämple.com",
            "\"ann\"@example.com",
        ];
        for raw in bad {
            assert!(Mailbox::parse(raw).is_err(), "{raw:?} was accepted");
        }
    }

    #[test]
    fn display_round_trips_through_the_parser() {
        for raw in [
            "Ann <a@example.com>",
            "\"Doe, Ann\" <a@example.com>",
            "a@example.com",
        ] {
            let mailbox = Mailbox::parse(raw).unwrap();
            assert_eq!(Mailbox::parse(&mailbox.to_string()).unwrap(), mailbox);
        }
        let quoted = Mailbox::parse("\"Doe, Ann\" <a@example.com>").unwrap();
        assert_eq!(quoted.to_string(), "\"Doe, Ann\" <a@example.com>");
    }

    #[test]
    fn sender_patterns_match_addresses_or_domains() {
        let ann = Mailbox::parse("Ann <Ann@Example.com>").unwrap();
        let table = [
            ("ann@example.com", true),
            ("ANN@EXAMPLE.COM", true),
            ("bob@example.com", false),
            ("*@example.com", true),
            ("*@EXAMPLE.com", true),
            ("*@mail.example.com", false),
            ("*@other.org", false),
        ];
        for (pattern, allowed) in table {
            let parsed = SenderPattern::parse(pattern).unwrap();
            assert_eq!(parsed.allows(&ann), allowed, "{pattern}");
        }
        for bad in [
            "*",
            "*@",
            "*@localhost",
            "Ann <ann@example.com>",
            "*.example.com",
        ] {
            assert!(SenderPattern::parse(bad).is_err(), "{bad}");
        }
    }
}
