//! The state machine of a heartbeat, pure: no storage, no clock of its own.
//!
//! The semantics are Healthchecks.io's:
//! - `new` until the first ping; a new heartbeat never goes late or down on
//!   its own.
//! - A success ping makes it `up` (from any state, `paused` included) and
//!   sets the reference time: the ping is next *expected* one period after
//!   it, or at the next cron time after it.
//! - `late` once the expected time has passed, `down` once the expected time
//!   plus the grace time has passed.
//! - A start ping records that a run began; it changes no state, and a run
//!   that neither succeeds nor fails within the grace time makes the
//!   heartbeat `down`. The success or fail ping that ends the run carries
//!   its duration.
//! - A fail ping makes it `down` at once (from any state).
//! - `paused` (set through the API) stops every time-based transition; a
//!   success or fail ping resumes it, a start ping does not. Unpausing
//!   through the API makes it `new` again.
//!
//! Alerts are decided here too ([`alert_for`]): one per change of state to
//! `down`, and one for the recovery to `up` from `down`; with
//! `alertOnLate`, also one for the change to `late` and for the recovery
//! from it.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::schedule::Schedule;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum State {
    New,
    Up,
    Late,
    Down,
    Paused,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::New => "new",
            State::Up => "up",
            State::Late => "late",
            State::Down => "down",
            State::Paused => "paused",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PingKind {
    Start,
    Success,
    Fail,
}

impl PingKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PingKind::Start => "start",
            PingKind::Success => "success",
            PingKind::Fail => "fail",
        }
    }
}

/// What the state machine keeps between pings (milliseconds since the Unix
/// epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub state: State,
    /// The last success ping: the reference of the expected time.
    pub last_success_at: Option<u64>,
    /// A start ping not yet followed by a success or fail ping.
    pub run_started_at: Option<u64>,
}

impl Status {
    pub fn new() -> Status {
        Status {
            state: State::New,
            last_success_at: None,
            run_started_at: None,
        }
    }
}

impl Default for Status {
    fn default() -> Self {
        Status::new()
    }
}

/// Why a state changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// A ping of this kind arrived.
    Ping(PingKind),
    /// The expected time passed without a success ping.
    Overdue,
    /// The expected time plus the grace time passed.
    GraceExpired,
    /// A started run did not end within the grace time.
    RunTimedOut,
    /// The schedule or grace time changed, and with it the deadlines.
    Rescheduled,
}

impl Cause {
    /// The cause as webhooks and events name it.
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::Ping(PingKind::Start) => "startPing",
            Cause::Ping(PingKind::Success) => "successPing",
            Cause::Ping(PingKind::Fail) => "failPing",
            Cause::Overdue => "overdue",
            Cause::GraceExpired => "graceExpired",
            Cause::RunTimedOut => "runTimedOut",
            Cause::Rescheduled => "rescheduled",
        }
    }
}

/// One change of state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transition {
    pub from: State,
    pub to: State,
    pub cause: Cause,
}

/// The timing rules of one heartbeat.
#[derive(Debug, Clone)]
pub struct Rules {
    pub schedule: Schedule,
    pub grace_ms: u64,
}

impl Rules {
    /// When the next success ping is expected: only while up or late.
    pub fn expected_at(&self, status: &Status) -> Option<u64> {
        match status.state {
            State::Up | State::Late => {
                let last = status.last_success_at?;
                // A schedule that never matches again keeps the heartbeat
                // where it is rather than failing every evaluation.
                self.schedule.next_after(last).ok()
            }
            State::New | State::Down | State::Paused => None,
        }
    }

    /// When the heartbeat goes down without a ping: the expected time plus
    /// grace, or a started run's start plus grace, whichever is first.
    pub fn down_at(&self, status: &Status) -> Option<u64> {
        if !matches!(status.state, State::Up | State::Late) {
            return None;
        }
        let overdue = self
            .expected_at(status)
            .map(|at| at.saturating_add(self.grace_ms));
        let run = status
            .run_started_at
            .map(|at| at.saturating_add(self.grace_ms));
        match (overdue, run) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The state the clock alone gives at `now`, and why.
    pub fn target(&self, status: &Status, now: u64) -> (State, Cause) {
        if !matches!(status.state, State::Up | State::Late) {
            return (status.state, Cause::Rescheduled);
        }
        if let Some(down) = self.down_at(status)
            && now >= down
        {
            let run_timeout = status
                .run_started_at
                .is_some_and(|at| at.saturating_add(self.grace_ms) == down);
            let cause = if run_timeout {
                Cause::RunTimedOut
            } else {
                Cause::GraceExpired
            };
            return (State::Down, cause);
        }
        match self.expected_at(status) {
            Some(expected) if now >= expected => (State::Late, Cause::Overdue),
            _ => (State::Up, Cause::Rescheduled),
        }
    }

    /// Moves `status` to the state the clock gives at `now`.
    pub fn settle(&self, status: &mut Status, now: u64) -> Option<Transition> {
        let (to, cause) = self.target(status, now);
        (to != status.state).then(|| {
            let from = std::mem::replace(&mut status.state, to);
            Transition { from, to, cause }
        })
    }

    /// When the clock next changes the state: the time to look again.
    pub fn next_check(&self, status: &Status) -> Option<u64> {
        match status.state {
            State::Up => {
                let expected = self.expected_at(status);
                let down = self.down_at(status);
                match (expected, down) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                }
            }
            State::Late => self.down_at(status),
            State::New | State::Down | State::Paused => None,
        }
    }
}

/// What a ping did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PingOutcome {
    pub transition: Option<Transition>,
    /// For a success or fail ping that ends a started run.
    pub duration_ms: Option<u64>,
}

/// Applies a ping of `kind` at `now`.
pub fn ping(status: &mut Status, kind: PingKind, now: u64) -> PingOutcome {
    let ended = |status: &mut Status| {
        status
            .run_started_at
            .take()
            .map(|start| now.saturating_sub(start))
    };
    let (to, duration_ms) = match kind {
        PingKind::Start => {
            status.run_started_at = Some(now);
            (status.state, None)
        }
        PingKind::Success => {
            let duration = ended(status);
            status.last_success_at = Some(now);
            (State::Up, duration)
        }
        PingKind::Fail => (State::Down, ended(status)),
    };
    let transition = (to != status.state).then(|| {
        let from = std::mem::replace(&mut status.state, to);
        Transition {
            from,
            to,
            cause: Cause::Ping(kind),
        }
    });
    PingOutcome {
        transition,
        duration_ms,
    }
}

/// The kind of alert a transition sends, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AlertKind {
    Down,
    Late,
    /// Back up after a down (or, with alerts on late, a late).
    Up,
}

impl AlertKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AlertKind::Down => "down",
            AlertKind::Late => "late",
            AlertKind::Up => "up",
        }
    }
}

/// Whether `transition` alerts: only changes of state, never a repeat.
pub fn alert_for(transition: &Transition, alert_on_late: bool) -> Option<AlertKind> {
    match (transition.from, transition.to) {
        (from, to) if from == to => None,
        (_, State::Down) => Some(AlertKind::Down),
        (_, State::Late) if alert_on_late => Some(AlertKind::Late),
        (State::Down, State::Up) => Some(AlertKind::Up),
        (State::Late, State::Up) if alert_on_late => Some(AlertKind::Up),
        _ => None,
    }
}
