//! hello-plugin: a template Plateau plugin, a small "notes" product under
//! `/notes`. Copy this crate to start a plugin of your own.
//!
//! | Route                      | Access        | What it does                      |
//! |----------------------------|---------------|-----------------------------------|
//! | `POST /notes`              | `notes:write` | create a note (audited event)     |
//! | `GET /notes`               | `notes:read`  | list notes, `limit` and `cursor`  |
//! | `GET /notes/{id}`          | `notes:read`  | read a note                       |
//! | `DELETE /notes/{id}`       | `notes:write` | delete a note (audited event)     |
//! | `GET /notes/public/{id}`   | public        | read a note marked public         |
//!
//! Storage layout (key-value):
//! - caller's organisation: `note:<id>` holds a [`notes::Note`] as JSON;
//! - global: `seq` is the id counter, `public:<id>` names the organisation
//!   of a public note, so the public route can find it without a token.

use plateau_sdk::{Capability, Description, Plugin, Router};

pub mod notes;

/// The plugin type handed to [`plateau_sdk::export_plugin!`].
pub struct Notes;

impl Plugin for Notes {
    fn describe() -> Description {
        Description::new("notes", env!("CARGO_PKG_VERSION"))
            .prefix("/notes")
            .scope("notes:read", "Read the organisation's notes")
            .scope("notes:write", "Create and delete the organisation's notes")
            .capabilities(&[
                Capability::Kv,
                Capability::Events,
                Capability::Clock,
                Capability::Log,
            ])
    }

    fn router() -> Router {
        Router::new()
            .post("/notes", notes::create)
            .scope("notes:write")
            .summary("Create a note")
            .get("/notes", notes::list)
            .scope("notes:read")
            .summary("List notes, oldest first")
            .get("/notes/{id}", notes::get)
            .scope("notes:read")
            .summary("Get a note")
            .delete("/notes/{id}", notes::delete)
            .scope("notes:write")
            .summary("Delete a note")
            .get("/notes/public/{id}", notes::get_public)
            .public()
            .summary("Read a note marked public, without a token")
    }
}

plateau_sdk::export_plugin!(Notes);

// Native only: the tests use the SDK's in-memory host (`plateau_sdk::testing`).
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;
