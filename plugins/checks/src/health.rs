//! A check's state machine: up, degraded or down (none before the first
//! run), moved by each run's outcome, with `retries` consecutive failures
//! tolerated before the check is declared down. Alerts fire only on a change.
//!
//! | outcome  | consecutive failures        | next state             |
//! |----------|-----------------------------|------------------------|
//! | ok       | reset to 0                  | up                     |
//! | degraded | reset to 0                  | degraded               |
//! | failed   | +1, still at most `retries` | unchanged (retrying)   |
//! | failed   | +1, more than `retries`     | down                   |
//!
//! A change to down or degraded alerts, and so does the recovery from
//! either to up; the very first up (from no state) is recorded but does not
//! alert.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::verdict::Outcome;

/// A check's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Up,
    Degraded,
    Down,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Up => "up",
            Status::Degraded => "degraded",
            Status::Down => "down",
        }
    }
}

/// The state a check carries from run to run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Health {
    /// None until the first run.
    pub status: Option<Status>,
    /// Failed runs in a row, reset by any other outcome.
    pub consecutive_failures: u32,
    /// When the status last changed, in milliseconds since the Unix epoch.
    pub status_since: Option<u64>,
}

/// A change of state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change {
    pub from: Option<Status>,
    pub to: Status,
}

impl Change {
    /// Whether this change alerts: to down or degraded, or back to up from
    /// either; not the first up of a new check.
    pub fn alerts(&self) -> bool {
        match self.to {
            Status::Down | Status::Degraded => true,
            Status::Up => self.from.is_some(),
        }
    }
}

impl Health {
    /// Applies one run's outcome at `at`; the change of state, if any.
    pub fn apply(&mut self, outcome: Outcome, retries: u32, at: u64) -> Option<Change> {
        let next = match outcome {
            Outcome::Ok => {
                self.consecutive_failures = 0;
                Some(Status::Up)
            }
            Outcome::Degraded => {
                self.consecutive_failures = 0;
                Some(Status::Degraded)
            }
            Outcome::Failed => {
                self.consecutive_failures = self.consecutive_failures.saturating_add(1);
                (self.consecutive_failures > retries).then_some(Status::Down)
            }
        };
        let to = next?;
        if self.status == Some(to) {
            return None;
        }
        let change = Change {
            from: self.status,
            to,
        };
        self.status = Some(to);
        self.status_since = Some(at);
        Some(change)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Outcome::{Degraded as D, Failed as F, Ok as O};

    /// Runs `outcomes` from a new check with `retries`; for each run, the
    /// status after it and whether it alerted.
    fn trace(retries: u32, outcomes: &[Outcome]) -> Vec<(Option<Status>, bool)> {
        let mut health = Health::default();
        outcomes
            .iter()
            .enumerate()
            .map(|(i, o)| {
                let change = health.apply(*o, retries, i as u64);
                (health.status, change.is_some_and(|c| c.alerts()))
            })
            .collect()
    }

    const UP: Option<Status> = Some(Status::Up);
    const DOWN: Option<Status> = Some(Status::Down);
    const DEG: Option<Status> = Some(Status::Degraded);

    /// Retries, outcomes in order, and the trace they should leave.
    type Case = (u32, Vec<Outcome>, Vec<(Option<Status>, bool)>);

    #[test]
    fn transitions_and_alerts_follow_the_table() {
        let cases: Vec<Case> = vec![
            // The first up does not alert; repeats change nothing.
            (0, vec![O, O], vec![(UP, false), (UP, false)]),
            // Without retries the first failure is down, once.
            (
                0,
                vec![O, F, F, O],
                vec![(UP, false), (DOWN, true), (DOWN, false), (UP, true)],
            ),
            // Two retries: the third failure in a row is down.
            (
                2,
                vec![O, F, F, F, F, O],
                vec![
                    (UP, false),
                    (UP, false),
                    (UP, false),
                    (DOWN, true),
                    (DOWN, false),
                    (UP, true),
                ],
            ),
            // A success in between resets the count.
            (1, vec![O, F, O, F, O], vec![(UP, false); 5]),
            // Slowness is degraded at once, and recovers.
            (
                3,
                vec![O, D, D, O],
                vec![(UP, false), (DEG, true), (DEG, false), (UP, true)],
            ),
            // Down to degraded and back down are changes too.
            (
                0,
                vec![F, D, F],
                vec![(DOWN, true), (DEG, true), (DOWN, true)],
            ),
            // A new check that fails before its first success.
            (
                1,
                vec![F, F, O],
                vec![(None, false), (DOWN, true), (UP, true)],
            ),
        ];
        for (retries, outcomes, want) in cases {
            assert_eq!(
                trace(retries, &outcomes),
                want,
                "retries {retries}, {outcomes:?}"
            );
        }
    }

    #[test]
    fn status_since_moves_only_on_a_change() {
        let mut h = Health::default();
        h.apply(O, 0, 10);
        h.apply(O, 0, 20);
        assert_eq!(h.status_since, Some(10));
        let change = h.apply(F, 0, 30).unwrap();
        assert_eq!(
            change,
            Change {
                from: UP,
                to: Status::Down
            }
        );
        assert_eq!((h.status_since, h.consecutive_failures), (Some(30), 1));
    }
}
