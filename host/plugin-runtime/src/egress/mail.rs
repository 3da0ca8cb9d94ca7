//! Building an outgoing email with lettre: every address parsed, subject
//! and custom headers that cannot inject others, Bcc only in the envelope,
//! a Message-ID from the host, and a size cap.

use lettre::address::Envelope;
use lettre::message::header::{ContentTransferEncoding, ContentType, HeaderName, HeaderValue};
use lettre::message::{Body, Mailbox, MultiPart, SinglePart};
use lettre::{Address, Message};

use super::smtp::SmtpError;

/// The message, its limits and its reserved headers are the contract's, so
/// a plugin checks them the same way before anything is queued.
pub use plateau_contract::mail::{
    Attachment, MAX_CUSTOM_HEADERS, MAX_HEADER_NAME, MAX_HEADER_VALUE, MAX_MESSAGE_BYTES,
    MAX_RECIPIENTS, Message as MailMessage, is_header_name, is_reserved_header,
};

/// A message ready for the wire.
pub(super) struct Built {
    pub envelope: Envelope,
    pub bytes: Vec<u8>,
    pub message_id: String,
}

fn invalid(message: impl Into<String>) -> SmtpError {
    SmtpError::Invalid(message.into())
}

/// Builds `message`, or says which field is wrong; nothing is sent.
pub(super) fn build(message: &MailMessage) -> Result<Built, SmtpError> {
    let raw_size = message.text.as_ref().map_or(0, String::len)
        + message.html.as_ref().map_or(0, String::len)
        + message
            .attachments
            .iter()
            .map(|a| a.content.len())
            .sum::<usize>();
    if raw_size > MAX_MESSAGE_BYTES {
        return Err(too_large());
    }
    let sender = mailbox("sender", &message.sender)?;
    let reply_to = match &message.reply_to {
        Some(value) => Some(mailbox("reply-to", value)?),
        None => None,
    };
    let to = mailboxes("to", &message.to)?;
    let cc = mailboxes("cc", &message.cc)?;
    let bcc = mailboxes("bcc", &message.bcc)?;
    let envelope = envelope(&sender, [&to, &cc, &bcc])?;
    header_value("subject", &message.subject)?;
    let headers = custom_headers(&message.headers)?;

    let message_id = format!(
        "<{:032x}@{}>",
        rand::random::<u128>(),
        sender.email.domain()
    );
    let mut builder = Message::builder()
        .from(sender)
        .subject(message.subject.as_str())
        .message_id(Some(message_id.clone()))
        .date_now()
        .envelope(envelope.clone());
    if let Some(reply_to) = reply_to {
        builder = builder.reply_to(reply_to);
    }
    for mailbox in to {
        builder = builder.to(mailbox);
    }
    for mailbox in cc {
        builder = builder.cc(mailbox);
    }
    for header in headers {
        builder = builder.raw_header(header);
    }
    let built = match body(message)? {
        Parts::Single(part) => builder.singlepart(part),
        Parts::Multi(part) => builder.multipart(part),
    }
    .map_err(|e| invalid(format!("the message cannot be built: {e}")))?;
    let bytes = built.formatted();
    if bytes.len() > MAX_MESSAGE_BYTES {
        return Err(too_large());
    }
    if !crlf_only(&bytes) {
        return Err(invalid(
            "the message has a bare CR or LF and cannot be sent",
        ));
    }
    Ok(Built {
        envelope,
        bytes,
        message_id,
    })
}

/// Whether every CR is followed by LF and every LF preceded by CR: a bare
/// line end could be read as the end of the data by some servers.
fn crlf_only(bytes: &[u8]) -> bool {
    bytes.iter().enumerate().all(|(i, &b)| match b {
        b'\r' => bytes.get(i + 1) == Some(&b'\n'),
        b'\n' => i > 0 && bytes[i - 1] == b'\r',
        _ => true,
    })
}

fn too_large() -> SmtpError {
    invalid(format!(
        "the message is over {} MiB; send smaller attachments",
        MAX_MESSAGE_BYTES / (1024 * 1024)
    ))
}

/// One address, `Name <user@example.com>` or `user@example.com`.
fn mailbox(field: &str, value: &str) -> Result<Mailbox, SmtpError> {
    let refuse = || {
        invalid(format!(
            "{field} {value:?} must be an address like `user@example.com` or `Name <user@example.com>`"
        ))
    };
    if value.chars().any(char::is_control) {
        return Err(refuse());
    }
    value.trim().parse::<Mailbox>().map_err(|_| refuse())
}

fn mailboxes(field: &str, values: &[String]) -> Result<Vec<Mailbox>, SmtpError> {
    values
        .iter()
        .enumerate()
        .map(|(i, value)| mailbox(&format!("{field}[{i}]"), value))
        .collect()
}

