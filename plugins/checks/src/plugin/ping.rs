//! A heartbeat's public ping URL: `GET` or `POST /checks/ping/{token}`,
//! without a token. The unguessable token is the credential; the index
//! keeps only its SHA-256.

use plateau_sdk::{ApiError, Bucket, Params, Request, Response};

use super::records::{self, PingTarget};
use super::runner;
use super::views::Pinged;
use crate::ids;

/// Records a ping: the heartbeat is up, and due again one interval and its
/// grace from now. 404 for a token no heartbeat has.
pub fn ping(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    let token = &params["token"];
    let unknown = || ApiError::not_found("no heartbeat check has this ping URL: check the URL");
    if token.len() != 43 {
        return Err(unknown());
    }
    let target: PingTarget = Bucket::global()?
        .get(&records::ping_key(&ids::token_digest(token)))?
        .ok_or_else(unknown)?;
    let recorded = runner::ping(&target.organization_id, &target.check_id)?;
    Ok(Response::ok(&Pinged {
        ok: true,
        recorded: recorded.is_some(),
    }))
}
