//! Who is calling (spec section 5.7), and the bearer-token flow of OCI
//! clients.
//!
//! Credentials are HTTP Basic with the user name `plateau` and an API
//! token as password, on any request or on `GET /v2/token`. The token
//! endpoint answers with a *registry bearer*: a stateless, HMAC-signed
//! statement "token T of organisation O may pull/push until E", valid for
//! five minutes at most and never beyond T's own expiry. Each use checks T
//! again, so revoking T ends its bearers at once. Nothing long-lived is
//! minted and nothing is written to the database.
//!
//! `registry:read` allows pulling; `registry:write` allows pushing and
//! deleting, and pulling too (pushing clients read what they push).

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use hmac::{Hmac, Mac};
use plateau_api::auth::authenticate_token;
use plateau_api::error::ApiError;
use plateau_core::secret::TOKEN_PREFIX;
use plateau_core::time;
use plateau_store::events::Actor;
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::Registry;
use crate::error::{Error, Result};

/// The fixed Basic user name.
pub const USER_NAME: &str = "plateau";
/// The `service` of the bearer challenge.
pub const SERVICE: &str = "plateau";
/// Longest life of a registry bearer.
pub const BEARER_TTL_SECS: i64 = 300;
const BEARER_PREFIX: &str = "plrb.";

/// What a request may do, and for whom.
#[derive(Clone, Debug)]
pub struct Access {
    pub org_id: String,
    pub token_id: String,
    pub user_id: Option<String>,
    pub ip: Option<String>,
    pub pull: bool,
    pub push: bool,
    /// When the API token behind the request expires.
    pub token_expires_at: Option<i64>,
}

impl Access {
    pub fn actor(&self) -> Actor {
        Actor {
            kind: "token".to_owned(),
            id: Some(self.token_id.clone()),
            user_id: self.user_id.clone(),
            ip: self.ip.clone(),
        }
    }

    pub fn require_pull(&self) -> Result<()> {
        if self.pull {
            Ok(())
        } else {
            Err(Error::Denied(
                "pulling needs a token with the scope registry:read".to_owned(),
            ))
        }
    }

    pub fn require_push(&self) -> Result<()> {
        if self.push {
            Ok(())
        } else {
            Err(Error::Denied(
                "pushing and deleting need a token with the scope registry:write".to_owned(),
            ))
        }
    }
}

/// The body of a registry bearer.
#[derive(Serialize, Deserialize)]
struct Claims {
    /// The API token it stands for.
    tid: String,
    org: String,
    uid: Option<String>,
    pull: bool,
    push: bool,
    /// Expiry, milliseconds.
    exp: i64,
}

type HmacSha256 = Hmac<Sha256>;

fn sign(key: &[u8], payload: &str) -> String {
    let mut mac = HmacSha256::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(payload.as_bytes());
    URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
}

/// The `WWW-Authenticate` challenge for a request; `scope` names the
/// repository and actions when there is one.
pub fn challenge(base: &str, scope: Option<&str>) -> String {
    let mut value = format!("Bearer realm=\"{base}/v2/token\",service=\"{SERVICE}\"");
    if let Some(scope) = scope {
        value.push_str(&format!(",scope=\"{scope}\""));
    }
    value
}

fn unauthorized(base: &str, scope: Option<&str>, message: impl Into<String>) -> Error {
    Error::Unauthorized {
        message: message.into(),
        challenge: challenge(base, scope),
    }
}

fn from_api(base: &str, scope: Option<&str>, e: ApiError) -> Error {
    match e {
        ApiError::Internal(m) => Error::Internal(m),
        ApiError::Unavailable(m) => Error::Internal(m),
        other => unauthorized(base, scope, other.to_string()),
    }
}

/// Authenticates a request from its `Authorization` header. `base` is the
/// registry's address and `scope` the challenge scope, for the 401.
pub async fn authenticate(
    reg: &Registry,
    authorization: Option<&str>,
    ip: Option<String>,
    base: &str,
    scope: Option<&str>,
) -> Result<Access> {
    let header = authorization.ok_or_else(|| {
        unauthorized(
            base,
            scope,
            "authentication required: log in with user name plateau and an API token as password",
        )
    })?;
    let (scheme, value) = header
        .trim()
        .split_once(' ')
        .ok_or_else(|| unauthorized(base, scope, "malformed Authorization header"))?;
    let value = value.trim();
    if scheme.eq_ignore_ascii_case("basic") {
        let secret = basic_password(value).map_err(|m| unauthorized(base, scope, m))?;
        if secret.starts_with(BEARER_PREFIX) {
            // A registry bearer as password (tools that only speak Basic,
            // such as the apps' buildah): what it allows, until it expires.
            return from_bearer(reg, &secret, ip, base, scope, true).await;
        }
        return from_token(reg, &secret, ip, base, scope).await;
    }
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(unauthorized(base, scope, "use Basic or Bearer credentials"));
    }
    if value.starts_with(TOKEN_PREFIX) {
        return from_token(reg, value, ip, base, scope).await;
    }
    from_bearer(reg, value, ip, base, scope, false).await
}

