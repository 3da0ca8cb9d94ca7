//! The service behind the `runner` capability: running a `wasi:cli`
//! command image of the platform's registry for an organisation. The host
//! implements [`Commands`] (pulling with the organisation's rights, then
//! running it in the apps' runner); this crate only checks who may ask.

use std::time::Duration;

use async_trait::async_trait;

/// One run, as a plugin asks for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandRequest {
    /// An OCI reference in this platform's registry.
    pub image: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
    pub memory_mb: u32,
}

/// How a run ended, and what it printed (capped).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommandOutcome {
    pub exit_code: u32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
}

/// Why a run did not complete; each is a WIT error value for the guest.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    #[error("{0}")]
    ImageNotFound(String),
    #[error("{0}")]
    NotACommand(String),
    #[error("{0}")]
    AccessDenied(String),
    #[error("the command ran past its timeout")]
    Timeout(CommandOutcome),
    #[error("the command trapped: {0}")]
    Trapped(String, CommandOutcome),
    #[error("{0}")]
    Invalid(String),
}

/// Runs command images for organisations; the host implements it.
#[async_trait]
pub trait Commands: Send + Sync {
    /// Runs `request` as organisation `org_id`: its image is pulled with
    /// that organisation's rights only.
    async fn run(
        &self,
        org_id: &str,
        request: CommandRequest,
    ) -> Result<CommandOutcome, CommandError>;
}
