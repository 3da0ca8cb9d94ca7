//! Plateau's webhooks plugin (`/webhooks`): endpoints subscribe to event
//! types of the organisation's timeline (exact, or a prefix such as
//! `app.*`), and each event they want is delivered as a Standard Webhooks
//! message: `webhook-id` (the event's ULID under `msg_`),
//! `webhook-timestamp` and `webhook-signature` (`v1,` and the base64
//! HMAC-SHA256 of `id.timestamp.body` under the endpoint's `whsec_`
//! secret; during a rotation's grace window, one signature per secret).
//!
//! Layers:
//! - the pure core: [`input`] (an endpoint's fields, event type patterns,
//!   the retry schedule) and [`record`] (stored shapes and keys);
//! - [`signing`] (secrets sealed with the host key, rotation, the
//!   signature header), [`deliver`] (fan-out of an event, one attempt per
//!   durable job, retries, disabling), [`api`] and [`replay`] (the delivery
//!   log and replay), answering [`views`], wired in [`plugin`].
//!
//! **Architecture Invariants:** a pending delivery has one durable job,
//! `dlv:{endpointId}:{messageId}`, due at its `nextAttemptAt`; a job whose
//! delivery is not pending or is due later sends nothing, so a job run
//! twice (jobs are at least once) makes no second attempt once the first
//! committed. An event handed to the plugin twice makes one delivery per
//! endpoint (the delivery's key is its message id, inserted only if new).
//! Secrets are stored sealed and shown only in the answer that made them.

pub mod api;
pub mod deliver;
pub mod input;
pub mod plugin;
pub mod record;
pub mod replay;
pub mod signing;
pub mod views;

pub use plugin::WebhooksPlugin;

plateau_sdk::export_plugin!(WebhooksPlugin);
