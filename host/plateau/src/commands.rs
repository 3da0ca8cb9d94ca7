//! The command runner behind the plugins' `runner` capability: a cron
//! job's image is pulled from this host's registry with the rights of the
//! job's organisation (another organisation's repository is refused before
//! any pull), then run by the apps runner's [`CommandRunner`].
//!
//! The plugin runtime starts before the registry and the API listener, so
//! [`HostCommands`] is handed to it empty and filled once they exist; a
//! run asked for in between answers that the runner is starting.

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use plateau_apps::RegistryAccess;
use plateau_apps::image::{self, PullAs};
use plateau_plugin_runtime::commands::{CommandError, CommandOutcome, CommandRequest, Commands};
use plateau_runner::command::{self, CommandOutput, CommandRunner, CommandSpec};

/// The `runner` service of this host.
#[derive(Default)]
pub struct HostCommands {
    ready: OnceLock<Ready>,
}

struct Ready {
    registry: Arc<dyn RegistryAccess>,
    runner: CommandRunner,
}

impl HostCommands {
    /// Starts running commands: pulls go to `registry`.
    pub fn start(&self, registry: Arc<dyn RegistryAccess>) -> anyhow::Result<()> {
        let runner = CommandRunner::new()?;
        let _ = self.ready.set(Ready { registry, runner });
        Ok(())
    }
}

fn outcome(o: CommandOutput) -> CommandOutcome {
    CommandOutcome {
        exit_code: o.exit_code,
        stdout: o.stdout,
        stderr: o.stderr,
        stdout_truncated: o.stdout_truncated,
        stderr_truncated: o.stderr_truncated,
    }
}

/// Checks that `image` names a repository of `org_id` in this host's
/// registry: `registry/<org id>/<path>[:tag|@digest]`.
fn check_owner(
    image: &str,
    org_id: &str,
    registry: &dyn RegistryAccess,
) -> Result<(), CommandError> {
    let text = image.trim().strip_prefix("oci://").unwrap_or(image.trim());
    let Some((host, repository)) = text.split_once('/') else {
        return Err(CommandError::Invalid(format!(
            "{text} is not an image reference; write registry/<organisation id>/<name>:<tag>"
        )));
    };
    if !registry.is_own(host) {
        return Err(CommandError::AccessDenied(format!(
            "commands run images of this platform's registry only; {host} is another registry"
        )));
    }
    let namespace = repository.split(['/', ':', '@']).next().unwrap_or_default();
    if namespace != org_id {
        return Err(CommandError::AccessDenied(format!(
            "the image belongs to another organisation: use one under {host}/{org_id}/"
        )));
    }
    Ok(())
}

#[async_trait]
impl Commands for HostCommands {
    async fn run(
        &self,
        org_id: &str,
        request: CommandRequest,
    ) -> Result<CommandOutcome, CommandError> {
        let ready = self.ready.get().ok_or_else(|| {
            CommandError::Invalid("the command runner is starting: retry in a moment".into())
        })?;
        check_owner(&request.image, org_id, &*ready.registry)?;
        // A pull as the organisation itself (no API token stands behind a
        // scheduled run): the registry answers another organisation's
        // repositories as absent.
        let who = PullAs {
            org_id: org_id.to_owned(),
            token_id: String::new(),
            user_id: None,
        };
        let resolved = image::resolve(&request.image, &who, &*ready.registry, &[], None)
            .await
            .map_err(|why| {
                if why.contains("has no") {
                    CommandError::ImageNotFound(why)
                } else if why.contains("not an image reference") {
                    CommandError::Invalid(why)
                } else if why.contains("Linux images") {
                    CommandError::NotACommand(
                        "the image is a Linux image; this host runs wasi:cli command components"
                            .into(),
                    )
                } else {
                    CommandError::NotACommand(why)
                }
            })?;
        let spec = CommandSpec {
            args: request.args,
            env: request.env,
            timeout: request.timeout,
            memory_mb: request.memory_mb,
        };
        ready
            .runner
            .run(&resolved.component_digest, &resolved.stored, spec)
            .await
            .map(outcome)
            .map_err(|e| match e {
                command::CommandError::NotACommand(why) => CommandError::NotACommand(why),
                command::CommandError::Timeout(_, o) => CommandError::Timeout(outcome(o)),
                command::CommandError::Trapped(why, o) => CommandError::Trapped(why, outcome(o)),
            })
    }
}
