//! Message building: structure, envelope, and every refusal.

use super::*;

type Edit = fn(&mut MailMessage);

fn message() -> MailMessage {
    MailMessage {
        sender: "Alerts <alerts@example.com>".into(),
        to: vec!["ann@example.org".into()],
        subject: "Hello".into(),
        text: Some("plain body".into()),
        ..MailMessage::default()
    }
}

fn text(built: &Built) -> String {
    String::from_utf8(built.bytes.clone()).unwrap()
}

/// The header block, unfolded, one header a line.
fn headers(built: &Built) -> Vec<String> {
    let text = text(built);
    let head = text.split("\r\n\r\n").next().unwrap().replace("\r\n ", " ");
    head.split("\r\n").map(str::to_string).collect()
}

fn refused(edit: impl FnOnce(&mut MailMessage)) -> String {
    let mut m = message();
    edit(&mut m);
    match build(&m) {
        Err(SmtpError::Invalid(reason)) => reason,
        Err(other) => panic!("expected Invalid, got {other:?}"),
        Ok(built) => panic!("expected Invalid, built {} bytes", built.bytes.len()),
    }
}

#[test]
fn builds_alternative_and_mixed_parts_with_bcc_only_in_the_envelope() {
    let mut m = message();
    m.reply_to = Some("support@example.com".into());
    m.cc = vec!["Bob <bob@example.org>".into()];
    m.bcc = vec!["secret@example.net".into(), "ANN@example.org".into()];
    m.html = Some("<p>html body</p>".into());
    m.headers = vec![("X-Campaign".into(), "spring".into())];
    m.attachments = vec![Attachment {
        filename: "report \"q1\".bin".into(),
        content_type: "application/octet-stream".into(),
        content: vec![0, 1, 2, 0xff],
    }];
    let built = build(&m).unwrap();
    let all = text(&built);
    let head = headers(&built);

    assert!(built.message_id.starts_with('<') && built.message_id.ends_with("@example.com>"));
    assert!(head.contains(&format!("Message-ID: {}", built.message_id)));
    assert!(head.contains(&"From: Alerts <alerts@example.com>".to_string()));
    assert!(head.contains(&"To: ann@example.org".to_string()));
    assert!(head.contains(&"Cc: Bob <bob@example.org>".to_string()));
    assert!(head.contains(&"Reply-To: support@example.com".to_string()));
    assert!(head.contains(&"X-Campaign: spring".to_string()));
    assert!(head.iter().any(|h| h.starts_with("Date: ")));
    assert!(
        !all.to_ascii_lowercase().contains("secret@example.net"),
        "{all}"
    );
    assert!(
        !head
            .iter()
            .any(|h| h.to_ascii_lowercase().starts_with("bcc"))
    );
    assert!(all.contains("multipart/mixed") && all.contains("multipart/alternative"));
    assert!(all.contains("plain body") && all.contains("<p>html body</p>"));
    assert!(all.contains("Content-Disposition: attachment"), "{all}");
    assert!(all.contains("filename=\"report \\\"q1\\\".bin\""), "{all}");
    assert!(all.contains("AAEC/w=="), "the attachment in base64: {all}");

    let envelope = &built.envelope;
    assert_eq!(envelope.from().unwrap().to_string(), "alerts@example.com");
    let rcpt: Vec<String> = envelope.to().iter().map(ToString::to_string).collect();
    // Every recipient once, compared without case.
    assert_eq!(
        rcpt,
        ["ann@example.org", "bob@example.org", "secret@example.net"]
    );
}

#[test]
fn bare_line_feeds_never_reach_the_wire() {
    let mut m = message();
    m.text = Some("a\n.\nb\rc".into());
    m.attachments = vec![Attachment {
        filename: "notes.txt".into(),
        content_type: "text/plain".into(),
        content: b"line\n.\nQUIT\n".to_vec(),
    }];
    let built = build(&m).unwrap();
    assert!(crlf_only(&built.bytes));
    assert!(!text(&built).contains("\r\nQUIT"), "{}", text(&built));
    assert!(!crlf_only(b"a\nb") && !crlf_only(b"a\rb") && crlf_only(b"a\r\nb"));
}

#[test]
fn one_part_messages_are_not_multipart() {
    let built = build(&message()).unwrap();
    let all = text(&built);
    assert!(!all.contains("multipart"), "{all}");
    assert!(
        all.contains("Content-Type: text/plain; charset=utf-8"),
        "{all}"
    );
    let mut html = message();
    html.text = None;
    html.html = Some("<b>hi</b>".into());
    assert!(text(&build(&html).unwrap()).contains("Content-Type: text/html"));
}