/// The envelope: the sender, and every recipient once.
fn envelope(sender: &Mailbox, lists: [&Vec<Mailbox>; 3]) -> Result<Envelope, SmtpError> {
    let mut recipients: Vec<Address> = Vec::new();
    for mailbox in lists.into_iter().flatten() {
        let address = &mailbox.email;
        if !recipients.iter().any(|known: &Address| {
            let known: &str = known.as_ref();
            known.eq_ignore_ascii_case(address.as_ref())
        }) {
            recipients.push(address.clone());
        }
    }
    if recipients.is_empty() {
        return Err(invalid("to, cc or bcc must name at least one recipient"));
    }
    if recipients.len() > MAX_RECIPIENTS {
        return Err(invalid(format!(
            "a message has at most {MAX_RECIPIENTS} recipients (to, cc and bcc together)"
        )));
    }
    Envelope::new(Some(sender.email.clone()), recipients)
        .map_err(|e| invalid(format!("the envelope is invalid: {e}")))
}

/// A header value: no line break, NUL or other control character (tabs
/// aside), at most [`MAX_HEADER_VALUE`] bytes. lettre encodes the rest.
fn header_value(field: &str, value: &str) -> Result<(), SmtpError> {
    if value.chars().any(|c| c.is_control() && c != '\t') {
        return Err(invalid(format!(
            "{field} must not contain line breaks or control characters"
        )));
    }
    if value.len() > MAX_HEADER_VALUE {
        return Err(invalid(format!(
            "{field} must be at most {MAX_HEADER_VALUE} bytes"
        )));
    }
    Ok(())
}

fn custom_headers(headers: &[(String, String)]) -> Result<Vec<HeaderValue>, SmtpError> {
    if headers.len() > MAX_CUSTOM_HEADERS {
        return Err(invalid(format!(
            "headers: at most {MAX_CUSTOM_HEADERS} custom headers"
        )));
    }
    let mut seen: Vec<String> = Vec::new();
    let mut out = Vec::with_capacity(headers.len());
    for (i, (name, value)) in headers.iter().enumerate() {
        let field = format!("headers[{i}]");
        if !is_header_name(name) {
            return Err(invalid(format!(
                "{field} name {name:?} must be 1 to {MAX_HEADER_NAME} letters, digits or `-`"
            )));
        }
        let lower = name.to_ascii_lowercase();
        if is_reserved_header(name) {
            return Err(invalid(format!(
                "{field} `{name}` is set by the host; use the message's own field or another header"
            )));
        }
        if seen.contains(&lower) {
            return Err(invalid(format!("{field} `{name}` is given twice")));
        }
        header_value(&format!("{field} value"), value)?;
        seen.push(lower);
        let name = HeaderName::new_from_ascii(name.clone())
            .map_err(|_| invalid(format!("{field} name {name:?} is not a header name")))?;
        out.push(HeaderValue::new(name, value.clone()));
    }
    Ok(out)
}

enum Parts {
    Single(SinglePart),
    Multi(MultiPart),
}

/// Text and html as multipart/alternative, inside multipart/mixed with the
/// attachments when there are some.
fn body(message: &MailMessage) -> Result<Parts, SmtpError> {
    // A lone CR is a line break too; lettre turns every LF into CRLF.
    let lines = |body: &str| body.replace("\r\n", "\n").replace('\r', "\n");
    let main = match (&message.text, &message.html) {
        (Some(text), Some(html)) => {
            Parts::Multi(MultiPart::alternative_plain_html(lines(text), lines(html)))
        }
        (None, Some(html)) => Parts::Single(SinglePart::html(lines(html))),
        (Some(text), None) => Parts::Single(SinglePart::plain(lines(text))),
        (None, None) => Parts::Single(SinglePart::plain(String::new())),
    };
    if message.attachments.is_empty() {
        return Ok(main);
    }
    let mut mixed = match main {
        Parts::Single(part) => MultiPart::mixed().singlepart(part),
        Parts::Multi(part) => MultiPart::mixed().multipart(part),
    };
    for (i, attachment) in message.attachments.iter().enumerate() {
        let field = format!("attachments[{i}]");
        let filename = attachment.filename.trim();
        if filename.is_empty() || filename.chars().any(char::is_control) || filename.len() > 255 {
            return Err(invalid(format!(
                "{field}.filename must be 1 to 255 bytes without control characters"
            )));
        }
        let content_type = ContentType::parse(&attachment.content_type).map_err(|_| {
            invalid(format!(
                "{field}.content-type {:?} must be a MIME type such as `application/pdf`",
                attachment.content_type
            ))
        })?;
        // Always base64: bytes sent as 7bit would keep bare line feeds,
        // which some servers read as the end of the data (SMTP smuggling).
        let content =
            Body::new_with_encoding(attachment.content.clone(), ContentTransferEncoding::Base64)
                .map_err(|_| invalid(format!("{field} cannot be encoded")))?;
        mixed = mixed.singlepart(
            lettre::message::Attachment::new(filename.to_string()).body(content, content_type),
        );
    }
    Ok(Parts::Multi(mixed))
}

#[cfg(test)]
mod tests;
