//! Where a subscription replicates from: another Plateau database of the
//! same organisation, or any PostgreSQL server named by a connection
//! string, which must pass the egress guard (`plateau-egress`: no
//! loopback, private, link-local or metadata address unless the operator's
//! `PLATEAU_EGRESS_ALLOW` exempts it). The address checked is the address
//! used: the subscriber's connection string pins it (`hostaddr`), so a
//! name that resolves elsewhere later changes nothing.
//!
//! The host's own connections to an external source read the catalog
//! only, in read-only sessions with the host's `search_path`.

use std::net::IpAddr;
use std::time::Duration;

use plateau_store::databases::Database;
use sqlx::postgres::{PgConnectOptions, PgSslMode};
use sqlx::{ConnectOptions, PgConnection};

use crate::service::DatabaseService;
use crate::{Error, Result};

/// How long the host waits for a source to answer.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A server named by a connection string, its address checked.
#[derive(Clone, Debug)]
pub struct External {
    pub host: String,
    pub hostaddr: IpAddr,
    pub port: u16,
    pub dbname: String,
    pub user: String,
    pub password: String,
    /// libpq's `sslmode` (`prefer` unless the string names another).
    pub sslmode: String,
}

/// Where a subscription replicates from.
pub enum Source {
    /// A Plateau database of the subscriber's organisation.
    Plateau(Box<Database>),
    External(External),
}

fn refused(detail: String) -> Error {
    Error::Refused {
        code: "source_unreachable",
        detail,
    }
}

impl External {
    /// Parses `postgres[ql]://user:password@host[:port]/dbname[?sslmode=..]`
    /// and checks every address `host` resolves to against the guard.
    pub async fn parse(text: &str, allow: &[ipnet::IpNet]) -> Result<External> {
        let invalid = |why: &str| Error::Refused {
            code: "invalid_source",
            detail: format!("source: {why}"),
        };
        let url = url::Url::parse(text).map_err(|_| invalid("not a connection string"))?;
        if !matches!(url.scheme(), "postgres" | "postgresql") {
            return Err(invalid(
                "a database id, or a postgres:// or postgresql:// URI",
            ));
        }
        let host = url
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| invalid("names no host"))?
            .trim_matches(['[', ']'])
            .to_owned();
        let decode = |s: &str| {
            percent_decode(s).ok_or_else(|| invalid("holds a badly percent-encoded part"))
        };
        let user = decode(url.username())?;
        let password = decode(url.password().unwrap_or_default())?;
        let dbname = decode(url.path().trim_start_matches('/'))?;
        if user.is_empty() || dbname.is_empty() {
            return Err(invalid("must name a user and a database"));
        }
        let mut sslmode = "prefer".to_owned();
        for (key, value) in url.query_pairs() {
            match (key.as_ref(), value.as_ref()) {
                ("sslmode", v @ ("disable" | "allow" | "prefer" | "require")) => {
                    sslmode = v.to_owned()
                }
                (key, _) => {
                    return Err(invalid(&format!(
                        "takes no parameter but sslmode (disable, allow, prefer or require), not {key}"
                    )));
                }
            }
        }
        let port = url.port().unwrap_or(5432);
        let addresses: Vec<IpAddr> = tokio::net::lookup_host((host.as_str(), port))
            .await
            .map_err(|e| refused(format!("the source host {host} does not resolve: {e}")))?
            .map(|a| a.ip())
            .collect();
        let Some(first) = addresses.first().copied() else {
            return Err(refused(format!("the source host {host} has no address")));
        };
        for ip in &addresses {
            plateau_egress::check_address(*ip, allow).map_err(|why| {
                refused(format!("the egress guard refuses the source {host}: {why}"))
            })?;
        }
        Ok(External {
            host,
            hostaddr: first,
            port,
            dbname,
            user,
            password,
            sslmode,
        })
    }

    /// `host:port/dbname`, for the API (never the password).
    pub fn display(&self) -> String {
        format!("{}:{}/{}", self.host, self.port, self.dbname)
    }

    /// The libpq connection string the subscriber's server uses.
    pub fn conninfo(&self) -> String {
        conninfo(&[
            ("host", &self.host),
            ("hostaddr", &self.hostaddr.to_string()),
            ("port", &self.port.to_string()),
            ("dbname", &self.dbname),
            ("user", &self.user),
            ("password", &self.password),
            ("sslmode", &self.sslmode),
            ("connect_timeout", "10"),
        ])
    }

    /// Reads back what [`External::conninfo`] wrote.
    pub fn from_conninfo(text: &str) -> Option<External> {
        let pairs = parse_conninfo(text)?;
        let get = |k: &str| {
            pairs
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
        };
        Some(External {
            host: get("host")?,
            hostaddr: get("hostaddr")?.parse().ok()?,
            port: get("port")?.parse().ok()?,
            dbname: get("dbname")?,
            user: get("user")?,
            password: get("password").unwrap_or_default(),
            sslmode: get("sslmode").unwrap_or_else(|| "prefer".to_owned()),
        })
    }

    /// A read-only session of the host on the source (at the checked
    /// address), with the host's `search_path`.
    pub async fn connect(&self) -> Result<PgConnection> {
        let options = PgConnectOptions::new()
            .host(&self.hostaddr.to_string())
            .port(self.port)
            .username(&self.user)
            .password(&self.password)
            .database(&self.dbname)
            .application_name("plateau")
            .ssl_mode(match self.sslmode.as_str() {
                "disable" => PgSslMode::Disable,
                "require" => PgSslMode::Require,
                _ => PgSslMode::Prefer,
            })
            .options([
                ("search_path", "pg_catalog,pg_temp"),
                ("default_transaction_read_only", "on"),
                ("statement_timeout", "30s"),
            ]);
        match tokio::time::timeout(CONNECT_TIMEOUT, options.connect()).await {
            Ok(Ok(conn)) => Ok(conn),
            Ok(Err(e)) => Err(refused(format!(
                "the source {} does not let the host in: {e}",
                self.display()
            ))),
            Err(_) => Err(refused(format!(
                "the source {} did not answer in {} s",
                self.display(),
                CONNECT_TIMEOUT.as_secs()
            ))),
        }
    }
}