#[test]
fn every_address_is_validated_and_named() {
    let cases: [(&str, Edit); 7] = [
        ("sender", |m| m.sender = "not an address".into()),
        ("sender", |m| {
            m.sender = "a@example.com\r\nBcc: x@evil.com".into()
        }),
        ("reply-to", |m| m.reply_to = Some("@example.com".into())),
        ("to[1]", |m| {
            m.to.push("ann@example.org\nBcc: x@evil.com".into())
        }),
        ("cc[0]", |m| m.cc = vec!["Bob <bob@>".into()]),
        ("bcc[0]", |m| m.bcc = vec!["bob".into()]),
        ("at least one recipient", |m| m.to.clear()),
    ];
    for (field, edit) in cases {
        let reason = refused(edit);
        assert!(reason.contains(field), "{field}: {reason}");
    }
    let reason = refused(|m| {
        m.bcc = (0..MAX_RECIPIENTS)
            .map(|i| format!("user{i}@example.com"))
            .collect()
    });
    assert!(reason.contains("at most 100 recipients"), "{reason}");
}

#[test]
fn subject_and_headers_cannot_inject_headers() {
    let cases: [(&str, Edit); 12] = [
        ("subject", |m| m.subject = "Hi\r\nBcc: x@evil.com".into()),
        ("subject", |m| m.subject = "Hi\0".into()),
        ("subject", |m| m.subject = "x".repeat(MAX_HEADER_VALUE + 1)),
        ("headers[0] value", |m| {
            m.headers = vec![("X-Tag".into(), "a\r\nBcc: x@evil.com".into())]
        }),
        ("headers[0] value", |m| {
            m.headers = vec![("X-Tag".into(), "a\nb".into())]
        }),
        ("headers[0] name", |m| {
            m.headers = vec![("X-Tag\r\nBcc".into(), "x@evil.com".into())]
        }),
        ("headers[0] name", |m| {
            m.headers = vec![("X Tag".into(), "v".into())]
        }),
        ("headers[0] name", |m| {
            m.headers = vec![("X-Tag:".into(), "v".into())]
        }),
        ("headers[0] `bcc` is set by the host", |m| {
            m.headers = vec![("bcc".into(), "x@evil.com".into())]
        }),
        ("headers[1] `Content-Type` is set by the host", |m| {
            m.headers = vec![
                ("X-Ok".into(), "v".into()),
                ("Content-Type".into(), "text/html".into()),
            ]
        }),
        ("headers[0] `Received` is set by the host", |m| {
            m.headers = vec![("Received".into(), "from x".into())]
        }),
        ("headers[1] `x-tag` is given twice", |m| {
            m.headers = vec![("X-Tag".into(), "a".into()), ("x-tag".into(), "b".into())]
        }),
    ];
    for (expected, edit) in cases {
        let reason = refused(edit);
        assert!(reason.contains(expected), "{expected}: {reason}");
    }
    for name in [
        "From",
        "Message-ID",
        "MIME-Version",
        "Resent-To",
        "Return-Path",
        "Sender",
    ] {
        let reason = refused(|m| m.headers = vec![(name.into(), "v".into())]);
        assert!(reason.contains("is set by the host"), "{name}: {reason}");
    }
}

#[test]
fn non_ascii_values_are_encoded_not_passed_raw() {
    let mut m = message();
    m.subject = "Grüße – état".into();
    m.headers = vec![("List-Unsubscribe".into(), "<mailto:u@example.com>".into())];
    let built = build(&m).unwrap();
    assert!(built.bytes.is_ascii());
    let head = headers(&built);
    assert!(
        head.iter().any(|h| h.starts_with("Subject: =?utf-8?")),
        "{head:?}"
    );
    assert!(head.contains(&"List-Unsubscribe: <mailto:u@example.com>".to_string()));
}

#[test]
fn attachments_are_checked_and_the_size_is_capped() {
    let attach = |filename: &str, content_type: &str, size: usize| Attachment {
        filename: filename.into(),
        content_type: content_type.into(),
        content: vec![0xff; size],
    };
    let reason = refused(|m| m.attachments = vec![attach("a.pdf", "not a type", 1)]);
    assert!(reason.contains("attachments[0].content-type"), "{reason}");
    let reason = refused(|m| m.attachments = vec![attach("a\r\n.pdf", "application/pdf", 1)]);
    assert!(reason.contains("attachments[0].filename"), "{reason}");
    let reason = refused(|m| {
        m.attachments = vec![attach(
            "big.bin",
            "application/octet-stream",
            MAX_MESSAGE_BYTES + 1,
        )]
    });
    assert!(reason.contains("over 25 MiB"), "{reason}");
    // Under the cap raw, over it once in base64.
    let reason = refused(|m| {
        m.attachments = vec![attach(
            "big.bin",
            "application/octet-stream",
            20 * 1024 * 1024,
        )]
    });
    assert!(reason.contains("over 25 MiB"), "{reason}");
}
