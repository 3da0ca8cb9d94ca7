//! One connection to the SMTP sink: the command loop, AUTH, MAIL, RCPT
//! and DATA, and the STARTTLS upgrade.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;

use crate::smtp_sink::{ReceivedMail, SinkTls, SmtpSinkOptions, State};

/// What a connection is doing; reset by RSET, STARTTLS and each message.
pub(crate) struct Session {
    state: Arc<State>,
    options: SmtpSinkOptions,
    tls: bool,
    user: Option<String>,
    from: Option<String>,
    recipients: Vec<String>,
}

enum Ended<S> {
    Closed,
    StartTls(S),
}

const MAX_LINE: usize = 64 * 1024;
const MAX_DATA: usize = 64 * 1024 * 1024;

impl Session {
    pub(crate) fn new(state: Arc<State>, options: SmtpSinkOptions) -> Self {
        Session {
            state,
            options,
            tls: false,
            user: None,
            from: None,
            recipients: Vec::new(),
        }
    }

    pub(crate) async fn serve(mut self, socket: TcpStream, acceptor: TlsAcceptor) {
        let _ = socket.set_nodelay(true);
        if self.options.tls == SinkTls::Implicit {
            let Ok(tls) = acceptor.accept(socket).await else {
                return;
            };
            self.tls = true;
            self.run(tls, true).await;
            return;
        }
        if let Ended::StartTls(socket) = self.run(socket, true).await {
            let Ok(tls) = acceptor.accept(socket).await else {
                return;
            };
            self.tls = true;
            self.user = None;
            self.reset();
            self.run(tls, false).await;
        }
    }

    fn reset(&mut self) {
        self.from = None;
        self.recipients.clear();
    }

    /// Serves commands until QUIT, a closed connection, or STARTTLS.
    async fn run<S: AsyncRead + AsyncWrite + Unpin>(&mut self, stream: S, greet: bool) -> Ended<S> {
        let mut stream = BufReader::new(stream);
        if greet
            && reply(&mut stream, "220 plateau-testkit ESMTP sink\r\n")
                .await
                .is_err()
        {
            return Ended::Closed;
        }
        let mut line = Vec::new();
        loop {
            line.clear();
            match read_line(&mut stream, &mut line).await {
                Some(()) => {}
                None => return Ended::Closed,
            }
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches(['\r', '\n']);
            let (verb, arg) = text.split_once(' ').unwrap_or((text, ""));
            let answer = match verb.to_ascii_uppercase().as_str() {
                "EHLO" => self.ehlo(arg),
                "HELO" => format!("250 sink greets {arg}\r\n"),
                "STARTTLS" if self.options.tls == SinkTls::StartTls && !self.tls => {
                    if reply(&mut stream, "220 2.0.0 ready to start TLS\r\n")
                        .await
                        .is_err()
                    {
                        return Ended::Closed;
                    }
                    if !stream.buffer().is_empty() {
                        return Ended::Closed;
                    }
                    return Ended::StartTls(stream.into_inner());
                }
                "STARTTLS" => "502 5.5.1 STARTTLS is not offered\r\n".into(),
                "AUTH" => match self.auth(&mut stream, arg).await {
                    Some(answer) => answer,
                    None => return Ended::Closed,
                },
                "MAIL" => self.mail(arg),
                "RCPT" => self.rcpt(arg),
                "DATA" => match self.data(&mut stream).await {
                    Some(answer) => answer,
                    None => return Ended::Closed,
                },
                "RSET" => {
                    self.reset();
                    "250 2.0.0 reset\r\n".into()
                }
                "NOOP" => "250 2.0.0 ok\r\n".into(),
                "QUIT" => {
                    let _ = reply(&mut stream, "221 2.0.0 bye\r\n").await;
                    return Ended::Closed;
                }
                _ => "502 5.5.2 command not recognized\r\n".into(),
            };
            if reply(&mut stream, &answer).await.is_err() {
                return Ended::Closed;
            }
        }
    }

    fn auth_offered(&self) -> bool {
        self.options.auth.is_some() && (self.tls || self.options.tls == SinkTls::None)
    }

    fn ehlo(&mut self, name: &str) -> String {
        self.reset();
        let mut lines = vec![
            format!("sink greets {name}"),
            "PIPELINING".into(),
            "8BITMIME".into(),
            "SMTPUTF8".into(),
            format!("SIZE {MAX_DATA}"),
        ];
        if self.options.tls == SinkTls::StartTls && !self.tls {
            lines.push("STARTTLS".into());
        }
        if self.auth_offered() {
            lines.push("AUTH PLAIN LOGIN".into());
        }
        let last = lines.len() - 1;
        lines
            .iter()
            .enumerate()
            .map(|(i, l)| format!("250{}{l}\r\n", if i == last { ' ' } else { '-' }))
            .collect()
    }

