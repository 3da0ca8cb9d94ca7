//! What a host call may know about the call it serves: the loaded plugin's
//! shared context, the phase, the caller and the deadline, and the namespace
//! rules every capability that names a namespace applies.
//!
//! Capabilities depend on this module, never on the store's `State`, so a
//! new capability adds a module and no edge to the others.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::{PluginSettings, Services};
use crate::cursors::CursorScope;
use crate::egress::EgressGuard;
use crate::overlay::KvError;
use crate::storage::{BucketId, Namespace};
use crate::types::Caller;
use crate::waits::Waits;

/// What every call of one loaded plugin version shares.
pub(crate) struct PluginContext {
    /// The plugin's name; while loading, a label made of the digest.
    pub name: String,
    pub settings: PluginSettings,
    pub services: Services,
    pub egress: EgressGuard,
    /// The runtime's parked `kv.wait` calls.
    pub waits: Arc<Waits>,
}

/// The longest a call may stay parked in `kv.wait`, in all; the time
/// parked extends its deadline.
pub(crate) const MAX_PARKED: Duration = Duration::from_secs(20);

/// Which entry point a store serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// `describe` at load: no data, no events, no network.
    Describe,
    Request,
    Tick,
    Event,
}

/// The namespace as the guest named it, before the access rules; every WIT
/// version's `namespace` converts into it.
pub(crate) enum GuestNamespace {
    Caller,
    Organization(String),
    Global,
}

/// The call a store serves.
pub(crate) struct CallContext {
    pub plugin: Arc<PluginContext>,
    pub phase: Phase,
    /// The caller of a request; ticks and events have none.
    pub caller: Option<Caller>,
    pub deadline: Instant,
    /// Set when the deadline interrupted the guest or a host call.
    pub deadline_hit: bool,
    /// Time spent parked in `kv.wait` so far.
    pub parked: Duration,
}

impl CallContext {
    pub fn new(plugin: Arc<PluginContext>, phase: Phase, caller: Option<Caller>) -> Self {
        let deadline = Instant::now() + plugin.settings.limits.deadline;
        CallContext {
            plugin,
            phase,
            caller,
            deadline,
            deadline_hit: false,
            parked: Duration::ZERO,
        }
    }

    /// The caller's organisation, if the call has a caller with one.
    pub fn caller_org(&self) -> Option<&str> {
        self.caller.as_ref()?.organization_id.as_deref()
    }

    /// The organisation a `runner` or `logs` call acts for, under the
    /// namespace rules of `kv`: `named` is `None` for `caller`, which needs a
    /// caller organisation; an organisation named by id is allowed only
    /// without a caller organisation (a job, a tick) or for the caller's own.
    pub fn owner_org(&self, named: Option<String>) -> Result<String, &'static str> {
        match (named, self.caller_org()) {
            (None, Some(org)) => Ok(org.to_owned()),
            (None, None) => Err("this call has no caller organisation; name organization(id)"),
            (Some(id), _) if id.is_empty() => Err("the organisation id is empty"),
            (Some(id), None) => Ok(id),
            (Some(id), Some(org)) if id == org => Ok(id),
            (Some(_), Some(_)) => Err("a request may act only for its caller's organisation"),
        }
    }

    /// Time left before the deadline.
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// How long the call may still park in `kv.wait`.
    pub fn parking_left(&self) -> Duration {
        MAX_PARKED.saturating_sub(self.parked)
    }

    /// Moves the deadline by the time the call was parked.
    pub fn add_parked(&mut self, parked: Duration) {
        self.parked += parked;
        self.deadline += parked;
    }

    /// Records that a host call ran past the deadline and returns the trap
    /// that aborts the call.
    pub fn deadline_trap(&mut self) -> wasmtime::Error {
        self.deadline_hit = true;
        wasmtime::Error::msg("deadline exceeded during a host call")
    }

    /// What the host's cursors of this call are bound to.
    pub fn cursor_scope(&self) -> CursorScope {
        CursorScope {
            plugin: self.plugin.name.clone(),
            organization: self.caller_org().map(String::from),
        }
    }

    /// Resolves a namespace under the rules of the WIT: `caller` needs a
    /// caller organisation, `organization(id)` is allowed only without one or
    /// for the caller's own. `kv`, `scheduler` and `secrets` share them.
    pub fn bucket(&self, ns: GuestNamespace) -> Result<BucketId, KvError> {
        if self.phase == Phase::Describe {
            return Err(KvError::AccessDenied(
                "key-value data is not available in describe".into(),
            ));
        }
        let namespace = match (ns, self.caller_org()) {
            (GuestNamespace::Caller, Some(org)) => Namespace::Organization(org.to_string()),
            (GuestNamespace::Caller, None) => {
                return Err(KvError::AccessDenied(
                    "this call has no caller organisation; open organization(id) or global".into(),
                ));
            }
            (GuestNamespace::Organization(id), _) if id.is_empty() => {
                return Err(KvError::AccessDenied("the organisation id is empty".into()));
            }
            (GuestNamespace::Organization(id), None) => Namespace::Organization(id),
            (GuestNamespace::Organization(id), Some(org)) if id == org => {
                Namespace::Organization(id)
            }
            (GuestNamespace::Organization(_), Some(_)) => {
                return Err(KvError::AccessDenied(
                    "a request may open only its caller's organisation".into(),
                ));
            }
            (GuestNamespace::Global, _) => Namespace::Global,
        };
        Ok(BucketId {
            plugin: self.plugin.name.clone(),
            namespace,
        })
    }
}

/// Converts each listed WIT version's `namespace` into [`GuestNamespace`].
macro_rules! guest_namespace_from {
    ($($wit:path),+ $(,)?) => {$(
        impl From<$wit> for $crate::context::GuestNamespace {
            fn from(ns: $wit) -> Self {
                type N = $wit;
                match ns {
                    N::Caller => $crate::context::GuestNamespace::Caller,
                    N::Organization(id) => $crate::context::GuestNamespace::Organization(id),
                    N::Global => $crate::context::GuestNamespace::Global,
                }
            }
        }
    )+};
}
pub(crate) use guest_namespace_from;
