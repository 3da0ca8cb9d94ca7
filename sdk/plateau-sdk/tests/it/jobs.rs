//! Durable jobs, secrets and SMTP through the native stand-ins: the same
//! rules as the host (namespaces, limits, rollback of a failed job).

use plateau_sdk::jobs::{self, Job, NewJob, SchedulerError};
use plateau_sdk::smtp::{self, Message, Reply, Sent, SmtpError, SmtpServer, TlsMode};
use plateau_sdk::{Bucket, Description, Namespace, Plugin, Router, secrets, testing};

struct Mailer;

impl Plugin for Mailer {
    fn describe() -> Description {
        Description::new("mailer", "1.0.0").prefix("/mailer")
    }

    fn router() -> Router {
        Router::new()
    }

    /// Counts runs, and fails when the payload says so (after a write).
    fn on_job(job: &Job) -> Result<(), String> {
        let bucket = Bucket::open(job.namespace()).map_err(|e| e.to_string())?;
        bucket.increment("runs", 1).map_err(|e| e.to_string())?;
        if job.payload == "fail" {
            return Err("asked to fail".into());
        }
        Ok(())
    }
}

#[test]
fn jobs_follow_the_namespace_rules_and_replace_by_key() {
    testing::reset();
    assert!(matches!(
        jobs::schedule(NewJob::at("k", 1)),
        Err(SchedulerError::AccessDenied(_))
    ));
    testing::set_organization(Some("org_a"));
    jobs::schedule(NewJob::at("k", 1).payload("one")).unwrap();
    jobs::schedule(NewJob::at("k", 2).every_ms(60_000).payload("two")).unwrap();
    jobs::schedule(NewJob::at("g", 3).namespace(Namespace::Global)).unwrap();
    let scheduled = testing::jobs();
    assert_eq!(scheduled.len(), 2);
    assert_eq!(scheduled[1].0, "org:org_a");
    assert_eq!(scheduled[1].1.every_ms, Some(60_000));
    assert_eq!(scheduled[1].1.payload, "two");
    assert!(matches!(
        jobs::schedule(NewJob::at("k", 1).every_ms(10)),
        Err(SchedulerError::Invalid(_))
    ));
    assert!(matches!(
        jobs::schedule(NewJob::at("", 1)),
        Err(SchedulerError::Invalid(_))
    ));
    jobs::cancel(Namespace::Caller, "k").unwrap();
    assert_eq!(testing::jobs().len(), 1);
}

#[test]
fn a_failed_job_rolls_back_its_writes() {
    testing::reset();
    let job = |payload: &str| Job {
        key: "k".into(),
        organization_id: Some("org_a".into()),
        payload: payload.into(),
        due: 0,
        attempt: 1,
    };
    testing::run_job::<Mailer>(&job("ok")).unwrap();
    assert!(testing::run_job::<Mailer>(&job("fail")).is_err());
    testing::set_organization(Some("org_a"));
    let runs: Option<i64> = Bucket::caller().unwrap().get("runs").unwrap();
    assert_eq!(runs, Some(1));
}

#[test]
fn secrets_open_only_in_their_namespace() {
    testing::reset();
    testing::set_organization(Some("org_a"));
    let sealed = secrets::seal_str(&Namespace::Caller, "hunter2").unwrap();
    assert!(!String::from_utf8_lossy(&sealed).contains("hunter2"));
    assert_eq!(
        secrets::open_str(&Namespace::Caller, &sealed).unwrap(),
        "hunter2"
    );
    assert!(secrets::open(&Namespace::Global, &sealed).is_err());
    assert!(secrets::seal(&Namespace::Organization("org_b".into()), b"x").is_err());
}

#[test]
fn smtp_goes_to_the_mock_and_classifies_failures() {
    testing::reset();
    let server = SmtpServer {
        host: "smtp.example.com".into(),
        port: 587,
        tls: TlsMode::StartTls,
        username: Some("u".into()),
        password: Some("secret-password".into()),
        timeout_ms: None,
    };
    assert!(!format!("{server:?}").contains("secret-password"));
    let message = Message {
        sender: "a@example.com".into(),
        to: vec!["b@example.com".into()],
        subject: "hi".into(),
        text: Some("hello".into()),
        ..Message::default()
    };
    assert!(matches!(
        smtp::send(&server, &message),
        Err(SmtpError::ConnectionFailed(_))
    ));
    testing::mock_smtp(|_, m| {
        if m.to[0].starts_with("later") {
            return Err(SmtpError::Rejected(Reply {
                code: 451,
                message: "try later".into(),
            }));
        }
        Ok(Sent {
            message_id: "<1@example.com>".into(),
            reply: Reply {
                code: 250,
                message: "ok".into(),
            },
        })
    });
    assert_eq!(smtp::send(&server, &message).unwrap().reply.code, 250);
    let later = Message {
        to: vec!["later@example.com".into()],
        ..message
    };
    let err = smtp::send(&server, &later).unwrap_err();
    assert!(err.is_temporary());
    assert!(
        !SmtpError::Rejected(Reply {
            code: 550,
            message: String::new()
        })
        .is_temporary()
    );
}
