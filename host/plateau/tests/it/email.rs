//! The built-in email relay over HTTP, delivering to a real SMTP server
//! (the testkit's sink): message content and envelope, plain, STARTTLS and
//! implicit TLS with authentication, the rate limit, retries of temporary
//! failures on the host clock, permanent failures and suppressions, the
//! ledger's filters, isolation between organisations, and the alerts that
//! other plugins request with events.

use std::path::PathBuf;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use plateau_testkit::{Backend, Client, Server, ServerOptions, SinkTls, SmtpSink};
use serde_json::{Value, json};

use crate::plugins::admin;
use crate::{advance, event_types, start_with, until};

crate::on_both_backends!(
    messages_are_relayed_with_their_content_and_envelope,
    tls_and_authentication,
    the_rate_limit_answers_429_with_retry_after,
    temporary_failures_are_retried_and_permanent_ones_recorded,
    the_ledger_filters_and_organisations_are_isolated,
    heartbeat_alerts_are_relayed_once,
);

/// The relay may reach the sink on loopback.
fn options(backend: Backend) -> ServerOptions {
    ServerOptions::new(backend).env("PLATEAU_EGRESS_ALLOW", "127.0.0.0/8")
}

fn config(sink: &SmtpSink, tls: &str) -> Value {
    json!({
        "host": "127.0.0.1",
        "port": sink.port(),
        "tlsMode": tls,
        "allowedSenders": ["ann@example.com", "*@example.org"],
    })
}

async fn configure(c: &Client, body: Value) {
    let r = c.put("/email/config", body).await;
    assert!(matches!(r.status, 200 | 201), "{}", r.text());
}

/// `POST /email/send`; asserts 202 and returns the message id.
async fn send(c: &Client, body: Value) -> String {
    let r = c.post("/email/send", body).await;
    assert_eq!(r.status, 202, "{}", r.text());
    let entry = r.json();
    assert_eq!(entry["status"], "queued");
    entry["id"].as_str().unwrap().to_owned()
}

/// Polls the ledger entry until its status is `want`.
async fn wait_for_status(c: &Client, id: &str, want: &str) -> Value {
    until(c, &format!("/email/messages/{id}"), want, |entry| {
        entry["status"] == want
    })
    .await
}