/// The access a registry bearer states; `capped` keeps a bearer renewed
/// from it (at the token endpoint) within its own expiry.
async fn from_bearer(
    reg: &Registry,
    value: &str,
    ip: Option<String>,
    base: &str,
    scope: Option<&str>,
    capped: bool,
) -> Result<Access> {
    let claims = verify_bearer(reg, value)
        .ok_or_else(|| unauthorized(base, scope, "the registry token is invalid or expired"))?;
    // A pull-only bearer without a token is the host's own, pulling for an
    // organisation's scheduled work (cron jobs' commands): no API token
    // stands behind it, and only this host can sign one.
    if claims.tid.is_empty() && claims.pull && !claims.push {
        return Ok(Access {
            org_id: claims.org,
            token_id: claims.tid,
            user_id: None,
            ip,
            pull: true,
            push: false,
            // Never renewed past its own expiry.
            token_expires_at: Some(claims.exp),
        });
    }
    let token_expires_at =
        match plateau_store::registry::account::token_state(reg.db(), &claims.tid).await? {
            Some((None, expires)) if expires.is_none_or(|at| at > time::now_ms()) => expires,
            _ => {
                return Err(unauthorized(
                    base,
                    scope,
                    "the API token behind this registry token was revoked or has expired",
                ));
            }
        };
    let token_expires_at = if capped {
        Some(token_expires_at.map_or(claims.exp, |at| at.min(claims.exp)))
    } else {
        token_expires_at
    };
    Ok(Access {
        org_id: claims.org,
        token_id: claims.tid,
        user_id: claims.uid,
        ip,
        pull: claims.pull,
        push: claims.push,
        token_expires_at,
    })
}

/// The password of Basic credentials whose user name is `plateau`.
fn basic_password(value: &str) -> std::result::Result<String, String> {
    let decoded = STANDARD
        .decode(value)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or("malformed Basic credentials")?;
    let (user, password) = decoded
        .split_once(':')
        .ok_or("malformed Basic credentials")?;
    if user != USER_NAME {
        return Err(format!(
            "the user name must be {USER_NAME}, with an API token as password"
        ));
    }
    Ok(password.to_owned())
}

async fn from_token(
    reg: &Registry,
    secret: &str,
    ip: Option<String>,
    base: &str,
    scope: Option<&str>,
) -> Result<Access> {
    let caller = authenticate_token(reg.app(), secret, ip)
        .await
        .map_err(|e| from_api(base, scope, e))?;
    let push = caller.scopes.allows("registry:write");
    let pull = push || caller.scopes.allows("registry:read");
    Ok(Access {
        org_id: caller.org_id,
        token_id: caller.token_id,
        user_id: Some(caller.user_id),
        ip: caller.ip,
        pull,
        push,
        token_expires_at: caller.expires_at,
    })
}

fn verify_bearer(reg: &Registry, token: &str) -> Option<Claims> {
    let rest = token.strip_prefix(BEARER_PREFIX)?;
    let (payload, signature) = rest.split_once('.')?;
    let expected = sign(reg.token_key(), payload);
    if !bool::from(subtle::ConstantTimeEq::ct_eq(
        expected.as_bytes(),
        signature.as_bytes(),
    )) {
        return None;
    }
    let claims: Claims = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()?;
    (claims.exp > time::now_ms()).then_some(claims)
}

/// Issues a registry bearer for `access`; returns it with its lifetime in
/// seconds, never beyond the API token's expiry.
pub fn issue_bearer(reg: &Registry, access: &Access) -> (String, i64) {
    issue_with_key(reg.token_key(), access)
}

/// Signs the host's own pull-only bearers of an organisation (no API
/// token stands behind them) where no [`Registry`] runs: a runner
/// (`plateau agent`) pulling the Linux image of a deployment it lacks.
/// The key is the registry's, kept in the database every host shares.
#[derive(Clone)]
pub struct HostPullSigner {
    key: Vec<u8>,
}

impl HostPullSigner {
    /// Reads (or makes, on a new database) the registry's signing key.
    pub async fn load(db: &plateau_store::Db) -> Result<HostPullSigner> {
        let key = crate::token_key_of(db).await?;
        Ok(HostPullSigner { key })
    }

    /// A pull-only bearer of `org_id`, valid for [`BEARER_TTL_SECS`].
    pub fn bearer(&self, org_id: &str) -> String {
        let access = Access {
            org_id: org_id.to_owned(),
            token_id: String::new(),
            user_id: None,
            ip: None,
            pull: true,
            push: false,
            token_expires_at: None,
        };
        issue_with_key(&self.key, &access).0
    }
}

fn issue_with_key(key: &[u8], access: &Access) -> (String, i64) {
    let now = time::now_ms();
    let mut exp = now + BEARER_TTL_SECS * 1000;
    if let Some(at) = access.token_expires_at {
        exp = exp.min(at);
    }
    let claims = Claims {
        tid: access.token_id.clone(),
        org: access.org_id.clone(),
        uid: access.user_id.clone(),
        pull: access.pull,
        push: access.push,
        exp,
    };
    let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).unwrap_or_default());
    let signature = sign(key, &payload);
    (
        format!("{BEARER_PREFIX}{payload}.{signature}"),
        ((exp - now) / 1000).max(1),
    )
}
