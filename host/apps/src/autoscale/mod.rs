//! Autoscale on the data plane: the agent moves an app's `replicas`
//! between `min` and `max` of its setting (`app_autoscale`) on the CPU its
//! replicas use against `cpuTargetPct`, and takes an idle app with `min` 0
//! to zero replicas, which the edge wakes on the next request
//! ([`plateau_edge::demand`]).
//!
//! **What is measured.** Every tick ([`AutoscaleConfig::tick`]) the agent
//! reads each running app's [`plateau_runner::Usage`]: CPU time since
//! launch (a container's cgroup; a Wasm app's epoch ticks) and the CPU its
//! replicas may use (their `milliCpu` each; a core per Wasm replica). The
//! CPU of the window is the CPU time spent over it divided by the CPU the
//! replicas could have spent, in percent.
//!
//! **The rule** ([`decide`], as Kubernetes' horizontal autoscaler):
//! `desired = ceil(replicas × cpu / target)`, within `[max(min, 1), max]`,
//! and nothing changes while `cpu` is within 10% of the target. A change
//! needs a full window of samples. Up: at most once per window
//! (`PLATEAU_APPS_AUTOSCALE_WINDOW_MS`, 60 s by default). Down: only once
//! the cool-down (`PLATEAU_APPS_AUTOSCALE_COOLDOWN_MS`, 5 minutes) has
//! passed since the last change, so a burst does not flap it. To zero:
//! `min` 0, no request in flight and none for
//! `PLATEAU_APPS_AUTOSCALE_IDLE_MS` (5 minutes) and as long since the last
//! change. A setting changed to bounds the replicas are outside of moves
//! them at once.
//!
//! Each change is one conditional update of `apps.replicas` (from the
//! count the agent read) with an audited `app.scaled` event (`cause`
//! `autoscale` and the reason, or `request` for a wake), then the plane
//! follows it like any scale.

mod run;

use std::time::Duration;

pub use run::Autoscaler;

/// The autoscaler's timing, from the agent's settings.
#[derive(Clone, Copy, Debug)]
pub struct AutoscaleConfig {
    /// The CPU is averaged over this long; an increase waits as long.
    pub window: Duration,
    /// A decrease waits this long after the last change.
    pub cooldown: Duration,
    /// An app with `min` 0 goes to zero after this long without requests.
    pub idle: Duration,
}

impl Default for AutoscaleConfig {
    fn default() -> AutoscaleConfig {
        AutoscaleConfig {
            window: Duration::from_secs(60),
            cooldown: Duration::from_secs(300),
            idle: Duration::from_secs(300),
        }
    }
}

impl AutoscaleConfig {
    /// How often usage is sampled: a tenth of the window, 100 ms to 5 s.
    pub fn tick(&self) -> Duration {
        (self.window / 10).clamp(Duration::from_millis(100), Duration::from_secs(5))
    }
}

/// Within this fraction of the target, nothing changes.
const TOLERANCE: f64 = 0.1;

/// An app's setting, as the rule reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    pub min: i64,
    pub max: i64,
    pub target_pct: i64,
}

/// What the agent observed of an app.
#[derive(Clone, Copy, Debug, Default)]
pub struct Observed {
    /// `apps.replicas` now.
    pub replicas: i64,
    /// CPU over the last window in percent of what the replicas could
    /// use; none until a full window is sampled.
    pub cpu_pct: Option<f64>,
    /// Since the last change of replicas (or since the agent watches).
    pub since_change: Duration,
    /// Since the last request the edge saw; none if it saw none.
    pub idle_for: Option<Duration>,
    pub in_flight: u64,
}

/// Why the replicas change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Outside the setting's bounds.
    Bounds,
    CpuHigh,
    CpuLow,
    /// No requests for the idle time: to zero.
    Idle,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Bounds => "bounds",
            Reason::CpuHigh => "cpu_above_target",
            Reason::CpuLow => "cpu_below_target",
            Reason::Idle => "idle",
        }
    }
}

