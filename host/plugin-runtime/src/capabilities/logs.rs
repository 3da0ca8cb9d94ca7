//! The `logs` capability (WIT 0.5.1): the platform's logs of an
//! organisation after a cursor, through the host's
//! [`PlatformLogs`](crate::platform_logs::PlatformLogs), under the call's
//! deadline.

use wasmtime::component::{HasData, Linker};

use crate::context::{CallContext, Phase};
use crate::platform_logs::{LogPage, LogSource, LogsError, MAX_LINES};

mod gen_ {
    wasmtime::component::bindgen!({
        path: ["../../wit/deps/logs"],
        interfaces: "
            import plateau:logs/logs@0.5.1;
        ",
        imports: { default: async | trappable },
    });
}
use gen_::plateau::logs::logs as v0_5;

/// What `logs` sees of the store: the call, whose caller decides the
/// organisation and whose deadline bounds the read.
pub(crate) struct LogsView<'a> {
    pub call: &'a mut CallContext,
}

struct HasLogs;

impl HasData for HasLogs {
    type Data<'a> = LogsView<'a>;
}

pub(crate) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    view: fn(&mut T) -> LogsView<'_>,
) -> wasmtime::Result<()> {
    v0_5::add_to_linker::<T, HasLogs>(linker, view)
}

impl LogsView<'_> {
    /// One read; `Err(trap)` only when the call's deadline passed.
    async fn read(
        &mut self,
        named: Option<String>,
        sources: Vec<LogSource>,
        cursor: String,
        limit: u32,
    ) -> wasmtime::Result<Result<LogPage, LogsError>> {
        if self.call.phase == Phase::Describe {
            return Ok(Err(LogsError::Invalid(
                "logs are not available in describe".into(),
            )));
        }
        let org = match self.call.owner_org(named) {
            Ok(org) => org,
            Err(m) => return Ok(Err(LogsError::AccessDenied(m.to_owned()))),
        };
        let Some(logs) = self.call.plugin.services.logs.clone() else {
            return Ok(Err(LogsError::Unavailable(
                "this host has no logs to read".into(),
            )));
        };
        let mut sources = sources;
        sources.sort();
        sources.dedup();
        let limit = limit.clamp(1, MAX_LINES);
        let read = logs.read(&org, &sources, &cursor, limit);
        match tokio::time::timeout(self.call.remaining(), read).await {
            Ok(result) => Ok(result),
            Err(_) => Err(self.call.deadline_trap()),
        }
    }
}

impl v0_5::Host for LogsView<'_> {
    async fn read(
        &mut self,
        owner: v0_5::Owner,
        sources: Vec<v0_5::Source>,
        cursor: String,
        limit: u32,
    ) -> wasmtime::Result<Result<v0_5::Page, v0_5::Error>> {
        let named = match owner {
            v0_5::Owner::Caller => None,
            v0_5::Owner::Organization(id) => Some(id),
        };
        let sources = sources
            .into_iter()
            .map(|s| match s {
                v0_5::Source::App => LogSource::App,
                v0_5::Source::Event => LogSource::Event,
            })
            .collect();
        Ok(
            match LogsView::read(self, named, sources, cursor, limit).await? {
                Ok(page) => Ok(v0_5::Page {
                    lines: page
                        .lines
                        .into_iter()
                        .map(|l| v0_5::Line {
                            source: match l.source {
                                LogSource::App => v0_5::Source::App,
                                LogSource::Event => v0_5::Source::Event,
                            },
                            id: l.id,
                            resource_id: l.resource_id,
                            resource_name: l.resource_name,
                            deployment: l.deployment,
                            replica: l.replica,
                            channel: l.channel,
                            message: l.message,
                            at: l.at,
                        })
                        .collect(),
                    cursor: page.cursor,
                    more: page.more,
                }),
                Err(e) => Err(match e {
                    LogsError::AccessDenied(m) => v0_5::Error::AccessDenied(m),
                    LogsError::Invalid(m) => v0_5::Error::Invalid(m),
                    LogsError::Unavailable(m) => v0_5::Error::Unavailable(m),
                }),
            },
        )
    }
}
