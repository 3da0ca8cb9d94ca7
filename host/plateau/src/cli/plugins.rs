//! The basics of the built-in plugins' services: `plateau queues` (list,
//! create, send, receive, ack, delete), `plateau cron` (list, create an
//! HTTP job, runs, trigger, delete) and `plateau workflows` (list runs,
//! start, show). Anything else is one `curl` away: the guides show it.

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use super::{Api, Global, output};

#[derive(Args)]
pub struct QueuesArgs {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: QueuesCommand,
}

#[derive(Subcommand)]
enum QueuesCommand {
    List,
    Create {
        name: String,
    },
    /// Send one message.
    Send {
        queue: String,
        body: String,
    },
    /// Receive up to --max messages (they come back after their
    /// visibility timeout unless acknowledged).
    Receive {
        queue: String,
        #[arg(long, default_value_t = 1)]
        max: u32,
    },
    /// Acknowledge a received message by its receipt handle.
    Ack {
        queue: String,
        receipt_handle: String,
    },
    Delete {
        queue: String,
    },
}

#[derive(Args)]
pub struct CronArgs {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: CronCommand,
}

#[derive(Subcommand)]
enum CronCommand {
    List,
    /// Create a job that calls URL on SCHEDULE (five-field cron, UTC by
    /// default).
    Create {
        name: String,
        schedule: String,
        url: String,
        #[arg(long, default_value = "POST")]
        method: String,
        #[arg(long)]
        timezone: Option<String>,
    },
    /// The job's recent runs.
    Runs {
        id: String,
    },
    /// Run the job now.
    Trigger {
        id: String,
    },
    Delete {
        id: String,
    },
}

#[derive(Args)]
pub struct WorkflowsArgs {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: WorkflowsCommand,
}

#[derive(Subcommand)]
enum WorkflowsCommand {
    /// List runs.
    Runs,
    /// Start a run of WORKFLOW with INPUT (JSON, default {}).
    Start {
        workflow: String,
        #[arg(default_value = "{}")]
        input: String,
    },
    /// Show a run.
    Show { id: String },
    /// Cancel a run.
    Cancel { id: String },
}

/// A queue's name as a path segment (names are URL-safe already; this
/// keeps a mistyped one from naming another path).
fn segment(name: &str) -> Result<&str, String> {
    if name.is_empty() || name.contains(['/', '?', '#', '%']) {
        return Err(format!("{name:?} is not a valid name (invalid_argument)"));
    }
    Ok(name)
}

pub async fn queues(args: QueuesArgs) -> Result<(), String> {
    let api = Api::from(&args.global)?;
    let json = api.json;
    match args.command {
        QueuesCommand::List => {
            let list = api.get("/queues").await?;
            output::list(
                json,
                &list,
                &[
                    "name",
                    "visibilityTimeoutSeconds",
                    "maxReceives",
                    "deadLetterQueue",
                ],
            );
        }
        QueuesCommand::Create { name } => {
            let queue = api.post("/queues", json!({ "name": name })).await?;
            output::object(json, &queue, &[]);
        }
        QueuesCommand::Send { queue, body } => {
            let sent = api
                .post(
                    &format!("/queues/{}/messages", segment(&queue)?),
                    json!({ "body": body }),
                )
                .await?;
            output::object(json, &sent, &[]);
        }
        QueuesCommand::Receive { queue, max } => {
            let received = api
                .post(
                    &format!("/queues/{}/receive", segment(&queue)?),
                    json!({ "maxMessages": max }),
                )
                .await?;
            let messages = json!({ "items": received["messages"] });
            if json {
                println!("{received:#}");
            } else {
                output::list(false, &messages, &["id", "body", "receiptHandle"]);
            }
        }
        QueuesCommand::Ack {
            queue,
            receipt_handle,
        } => {
            let answer = api
                .post(
                    &format!("/queues/{}/ack", segment(&queue)?),
                    json!({ "receiptHandle": receipt_handle }),
                )
                .await?;
            output::done(json, "acknowledged", &answer);
        }
        QueuesCommand::Delete { queue } => {
            let answer = api.delete(&format!("/queues/{}", segment(&queue)?)).await?;
            output::done(json, &format!("deleted {queue}"), &answer);
        }
    }
    Ok(())
}

pub async fn cron(args: CronArgs) -> Result<(), String> {
    let api = Api::from(&args.global)?;
    let json = api.json;
    match args.command {
        CronCommand::List => {
            let list = api.get("/cron-jobs").await?;
            output::list(
                json,
                &list,
                &["name", "id", "schedule", "enabled", "nextRunAt"],
            );
        }
        CronCommand::Create {
            name,
            schedule,
            url,
            method,
            timezone,
        } => {
            let mut body =
                json!({ "name": name, "schedule": schedule, "url": url, "method": method });
            if let Some(tz) = timezone {
                body["timezone"] = json!(tz);
            }
            let job = api.post("/cron-jobs", body).await?;
            output::object(json, &job, &["id", "name", "schedule", "nextRunAt"]);
        }
        CronCommand::Runs { id } => {
            let runs = api
                .get(&format!("/cron-jobs/{}/runs", segment(&id)?))
                .await?;
            output::list(json, &runs, &["id", "status", "startedAt", "statusCode"]);
        }
        CronCommand::Trigger { id } => {
            let run = api
                .post(&format!("/cron-jobs/{}/trigger", segment(&id)?), json!({}))
                .await?;
            output::object(json, &run, &[]);
        }
        CronCommand::Delete { id } => {
            let answer = api.delete(&format!("/cron-jobs/{}", segment(&id)?)).await?;
            output::done(json, &format!("deleted {id}"), &answer);
        }
    }
    Ok(())
}

pub async fn workflows(args: WorkflowsArgs) -> Result<(), String> {
    let api = Api::from(&args.global)?;
    let json = api.json;
    match args.command {
        WorkflowsCommand::Runs => {
            let list = api.get("/workflows/runs").await?;
            output::list(
                json,
                &list,
                &["id", "workflow", "status", "step", "createdAt"],
            );
        }
        WorkflowsCommand::Start { workflow, input } => {
            let input: Value = serde_json::from_str(&input)
                .map_err(|e| format!("the input is not JSON: {e} (invalid_argument)"))?;
            let run = api
                .post(
                    "/workflows/runs",
                    json!({ "workflow": workflow, "input": input }),
                )
                .await?;
            output::object(json, &run, &["id", "workflow", "status"]);
        }
        WorkflowsCommand::Show { id } => {
            let run = api
                .get(&format!("/workflows/runs/{}", segment(&id)?))
                .await?;
            output::object(json, &run, &[]);
        }
        WorkflowsCommand::Cancel { id } => {
            let run = api
                .post(
                    &format!("/workflows/runs/{}/cancel", segment(&id)?),
                    json!({}),
                )
                .await?;
            output::object(json, &run, &["id", "status"]);
        }
    }
    Ok(())
}
