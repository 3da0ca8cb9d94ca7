//! `GET/PUT/DELETE /email/config`: the organisation's SMTP server, its
//! credentials and the senders it may use. The password is sealed with the
//! host's key for the organisation (`secrets`) and never leaves the plugin:
//! reads show `passwordSet`.

use std::net::{Ipv4Addr, Ipv6Addr};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use plateau_sdk::serde_json::json;
use plateau_sdk::smtp::{SmtpServer, TlsMode};
use plateau_sdk::{
    ApiError, Bucket, Namespace, NewEvent, Params, Request, Response, Validator, clock, secrets,
};
use serde::{Deserialize, Deserializer, Serialize};
use utoipa::ToSchema;

use crate::address::{Mailbox, SenderPattern};
use crate::keys;
use crate::limits::MAX_SENDERS;

/// How long one SMTP submission may take; below the plugin's deadline so a
/// slow server is recorded as a timeout (and retried) rather than a trap.
const SMTP_TIMEOUT_MS: u32 = 8_000;

/// The TLS mode, as named on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Tls {
    Implicit,
    Starttls,
    None,
}

/// The stored configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StoredConfig {
    pub host: String,
    pub port: u16,
    pub tls_mode: Tls,
    pub username: Option<String>,
    /// The password sealed for the organisation, in base64.
    pub password_sealed: Option<String>,
    pub allowed_senders: Vec<String>,
    pub alerts_from: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub updated_by: Option<String>,
}

/// What reads answer: the configuration without its secret.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfigView {
    pub host: String,
    pub port: u16,
    pub tls_mode: Tls,
    pub username: Option<String>,
    pub password_set: bool,
    pub allowed_senders: Vec<String>,
    pub alerts_from: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub updated_by: Option<String>,
}

impl StoredConfig {
    pub fn view(&self) -> ConfigView {
        ConfigView {
            host: self.host.clone(),
            port: self.port,
            tls_mode: self.tls_mode,
            username: self.username.clone(),
            password_set: self.password_sealed.is_some(),
            allowed_senders: self.allowed_senders.clone(),
            alerts_from: self.alerts_from.clone(),
            created_at: self.created_at.clone(),
            updated_at: self.updated_at.clone(),
            updated_by: self.updated_by.clone(),
        }
    }

    fn patterns(&self) -> Vec<SenderPattern> {
        self.allowed_senders
            .iter()
            .filter_map(|p| SenderPattern::parse(p).ok())
            .collect()
    }

    /// Whether `from` is one of the allowed senders.
    pub fn allows(&self, from: &Mailbox) -> bool {
        self.patterns().iter().any(|p| p.allows(from))
    }

    /// The sender of alerts: `alertsFrom`, or the first allowed sender that
    /// is a plain address.
    pub fn alert_sender(&self) -> Option<Mailbox> {
        match &self.alerts_from {
            Some(from) => Mailbox::parse(from).ok(),
            None => self
                .patterns()
                .iter()
                .find_map(|p| p.address().and_then(|a| Mailbox::parse(a).ok())),
        }
    }

    /// The server to submit to, the password opened for `namespace`.
    pub fn server(&self, namespace: &Namespace) -> Result<SmtpServer, String> {
        let password = match &self.password_sealed {
            None => None,
            Some(sealed) => {
                let bytes = BASE64
                    .decode(sealed)
                    .map_err(|_| "the stored password is damaged: set it again".to_owned())?;
                Some(secrets::open_str(namespace, &bytes).map_err(|e| e.to_string())?)
            }
        };
        Ok(SmtpServer {
            host: self.host.clone(),
            port: self.port,
            tls: match self.tls_mode {
                Tls::Implicit => TlsMode::Implicit,
                Tls::Starttls => TlsMode::StartTls,
                Tls::None => TlsMode::None,
            },
            username: self.username.clone(),
            password,
            timeout_ms: Some(SMTP_TIMEOUT_MS),
        })
    }
}

/// The organisation's configuration, if it has one.
pub fn load(bucket: &Bucket) -> Result<Option<StoredConfig>, ApiError> {
    Ok(bucket.get(keys::CONFIG)?)
}

fn not_configured() -> ApiError {
    ApiError::not_found("email is not configured: PUT /email/config first")
}

/// `GET /email/config`.
pub fn get(_req: &Request, _params: &Params) -> Result<Response, ApiError> {
    let config = load(&Bucket::caller()?)?.ok_or_else(not_configured)?;
    Ok(Response::ok(&config.view()))
}

/// The body of `PUT /email/config`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfigRequest {
    host: Option<String>,
    port: Option<i64>,
    /// `implicit`, `starttls` or `none`.
    tls_mode: Option<String>,
    username: Option<String>,
    /// Absent keeps the stored password, `null` removes it.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    password: Option<Option<String>>,
    allowed_senders: Option<Vec<String>>,
    alerts_from: Option<String>,
}

/// Tells a `null` (`Some(None)`) from an absent field (`None`).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

