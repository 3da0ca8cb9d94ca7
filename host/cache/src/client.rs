//! The host's own connections to a cluster's processes (the admin user,
//! never the customer's), and the parsing of INFO.

use std::collections::BTreeMap;
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, TlsCertificates};

use crate::Result;

/// One process to talk to.
pub struct Target<'a> {
    pub address: &'a str,
    pub port: u16,
    /// The PEM CA to trust; `None` for a plain connection.
    pub ca: Option<&'a str>,
    pub user: &'a str,
    pub password: &'a str,
}

/// How long the host waits for a process to connect or answer.
const TIMEOUT: Duration = Duration::from_secs(3);

/// A connection to `target`, authenticated as its user.
pub async fn connect(target: &Target<'_>) -> Result<MultiplexedConnection> {
    let scheme = if target.ca.is_some() {
        "rediss"
    } else {
        "redis"
    };
    let url = format!(
        "{scheme}://{}:{}@{}:{}/",
        target.user, target.password, target.address, target.port
    );
    let client = match target.ca {
        Some(ca) => Client::build_with_tls(
            url,
            TlsCertificates {
                client_tls: None,
                root_cert: Some(ca.as_bytes().to_vec()),
            },
        )?,
        None => Client::open(url)?,
    };
    let config = AsyncConnectionConfig::new()
        .set_connection_timeout(Some(TIMEOUT))
        .set_response_timeout(Some(TIMEOUT));
    Ok(client
        .get_multiplexed_async_connection_with_config(&config)
        .await?)
}

/// `INFO section` as name-value pairs.
pub async fn info(
    conn: &mut MultiplexedConnection,
    section: &str,
) -> Result<BTreeMap<String, String>> {
    let text: String = redis::cmd("INFO").arg(section).query_async(conn).await?;
    Ok(parse_info(&text))
}

/// The `name:value` lines of an INFO reply; comments and blanks skipped.
pub fn parse_info(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.trim_end().split_once(':'))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// A numeric field of INFO, 0 when absent.
pub fn number(info: &BTreeMap<String, String>, name: &str) -> u64 {
    info.get(name).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// The number of keys in every database of an INFO `keyspace` section
/// (`db0:keys=3,expires=0,avg_ttl=0`).
pub fn keys(info: &BTreeMap<String, String>) -> u64 {
    info.iter()
        .filter(|(k, _)| k.starts_with("db"))
        .filter_map(|(_, v)| {
            v.split(',')
                .find_map(|p| p.strip_prefix("keys="))
                .and_then(|n| n.parse::<u64>().ok())
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fields_and_keyspace() {
        let info = parse_info(
            "# Memory\r\nused_memory:1024\r\nmaxmemory:8388608\r\n\r\n# Keyspace\r\ndb0:keys=3,expires=1,avg_ttl=0\r\ndb2:keys=4,expires=0,avg_ttl=0\r\n",
        );
        assert_eq!(number(&info, "used_memory"), 1024);
        assert_eq!(number(&info, "maxmemory"), 8 << 20);
        assert_eq!(number(&info, "absent"), 0);
        assert_eq!(keys(&info), 7);
    }
}
