//! Delivery: the `send:{id}` job loads the message, opens the sealed
//! password, submits through the host's `smtp` capability and records the
//! outcome in the ledger, all committed together:
//!
//! - accepted: `sent`, with the server's reply and the `Message-ID`;
//! - a temporary failure (a 4xx reply, no connection, a timeout): `deferred`
//!   and the same job again after 1, 5, 15, 60 and 240 minutes, then
//!   `failed` after the sixth attempt;
//! - a permanent failure (a 5xx reply, TLS, a refused address, no
//!   configuration): `failed`, and mailbox refusals feed the suppression
//!   list.
//!
//! The job returns `Ok` once the outcome is recorded: the plugin owns its
//! retries. It returns an error only when storage fails, and the host then
//! runs it again (a message whose acceptance could not be recorded may be
//! sent twice: delivery is at least once).

use plateau_sdk::jobs::{self, Job, NewJob};
use plateau_sdk::serde_json::json;
use plateau_sdk::smtp::{self, Reply, Sent, SmtpError};
use plateau_sdk::{ApiError, Bucket, Namespace, NewEvent, clock, log};

use super::ledger::{self, Entry, Status};
use super::send::job_key;
use super::{config, content, suppressions};
use crate::address::Mailbox;
use crate::limits::{MAX_ATTEMPTS, backoff_ms};

/// Runs a due job of the plugin.
pub fn run(job: &Job) -> Result<(), String> {
    if job.key.starts_with("invite:") {
        return super::alerts::on_invite_job(job);
    }
    let (Some(id), Some(organization)) = (job.key.strip_prefix("send:"), &job.organization_id)
    else {
        log::warn(&format!("ignoring the unknown job {}", job.key));
        return Ok(());
    };
    deliver(organization, id).map_err(|e| format!("delivering {id}: {e}"))
}

/// Why an attempt did not get the message accepted.
enum Failure {
    Smtp(SmtpError),
    /// Nothing to retry: the configuration or the content is not usable.
    Unusable(String),
}

impl Failure {
    fn is_temporary(&self) -> bool {
        match self {
            Failure::Smtp(e) => e.is_temporary(),
            Failure::Unusable(_) => false,
        }
    }

    fn reply(&self) -> Option<&Reply> {
        match self {
            Failure::Smtp(SmtpError::Rejected(reply)) => Some(reply),
            _ => None,
        }
    }

    fn describe(&self) -> String {
        match self {
            Failure::Smtp(e) => e.to_string(),
            Failure::Unusable(why) => why.clone(),
        }
    }
}

/// One delivery attempt of message `id` of `organization`.
pub fn deliver(organization: &str, id: &str) -> Result<(), ApiError> {
    let namespace = Namespace::Organization(organization.to_owned());
    let bucket = Bucket::open(namespace.clone())?;
    let Some(mut entry) = ledger::find(&bucket, id)? else {
        log::warn(&format!(
            "message {id} of {organization} has no ledger entry; nothing to send"
        ));
        return Ok(());
    };
    if entry.status.is_final() {
        return Ok(());
    }
    let previous = entry.status;
    let (recipients, outcome) = attempt(&bucket, &namespace, &entry)?;
    let now = clock::now_millis();
    entry.attempts += 1;
    entry.updated_at = clock::rfc3339(now);
    entry.next_attempt_at = None;
    match outcome {
        Ok(sent) => {
            entry.status = Status::Sent;
            entry.smtp_code = Some(sent.reply.code);
            entry.smtp_message = Some(sent.reply.message);
            entry.error = None;
            entry.message_id = Some(sent.message_id);
            entry.sent_at = Some(entry.updated_at.clone());
            content::remove(&bucket, id)?;
            ledger::update(&bucket, previous, &entry)?;
            emit(organization, "email.message.sent", &entry, json!({}))
        }
        Err(failure) => {
            entry.smtp_code = failure.reply().map(|r| r.code);
            entry.smtp_message = failure.reply().map(|r| r.message.clone());
            entry.error = failure.reply().is_none().then(|| failure.describe());
            let wait = failure
                .is_temporary()
                .then(|| backoff_ms(entry.attempts))
                .flatten();
            match wait {
                Some(wait) => defer(&bucket, organization, previous, entry, now + wait),
                None => fail(
                    &bucket,
                    organization,
                    previous,
                    entry,
                    &failure,
                    &recipients,
                ),
            }
        }
    }
}

