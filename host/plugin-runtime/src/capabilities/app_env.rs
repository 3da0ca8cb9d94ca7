//! The `app-env` capability (WIT 0.5.2): a plugin's layer of an app's
//! environment, read and set through the host's
//! [`AppEnv`](crate::app_env::AppEnv) for the call's organisation, under
//! the call's deadline.

use wasmtime::component::{HasData, Linker};

use crate::app_env::{AppEnvError, AppInfo, Layer, SetOutcome};
use crate::context::{CallContext, Phase};

mod gen_ {
    wasmtime::component::bindgen!({
        path: ["../../wit/deps/app-env"],
        interfaces: "
            import plateau:app-env/app-env@0.5.2;
        ",
        imports: { default: async | trappable },
    });
}
use gen_::plateau::app_env::app_env as v0_5;

/// What `app-env` sees of the store: the call, whose caller decides the
/// organisation and whose deadline bounds the call.
pub(crate) struct AppEnvView<'a> {
    pub call: &'a mut CallContext,
}

struct HasAppEnv;

impl HasData for HasAppEnv {
    type Data<'a> = AppEnvView<'a>;
}

pub(crate) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    view: fn(&mut T) -> AppEnvView<'_>,
) -> wasmtime::Result<()> {
    v0_5::add_to_linker::<T, HasAppEnv>(linker, view)
}

fn named(owner: v0_5::Owner) -> Option<String> {
    match owner {
        v0_5::Owner::Caller => None,
        v0_5::Owner::Organization(id) => Some(id),
    }
}

fn to_wit(e: AppEnvError) -> v0_5::Error {
    match e {
        AppEnvError::NotFound(m) => v0_5::Error::NotFound(m),
        AppEnvError::AccessDenied(m) => v0_5::Error::AccessDenied(m),
        AppEnvError::Invalid(m) => v0_5::Error::Invalid(m),
        AppEnvError::Unavailable(m) => v0_5::Error::Unavailable(m),
    }
}

impl AppEnvView<'_> {
    /// The organisation and the host's service, or the error to answer.
    fn service(
        &self,
        owner: v0_5::Owner,
    ) -> Result<(String, std::sync::Arc<dyn crate::app_env::AppEnv>), AppEnvError> {
        if self.call.phase == Phase::Describe {
            return Err(AppEnvError::Invalid(
                "apps are not available in describe".into(),
            ));
        }
        let org = self
            .call
            .owner_org(named(owner))
            .map_err(|m| AppEnvError::AccessDenied(m.to_owned()))?;
        let service = self.call.plugin.services.app_env.clone().ok_or_else(|| {
            AppEnvError::Unavailable("this host has no apps to set variables of".into())
        })?;
        Ok((org, service))
    }

    /// Runs `work` under the call's deadline; `Err(trap)` only when it passed.
    async fn bounded<T>(
        &mut self,
        work: impl Future<Output = Result<T, AppEnvError>>,
    ) -> wasmtime::Result<Result<T, v0_5::Error>> {
        match tokio::time::timeout(self.call.remaining(), work).await {
            Ok(result) => Ok(result.map_err(to_wit)),
            Err(_) => Err(self.call.deadline_trap()),
        }
    }
}

impl v0_5::Host for AppEnvView<'_> {
    async fn get(
        &mut self,
        owner: v0_5::Owner,
        id: String,
    ) -> wasmtime::Result<Result<v0_5::App, v0_5::Error>> {
        let (org, service) = match self.service(owner) {
            Ok(found) => found,
            Err(e) => return Ok(Err(to_wit(e))),
        };
        let got = self.bounded(async { service.get(&org, &id).await }).await?;
        Ok(got.map(|a: AppInfo| v0_5::App {
            id: a.id,
            name: a.name,
            live_deployment: a.live_deployment,
        }))
    }

    async fn set(
        &mut self,
        owner: v0_5::Owner,
        id: String,
        revision: u64,
        source: String,
        vars: Vec<(String, String)>,
    ) -> wasmtime::Result<Result<v0_5::Outcome, v0_5::Error>> {
        let (org, service) = match self.service(owner) {
            Ok(found) => found,
            Err(e) => return Ok(Err(to_wit(e))),
        };
        let layer = Layer {
            plugin: self.call.plugin.name.clone(),
            revision,
            source,
            vars,
        };
        let set = self
            .bounded(async { service.set(&org, &id, layer).await })
            .await?;
        Ok(set.map(|o: SetOutcome| v0_5::Outcome {
            applied: o.applied,
            changed: o.changed,
            deployment: o.deployment,
        }))
    }
}
