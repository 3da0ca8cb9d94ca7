//! The `runner` capability (WIT 0.4.0): a command image of the registry
//! run to completion for an organisation, through the host's
//! [`Commands`](crate::commands::Commands), under the call's deadline.

use std::time::Duration;

use wasmtime::component::{HasData, Linker};

use crate::commands::{CommandError, CommandOutcome, CommandRequest};
use crate::context::{CallContext, Phase};

mod gen_ {
    wasmtime::component::bindgen!({
        path: ["../../wit/deps/runner"],
        interfaces: "
            import plateau:runner/runner@0.4.0;
        ",
        imports: { default: async | trappable },
    });
}
use gen_::plateau::runner::runner as v0_4;

/// What `runner` sees of the store: the call, whose caller decides the
/// organisation and whose deadline bounds the run.
pub(crate) struct RunnerView<'a> {
    pub call: &'a mut CallContext,
}

struct HasRunner;

impl HasData for HasRunner {
    type Data<'a> = RunnerView<'a>;
}

pub(crate) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    view: fn(&mut T) -> RunnerView<'_>,
) -> wasmtime::Result<()> {
    v0_4::add_to_linker::<T, HasRunner>(linker, view)
}

/// The owner as the guest named it.
enum Owner {
    Caller,
    Organization(String),
}

impl RunnerView<'_> {
    /// The organisation a run acts for, under the namespace rules of `kv`.
    fn organisation(&self, owner: Owner) -> Result<String, CommandError> {
        let named = match owner {
            Owner::Caller => None,
            Owner::Organization(id) => Some(id),
        };
        self.call
            .owner_org(named)
            .map_err(|m| CommandError::AccessDenied(m.to_owned()))
    }

    /// Runs one command; `Err(trap)` only when the call's deadline passed.
    async fn run(
        &mut self,
        owner: Owner,
        request: CommandRequest,
    ) -> wasmtime::Result<Result<CommandOutcome, CommandError>> {
        if self.call.phase == Phase::Describe {
            return Ok(Err(CommandError::Invalid(
                "runner is not available in describe".into(),
            )));
        }
        let org = match self.organisation(owner) {
            Ok(org) => org,
            Err(e) => return Ok(Err(e)),
        };
        let Some(commands) = self.call.plugin.services.commands.clone() else {
            return Ok(Err(CommandError::Invalid(
                "this host runs no commands".into(),
            )));
        };
        // The run's own timeout stops it first; the call's deadline is the
        // backstop for a host that does not.
        match tokio::time::timeout(self.call.remaining(), commands.run(&org, request)).await {
            Ok(result) => Ok(result),
            Err(_) => Err(self.call.deadline_trap()),
        }
    }
}

fn outcome(o: CommandOutcome) -> v0_4::Outcome {
    v0_4::Outcome {
        exit_code: o.exit_code,
        stdout: o.stdout,
        stderr: o.stderr,
        stdout_truncated: o.stdout_truncated,
        stderr_truncated: o.stderr_truncated,
    }
}

impl v0_4::Host for RunnerView<'_> {
    async fn run(
        &mut self,
        owner: v0_4::Owner,
        command: v0_4::Command,
    ) -> wasmtime::Result<Result<v0_4::Outcome, v0_4::Error>> {
        use v0_4::Error as E;
        let owner = match owner {
            v0_4::Owner::Caller => Owner::Caller,
            v0_4::Owner::Organization(id) => Owner::Organization(id),
        };
        let request = CommandRequest {
            image: command.image,
            args: command.args,
            env: command.env,
            timeout: Duration::from_millis(u64::from(command.timeout_ms)),
            memory_mb: command.memory_mb,
        };
        Ok(match RunnerView::run(self, owner, request).await? {
            Ok(o) => Ok(outcome(o)),
            Err(e) => Err(match e {
                CommandError::ImageNotFound(m) => E::ImageNotFound(m),
                CommandError::NotACommand(m) => E::NotACommand(m),
                CommandError::AccessDenied(m) => E::AccessDenied(m),
                CommandError::Timeout(o) => E::Timeout(outcome(o)),
                CommandError::Trapped(m, o) => E::Trapped((m, outcome(o))),
                CommandError::Invalid(m) => E::Invalid(m),
            }),
        })
    }
}