impl Source {
    /// The host's session on the source: its superuser on a Plateau
    /// database (with the pinned settings), the string's role otherwise.
    pub async fn connect(&self, service: &DatabaseService) -> Result<PgConnection> {
        match self {
            Source::Plateau(d) => service.admin(d).await,
            Source::External(e) => e.connect().await,
        }
    }
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// `key='value' ...`, each value quoted the way libpq reads it.
pub fn conninfo(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{k}='{}'", v.replace('\\', "\\\\").replace('\'', "\\'")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The pairs of a connection string [`conninfo`] wrote.
pub fn parse_conninfo(text: &str) -> Option<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.peek().is_none() {
            return Some(out);
        }
        let key: String = std::iter::from_fn(|| chars.next_if(|c| *c != '=')).collect();
        chars.next()?;
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            loop {
                match chars.next()? {
                    '\\' => value.push(chars.next()?),
                    '\'' => break,
                    c => value.push(c),
                }
            }
        } else {
            value = std::iter::from_fn(|| chars.next_if(|c| !c.is_whitespace())).collect();
        }
        out.push((key.trim().to_owned(), value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_string_reads_back_whatever_its_values_hold() {
        let text = conninfo(&[("host", "h"), ("password", "a b'c\\d"), ("port", "5")]);
        assert_eq!(text, "host='h' password='a b\\'c\\\\d' port='5'");
        let back = parse_conninfo(&text).unwrap();
        assert_eq!(back[1], ("password".to_owned(), "a b'c\\d".to_owned()));
        assert_eq!(back.len(), 3);
    }

    #[tokio::test]
    async fn the_egress_guard_refuses_a_loopback_or_metadata_source() {
        for uri in [
            "postgresql://u:p@127.0.0.1:5432/db",
            "postgres://u:p@169.254.169.254/db",
        ] {
            let e = External::parse(uri, &[]).await.unwrap_err();
            assert!(
                matches!(
                    &e,
                    Error::Refused {
                        code: "source_unreachable",
                        ..
                    }
                ),
                "{uri}: {e:?}"
            );
        }
        let allow = plateau_egress::parse_allow_list("127.0.0.0/8").unwrap();
        let e = External::parse(
            "postgresql://u:p%40x@127.0.0.1:6/db?sslmode=require",
            &allow,
        )
        .await
        .unwrap();
        assert_eq!((e.password.as_str(), e.port), ("p@x", 6));
        assert!(
            External::parse("postgresql://u:p@127.0.0.1/db?sslrootcert=/x", &allow)
                .await
                .is_err()
        );
    }
}