/// `PUT /email/config`: 201 when created, 200 when replaced.
pub fn put(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    let body: ConfigRequest = req.json()?;
    let bucket = Bucket::caller()?;
    let previous = load(&bucket)?;
    let mut v = Validator::new();

    let host = body.host.as_deref().map(str::trim).unwrap_or_default();
    if let Err(why) = check_server_host(host) {
        v.error("host", why);
    }
    let port = match body.port {
        Some(port @ 1..=65535) => port as u16,
        Some(_) => {
            v.error("port", "must be between 1 and 65535");
            0
        }
        None => {
            v.error(
                "port",
                "is required: 465 for implicit TLS, 587 for STARTTLS",
            );
            0
        }
    };
    let tls_mode = match body.tls_mode.as_deref() {
        Some("implicit") => Tls::Implicit,
        Some("starttls") => Tls::Starttls,
        Some("none") => Tls::None,
        _ => {
            v.error("tlsMode", "must be implicit, starttls or none");
            Tls::None
        }
    };
    let username = body.username.map(|u| u.trim().to_owned());
    if let Some(user) = &username {
        v.check(
            !user.is_empty() && user.len() <= 256 && !user.chars().any(char::is_control),
            "username",
            "must be 1 to 256 bytes without control characters",
        );
    }
    let kept = previous.as_ref().and_then(|p| p.password_sealed.clone());
    let password = match (&username, body.password) {
        (Some(_), Some(Some(password))) => {
            v.check(
                !password.is_empty()
                    && password.len() <= 512
                    && !password.chars().any(char::is_control),
                "password",
                "must be 1 to 512 bytes without control characters",
            );
            Some(PasswordChange::Set(password))
        }
        (Some(_), None) if kept.is_some() => Some(PasswordChange::Keep),
        (Some(_), _) => {
            v.error("password", "is required with a username");
            None
        }
        (None, Some(Some(_))) => {
            v.error("username", "is required with a password");
            None
        }
        (None, _) => None,
    };
    let senders = body.allowed_senders.unwrap_or_default();
    v.check(
        !senders.is_empty() && senders.len() <= MAX_SENDERS,
        "allowedSenders",
        format!("list 1 to {MAX_SENDERS} senders: user@example.com or *@example.com"),
    );
    let mut allowed_senders: Vec<String> = Vec::with_capacity(senders.len());
    let mut patterns = Vec::with_capacity(senders.len());
    for (i, raw) in senders.iter().enumerate() {
        match SenderPattern::parse(raw) {
            Ok(pattern) => {
                let text = pattern.to_string();
                if !allowed_senders.contains(&text) {
                    allowed_senders.push(text);
                    patterns.push(pattern);
                }
            }
            Err(why) => {
                v.error(format!("allowedSenders[{i}]"), why);
            }
        }
    }
    let alerts_from = match body.alerts_from.as_deref().map(Mailbox::parse) {
        None => None,
        Some(Err(why)) => {
            v.error("alertsFrom", why);
            None
        }
        Some(Ok(mailbox)) => {
            v.check(
                patterns.iter().any(|p| p.allows(&mailbox)) || patterns.is_empty(),
                "alertsFrom",
                "must be one of the allowed senders",
            );
            Some(mailbox.to_string())
        }
    };
    v.finish()?;

    let password_sealed = match password {
        None => None,
        Some(PasswordChange::Keep) => kept,
        Some(PasswordChange::Set(password)) => {
            let sealed = secrets::seal_str(&Namespace::Caller, &password)?;
            Some(BASE64.encode(sealed))
        }
    };
    let now = clock::now_rfc3339();
    let config = StoredConfig {
        host: host.to_owned(),
        port,
        tls_mode,
        username,
        password_sealed,
        allowed_senders,
        alerts_from,
        created_at: previous
            .as_ref()
            .map_or_else(|| now.clone(), |p| p.created_at.clone()),
        updated_at: now,
        updated_by: req.caller.actor.clone(),
    };
    bucket.set(keys::CONFIG, &config)?;
    let view = config.view();
    let (action, status) = match previous {
        None => ("create", 201),
        Some(_) => ("update", 200),
    };
    NewEvent::new("email.config.updated", action)
        .resource("email_config", "smtp")
        .data(&json!({
            "host": view.host,
            "port": view.port,
            "tlsMode": view.tls_mode,
            "username": view.username,
            "passwordSet": view.password_set,
            "allowedSenders": view.allowed_senders,
            "alertsFrom": view.alerts_from,
        }))
        .audit()
        .emit()?;
    Ok(Response::json(status, &view))
}

enum PasswordChange {
    Keep,
    Set(String),
}

/// `DELETE /email/config`: 204; messages still queued then fail.
pub fn delete(_req: &Request, _params: &Params) -> Result<Response, ApiError> {
    let bucket = Bucket::caller()?;
    let config = load(&bucket)?.ok_or_else(not_configured)?;
    bucket.delete(keys::CONFIG)?;
    NewEvent::new("email.config.deleted", "delete")
        .resource("email_config", "smtp")
        .data(&json!({ "host": config.host, "port": config.port }))
        .audit()
        .emit()?;
    Ok(Response::no_content())
}

/// A server host: a DNS name (`smtp.example.com`, `localhost`) or an IP
/// address (`192.0.2.1`, `[2001:db8::1]`).
fn check_server_host(host: &str) -> Result<(), String> {
    if host.is_empty() {
        return Err("is required: the SMTP server's host name".into());
    }
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if bare.parse::<Ipv4Addr>().is_ok() || bare.parse::<Ipv6Addr>().is_ok() {
        return Ok(());
    }
    let label_ok = |label: &str| {
        !label.is_empty()
            && label.len() <= 63
            && label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !label.starts_with('-')
            && !label.ends_with('-')
    };
    if host.len() <= 253 && host.split('.').all(label_ok) {
        Ok(())
    } else {
        Err("must be a host name such as smtp.example.com or an IP address".into())
    }
}

#[cfg(test)]
mod tests {
    use super::check_server_host;

    #[test]
    fn server_hosts() {
        for ok in [
            "smtp.example.com",
            "localhost",
            "127.0.0.1",
            "[::1]",
            "::1",
            "mx-1.example.co",
        ] {
            assert!(check_server_host(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "smtp example.com",
            "smtp.example.com:25",
            "-x.example.com",
            "a..b",
            "smtp\r\n.example.com",
        ] {
            assert!(check_server_host(bad).is_err(), "{bad}");
        }
    }
}
