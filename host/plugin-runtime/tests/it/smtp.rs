//! SMTP submission through the egress guard, against the testkit's real
//! SMTP sink: plain, STARTTLS and implicit TLS, authentication, temporary
//! and permanent failures, and the address policy.

use std::time::Duration;

use plateau_plugin_runtime::egress::{
    Attachment, EgressGuard, MailMessage, SmtpError, SmtpServer, TlsMode, parse_allow_list,
};
use plateau_testkit::{SinkTls, SmtpSink};
use tokio::net::TcpListener;

/// The host's cap on one exchange, as the plugin limits set it.
const LIMIT: Duration = Duration::from_secs(10);

/// A guard exempting loopback and trusting the sink's certificate.
fn guard(sink: &SmtpSink) -> EgressGuard {
    let allow = parse_allow_list("127.0.0.0/8").unwrap();
    EgressGuard::with_extra_roots(allow, &[sink.certificate_der()]).unwrap()
}

fn server(port: u16, tls: TlsMode, credentials: Option<(&str, &str)>) -> SmtpServer {
    SmtpServer {
        host: "127.0.0.1".into(),
        port,
        tls,
        username: credentials.map(|c| c.0.to_string()),
        password: credentials.map(|c| c.1.to_string()),
        timeout_ms: Some(10_000),
    }
}

fn granted(port: u16) -> Vec<String> {
    vec![format!("127.0.0.1:{port}")]
}

fn message() -> MailMessage {
    MailMessage {
        sender: "Alerts <alerts@example.com>".into(),
        reply_to: Some("support@example.com".into()),
        to: vec!["Ann <ann@example.org>".into()],
        cc: vec!["bob@example.org".into()],
        bcc: vec!["hidden@example.net".into()],
        subject: "Disk almost full".into(),
        text: Some("90% used.\n.\nA line that is only a dot.".into()),
        html: Some("<p>90% used.</p>".into()),
        headers: vec![("X-Check-Id".into(), "chk_123".into())],
        attachments: vec![Attachment {
            filename: "usage.csv".into(),
            content_type: "text/csv".into(),
            content: b"disk,used\nroot,90\n".to_vec(),
        }],
    }
}

#[tokio::test]
async fn delivers_in_every_tls_mode_with_auth() {
    let modes = [
        (SinkTls::None, TlsMode::None),
        (SinkTls::StartTls, TlsMode::StartTls),
        (SinkTls::Implicit, TlsMode::Implicit),
    ];
    for (sink_tls, tls) in modes {
        let sink = SmtpSink::with_auth(sink_tls, "relay", "s3cret").await;
        let sent = guard(&sink)
            .send_mail(
                &granted(sink.port()),
                server(sink.port(), tls, Some(("relay", "s3cret"))),
                message(),
                LIMIT,
            )
            .await
            .unwrap_or_else(|e| panic!("{tls:?}: {e}"));
        assert_eq!(sent.reply.code, 250, "{tls:?}");
        assert!(sent.reply.message.contains("queued as 1"), "{sent:?}");
        assert!(sent.message_id.ends_with("@example.com>"), "{sent:?}");

        let messages = sink.messages();
        assert_eq!(messages.len(), 1, "{tls:?}");
        let mail = &messages[0];
        assert_eq!(mail.tls, tls != TlsMode::None, "{tls:?}");
        assert_eq!(mail.user.as_deref(), Some("relay"));
        assert_eq!(mail.from, "alerts@example.com");
        assert_eq!(
            mail.recipients,
            ["ann@example.org", "bob@example.org", "hidden@example.net"]
        );
        let text = mail.text();
        assert_eq!(mail.header("Message-ID"), Some(sent.message_id.clone()));
        assert_eq!(
            mail.header("From").as_deref(),
            Some("Alerts <alerts@example.com>")
        );
        assert_eq!(mail.header("To").as_deref(), Some("Ann <ann@example.org>"));
        assert_eq!(mail.header("Cc").as_deref(), Some("bob@example.org"));
        assert_eq!(
            mail.header("Reply-To").as_deref(),
            Some("support@example.com")
        );
        assert_eq!(mail.header("Subject").as_deref(), Some("Disk almost full"));
        assert_eq!(mail.header("X-Check-Id").as_deref(), Some("chk_123"));
        assert_eq!(mail.header("Bcc"), None);
        assert!(!text.contains("hidden@example.net"), "{text}");
        assert!(
            mail.header("Content-Type")
                .is_some_and(|t| t.starts_with("multipart/mixed")),
            "{text}"
        );
        assert!(text.contains("multipart/alternative"), "{text}");
        assert!(
            text.contains("Content-Disposition: attachment; filename=\"usage.csv\""),
            "{text}"
        );
        assert!(
            text.contains("ZGlzayx1c2VkCnJvb3QsOTAK"),
            "the csv in base64: {text}"
        );
        // The lone dot survived dot-stuffing both ways.
        assert!(
            text.contains("\r\n.\r\nA line that is only a dot."),
            "{text}"
        );
    }
}

