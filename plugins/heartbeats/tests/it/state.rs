//! The state machine, data-driven: a heartbeat with a 60 s period and 30 s
//! of grace receives pings and sees the clock move; after each step, its
//! state.

use plateau_plugin_heartbeats::schedule::Schedule;
use plateau_plugin_heartbeats::state::{
    self, AlertKind, Cause, PingKind, Rules, State, Status, Transition, alert_for,
};

#[derive(Clone, Copy, Debug)]
enum Step {
    Ping(u64, PingKind),
    /// The deadline job runs at this second.
    Clock(u64),
    Pause,
}

use PingKind::{Fail, Start, Success};
use State::{Down, Late, New, Paused, Up};
use Step::{Clock, Pause, Ping};

fn rules() -> Rules {
    Rules {
        schedule: Schedule::period(60).unwrap(),
        grace_ms: 30_000,
    }
}

/// Runs the steps (times in seconds) and returns the state after each.
fn run(steps: &[Step]) -> Vec<State> {
    let rules = rules();
    let mut status = Status::new();
    steps
        .iter()
        .map(|step| {
            match *step {
                Ping(at, kind) => {
                    state::ping(&mut status, kind, at * 1000);
                }
                Clock(at) => {
                    rules.settle(&mut status, at * 1000);
                }
                Pause => status.state = Paused,
            }
            status.state
        })
        .collect()
}

const CASES: &[(&str, &[Step], &[State])] = &[
    (
        "a new heartbeat waits for its first ping",
        &[Clock(1000)],
        &[New],
    ),
    (
        "up, late at the expected time, down after the grace, up again",
        &[
            Ping(0, Success),
            Clock(59),
            Clock(60),
            Clock(89),
            Clock(90),
            Clock(500),
            Ping(600, Success),
        ],
        &[Up, Up, Late, Late, Down, Down, Up],
    ),
    (
        "a success ping while late puts it back up",
        &[
            Ping(0, Success),
            Clock(70),
            Ping(75, Success),
            Clock(134),
            Clock(135),
        ],
        &[Up, Late, Up, Up, Late],
    ),
    (
        "a fail ping is down at once, from new or up",
        &[Ping(0, Fail), Ping(10, Success), Ping(20, Fail)],
        &[Down, Up, Down],
    ),
    (
        "a start ping changes no state; a run over the grace time is down",
        &[Ping(0, Success), Ping(10, Start), Clock(39), Clock(40)],
        &[Up, Up, Up, Down],
    ),
    (
        "a run that ends in time keeps it up",
        &[
            Ping(0, Success),
            Ping(10, Start),
            Ping(35, Success),
            Clock(45),
            Clock(95),
        ],
        &[Up, Up, Up, Up, Late],
    ),
    (
        "the clock skips late when it jumps past the grace",
        &[Ping(0, Success), Clock(3600)],
        &[Up, Down],
    ),
    (
        "paused ignores the clock and a start ping; success resumes",
        &[
            Ping(0, Success),
            Pause,
            Clock(3600),
            Ping(3601, Start),
            Clock(7200),
            Ping(7201, Success),
        ],
        &[Up, Paused, Paused, Paused, Paused, Up],
    ),
    (
        "a fail ping resumes a paused heartbeat as down",
        &[Pause, Ping(10, Fail)],
        &[Paused, Down],
    ),
    (
        "down stays down until a success ping",
        &[
            Ping(0, Fail),
            Clock(10_000),
            Ping(10_001, Start),
            Clock(20_000),
        ],
        &[Down, Down, Down, Down],
    ),
];

#[test]
fn states_follow_pings_and_the_clock() {
    for (name, steps, expected) in CASES {
        assert_eq!(run(steps), *expected, "{name}");
    }
}

#[test]
fn deadlines_are_the_next_check() {
    let rules = rules();
    let mut status = Status::new();
    assert_eq!(rules.next_check(&status), None, "new has no deadline");
    state::ping(&mut status, Success, 1_000);
    assert_eq!(rules.expected_at(&status), Some(61_000));
    assert_eq!(rules.down_at(&status), Some(91_000));
    assert_eq!(rules.next_check(&status), Some(61_000));
    rules.settle(&mut status, 61_000);
    assert_eq!(status.state, Late);
    assert_eq!(rules.next_check(&status), Some(91_000));
    // A start ping brings the down deadline forward when its grace ends
    // first.
    let mut running = Status::new();
    state::ping(&mut running, Success, 0);
    state::ping(&mut running, Start, 10_000);
    assert_eq!(rules.next_check(&running), Some(40_000));
    rules.settle(&mut status, 91_000);
    assert_eq!(rules.next_check(&status), None, "down has no deadline");
}

#[test]
fn durations_run_from_start_to_success_or_fail() {
    let mut status = Status::new();
    assert_eq!(state::ping(&mut status, Start, 1_000).duration_ms, None);
    assert_eq!(
        state::ping(&mut status, Success, 4_500).duration_ms,
        Some(3_500)
    );
    assert_eq!(state::ping(&mut status, Success, 9_000).duration_ms, None);
    state::ping(&mut status, Start, 10_000);
    let failed = state::ping(&mut status, Fail, 12_000);
    assert_eq!(failed.duration_ms, Some(2_000));
    assert_eq!(
        failed.transition,
        Some(Transition {
            from: Up,
            to: Down,
            cause: Cause::Ping(Fail)
        })
    );
}

#[test]
fn causes_say_which_deadline_passed() {
    let rules = rules();
    let mut status = Status::new();
    state::ping(&mut status, Success, 0);
    let late = rules.settle(&mut status, 60_000).unwrap();
    assert_eq!(late.cause, Cause::Overdue);
    let down = rules.settle(&mut status, 90_000).unwrap();
    assert_eq!(
        (down.from, down.to, down.cause),
        (Late, Down, Cause::GraceExpired)
    );
    let mut running = Status::new();
    state::ping(&mut running, Success, 0);
    state::ping(&mut running, Start, 5_000);
    let timeout = rules.settle(&mut running, 35_000).unwrap();
    assert_eq!((timeout.to, timeout.cause), (Down, Cause::RunTimedOut));
    assert_eq!(
        rules.settle(&mut running, 99_000),
        None,
        "one change, not two"
    );
}

/// `(from, to, alert on late, alert)`.
const ALERTS: &[(State, State, bool, Option<AlertKind>)] = &[
    (Up, Late, false, None),
    (Up, Late, true, Some(AlertKind::Late)),
    (Late, Down, false, Some(AlertKind::Down)),
    (Up, Down, false, Some(AlertKind::Down)),
    (New, Down, false, Some(AlertKind::Down)),
    (Paused, Down, false, Some(AlertKind::Down)),
    (Down, Up, false, Some(AlertKind::Up)),
    (Late, Up, false, None),
    (Late, Up, true, Some(AlertKind::Up)),
    (New, Up, false, None),
    (Paused, Up, false, None),
    (Down, Down, false, None),
];

#[test]
fn only_changes_to_down_and_recoveries_alert() {
    for (from, to, on_late, expected) in ALERTS {
        let transition = Transition {
            from: *from,
            to: *to,
            cause: Cause::Rescheduled,
        };
        assert_eq!(
            alert_for(&transition, *on_late),
            *expected,
            "{from:?} -> {to:?}, alert on late {on_late}"
        );
    }
}
