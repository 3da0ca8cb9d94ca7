//! The SMTP sink driven by a scripted client: every command, dot-unstuffing,
//! authentication and the failures it is told to give.

use plateau_testkit::{SinkTls, SmtpSink};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// A line-at-a-time SMTP client.
struct Client(BufReader<TcpStream>);

impl Client {
    async fn connect(sink: &SmtpSink) -> (Client, String) {
        let stream = TcpStream::connect(sink.addr()).await.unwrap();
        let mut client = Client(BufReader::new(stream));
        let greeting = client.reply().await;
        (client, greeting)
    }

    /// One reply, its lines joined by `|`.
    async fn reply(&mut self) -> String {
        let mut lines = Vec::new();
        loop {
            let mut line = String::new();
            self.0.read_line(&mut line).await.unwrap();
            let line = line.trim_end().to_string();
            let last = line.as_bytes().get(3) != Some(&b'-');
            lines.push(line);
            if last {
                return lines.join("|");
            }
        }
    }

    async fn send(&mut self, text: &str) -> String {
        self.0.get_mut().write_all(text.as_bytes()).await.unwrap();
        self.reply().await
    }
}

fn code(reply: &str) -> &str {
    &reply[..3]
}

#[tokio::test]
async fn a_session_with_auth_rset_and_dot_unstuffing() {
    let sink = SmtpSink::with_auth(SinkTls::None, "relay", "s3cret").await;
    let (mut c, greeting) = Client::connect(&sink).await;
    assert_eq!(code(&greeting), "220");
    let ehlo = c.send("EHLO client.test\r\n").await;
    assert!(ehlo.contains("250-AUTH PLAIN LOGIN") || ehlo.contains("250 AUTH PLAIN LOGIN"));
    assert!(!ehlo.contains("STARTTLS"), "{ehlo}");
    assert_eq!(code(&c.send("MAIL FROM:<a@example.com>\r\n").await), "530");
    // AUTH LOGIN with a wrong password, then AUTH PLAIN right.
    assert_eq!(code(&c.send("AUTH LOGIN\r\n").await), "334");
    assert_eq!(code(&c.send("cmVsYXk=\r\n").await), "334");
    assert_eq!(code(&c.send("d3Jvbmc=\r\n").await), "535");
    assert_eq!(
        code(&c.send("AUTH PLAIN AHJlbGF5AHMzY3JldA==\r\n").await),
        "235"
    );
    assert_eq!(code(&c.send("NOOP\r\n").await), "250");
    assert_eq!(code(&c.send("MAIL FROM:<a@example.com>\r\n").await), "250");
    assert_eq!(
        code(&c.send("RCPT TO:<dropped@example.com>\r\n").await),
        "250"
    );
    assert_eq!(code(&c.send("RSET\r\n").await), "250");
    assert_eq!(code(&c.send("RCPT TO:<b@example.com>\r\n").await), "503");
    assert_eq!(
        code(&c.send("MAIL FROM:<a@example.com> SIZE=10\r\n").await),
        "250"
    );
    assert_eq!(code(&c.send("rcpt to:<b@example.com>\r\n").await), "250");
    assert_eq!(code(&c.send("DATA\r\n").await), "354");
    let end = c.send("Subject: dots\r\n\r\n..leading dot\r\n.\r\n").await;
    assert_eq!(code(&end), "250", "{end}");
    assert_eq!(code(&c.send("QUIT\r\n").await), "221");

    let messages = sink.messages();
    assert_eq!(messages.len(), 1);
    let mail = &messages[0];
    assert_eq!(mail.from, "a@example.com");
    assert_eq!(mail.recipients, ["b@example.com"]);
    assert_eq!(mail.text(), "Subject: dots\r\n\r\n.leading dot\r\n");
    assert_eq!(mail.header("subject").as_deref(), Some("dots"));
    assert_eq!(mail.user.as_deref(), Some("relay"));
    assert!(!mail.tls);
    assert_eq!((sink.connections(), sink.attempts()), (1, 1));
}

#[tokio::test]
async fn programmed_failures_answer_then_pass() {
    let sink = SmtpSink::plain().await;
    sink.fail_next(1, 451, "4.3.0 try later");
    sink.reject_recipient("Gone@Example.com", 550, "5.1.1 no such user");
    let (mut c, _) = Client::connect(&sink).await;
    c.send("HELO client.test\r\n").await;
    for expected in ["451 4.3.0 try later", "250 2.0.0 ok: queued as 1"] {
        c.send("MAIL FROM:<a@example.com>\r\n").await;
        let rcpt = c.send("RCPT TO:<gone@example.com>\r\n").await;
        assert_eq!(rcpt, "550 5.1.1 no such user");
        c.send("RCPT TO:<b@example.com>\r\n").await;
        c.send("DATA\r\n").await;
        assert_eq!(c.send("Subject: x\r\n\r\nbody\r\n.\r\n").await, expected);
    }
    assert_eq!(sink.count(), 1);
    assert_eq!(sink.attempts(), 2);
    assert_eq!(code(&c.send("DATA\r\n").await), "554");
    assert_eq!(code(&c.send("VRFY x\r\n").await), "502");
}

#[tokio::test]
async fn starttls_mode_requires_the_upgrade_before_mail() {
    let sink = SmtpSink::with_auth(SinkTls::StartTls, "relay", "s3cret").await;
    let (mut c, _) = Client::connect(&sink).await;
    let ehlo = c.send("EHLO client.test\r\n").await;
    assert!(ehlo.contains("STARTTLS"), "{ehlo}");
    assert!(!ehlo.contains("AUTH"), "AUTH only once encrypted: {ehlo}");
    assert_eq!(code(&c.send("MAIL FROM:<a@example.com>\r\n").await), "530");
    assert_eq!(
        code(&c.send("AUTH PLAIN AHJlbGF5AHMzY3JldA==\r\n").await),
        "530"
    );
    assert_eq!(code(&c.send("STARTTLS\r\n").await), "220");
    assert!(!sink.certificate_der().is_empty());
}
