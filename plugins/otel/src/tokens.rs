//! Ingest tokens (`/otel/tokens`): one project's credential for the OTLP
//! receiver, sent in the [`TOKEN_HEADER`] header. A token is shown once,
//! in the answer that made it; the plugin keeps its SHA-256 only, in the
//! organisation's bucket (to list and revoke it) and in the global bucket
//! (to find the organisation and project of a request that has no API
//! token).

use plateau_sdk::serde_json::json;
use plateau_sdk::{ApiError, Bucket, NewEvent, Page, Params, Request, Response, clock, ids};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use crate::record::{self, TokenEntry, TokenRec};
use crate::wire::WireError;

/// The header an exporter sends the token in.
pub const TOKEN_HEADER: &str = "plateau-otel-token";
/// Every ingest token starts with it.
pub const TOKEN_PREFIX: &str = "plto_";
/// Ingest tokens per organisation.
pub const MAX_TOKENS: u64 = 50;

fn hash(token: &str) -> String {
    crate::convert::hex(&Sha256::digest(token.as_bytes()))
}

/// The organisation and project of an OTLP request's token; 401 without a
/// known one.
pub fn authenticate(req: &Request) -> Result<TokenEntry, WireError> {
    let refused = |message: &str| WireError {
        status: 401,
        code: "unauthenticated",
        message: message.to_owned(),
    };
    let token = req.header(TOKEN_HEADER).map(str::trim).ok_or_else(|| {
        refused("send the project's ingest token in the plateau-otel-token header")
    })?;
    if !token.starts_with(TOKEN_PREFIX) || token.len() > 100 {
        return Err(refused(
            "the plateau-otel-token header is not an ingest token (plto_...)",
        ));
    }
    Bucket::global()
        .map_err(ApiError::from)?
        .get::<TokenEntry>(&record::token_entry_key(&hash(token)))
        .map_err(ApiError::from)?
        .ok_or_else(|| {
            refused("the ingest token is unknown or revoked: make one with POST /otel/tokens")
        })
}

/// An ingest token as the API shows it: its secret only in the answer of
/// its creation.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenView {
    pub id: String,
    pub name: String,
    /// The project whose telemetry it sends.
    pub project_id: String,
    /// The first characters of the token, to recognise it.
    pub prefix: String,
    /// RFC 3339.
    pub created_at: String,
    /// The token (`plto_...`), for the `plateau-otel-token` header; shown once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

fn view(t: &TokenRec) -> TokenView {
    TokenView {
        id: t.id.clone(),
        name: t.name.clone(),
        project_id: t.project_id.clone(),
        prefix: t.prefix.clone(),
        created_at: clock::rfc3339(t.created_at),
        token: None,
    }
}

/// `POST /otel/tokens`'s optional body.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TokenInput {
    /// 1 to 100 characters; default `ingest`.
    #[schema(max_length = 100, pattern = "\\S")]
    name: Option<String>,
}

/// `POST /otel/tokens`: 201 with the token, shown once, for the caller's
/// project.
pub fn create(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    let org = req.caller.organization()?.to_owned();
    let project = req
        .caller
        .project_id
        .clone()
        .ok_or_else(|| ApiError::bad_request("the request names no project"))?;
    let input: TokenInput = if req.body.is_empty() {
        TokenInput::default()
    } else {
        req.json()?
    };
    let name = input.name.unwrap_or_else(|| "ingest".to_owned());
    if name.trim().is_empty() || name.chars().count() > 100 {
        return Err(ApiError::validation("name", "must be 1 to 100 characters"));
    }
    let bucket = Bucket::caller()?;
    if bucket.count(record::TOKENS)? >= MAX_TOKENS {
        return Err(ApiError::conflict(format!(
            "an organisation has at most {MAX_TOKENS} ingest tokens: delete one first"
        )));
    }
    let now = clock::now_millis();
    let secret = format!("{TOKEN_PREFIX}{}", ids::token());
    let rec = TokenRec {
        id: ids::new_id("otk", now),
        name,
        project_id: project.clone(),
        prefix: secret.chars().take(9).collect(),
        hash: hash(&secret),
        created_at: now,
    };
    let entry = TokenEntry {
        organization_id: org.clone(),
        project_id: project,
        token_id: rec.id.clone(),
    };
    if !Bucket::global()?.insert_new(&record::token_entry_key(&rec.hash), &entry)? {
        return Err(ApiError::conflict("a token collided: retry the request"));
    }
    bucket.set(&record::token_key(&rec.id), &rec)?;
    crate::retention::start(&org, req.caller.plan.as_deref())?;
    NewEvent::new("otel.token.created", "create")
        .resource("otel_token", &rec.id)
        .data(&json!({ "name": rec.name, "projectId": rec.project_id }))
        .audit()
        .emit()?;
    let mut body = view(&rec);
    body.token = Some(secret);
    Ok(Response::created(&body).with_header("location", format!("/otel/tokens/{}", rec.id)))
}

/// `GET /otel/tokens`: the organisation's tokens, never their secrets.
pub fn list(_req: &Request, _params: &Params) -> Result<Response, ApiError> {
    let items = Bucket::caller()?
        .list_all(record::TOKENS)?
        .iter()
        .map(|e| Ok(view(&e.json::<TokenRec>()?)))
        .collect::<Result<Vec<_>, ApiError>>()?;
    Ok(Page::all(items).into_response())
}

/// `DELETE /otel/tokens/{id}`: 204; the token stops working at once.
pub fn delete(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    let id = &params["id"];
    let bucket = Bucket::caller()?;
    let rec: TokenRec = bucket.get(&record::token_key(id))?.ok_or_else(|| {
        ApiError::not_found(format!(
            "ingest token {id} does not exist: list them with GET /otel/tokens"
        ))
    })?;
    Bucket::global()?.delete(&record::token_entry_key(&rec.hash))?;
    bucket.delete(&record::token_key(id))?;
    NewEvent::new("otel.token.deleted", "delete")
        .resource("otel_token", id)
        .audit()
        .emit()?;
    Ok(Response::no_content())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_hex_sha256() {
        assert_eq!(hash("abc").len(), 64);
        assert_ne!(hash("plto_a"), hash("plto_b"));
    }
}