/// Loads what an attempt needs and submits; returns the envelope
/// recipients too (for the suppression list). Storage errors are `Err`.
fn attempt(
    bucket: &Bucket,
    namespace: &Namespace,
    entry: &Entry,
) -> Result<(Vec<String>, Result<Sent, Failure>), ApiError> {
    let unusable = |why: &str| Ok((Vec::new(), Err(Failure::Unusable(why.to_owned()))));
    let Some(config) = config::load(bucket)? else {
        return unusable("email is not configured any more: PUT /email/config, then send again");
    };
    let Some(message) = content::load(bucket, &entry.id)? else {
        return unusable("the message's content is gone");
    };
    let from = Mailbox::parse(&message.sender).map_err(ApiError::internal)?;
    if !config.allows(&from) {
        return unusable(&format!(
            "{} is no longer an allowed sender of the configuration",
            from.address
        ));
    }
    let server = match config.server(namespace) {
        Ok(server) => server,
        Err(why) => return unusable(&format!("the SMTP password cannot be used: {why}")),
    };
    let recipients = message
        .to
        .iter()
        .chain(&message.cc)
        .chain(&message.bcc)
        .filter_map(|r| Mailbox::parse(r).ok())
        .map(|m| m.address)
        .collect();
    Ok((
        recipients,
        smtp::send(&server, &message).map_err(Failure::Smtp),
    ))
}

/// Records a temporary failure and schedules the next attempt at `at`.
fn defer(
    bucket: &Bucket,
    organization: &str,
    previous: Status,
    mut entry: Entry,
    at: u64,
) -> Result<(), ApiError> {
    entry.status = Status::Deferred;
    entry.next_attempt_at = Some(clock::rfc3339(at));
    jobs::schedule(
        NewJob::at(job_key(&entry.id), at)
            .namespace(Namespace::Organization(organization.to_owned()))
            .payload(entry.id.clone()),
    )?;
    ledger::update(bucket, previous, &entry)?;
    emit(organization, "email.message.deferred", &entry, json!({}))
}

/// Records a final failure, suppressing the recipients it condemns.
fn fail(
    bucket: &Bucket,
    organization: &str,
    previous: Status,
    mut entry: Entry,
    failure: &Failure,
    recipients: &[String],
) -> Result<(), ApiError> {
    entry.status = Status::Failed;
    if failure.is_temporary() {
        entry.error = Some(format!(
            "gave up after {MAX_ATTEMPTS} attempts; the last: {}",
            failure.describe()
        ));
    }
    let mut suppressed = Vec::new();
    if let Some(reply) = failure.reply().filter(|r| r.code >= 500) {
        for address in suppressions::condemned(reply, recipients) {
            suppressions::add(bucket, address, reply, &entry.id)?;
            suppressed.push(address.to_ascii_lowercase());
        }
    }
    content::remove(bucket, &entry.id)?;
    ledger::update(bucket, previous, &entry)?;
    emit(
        organization,
        "email.message.failed",
        &entry,
        json!({ "nowSuppressed": suppressed }),
    )
}

/// Records a delivery event in the organisation's timeline (not audited).
fn emit(
    organization: &str,
    event_type: &str,
    entry: &Entry,
    extra: plateau_sdk::serde_json::Value,
) -> Result<(), ApiError> {
    let mut data = json!({
        "id": entry.id,
        "status": entry.status,
        "attempts": entry.attempts,
        "smtpCode": entry.smtp_code,
        "smtpMessage": entry.smtp_message,
        "error": entry.error,
        "messageId": entry.message_id,
        "nextAttemptAt": entry.next_attempt_at,
    });
    if let (Some(data), Some(extra)) = (data.as_object_mut(), extra.as_object()) {
        data.extend(extra.clone());
    }
    NewEvent::new(event_type, "update")
        .organization(organization)
        .resource("email_message", &entry.id)
        .data(&data)
        .emit()?;
    Ok(())
}
