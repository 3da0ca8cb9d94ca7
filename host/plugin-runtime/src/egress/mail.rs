//! Building an outgoing email with lettre: every address parsed, subject
//! and custom headers that cannot inject others, Bcc only in the envelope,
//! a Message-ID from the host, and a size cap.

use lettre::address::Envelope;
use lettre::message::header::{ContentTransferEncoding, ContentType, HeaderName, HeaderValue};
use lettre::message::{Body, Mailbox, MultiPart, SinglePart};
use lettre::{Address, Message};

use super::smtp::SmtpError;

/// The largest message the host sends, headers and encoded parts included
/// (attachments grow by a third in base64): 25 MiB, what most providers
/// accept.
pub const MAX_MESSAGE_BYTES: usize = 25 * 1024 * 1024;
/// The most envelope recipients (to, cc and bcc together) of one message;
/// RFC 5321 asks servers to accept at least 100.
pub const MAX_RECIPIENTS: usize = 100;
/// The most custom headers of one message.
pub const MAX_CUSTOM_HEADERS: usize = 50;
/// The longest subject or custom header value, in bytes (RFC 5322's line
/// limit; longer values are folded by the host anyway).
pub const MAX_HEADER_VALUE: usize = 998;

/// Header names the host sets itself, or that record the message's trust
/// and trace; a plugin may not set them. Names starting with `content-`,
/// `resent-` or `arc-` are refused too.
const RESERVED_HEADERS: &[&str] = &[
    "from",
    "sender",
    "reply-to",
    "to",
    "cc",
    "bcc",
    "subject",
    "date",
    "message-id",
    "mime-version",
    "return-path",
    "received",
    "received-spf",
    "delivered-to",
    "authentication-results",
    "dkim-signature",
];
const RESERVED_PREFIXES: &[&str] = &["content-", "resent-", "arc-"];

/// A file attached to a message.
#[derive(Clone, PartialEq, Eq)]
pub struct Attachment {
    pub filename: String,
    /// A MIME type such as `application/pdf` or `text/csv; charset=utf-8`.
    pub content_type: String,
    pub content: Vec<u8>,
}

impl std::fmt::Debug for Attachment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attachment")
            .field("filename", &self.filename)
            .field("content_type", &self.content_type)
            .field("bytes", &self.content.len())
            .finish()
    }
}

/// An email to send. Addresses are `user@example.com` or
/// `Name <user@example.com>`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MailMessage {
    /// The `From` header and the envelope sender.
    pub sender: String,
    pub reply_to: Option<String>,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    /// Envelope recipients only: never written in the headers.
    pub bcc: Vec<String>,
    pub subject: String,
    pub text: Option<String>,
    pub html: Option<String>,
    /// Extra headers: names of letters, digits and `-`, none of those the
    /// host sets.
    pub headers: Vec<(String, String)>,
    pub attachments: Vec<Attachment>,
}

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
        let shaped = !name.is_empty()
            && name.len() <= 76
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
        if !shaped {
            return Err(invalid(format!(
                "{field} name {name:?} must be 1 to 76 letters, digits or `-`"
            )));
        }
        let lower = name.to_ascii_lowercase();
        if RESERVED_HEADERS.contains(&lower.as_str())
            || RESERVED_PREFIXES.iter().any(|p| lower.starts_with(p))
        {
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
