//! Native tests of the checks plugin through the SDK's in-memory host: the
//! HTTP API (`api`), runs, states and alerts driven by due jobs on a
//! settable clock (`runs`), and heartbeats (`heartbeats`). The pure core is
//! tested in its modules.

mod api;
mod heartbeats;
mod host;
mod runs;
