//! The `smtp` capability: submission through the
//! [`EgressGuard`](crate::egress::EgressGuard) with the plugin's granted
//! hosts, under the call's deadline.

use wasmtime::component::{HasData, Linker};

use crate::context::{CallContext, Phase};
use crate::egress::{Attachment, MailMessage, Sent, SmtpError, SmtpReply, SmtpServer, TlsMode};

mod gen_ {
    wasmtime::component::bindgen!({
        path: ["../../wit/legacy/plugin@0.2.0", "../../wit/deps/smtp"],
        interfaces: "
            import plateau:plugin/smtp@0.2.0;
            import plateau:smtp/smtp@0.3.0;
        ",
        imports: { default: async | trappable },
    });
}
use gen_::plateau::{plugin::smtp as v0_2, smtp::smtp as v0_3};

/// What `smtp` sees of the store: the call, whose deadline bounds each
/// submission.
pub(crate) struct SmtpView<'a> {
    pub call: &'a mut CallContext,
}

struct HasSmtp;

impl HasData for HasSmtp {
    type Data<'a> = SmtpView<'a>;
}

pub(crate) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    view: fn(&mut T) -> SmtpView<'_>,
) -> wasmtime::Result<()> {
    v0_2::add_to_linker::<T, HasSmtp>(linker, view)?;
    v0_3::add_to_linker::<T, HasSmtp>(linker, view)
}

impl SmtpView<'_> {
    /// Submits one message; `Err(trap)` only when the call's deadline passed.
    async fn send(
        &mut self,
        server: SmtpServer,
        message: MailMessage,
    ) -> wasmtime::Result<Result<Sent, SmtpError>> {
        if self.call.phase == Phase::Describe {
            return Ok(Err(SmtpError::Invalid(
                "smtp is not available in describe".into(),
            )));
        }
        let plugin = self.call.plugin.clone();
        let send = plugin.egress.send_mail(
            &plugin.settings.outbound_hosts,
            server,
            message,
            plugin.settings.limits.http_timeout,
        );
        match tokio::time::timeout(self.call.remaining(), send).await {
            Ok(result) => Ok(result),
            Err(_) => Err(self.call.deadline_trap()),
        }
    }
}

/// The traits of one WIT version's bindings, on the logic above.
macro_rules! wit_impls {
    ($($wit:ident),+) => {$(
        impl $wit::Host for SmtpView<'_> {
            async fn send(
                &mut self,
                server: $wit::Server,
                message: $wit::Message,
            ) -> wasmtime::Result<Result<$wit::Sent, $wit::Error>> {
                use $wit::Error as E;
                let reply = |r: SmtpReply| $wit::Reply {
                    code: r.code,
                    message: r.message,
                };
                let server = SmtpServer {
                    host: server.host,
                    port: server.port,
                    tls: match server.tls {
                        $wit::TlsMode::Implicit => TlsMode::Implicit,
                        $wit::TlsMode::Starttls => TlsMode::StartTls,
                        $wit::TlsMode::None => TlsMode::None,
                    },
                    username: server.username,
                    password: server.password,
                    timeout_ms: server.timeout_ms,
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
                Ok(match SmtpView::send(self, server, message).await? {
                    Ok(sent) => Ok($wit::Sent {
                        message_id: sent.message_id,
                        reply: reply(sent.reply),
                    }),
                    Err(e) => Err(match e {
                        SmtpError::Invalid(m) => E::Invalid(m),
                        SmtpError::HostNotAllowed(m) => E::HostNotAllowed(m),
                        SmtpError::AddressRefused(m) => E::AddressRefused(m),
                        SmtpError::ConnectionFailed(m) => E::ConnectionFailed(m),
                        SmtpError::TlsFailed(m) => E::TlsFailed(m),
                        SmtpError::Timeout => E::Timeout,
                        SmtpError::Rejected(r) => E::Rejected(reply(r)),
                    }),
                })
            }
        }
    )+};
}

wit_impls!(v0_2, v0_3);
