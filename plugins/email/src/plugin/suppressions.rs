//! The suppression list: recipients whose mailbox a server refused
//! permanently. A later message leaves them out (the ledger entry lists
//! them in `suppressed`); a message left with no recipient is refused with
//! 422. `DELETE /email/suppressions/{address}` lifts a suppression.
//!
//! A permanent failure suppresses a recipient only when it is about the
//! mailbox: a reply of 550, 551 or 553 that names the address, or that
//! answers a message with that single recipient. Other 5xx replies (policy,
//! content, authentication) suppress nobody.

use plateau_sdk::serde_json::json;
use plateau_sdk::smtp::Reply;
use plateau_sdk::{ApiError, Bucket, NewEvent, Params, Request, Response, clock, paginate_kv};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::address::Mailbox;
use crate::keys;
use crate::message::Outgoing;

/// One suppressed recipient.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Suppression {
    /// Lowercased.
    pub address: String,
    pub smtp_code: u16,
    pub smtp_message: String,
    /// The ledger entry whose delivery failed.
    pub message: String,
    pub created_at: String,
}

/// The reply codes that speak about a mailbox (RFC 5321 section 4.2.3).
const MAILBOX_CODES: [u16; 3] = [550, 551, 553];

/// The recipients of `recipients` that a permanent `reply` condemns.
pub fn condemned<'a>(reply: &Reply, recipients: &'a [String]) -> Vec<&'a String> {
    if !MAILBOX_CODES.contains(&reply.code) {
        return Vec::new();
    }
    let text = reply.message.to_ascii_lowercase();
    let named: Vec<&String> = recipients
        .iter()
        .filter(|r| text.contains(&r.to_ascii_lowercase()))
        .collect();
    match (named.is_empty(), recipients) {
        (false, _) => named,
        (true, [only]) => vec![only],
        (true, _) => Vec::new(),
    }
}

/// Suppresses `address` after the permanent failure of message `message`.
pub fn add(bucket: &Bucket, address: &str, reply: &Reply, message: &str) -> Result<(), ApiError> {
    let address = address.to_ascii_lowercase();
    let record = Suppression {
        address: address.clone(),
        smtp_code: reply.code,
        smtp_message: reply.message.clone(),
        message: message.to_owned(),
        created_at: clock::now_rfc3339(),
    };
    bucket.set(&keys::suppression(&address), &record)?;
    Ok(())
}

/// Takes the suppressed recipients out of `message`; returns their
/// addresses.
pub fn strip(bucket: &Bucket, message: &mut Outgoing) -> Result<Vec<String>, ApiError> {
    let mut suppressed = Vec::new();
    for list in [&mut message.to, &mut message.cc, &mut message.bcc] {
        let mut kept: Vec<Mailbox> = Vec::with_capacity(list.len());
        for mailbox in list.drain(..) {
            if bucket
                .get_raw(&keys::suppression(&mailbox.key()))?
                .is_some()
            {
                suppressed.push(mailbox.address);
            } else {
                kept.push(mailbox);
            }
        }
        *list = kept;
    }
    Ok(suppressed)
}

/// `GET /email/suppressions`: in address order.
pub fn list(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    let page = paginate_kv::<Suppression>(
        &Bucket::caller()?,
        keys::SUPPRESSION_PREFIX,
        &req.page_query()?,
    )?;
    Ok(page.into_response())
}

/// `DELETE /email/suppressions/{address}`: 204, or 404 if not suppressed.
pub fn delete(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    let address = params["address"].trim().to_ascii_lowercase();
    let bucket = Bucket::caller()?;
    let key = keys::suppression(&address);
    let found =
        !address.is_empty() && !address.chars().any(char::is_control) && bucket.delete(&key)?;
    if !found {
        return Err(ApiError::not_found(format!(
            "{address} is not on the suppression list"
        )));
    }
    NewEvent::new("email.suppression.deleted", "delete")
        .resource("email_suppression", &address)
        .data(&json!({ "address": address }))
        .audit()
        .emit()?;
    Ok(Response::no_content())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(code: u16, message: &str) -> Reply {
        Reply {
            code,
            message: message.to_owned(),
        }
    }

    #[test]
    fn only_mailbox_replies_condemn_recipients() {
        let one = ["gone@example.org".to_owned()];
        let two = ["gone@example.org".to_owned(), "ok@example.org".to_owned()];
        let table: [(Reply, &[String], Vec<&str>); 6] = [
            (
                reply(550, "5.1.1 no such user"),
                &one,
                vec!["gone@example.org"],
            ),
            (
                reply(550, "5.1.1 <Gone@Example.org>: no such user"),
                &two,
                vec!["gone@example.org"],
            ),
            (reply(550, "5.1.1 no such user"), &two, vec![]),
            (reply(554, "5.7.1 message refused as spam"), &one, vec![]),
            (reply(535, "5.7.8 authentication failed"), &one, vec![]),
            (
                reply(553, "mailbox name not allowed"),
                &one,
                vec!["gone@example.org"],
            ),
        ];
        for (reply, recipients, want) in table {
            let got: Vec<&str> = condemned(&reply, recipients)
                .into_iter()
                .map(String::as_str)
                .collect();
            assert_eq!(got, want, "{reply:?}");
        }
    }
}