/// The replicas the app should have now, and why; none to stay.
pub fn decide(b: Bounds, o: Observed, c: &AutoscaleConfig) -> Option<(i64, Reason)> {
    let low = b.min.max(1);
    if o.replicas == 0 {
        // Asleep: the edge wakes it, unless it may no longer sleep.
        return (b.min > 0).then_some((low, Reason::Bounds));
    }
    if o.replicas < low {
        return Some((low, Reason::Bounds));
    }
    if o.replicas > b.max {
        return Some((b.max, Reason::Bounds));
    }
    if b.min == 0
        && o.in_flight == 0
        && o.since_change >= c.idle
        && o.idle_for.is_none_or(|idle| idle >= c.idle)
    {
        return Some((0, Reason::Idle));
    }
    let cpu = o.cpu_pct?;
    let ratio = cpu / b.target_pct.max(1) as f64;
    if (ratio - 1.0).abs() <= TOLERANCE {
        return None;
    }
    let desired = ((o.replicas as f64 * ratio).ceil() as i64).clamp(low, b.max);
    if desired > o.replicas && o.since_change >= c.window {
        Some((desired, Reason::CpuHigh))
    } else if desired < o.replicas && o.since_change >= c.cooldown {
        Some((desired, Reason::CpuLow))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUNDS: Bounds = Bounds {
        min: 1,
        max: 4,
        target_pct: 50,
    };

    fn config() -> AutoscaleConfig {
        AutoscaleConfig {
            window: Duration::from_secs(10),
            cooldown: Duration::from_secs(30),
            idle: Duration::from_secs(60),
        }
    }

    fn observed(replicas: i64, cpu: f64, since_change: u64) -> Observed {
        Observed {
            replicas,
            cpu_pct: Some(cpu),
            since_change: Duration::from_secs(since_change),
            idle_for: Some(Duration::ZERO),
            in_flight: 1,
        }
    }

    #[test]
    fn cpu_above_the_target_scales_up_once_a_window() {
        let c = config();
        assert_eq!(
            decide(BOUNDS, observed(1, 100.0, 10), &c),
            Some((2, Reason::CpuHigh))
        );
        assert_eq!(decide(BOUNDS, observed(1, 100.0, 9), &c), None);
        assert_eq!(
            decide(BOUNDS, observed(2, 200.0, 60), &c),
            Some((4, Reason::CpuHigh)),
            "never past max"
        );
        assert_eq!(
            decide(BOUNDS, observed(2, 54.0, 60), &c),
            None,
            "within the tolerance"
        );
    }

    #[test]
    fn cpu_below_the_target_scales_down_after_the_cool_down() {
        let c = config();
        assert_eq!(decide(BOUNDS, observed(4, 10.0, 29), &c), None);
        assert_eq!(
            decide(BOUNDS, observed(4, 10.0, 30), &c),
            Some((1, Reason::CpuLow))
        );
        assert_eq!(decide(BOUNDS, observed(1, 0.0, 300), &c), None, "min holds");
        let mut unsampled = observed(4, 0.0, 300);
        unsampled.cpu_pct = None;
        assert_eq!(decide(BOUNDS, unsampled, &c), None);
    }

    #[test]
    fn an_idle_app_with_min_zero_sleeps_and_wakes_only_by_request() {
        let c = config();
        let zero = Bounds { min: 0, ..BOUNDS };
        let mut idle = observed(1, 0.0, 60);
        idle.in_flight = 0;
        idle.idle_for = Some(Duration::from_secs(60));
        assert_eq!(decide(zero, idle, &c), Some((0, Reason::Idle)));
        assert_eq!(decide(BOUNDS, idle, &c), None, "min 1 never sleeps");
        idle.idle_for = Some(Duration::from_secs(59));
        assert_eq!(decide(zero, idle, &c), None);
        idle.idle_for = None;
        assert_eq!(decide(zero, idle, &c), Some((0, Reason::Idle)));
        idle.in_flight = 1;
        assert_eq!(decide(zero, idle, &c), None, "not while a request runs");
        let asleep = Observed {
            replicas: 0,
            ..Observed::default()
        };
        assert_eq!(decide(zero, asleep, &c), None);
        assert_eq!(decide(BOUNDS, asleep, &c), Some((1, Reason::Bounds)));
    }

    #[test]
    fn bounds_move_the_replicas_at_once() {
        let c = config();
        let b = Bounds {
            min: 2,
            max: 3,
            target_pct: 50,
        };
        assert_eq!(
            decide(b, observed(1, 50.0, 0), &c),
            Some((2, Reason::Bounds))
        );
        assert_eq!(
            decide(b, observed(5, 50.0, 0), &c),
            Some((3, Reason::Bounds))
        );
    }
}
