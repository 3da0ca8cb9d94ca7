//! The verdict of one run: ok, degraded or failed, with the timing and, for
//! a failure, why. For URL and API checks it is judged from the response
//! (or the transport error); for heartbeats from the time of the last ping.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::assertions::{self, Assertion, Observed};
use crate::status::{self, StatusRange};

/// What one run found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    Ok,
    Degraded,
    Failed,
}

/// Why a run failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum Reason {
    /// The status code is not among the expected ones.
    Status,
    /// An assertion of an API check did not hold.
    Assertion,
    /// No complete response within the timeout.
    Timeout,
    /// The connection could not be made or broke.
    Connection,
    /// The platform's egress policy refused the address or host.
    Refused,
    /// The response body is over the platform's cap.
    TooLarge,
    /// The request could not be built (for example a malformed URL).
    InvalidRequest,
    /// A heartbeat's ping did not come within its interval and grace.
    MissedPing,
}

/// A failure, explained: for an assertion, which one (its definition and
/// index), what it expected and what it saw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Failure {
    pub reason: Reason,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assertion: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actual: Option<Value>,
    pub message: String,
}

impl Failure {
    fn plain(reason: Reason, message: String) -> Failure {
        Failure {
            reason,
            assertion: None,
            expected: None,
            actual: None,
            message,
        }
    }
}

/// How a request went wrong before a response arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransportError {
    Timeout,
    Connection(String),
    Refused(String),
    TooLarge,
    InvalidRequest(String),
}

/// What an HTTP check is told to expect.
#[derive(Debug, Clone, Copy)]
pub struct Expectations<'a> {
    pub expected_status: &'a [StatusRange],
    pub assertions: &'a [Assertion],
    pub timeout_ms: u32,
    pub degraded_after_ms: Option<u32>,
}

/// A run's verdict, as recorded in its result.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub outcome: Outcome,
    pub status_code: Option<u16>,
    /// Time to the whole response.
    pub latency_ms: Option<u32>,
    /// Time to an established connection.
    pub connect_ms: Option<u32>,
    pub failure: Option<Failure>,
    /// Why the run is not plainly ok: the failure's message, or the
    /// degradation's.
    pub message: Option<String>,
}

impl Verdict {
    fn failed(failure: Failure, status_code: Option<u16>, timing: Option<(u32, u32)>) -> Verdict {
        Verdict {
            outcome: Outcome::Failed,
            status_code,
            latency_ms: timing.map(|(_, total)| total),
            connect_ms: timing.map(|(connect, _)| connect),
            message: Some(failure.message.clone()),
            failure: Some(failure),
        }
    }

    /// A heartbeat that was pinged.
    pub fn pinged() -> Verdict {
        Verdict {
            outcome: Outcome::Ok,
            status_code: None,
            latency_ms: None,
            connect_ms: None,
            failure: None,
            message: None,
        }
    }

    /// A heartbeat whose ping is overdue: `message` says since when.
    pub fn missed_ping(message: String) -> Verdict {
        Verdict::failed(Failure::plain(Reason::MissedPing, message), None, None)
    }
}

/// Judges a response: status, then assertions in order, then the degraded
/// threshold.
pub fn judge_response(
    expect: &Expectations<'_>,
    observed: &Observed<'_>,
    connect_ms: u32,
) -> Verdict {
    let timing = Some((connect_ms, observed.total_ms));
    let code = Some(observed.status);
    let ranges: &[StatusRange] = if expect.expected_status.is_empty() {
        &[StatusRange::SUCCESS]
    } else {
        expect.expected_status
    };
    if !status::matches(ranges, observed.status) {
        let expected = status::describe(ranges);
        let failure = Failure {
            reason: Reason::Status,
            assertion: None,
            expected: Some(json!(expected)),
            actual: Some(json!(observed.status)),
            message: format!(
                "status {} is not among the expected {expected}",
                observed.status
            ),
        };
        return Verdict::failed(failure, code, timing);
    }
    if let Some(failed) = assertions::first_failure(expect.assertions, observed) {
        let failure = Failure {
            reason: Reason::Assertion,
            assertion: Some(failed.assertion_json()),
            expected: Some(json!(failed.expected)),
            actual: Some(failed.actual),
            message: failed.message,
        };
        return Verdict::failed(failure, code, timing);
    }
    let slow = expect
        .degraded_after_ms
        .filter(|limit| observed.total_ms > *limit);
    Verdict {
        outcome: if slow.is_some() {
            Outcome::Degraded
        } else {
            Outcome::Ok
        },
        status_code: code,
        latency_ms: Some(observed.total_ms),
        connect_ms: Some(connect_ms),
        failure: None,
        message: slow.map(|limit| {
            format!(
                "responded in {} ms, over the degraded threshold of {limit} ms",
                observed.total_ms
            )
        }),
    }
}

