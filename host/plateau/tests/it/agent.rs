//! The host's agent (`plateau agent`, the data plane) outlives the API
//! process: a SIGKILL of `plateau serve` leaves it running, the next serve
//! adopts it, and a dead agent is started again by a live serve.

use std::time::Duration;

use plateau_testkit::{Backend, Server};

use crate::start;

/// The pid of the agent that holds the server's data directory, once its
/// pid file names a live process.
fn agent_pid(s: &Server) -> Option<i32> {
    let pid = std::fs::read_to_string(s.data_dir.path().join("agent/pid")).ok()?;
    let pid: i32 = pid.trim().parse().ok()?;
    alive(pid).then_some(pid)
}

fn alive(pid: i32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

fn kill(pid: i32) {
    std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("kill runs");
}

crate::on_both_backends!(
    the_agent_outlives_a_killed_api_process_and_is_adopted,
    a_dead_agent_is_started_again
);

async fn the_agent_outlives_a_killed_api_process_and_is_adopted(backend: Backend) {
    let mut s = start(backend).await;
    let agent = agent_pid(&s).expect("serve started its agent");
    kill(s.pid().expect("serve runs") as i32);
    s.exited().await;
    assert!(alive(agent), "the agent survives the API process");
    s.restart().await;
    assert_eq!(
        agent_pid(&s),
        Some(agent),
        "the next serve adopts the running agent instead of starting another"
    );
    s.stop().await;
    assert!(
        alive(agent),
        "a graceful stop of serve leaves the agent running"
    );
}

async fn a_dead_agent_is_started_again(backend: Backend) {
    let s = start(backend).await;
    let agent = agent_pid(&s).expect("serve started its agent");
    kill(agent);
    let mut again = None;
    for _ in 0..300 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        again = agent_pid(&s).filter(|pid| *pid != agent);
        if again.is_some() {
            break;
        }
    }
    let again = again.expect("serve starts a new agent after its agent died");
    assert!(alive(again));
    assert_eq!(s.client().get("/health").await.status, 200);
}
