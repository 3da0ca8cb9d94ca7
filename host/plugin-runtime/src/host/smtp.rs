//! The `smtp` capability: submission through the
//! [`EgressGuard`](crate::egress::EgressGuard) with the plugin's granted
//! hosts, under the call's deadline.

use std::time::Duration;

use wasmtime::component::{HasSelf, Linker};

use crate::bindings::v0_2::plateau::plugin::smtp as v0_2;
use crate::egress::{Attachment, MailMessage, Sent, SmtpError, SmtpReply, SmtpServer, TlsMode};
use crate::state::{Phase, State};

pub(crate) fn add_to_linker(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    v0_2::add_to_linker::<State, HasSelf<State>>(linker, |s| s)
}

impl State {
    /// Submits one message; `Err(trap)` only when the call's deadline passed.
    async fn send_mail(
        &mut self,
        mut server: SmtpServer,
        message: MailMessage,
    ) -> wasmtime::Result<Result<Sent, SmtpError>> {
        if self.phase == Phase::Describe {
            return Ok(Err(SmtpError::Invalid(
                "smtp is not available in describe".into(),
            )));
        }
        server.timeout = server.timeout.min(self.plugin.settings.limits.http_timeout);
        let plugin = self.plugin.clone();
        let send = plugin
            .egress
            .send_mail(&plugin.settings.outbound_hosts, server, message);
        match tokio::time::timeout(self.remaining(), send).await {
            Ok(result) => Ok(result),
            Err(_) => Err(self.deadline_trap()),
        }
    }
}

fn reply(r: SmtpReply) -> v0_2::Reply {
    v0_2::Reply {
        code: r.code,
        message: r.message,
    }
}

impl v0_2::Host for State {
    async fn send(
        &mut self,
        server: v0_2::Server,
        message: v0_2::Message,
    ) -> wasmtime::Result<Result<v0_2::Sent, v0_2::Error>> {
        let server = SmtpServer {
            host: server.host,
            port: server.port,
            tls: match server.tls {
                v0_2::TlsMode::Implicit => TlsMode::Implicit,
                v0_2::TlsMode::Starttls => TlsMode::StartTls,
                v0_2::TlsMode::None => TlsMode::None,
            },
            username: server.username,
            password: server.password,
            timeout: server
                .timeout_ms
                .map_or(Duration::MAX, |ms| Duration::from_millis(ms.into())),
        };
        let message = MailMessage {
            sender: message.sender,
            reply_to: message.reply_to,
            to: message.to,
            cc: message.cc,
            bcc: message.bcc,
            subject: message.subject,
            text: message.text,
            html: message.html,
            headers: message.headers,
            attachments: message
                .attachments
                .into_iter()
                .map(|a| Attachment {
                    filename: a.filename,
                    content_type: a.content_type,
                    content: a.content,
                })
                .collect(),
        };
        Ok(match self.send_mail(server, message).await? {
            Ok(sent) => Ok(v0_2::Sent {
                message_id: sent.message_id,
                reply: reply(sent.reply),
            }),
            Err(e) => Err(match e {
                SmtpError::Invalid(m) => v0_2::Error::Invalid(m),
                SmtpError::HostNotAllowed(m) => v0_2::Error::HostNotAllowed(m),
                SmtpError::AddressRefused(m) => v0_2::Error::AddressRefused(m),
                SmtpError::ConnectionFailed(m) => v0_2::Error::ConnectionFailed(m),
                SmtpError::TlsFailed(m) => v0_2::Error::TlsFailed(m),
                SmtpError::Timeout => v0_2::Error::Timeout,
                SmtpError::Rejected(r) => v0_2::Error::Rejected(reply(r)),
            }),
        })
    }
}