/// Judges a request that got no response.
pub fn judge_error(expect: &Expectations<'_>, error: &TransportError) -> Verdict {
    let failure = match error {
        TransportError::Timeout => Failure {
            reason: Reason::Timeout,
            assertion: None,
            expected: Some(json!(format!("a response within {} ms", expect.timeout_ms))),
            actual: None,
            message: format!("no response within the timeout of {} ms", expect.timeout_ms),
        },
        TransportError::Connection(why) => {
            Failure::plain(Reason::Connection, format!("connection failed: {why}"))
        }
        TransportError::Refused(why) => Failure::plain(
            Reason::Refused,
            format!("the platform's egress policy refused the target: {why}"),
        ),
        TransportError::TooLarge => Failure::plain(
            Reason::TooLarge,
            "the response body is over the platform's size cap".to_owned(),
        ),
        TransportError::InvalidRequest(why) => Failure::plain(
            Reason::InvalidRequest,
            format!("the request could not be sent: {why}"),
        ),
    };
    Verdict::failed(failure, None, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expect<'a>(
        ranges: &'a [StatusRange],
        assertions: &'a [Assertion],
        degraded: Option<u32>,
    ) -> Expectations<'a> {
        Expectations {
            expected_status: ranges,
            assertions,
            timeout_ms: 2000,
            degraded_after_ms: degraded,
        }
    }

    fn seen(status: u16, body: &str, total_ms: u32) -> Observed<'_> {
        Observed {
            status,
            headers: &[],
            body: body.as_bytes(),
            total_ms,
        }
    }

    #[test]
    fn status_then_assertions_then_threshold() {
        let ranges = ["200-299".parse().unwrap(), "304".parse().unwrap()];
        let assertions = [Assertion::from_json(
            &json!({"type": "jsonPath", "path": "$.ok", "operator": "equals", "value": true}),
        )
        .unwrap()];
        let e = expect(&ranges, &assertions, Some(300));

        let v = judge_response(&e, &seen(200, r#"{"ok": true}"#, 120), 3);
        assert_eq!(
            (
                v.outcome,
                v.status_code,
                v.latency_ms,
                v.connect_ms,
                v.message
            ),
            (Outcome::Ok, Some(200), Some(120), Some(3), None)
        );

        let v = judge_response(&e, &seen(200, r#"{"ok": true}"#, 301), 3);
        assert_eq!(v.outcome, Outcome::Degraded);
        assert_eq!(
            v.message.as_deref(),
            Some("responded in 301 ms, over the degraded threshold of 300 ms")
        );

        let v = judge_response(&e, &seen(503, "", 5), 1);
        let f = v.failure.unwrap();
        assert_eq!((v.outcome, f.reason), (Outcome::Failed, Reason::Status));
        assert_eq!(
            (f.expected, f.actual),
            (Some(json!("200-299, 304")), Some(json!(503)))
        );
        assert_eq!(
            f.message,
            "status 503 is not among the expected 200-299, 304"
        );

        // A failed assertion wins over slowness.
        let v = judge_response(&e, &seen(304, r#"{"ok": false}"#, 900), 1);
        let f = v.failure.unwrap();
        assert_eq!((v.outcome, f.reason), (Outcome::Failed, Reason::Assertion));
        assert_eq!(f.actual, Some(json!(false)));
        assert_eq!(f.assertion.unwrap()["index"], 0);
    }

    #[test]
    fn no_ranges_means_2xx_and_errors_are_failures() {
        let e = expect(&[], &[], None);
        assert_eq!(
            judge_response(&e, &seen(204, "", 1), 1).outcome,
            Outcome::Ok
        );
        assert_eq!(
            judge_response(&e, &seen(302, "", 1), 1).outcome,
            Outcome::Failed
        );
        let cases = [
            (
                TransportError::Timeout,
                Reason::Timeout,
                "no response within the timeout of 2000 ms",
            ),
            (
                TransportError::Connection("refused".into()),
                Reason::Connection,
                "connection failed: refused",
            ),
            (
                TransportError::Refused("loopback".into()),
                Reason::Refused,
                "the platform's egress policy refused the target: loopback",
            ),
        ];
        for (error, reason, message) in cases {
            let v = judge_error(&e, &error);
            let f = v.failure.unwrap();
            assert_eq!(
                (v.outcome, f.reason, f.message.as_str()),
                (Outcome::Failed, reason, message)
            );
            assert_eq!(v.status_code, None);
        }
    }
}
