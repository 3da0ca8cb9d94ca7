//! Running a `wasi:cli` command image of the platform's registry to
//! completion (the `runner` capability, WIT 0.4.0). The host pulls the
//! image with the organisation's rights, runs it without directories or
//! network under a timeout and a memory cap, and answers its exit code
//! and captured output.

use crate::sys;

/// Whose image it is: the caller's organisation, or (in a job, a tick or
/// an event, which have no caller) an organisation named by id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    Caller,
    Organization(String),
}

/// One run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Command {
    /// `registry/<organisation id>/<name>:<tag>` or `...@sha256:<hex>`.
    pub image: String,
    /// The arguments after the program name.
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub timeout_ms: u32,
    pub memory_mb: u32,
}

/// How a run ended: its exit code and what it printed (capped by the host).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Outcome {
    pub exit_code: u32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
}

/// Why a run did not complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunnerError {
    ImageNotFound(String),
    NotACommand(String),
    AccessDenied(String),
    /// Stopped at its timeout; the output so far.
    Timeout(Outcome),
    /// Trapped or ran out of memory; the reason and the output so far.
    Trapped(String, Outcome),
    Invalid(String),
}

impl std::fmt::Display for RunnerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunnerError::ImageNotFound(m) => write!(f, "image not found: {m}"),
            RunnerError::NotACommand(m) => write!(f, "not a wasi:cli command: {m}"),
            RunnerError::AccessDenied(m) => write!(f, "access denied: {m}"),
            RunnerError::Timeout(_) => f.write_str("the command ran past its timeout"),
            RunnerError::Trapped(m, _) => write!(f, "the command trapped: {m}"),
            RunnerError::Invalid(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for RunnerError {}

/// Runs `command` as `owner` and waits for it to end.
pub fn run(owner: &Owner, command: &Command) -> Result<Outcome, RunnerError> {
    sys::runner_run(owner, command)
}
