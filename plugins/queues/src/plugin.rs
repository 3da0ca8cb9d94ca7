//! The queues plugin: its self-description, route table and jobs.
//!
//! | Route | Access |
//! |---|---|
//! | `GET /queues`, `GET /queues/{name}`, `GET /queues/{name}/stats` | `queues:read` |
//! | `POST /queues`, `PATCH /queues/{name}`, `DELETE /queues/{name}` | `queues:write` |
//! | `POST /queues/{name}/messages`, `POST /queues/{name}/messages/batch` | `queues:write` |
//! | `POST /queues/{name}/receive`, `/ack`, `/visibility` | `queues:write` |
//! | `POST /queues/{name}/purge`, `POST /queues/{name}/redrive` | `queues:write` |
//!
//! Receiving changes a message (it hides it and issues a receipt), so it
//! needs `queues:write`. Jobs: `gc:{name}.{generation}` removes the data of
//! a purged or deleted generation.

use plateau_sdk::jobs::Job;
use plateau_sdk::{Capability, Description, Plugin, Router, log};

use crate::input::{
    AckRequest, NewBatch, NewMessage, NewQueue, QueuePatch, RedriveRequest, VisibilityRequest,
};
use crate::views::{Acked, QueueView, ReceivedBatch, Redriven, Sent, SentBatch, Stats};
use crate::{api, maint, messages};

/// The plugin type handed to [`plateau_sdk::export_plugin!`].
pub struct QueuesPlugin;

impl Plugin for QueuesPlugin {
    fn describe() -> Description {
        Description::new("queues", env!("CARGO_PKG_VERSION"))
            .prefix("/queues")
            .scope("queues:read", "Read queues, their settings and their stats")
            .scope(
                "queues:write",
                "Create, change, purge and delete queues; send, receive and acknowledge messages",
            )
            .capabilities(&[
                Capability::Kv,
                Capability::Events,
                Capability::Log,
                Capability::Clock,
                Capability::Scheduler,
            ])
    }

    fn router() -> Router {
        Router::new()
            .get("/queues", api::list)
            .scope("queues:read")
            .summary("List queues")
            .response_page::<QueueView>()
            .post("/queues", api::create)
            .scope("queues:write")
            .summary("Create a queue")
            .request::<NewQueue>()
            .requires(&["name"])
            .response::<QueueView>(201)
            .get("/queues/{name}", api::get)
            .scope("queues:read")
            .summary("Get a queue")
            .response::<QueueView>(200)
            .patch("/queues/{name}", api::update)
            .scope("queues:write")
            .summary("Change a queue's settings")
            .request::<QueuePatch>()
            .response::<QueueView>(200)
            .delete("/queues/{name}", api::delete)
            .scope("queues:write")
            .summary("Delete a queue and its messages")
            .empty_response(204)
            .post("/queues/{name}/messages", messages::send)
            .scope("queues:write")
            .summary("Send a message")
            .request::<NewMessage>()
            .requires(&["body"])
            .response::<Sent>(201)
            .response::<Sent>(200)
            .post("/queues/{name}/messages/batch", messages::send_batch)
            .scope("queues:write")
            .summary("Send 1 to 10 messages")
            .request::<NewBatch>()
            .response::<SentBatch>(200)
            .post("/queues/{name}/receive", messages::receive)
            .scope("queues:write")
            .summary("Receive up to 10 messages, hiding them for the visibility timeout; waitSeconds (0 to 20) waits for one")
            .response::<ReceivedBatch>(200)
            .post("/queues/{name}/ack", messages::ack)
            .scope("queues:write")
            .summary("Acknowledge (delete) received messages by receipt handle")
            .request::<AckRequest>()
            .empty_response(204)
            .response::<Acked>(200)
            .post("/queues/{name}/visibility", messages::change_visibility)
            .scope("queues:write")
            .summary("Change a received message's visibility timeout")
            .request::<VisibilityRequest>()
            .empty_response(204)
            .post("/queues/{name}/purge", maint::purge)
            .scope("queues:write")
            .summary("Delete every message of a queue")
            .empty_response(204)
            .get("/queues/{name}/stats", maint::stats)
            .scope("queues:read")
            .summary("Count a queue's messages by state")
            .response::<Stats>(200)
            .post("/queues/{name}/redrive", maint::redrive)
            .scope("queues:write")
            .summary("Move dead-lettered messages back to their queue")
            .request::<RedriveRequest>()
            .response::<Redriven>(200)
    }

    fn on_job(job: &Job) -> Result<(), String> {
        if job.key.starts_with("gc:") {
            maint::collect(job)
        } else {
            log::warn(&format!("unknown job {} dropped", job.key));
            Ok(())
        }
    }
}
