//! `POST /email/send`: validate, check the sender and the suppression list,
//! count against the rate limit, then queue: the content, the ledger entry
//! (`queued`), the delivery job and the `email.message.queued` event are
//! committed together, and the answer is 202 with the entry. Delivery
//! happens in [`super::delivery`].

use plateau_sdk::jobs::{self, NewJob};
use plateau_sdk::serde_json::json;
use plateau_sdk::{ApiError, Bucket, Namespace, NewEvent, Params, Request, Response, clock};

use super::ledger::{self, Entry, Source, Status};
use super::{config, content, rate, suppressions};
use crate::address::Mailbox;
use crate::message::{self, Outgoing};
use crate::time::new_id;

/// The job key of message `id`'s delivery.
pub fn job_key(id: &str) -> String {
    format!("send:{id}")
}

/// `POST /email/send`.
pub fn send(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    let mut outgoing = message::parse(req)?.validate()?;
    let bucket = Bucket::caller()?;
    let config = config::load(&bucket)?.ok_or_else(|| {
        ApiError::conflict("email is not configured: PUT /email/config with your SMTP server first")
    })?;
    if !config.allows(&outgoing.from) {
        return Err(ApiError::validation(
            "from",
            format!(
                "{} is not an allowed sender; allowed: {} (change them with PUT /email/config)",
                outgoing.from.address,
                config.allowed_senders.join(", ")
            ),
        ));
    }
    let suppressed = suppressions::strip(&bucket, &mut outgoing)?;
    if outgoing.recipients().next().is_none() {
        return Err(ApiError::unprocessable(format!(
            "every recipient is on the suppression list ({}): remove them with DELETE /email/suppressions/{{address}} to send to them again",
            suppressed.join(", ")
        )));
    }
    let now = clock::now_millis();
    rate::take(&bucket, req.caller.plan.as_deref(), now, true)?;
    let entry = queue(
        &bucket,
        &Namespace::Caller,
        &outgoing,
        suppressed,
        Origin::Api,
        now,
    )?;
    Ok(
        Response::json(202, &entry)
            .with_header("location", format!("/email/messages/{}", entry.id)),
    )
}

/// Who queues a message.
pub enum Origin<'a> {
    Api,
    Event {
        organization_id: &'a str,
        id: &'a str,
        event_type: &'a str,
    },
}

/// Stores `outgoing` with its `queued` ledger entry, schedules its
/// delivery now and records `email.message.queued`; all of it commits
/// with the caller's other writes.
pub fn queue(
    bucket: &Bucket,
    namespace: &Namespace,
    outgoing: &Outgoing,
    suppressed: Vec<String>,
    origin: Origin<'_>,
    now: u64,
) -> Result<Entry, ApiError> {
    let id = new_id(now);
    content::store(bucket, &id, outgoing)?;
    let stamp = clock::rfc3339(now);
    let addresses = |list: &[Mailbox]| list.iter().map(|m| m.address.clone()).collect();
    let (source, event_id, event_type, organization) = match origin {
        Origin::Api => (Source::Api, None, None, None),
        Origin::Event {
            organization_id,
            id,
            event_type,
        } => (
            Source::Event,
            Some(id.to_owned()),
            Some(event_type.to_owned()),
            Some(organization_id),
        ),
    };
    let entry = Entry {
        id: id.clone(),
        status: Status::Queued,
        source,
        event_id,
        event_type,
        from: outgoing.from.address.clone(),
        to: addresses(&outgoing.to),
        cc: addresses(&outgoing.cc),
        bcc_count: outgoing.bcc.len(),
        suppressed,
        subject: outgoing.subject.clone(),
        attachments: outgoing.attachments.len(),
        attempts: 0,
        smtp_code: None,
        smtp_message: None,
        error: None,
        message_id: None,
        created_at: stamp.clone(),
        updated_at: stamp,
        sent_at: None,
        next_attempt_at: None,
    };
    ledger::insert(bucket, &entry)?;
    jobs::schedule(
        NewJob::at(job_key(&id), now)
            .namespace(namespace.clone())
            .payload(id.clone()),
    )?;
    let mut event = NewEvent::new("email.message.queued", "create")
        .resource("email_message", &id)
        .data(&json!({
            "id": id,
            "source": entry.source,
            "from": entry.from,
            "recipients": outgoing.recipients().count(),
            "suppressed": entry.suppressed.len(),
            "subject": entry.subject,
        }));
    if let Some(organization) = organization {
        event = event.organization(organization);
    }
    event.emit()?;
    Ok(entry)
}