    async fn auth<S: AsyncRead + AsyncWrite + Unpin>(
        &mut self,
        stream: &mut BufReader<S>,
        arg: &str,
    ) -> Option<String> {
        if !self.auth_offered() {
            return Some("530 5.7.0 AUTH is not offered here\r\n".into());
        }
        if self.user.is_some() {
            return Some("503 5.5.1 already authenticated\r\n".into());
        }
        let (mechanism, initial) = arg.split_once(' ').unwrap_or((arg, ""));
        let (user, password) = match mechanism.to_ascii_uppercase().as_str() {
            "PLAIN" => {
                let response = match initial {
                    "" => challenge(stream, "334 \r\n").await?,
                    given => given.to_string(),
                };
                let decoded = decode(&response);
                let mut parts = decoded.split('\0');
                let (_authzid, user, password) = (parts.next(), parts.next(), parts.next());
                (
                    user.unwrap_or("").to_string(),
                    password.unwrap_or("").to_string(),
                )
            }
            "LOGIN" => {
                let user = match initial {
                    "" => challenge(stream, "334 VXNlcm5hbWU6\r\n").await?,
                    given => given.to_string(),
                };
                let password = challenge(stream, "334 UGFzc3dvcmQ6\r\n").await?;
                (decode(&user), decode(&password))
            }
            _ => return Some("504 5.5.4 unrecognized authentication type\r\n".into()),
        };
        let expected = self.options.auth.as_ref()?;
        if (user.as_str(), password.as_str()) == (expected.0.as_str(), expected.1.as_str()) {
            self.user = Some(user);
            Some("235 2.7.0 authentication successful\r\n".into())
        } else {
            Some("535 5.7.8 authentication credentials invalid\r\n".into())
        }
    }

    fn mail(&mut self, arg: &str) -> String {
        if self.options.tls == SinkTls::StartTls && !self.tls {
            return "530 5.7.0 must issue a STARTTLS command first\r\n".into();
        }
        if self.options.auth.is_some() && self.user.is_none() {
            return "530 5.7.0 authentication required\r\n".into();
        }
        if self.from.is_some() {
            return "503 5.5.1 sender already given\r\n".into();
        }
        match path(arg, "FROM:") {
            Some(from) => {
                self.from = Some(from);
                "250 2.1.0 sender ok\r\n".into()
            }
            None => "501 5.5.4 syntax: MAIL FROM:<address>\r\n".into(),
        }
    }

    fn rcpt(&mut self, arg: &str) -> String {
        if self.from.is_none() {
            return "503 5.5.1 need MAIL before RCPT\r\n".into();
        }
        let Some(to) = path(arg, "TO:") else {
            return "501 5.5.4 syntax: RCPT TO:<address>\r\n".into();
        };
        let rejected = self.state.rejected.lock().unwrap();
        if let Some((code, message)) = rejected.get(&to.to_ascii_lowercase()) {
            return format!("{code} {message}\r\n");
        }
        drop(rejected);
        self.recipients.push(to);
        "250 2.1.5 recipient ok\r\n".into()
    }

    async fn data<S: AsyncRead + AsyncWrite + Unpin>(
        &mut self,
        stream: &mut BufReader<S>,
    ) -> Option<String> {
        if self.recipients.is_empty() {
            return Some("554 5.5.1 no valid recipients\r\n".into());
        }
        reply(stream, "354 end data with <CR><LF>.<CR><LF>\r\n")
            .await
            .ok()?;
        let mut data = Vec::new();
        let mut line = Vec::new();
        loop {
            line.clear();
            read_line(stream, &mut line).await?;
            if line == b".\r\n" || line == b".\n" {
                break;
            }
            let unstuffed = line.strip_prefix(b".").unwrap_or(&line);
            if data.len() + unstuffed.len() > MAX_DATA {
                return None;
            }
            data.extend_from_slice(unstuffed);
        }
        self.state.attempts.fetch_add(1, Ordering::Relaxed);
        let failure = self.state.failures.lock().unwrap().pop_front();
        let answer = match failure {
            Some((code, message)) => format!("{code} {message}\r\n"),
            None => {
                let mail = ReceivedMail {
                    from: self.from.clone().unwrap_or_default(),
                    recipients: std::mem::take(&mut self.recipients),
                    data,
                    user: self.user.clone(),
                    tls: self.tls,
                };
                let id = {
                    let mut messages = self.state.messages.lock().unwrap();
                    messages.push(mail);
                    messages.len()
                };
                self.state.arrived.notify_waiters();
                format!("250 2.0.0 ok: queued as {id}\r\n")
            }
        };
        self.reset();
        Some(answer)
    }
}

/// The address in `FROM:<a@b> PARAMS` or `TO:<a@b>`.
fn path(arg: &str, keyword: &str) -> Option<String> {
    let head = arg.get(..keyword.len())?;
    if !head.eq_ignore_ascii_case(keyword) {
        return None;
    }
    let rest = arg[keyword.len()..].trim_start();
    let inner = rest.strip_prefix('<')?.split_once('>')?.0;
    Some(inner.to_string())
}

fn decode(b64: &str) -> String {
    let bytes = BASE64.decode(b64.trim()).unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

async fn challenge<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut BufReader<S>,
    prompt: &str,
) -> Option<String> {
    reply(stream, prompt).await.ok()?;
    let mut line = Vec::new();
    read_line(stream, &mut line).await?;
    Some(String::from_utf8_lossy(&line).trim().to_string())
}

/// Reads one line (with its end) into `line`; `None` at the end of the
/// stream or past [`MAX_LINE`].
async fn read_line<S: AsyncRead + Unpin>(
    stream: &mut BufReader<S>,
    line: &mut Vec<u8>,
) -> Option<()> {
    let read = (&mut *stream)
        .take(MAX_LINE as u64)
        .read_until(b'\n', line)
        .await
        .ok()?;
    (read > 0 && line.ends_with(b"\n")).then_some(())
}

async fn reply<S: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut BufReader<S>,
    text: &str,
) -> std::io::Result<()> {
    let inner = stream.get_mut();
    inner.write_all(text.as_bytes()).await?;
    inner.flush().await
}
