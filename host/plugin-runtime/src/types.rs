//! The records that cross the WIT boundary, as the runtime's callers see
//! them: the shared ones of `plateau-contract`, so the host and the SDK
//! cannot disagree on a field, and callers never see generated bindings
//! (each WIT version converts onto the same types in `bindings`).

pub use plateau_contract::{
    Access, Caller, Description, Event, Job, Request, Response, Route, Schedule, ScopeInfo, Tick,
};