#[tokio::test]
async fn starttls_verifies_the_server_name_against_the_guard_roots() {
    let sink = SmtpSink::start(Default::default()).await;
    // A plain server that does not offer STARTTLS: refused, nothing sent.
    let err = guard(&sink)
        .send_mail(
            &granted(sink.port()),
            server(sink.port(), TlsMode::StartTls, None),
            message(),
            LIMIT,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, SmtpError::TlsFailed(m) if m.contains("does not offer STARTTLS")),
        "{err:?}"
    );
    assert_eq!(sink.attempts(), 0);

    let sink = SmtpSink::start(plateau_testkit::SmtpSinkOptions {
        tls: SinkTls::StartTls,
        auth: None,
    })
    .await;
    let by_name = SmtpServer {
        host: "localhost".into(),
        ..server(sink.port(), TlsMode::StartTls, None)
    };
    let localhost = [format!("localhost:{}", sink.port())];
    let sent = guard(&sink)
        .send_mail(&localhost, by_name.clone(), message(), LIMIT)
        .await
        .unwrap();
    assert_eq!(sent.reply.code, 250);
    // Without the sink's certificate among the roots, the handshake fails.
    let untrusted = EgressGuard::new(parse_allow_list("127.0.0.0/8").unwrap());
    let err = untrusted
        .send_mail(&localhost, by_name, message(), LIMIT)
        .await
        .unwrap_err();
    assert!(matches!(err, SmtpError::TlsFailed(_)), "{err:?}");
    assert_eq!(sink.count(), 1);
}

#[tokio::test]
async fn temporary_and_permanent_replies_are_rejections_with_their_code() {
    let sink = SmtpSink::plain().await;
    let egress = guard(&sink);
    let hosts = granted(sink.port());
    let send = |message: MailMessage| {
        egress.send_mail(
            &hosts,
            server(sink.port(), TlsMode::None, None),
            message,
            LIMIT,
        )
    };

    sink.fail_next(1, 451, "4.3.0 try later");
    match send(message()).await {
        Err(SmtpError::Rejected(reply)) => {
            assert_eq!(reply.code, 451);
            assert!(reply.message.contains("try later"), "{reply:?}");
        }
        other => panic!("expected a 451, got {other:?}"),
    }
    assert_eq!(send(message()).await.unwrap().reply.code, 250);

    sink.reject_recipient("gone@example.org", 550, "5.1.1 no such user");
    let mut to_gone = message();
    to_gone.to = vec!["gone@example.org".into()];
    match send(to_gone).await {
        Err(SmtpError::Rejected(reply)) => {
            assert_eq!(reply.code, 550);
            assert!(reply.message.contains("no such user"), "{reply:?}");
        }
        other => panic!("expected a 550, got {other:?}"),
    }
    assert_eq!((sink.count(), sink.attempts()), (1, 2));
}

#[tokio::test]
async fn bad_credentials_are_rejected_with_535() {
    let sink = SmtpSink::with_auth(SinkTls::Implicit, "relay", "s3cret").await;
    let err = guard(&sink)
        .send_mail(
            &granted(sink.port()),
            server(sink.port(), TlsMode::Implicit, Some(("relay", "wrong"))),
            message(),
            LIMIT,
        )
        .await
        .unwrap_err();
    match err {
        SmtpError::Rejected(reply) => assert_eq!(reply.code, 535, "{reply:?}"),
        other => panic!("expected a 535, got {other:?}"),
    }
    assert_eq!(sink.count(), 0);
}

#[tokio::test]
async fn ungranted_hosts_refused_addresses_and_invalid_messages_never_connect() {
    let sink = SmtpSink::plain().await;
    let plain = server(sink.port(), TlsMode::None, None);

    let err = guard(&sink)
        .send_mail(
            &["smtp.example.com".into()],
            plain.clone(),
            message(),
            LIMIT,
        )
        .await
        .unwrap_err();
    assert_eq!(err, SmtpError::HostNotAllowed("127.0.0.1".into()));
    // The grant is per port too.
    let err = guard(&sink)
        .send_mail(&["127.0.0.1:1".into()], plain.clone(), message(), LIMIT)
        .await
        .unwrap_err();
    assert_eq!(err, SmtpError::HostNotAllowed("127.0.0.1".into()));

    // Granted, but loopback is not exempted by the operator.
    let strict = EgressGuard::new(Vec::new());
    let err = strict
        .send_mail(&granted(sink.port()), plain.clone(), message(), LIMIT)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, SmtpError::AddressRefused(m) if m.contains("loopback")),
        "{err:?}"
    );

    let mut injected = message();
    injected.subject = "hi\r\nBcc: victim@example.com".into();
    let err = guard(&sink)
        .send_mail(&granted(sink.port()), plain, injected, LIMIT)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, SmtpError::Invalid(m) if m.contains("subject")),
        "{err:?}"
    );
    assert_eq!(sink.connections(), 0);
}

#[tokio::test]
async fn a_silent_server_times_out() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let hold = tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        tokio::time::sleep(Duration::from_secs(5)).await;
        drop(socket);
    });
    let egress = EgressGuard::new(parse_allow_list("127.0.0.1").unwrap());
    let silent = SmtpServer {
        timeout_ms: Some(300),
        ..server(port, TlsMode::None, None)
    };
    let err = egress
        .send_mail(&granted(port), silent, message(), LIMIT)
        .await
        .unwrap_err();
    assert_eq!(err, SmtpError::Timeout);
    hold.abort();
}