async fn messages_are_relayed_with_their_content_and_envelope(backend: Backend) {
    // Room for the largest attachments (10 MiB decoded) in a request.
    let s = start_with(options(backend).env("PLATEAU_MAX_BODY_BYTES", "16777216")).await;
    let sink = SmtpSink::plain().await;
    let c = s.client();
    let r = c.post("/email/send", json!({})).await;
    assert_eq!(r.status, 400, "validation comes first: {}", r.text());
    configure(&c, config(&sink, "none")).await;
    let id = send(
        &c,
        json!({
            "from": "Ann Example <ann@example.com>",
            "to": ["Bob <bob@example.net>"],
            "cc": ["carl@example.net"],
            "bcc": ["dan@example.net"],
            "replyTo": "support@example.com",
            "subject": "Invoice 42 – November",
            "text": "Hello Bob,\nyour invoice is attached.",
            "html": "<p>Hello Bob,<br>your invoice is attached.</p>",
            "headers": { "X-Campaign": "november" },
            "attachments": [{ "filename": "invoice.txt", "contentType": "text/plain", "content": BASE64.encode("invoice body") }],
        }),
    )
    .await;
    let entry = wait_for_status(&c, &id, "sent").await;
    let mail = sink.wait_for(1, Duration::from_secs(10)).await.remove(0);
    assert_eq!(mail.from, "ann@example.com");
    assert_eq!(
        mail.recipients,
        ["bob@example.net", "carl@example.net", "dan@example.net"],
        "bcc is in the envelope"
    );
    assert!(!mail.tls && mail.user.is_none());
    let from = mail.header("From").unwrap();
    assert!(
        from.contains("Ann Example") && from.ends_with("<ann@example.com>"),
        "{from}"
    );
    assert_eq!(mail.header("To").as_deref(), Some("Bob <bob@example.net>"));
    assert_eq!(mail.header("Cc").as_deref(), Some("carl@example.net"));
    assert_eq!(
        mail.header("Reply-To").as_deref(),
        Some("support@example.com")
    );
    assert_eq!(mail.header("X-Campaign").as_deref(), Some("november"));
    assert_eq!(mail.header("Bcc"), None, "bcc is never in the headers");
    assert!(!mail.text().contains("dan@example.net"));
    let subject = mail.header("Subject").unwrap();
    assert!(
        subject.starts_with("Invoice 42 ") && subject.to_ascii_lowercase().contains("=?utf-8?b?"),
        "a non-ASCII subject is encoded: {subject}"
    );
    let text = mail.text();
    assert!(
        text.contains("Hello Bob,\r\nyour invoice is attached."),
        "{text}"
    );
    assert!(
        text.contains("filename=\"invoice.txt\"") && text.contains(&BASE64.encode("invoice body"))
    );
    assert_eq!(
        (
            entry["smtpCode"].clone(),
            entry["attempts"].clone(),
            entry["bccCount"].clone()
        ),
        (json!(250), json!(1), json!(1))
    );
    assert_eq!(
        entry["messageId"].as_str(),
        mail.header("Message-ID").as_deref()
    );
    let events = c.get("/events?type=email.message.*").await.json();
    let types = event_types(&events);
    assert_eq!(
        types,
        ["email.message.sent", "email.message.queued"],
        "{events}"
    );

    // Header injection is refused before anything is queued.
    let r = c
        .post(
            "/email/send",
            json!({ "from": "ann@example.com", "to": "bob@example.net",
            "subject": "hi\r\nBcc: eve@example.net", "text": "x",
            "headers": { "X-Evil": "a\r\nBcc: eve@example.net" } }),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    let problem = r.json();
    let fields: Vec<&str> = problem["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["subject", "headers.X-Evil"]);

    // The largest attachments travel whole; more is 413.
    let big: Vec<u8> = (0..10u32 << 20).map(|i| (i % 253) as u8).collect();
    let id = send(
        &c,
        json!({ "from": "ann@example.com", "to": "bob@example.net", "subject": "big", "text": "see attached",
                "attachments": [{ "filename": "big.bin", "content": BASE64.encode(&big) }] }),
    )
    .await;
    wait_for_status(&c, &id, "sent").await;
    let mail = sink.wait_for(2, Duration::from_secs(10)).await.remove(1);
    assert!(
        mail.data.len() > big.len() * 4 / 3,
        "{} bytes",
        mail.data.len()
    );
    let r = c
        .post("/email/send", json!({ "from": "ann@example.com", "to": "bob@example.net", "subject": "too big", "text": "x",
                "attachments": [{ "filename": "big.bin", "content": BASE64.encode([&big[..], b"!"].concat()) }] }))
        .await;
    assert_eq!(r.status, 413, "{}", r.text());
}

/// A file trusting each of `sinks`' certificates (PEM, several blocks).
fn ca_file(dir: &tempfile::TempDir, sinks: &[&SmtpSink]) -> PathBuf {
    let mut pem = String::new();
    for sink in sinks {
        let encoded = BASE64.encode(sink.certificate_der());
        pem.push_str("-----BEGIN CERTIFICATE-----\n");
        for line in encoded.as_bytes().chunks(64) {
            pem.push_str(std::str::from_utf8(line).unwrap());
            pem.push('\n');
        }
        pem.push_str("-----END CERTIFICATE-----\n");
    }
    let path = dir.path().join("roots.pem");
    std::fs::write(&path, pem).unwrap();
    path
}

async fn tls_and_authentication(backend: Backend) {
    let starttls = SmtpSink::with_auth(SinkTls::StartTls, "relay", "s3cret-password").await;
    let implicit = SmtpSink::with_auth(SinkTls::Implicit, "relay", "s3cret-password").await;
    let untrusted = SmtpSink::start(plateau_testkit::SmtpSinkOptions {
        tls: SinkTls::Implicit,
        auth: None,
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let roots = ca_file(&dir, &[&starttls, &implicit]);
    let s =
        start_with(options(backend).env("PLATEAU_EGRESS_CA_FILE", roots.to_str().unwrap())).await;
    let c = s.client();
    let message = json!({ "from": "ann@example.com", "to": "bob@example.net", "subject": "Hello", "text": "Hi" });

    for (sink, mode) in [(&starttls, "starttls"), (&implicit, "implicit")] {
        let mut body = config(sink, mode);
        body["username"] = json!("relay");
        body["password"] = json!("s3cret-password");
        configure(&c, body).await;
        // The password is never returned.
        let shown = c.get("/email/config").await;
        assert_eq!(shown.json()["passwordSet"], true);
        assert!(!shown.text().contains("s3cret"), "{}", shown.text());
        let id = send(&c, message.clone()).await;
        wait_for_status(&c, &id, "sent").await;
        let mail = sink.wait_for(1, Duration::from_secs(10)).await.remove(0);
        assert!(mail.tls, "{mode}: the connection is encrypted");
        assert_eq!(mail.user.as_deref(), Some("relay"), "{mode}");
    }
    let audit = c.get("/audit?type=email.config.updated").await;
    assert_eq!(audit.status, 200, "{}", audit.text());
    assert!(!audit.text().contains("s3cret"));
    assert_eq!(audit.json()["total"], 2);

    // A wrong password is a permanent failure, recorded with the reply; it
    // suppresses nobody.
    let mut body = config(&implicit, "implicit");
    body["username"] = json!("relay");
    body["password"] = json!("wrong");
    configure(&c, body).await;
    let id = send(&c, message.clone()).await;
    let failed = wait_for_status(&c, &id, "failed").await;
    assert_eq!(failed["smtpCode"], 535, "{failed}");
    assert_eq!(c.get("/email/suppressions").await.json()["total"], 0);

    // A server whose certificate is not trusted fails the handshake.
    configure(&c, config(&untrusted, "implicit")).await;
    let id = send(&c, message).await;
    let failed = wait_for_status(&c, &id, "failed").await;
    assert!(
        failed["error"].as_str().unwrap().contains("TLS"),
        "{failed}"
    );
    assert_eq!(untrusted.count(), 0);
}

async fn the_rate_limit_answers_429_with_retry_after(backend: Backend) {
    // The manual clock keeps every send in one minute.
    let s = start_with(options(backend).env("PLATEAU_CLOCK", "manual")).await;
    let sink = SmtpSink::plain().await;
    let c = s.client();
    configure(&c, config(&sink, "none")).await;
    let message = json!({ "from": "ann@example.com", "to": "bob@example.net", "subject": "Hello", "text": "Hi" });
    // The first organisation is on the free plan: 10 messages a minute.
    for _ in 0..10 {
        send(&c, message.clone()).await;
    }
    let r = c.post("/email/send", message.clone()).await;
    assert_eq!(
        (r.status, r.code()),
        (429, "rate_limited".to_owned()),
        "{}",
        r.text()
    );
    let retry: u64 = r.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    assert!(r.json()["detail"].as_str().unwrap().contains("free plan"));
    sink.wait_for(10, Duration::from_secs(20)).await;
    let mut sent = 0;
    for _ in 0..100 {
        sent = c.get("/email/messages?status=sent").await.json()["total"]
            .as_u64()
            .unwrap();
        if sent == 10 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(sent, 10);
    // Once the window has passed, sending works again.
    advance(&admin(&s).await, retry * 1000).await;
    send(&c, message).await;
}

async fn temporary_failures_are_retried_and_permanent_ones_recorded(backend: Backend) {
    let s = start_with(options(backend).env("PLATEAU_CLOCK", "manual")).await;
    let admin_c = admin(&s).await;
    let sink = SmtpSink::plain().await;
    let c = s.client();
    configure(&c, config(&sink, "none")).await;

    sink.fail_next(1, 451, "4.3.0 try again later");
    let id = send(&c, json!({ "from": "ann@example.com", "to": "bob@example.net", "subject": "retry me", "text": "Hi" })).await;
    let deferred = wait_for_status(&c, &id, "deferred").await;
    assert_eq!(
        (deferred["smtpCode"].clone(), deferred["attempts"].clone()),
        (json!(451), json!(1))
    );
    assert!(
        deferred["smtpMessage"]
            .as_str()
            .unwrap()
            .contains("try again later")
    );
    assert!(deferred["nextAttemptAt"].is_string());
    // Nothing is retried before the backoff (1 minute) has passed.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!((sink.attempts(), sink.count()), (1, 0));
    advance(&admin_c, 61_000).await;
    let sent = wait_for_status(&c, &id, "sent").await;
    assert_eq!(
        (sent["attempts"].clone(), sent["smtpCode"].clone()),
        (json!(2), json!(250))
    );
    assert_eq!(sink.count(), 1);

    sink.reject_recipient(
        "gone@example.net",
        550,
        "5.1.1 <gone@example.net>: no such user",
    );
    let id = send(&c, json!({ "from": "ann@example.com", "to": "gone@example.net", "subject": "lost", "text": "Hi" })).await;
    let failed = wait_for_status(&c, &id, "failed").await;
    assert_eq!(failed["smtpCode"], 550);
    assert!(
        failed["smtpMessage"]
            .as_str()
            .unwrap()
            .contains("no such user"),
        "{failed}"
    );
    let suppressions = c.get("/email/suppressions").await.json();
    assert_eq!(
        suppressions["items"][0]["address"], "gone@example.net",
        "{suppressions}"
    );
    // Nobody left to send to: 422; lifting the suppression sends again.
    let again = json!({ "from": "ann@example.com", "to": "gone@example.net", "subject": "lost", "text": "Hi" });
    let r = c.post("/email/send", again.clone()).await;
    assert_eq!(
        (r.status, r.code()),
        (422, "unprocessable".to_owned()),
        "{}",
        r.text()
    );
    assert_eq!(
        c.delete("/email/suppressions/gone@example.net")
            .await
            .status,
        204
    );
    let events = c.get("/events?type=email.message.failed").await.json();
    assert_eq!(events["total"], 1, "{events}");
    let id = send(&c, again).await;
    wait_for_status(&c, &id, "failed").await;
    // Failed jobs are done: nothing is retried later.
    let connections = sink.connections();
    assert_eq!(connections, 4, "451, its retry, and two refused recipients");
    advance(&admin_c, 3_600_000).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(sink.connections(), connections);
}

async fn the_ledger_filters_and_organisations_are_isolated(backend: Backend) {
    let s: Server = start_with(options(backend)).await;
    let sink = SmtpSink::plain().await;
    let c = s.client();
    configure(&c, config(&sink, "none")).await;
    sink.reject_recipient("gone@example.net", 554, "5.7.1 refused");
    let sent = send(&c, json!({ "from": "ann@example.com", "to": "bob@example.net", "subject": "one", "text": "Hi" })).await;
    let failed = send(&c, json!({ "from": "ann@example.com", "to": "gone@example.net", "subject": "two", "text": "Hi" })).await;
    wait_for_status(&c, &sent, "sent").await;
    wait_for_status(&c, &failed, "failed").await;

    let ids = |page: &Value| -> Vec<String> {
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        ids(&c.get("/email/messages").await.json()),
        [failed.clone(), sent.clone()],
        "newest first"
    );
    assert_eq!(
        ids(&c.get("/email/messages?status=sent").await.json()),
        std::slice::from_ref(&sent)
    );
    assert_eq!(
        ids(&c.get("/email/messages?status=failed").await.json()),
        std::slice::from_ref(&failed)
    );
    let page = c.get("/email/messages?limit=1").await.json();
    assert_eq!(
        (ids(&page), page["total"].clone()),
        (vec![failed.clone()], json!(2))
    );
    let next = c
        .get(&format!(
            "/email/messages?limit=1&cursor={}",
            page["nextCursor"].as_str().unwrap()
        ))
        .await
        .json();
    assert_eq!(
        (ids(&next), next["nextCursor"].clone()),
        (vec![sent.clone()], Value::Null)
    );
    assert_eq!(
        c.get("/email/messages?since=2000-01-01&until=2000-01-02")
            .await
            .json()["total"],
        0
    );
    assert_eq!(
        c.get("/email/messages?since=2000-01-01").await.json()["total"],
        2
    );
    assert_eq!(c.get("/email/messages?status=bounced").await.status, 400);

    // Scopes: reading does not allow sending.
    let reader = s
        .anonymous()
        .with_token(&crate::mint(&s, json!({ "scopes": ["email:read"] })).await);
    assert_eq!(reader.get("/email/messages").await.json()["total"], 2);
    let r = reader.post("/email/send", json!({})).await;
    assert_eq!(
        (r.status, r.json()["scope"].clone()),
        (403, json!("email:send"))
    );

    // Another organisation sees none of it, and has no configuration.
    let other = s
        .anonymous()
        .with_token(&crate::create_org(&s, "Other", "pro").await);
    assert_eq!(other.get("/email/messages").await.json()["total"], 0);
    assert_eq!(
        other.get(&format!("/email/messages/{sent}")).await.status,
        404
    );
    assert_eq!(other.get("/email/config").await.status, 404);
    let r = other.post("/email/send", json!({ "from": "ann@example.com", "to": "bob@example.net", "subject": "x", "text": "y" })).await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(other.get("/email/suppressions").await.json()["total"], 0);
}

/// A heartbeat that goes down asks for an email (`heartbeats.email.requested`);
/// the relay sends it from the configured alert sender, once.
async fn heartbeat_alerts_are_relayed_once(backend: Backend) {
    let s = start_with(options(backend).env("PLATEAU_CLOCK", "manual")).await;
    let admin_c = admin(&s).await;
    let sink = SmtpSink::plain().await;
    let c = s.client();
    let mut body = config(&sink, "none");
    body["alertsFrom"] = json!("Plateau Alerts <alerts@example.org>");
    configure(&c, body).await;
    let r = c
        .post(
            "/heartbeats",
            json!({ "name": "nightly backup", "periodSeconds": 60, "graceSeconds": 120,
                    "alertEmails": ["ops@example.net"] }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let ping_url = r.json()["pingUrl"].as_str().unwrap().to_owned();
    let pinged = reqwest::get(&ping_url).await.unwrap();
    assert_eq!(pinged.status(), 200);
    // Late after the period, down after the grace: one alert.
    advance(&admin_c, 61_000).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    advance(&admin_c, 120_000).await;
    let mail = sink.wait_for(1, Duration::from_secs(20)).await;
    assert_eq!(mail.len(), 1, "the down alert is relayed");
    assert_eq!(mail[0].from, "alerts@example.org");
    assert_eq!(mail[0].recipients, ["ops@example.net"]);
    assert!(
        mail[0]
            .header("Subject")
            .unwrap()
            .contains("nightly backup"),
        "{:?}",
        mail[0].header("Subject")
    );
    let mut ledger = Value::Null;
    for _ in 0..100 {
        ledger = c.get("/email/messages").await.json();
        if ledger["items"][0]["status"] == "sent" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(ledger["total"], 1, "{ledger}");
    let entry = &ledger["items"][0];
    assert_eq!(
        (&entry["source"], &entry["eventType"], &entry["status"]),
        (
            &json!("event"),
            &json!("heartbeats.email.requested"),
            &json!("sent")
        ),
        "{entry}"
    );
    // No second email while it stays down.
    advance(&admin_c, 3_600_000).await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(sink.count(), 1);
}
