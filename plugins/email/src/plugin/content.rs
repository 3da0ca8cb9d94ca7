//! A message's content, kept from the moment it is queued until its final
//! outcome (sent or failed), then removed: the ledger keeps only the
//! summary. Bodies and attachments are stored as raw bytes in chunks below
//! the host's 1 MiB value limit, so a message with 10 MiB of attachments
//! fits; the small head says how long each part is.

use plateau_sdk::smtp::{Attachment, Message};
use plateau_sdk::{ApiError, Bucket};
use serde::{Deserialize, Serialize};

use crate::keys;
use crate::message::Outgoing;

/// The largest chunk of a part, below the host's 1 MiB value limit.
const CHUNK: usize = 1_000_000;

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Head {
    from: String,
    reply_to: Option<String>,
    to: Vec<String>,
    cc: Vec<String>,
    bcc: Vec<String>,
    subject: String,
    /// Byte lengths of the bodies, when present.
    text: Option<usize>,
    html: Option<usize>,
    headers: Vec<(String, String)>,
    attachments: Vec<AttachmentHead>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AttachmentHead {
    filename: String,
    content_type: String,
    size: usize,
}

fn attachment_part(i: usize) -> String {
    format!("a{i}")
}

fn chunks(size: usize) -> usize {
    size.div_ceil(CHUNK)
}

/// Stores the content of message `id`.
pub fn store(bucket: &Bucket, id: &str, message: &Outgoing) -> Result<(), ApiError> {
    let strings = |list: &[crate::address::Mailbox]| list.iter().map(ToString::to_string).collect();
    let head = Head {
        from: message.from.to_string(),
        reply_to: message.reply_to.as_ref().map(ToString::to_string),
        to: strings(&message.to),
        cc: strings(&message.cc),
        bcc: strings(&message.bcc),
        subject: message.subject.clone(),
        text: message.text.as_ref().map(String::len),
        html: message.html.as_ref().map(String::len),
        headers: message.headers.clone(),
        attachments: message
            .attachments
            .iter()
            .map(|a| AttachmentHead {
                filename: a.filename.clone(),
                content_type: a.content_type.clone(),
                size: a.content.len(),
            })
            .collect(),
    };
    bucket.set(&keys::content_head(id), &head)?;
    let write = |part: &str, bytes: &[u8]| -> Result<(), ApiError> {
        for (n, chunk) in bytes.chunks(CHUNK).enumerate() {
            bucket.set_raw(&keys::content_chunk(id, part, n), chunk)?;
        }
        Ok(())
    };
    if let Some(text) = &message.text {
        write("t", text.as_bytes())?;
    }
    if let Some(html) = &message.html {
        write("h", html.as_bytes())?;
    }
    for (i, attachment) in message.attachments.iter().enumerate() {
        write(&attachment_part(i), &attachment.content)?;
    }
    Ok(())
}

/// The stored message `id` as the `smtp` capability takes it, or `None`
/// when its content is gone.
pub fn load(bucket: &Bucket, id: &str) -> Result<Option<Message>, ApiError> {
    let Some(head) = bucket.get::<Head>(&keys::content_head(id))? else {
        return Ok(None);
    };
    let read = |part: &str, size: usize| -> Result<Vec<u8>, ApiError> {
        let mut bytes = Vec::with_capacity(size);
        for n in 0..chunks(size) {
            let key = keys::content_chunk(id, part, n);
            let chunk = bucket.get_raw(&key)?.ok_or_else(|| {
                ApiError::internal(format!("message {id} has lost its content at {key}"))
            })?;
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    };
    let text = |part: &str, size: Option<usize>| -> Result<Option<String>, ApiError> {
        size.map(|size| {
            String::from_utf8(read(part, size)?).map_err(|_| {
                ApiError::internal(format!("message {id} has a body that is not UTF-8"))
            })
        })
        .transpose()
    };
    let attachments = head
        .attachments
        .iter()
        .enumerate()
        .map(|(i, a)| {
            Ok(Attachment {
                filename: a.filename.clone(),
                content_type: a.content_type.clone(),
                content: read(&attachment_part(i), a.size)?,
            })
        })
        .collect::<Result<_, ApiError>>()?;
    Ok(Some(Message {
        text: text("t", head.text)?,
        html: text("h", head.html)?,
        sender: head.from,
        reply_to: head.reply_to,
        to: head.to,
        cc: head.cc,
        bcc: head.bcc,
        subject: head.subject,
        headers: head.headers,
        attachments,
    }))
}

/// Removes the content of message `id`, if it is still there.
pub fn remove(bucket: &Bucket, id: &str) -> Result<(), ApiError> {
    let Some(head) = bucket.get::<Head>(&keys::content_head(id))? else {
        return Ok(());
    };
    let mut parts: Vec<(String, usize)> = Vec::new();
    parts.extend(head.text.map(|size| ("t".to_owned(), size)));
    parts.extend(head.html.map(|size| ("h".to_owned(), size)));
    parts.extend(
        head.attachments
            .iter()
            .enumerate()
            .map(|(i, a)| (attachment_part(i), a.size)),
    );
    for (part, size) in parts {
        for n in 0..chunks(size) {
            bucket.delete(&keys::content_chunk(id, &part, n))?;
        }
    }
    bucket.delete(&keys::content_head(id))?;
    Ok(())
}
