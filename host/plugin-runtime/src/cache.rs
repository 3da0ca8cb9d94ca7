//! The on-disk cache of compiled components, keyed by the sha256 digest of
//! the wasm and by the engine's compatibility hash, so each component
//! version is compiled once per host build and configuration.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

use wasmtime::Engine;
use wasmtime::component::Component;

use crate::error::{Error, Result};

/// Whether a load compiled the component or found it in the cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheOutcome {
    Compiled,
    DiskHit,
}

pub(crate) struct ComponentCache {
    dir: PathBuf,
    engine_key: String,
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Cache {
        path: path.to_path_buf(),
        source,
    }
}

impl ComponentCache {
    pub fn new(engine: &Engine, dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(io_error(dir))?;
        let mut hasher = DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Ok(ComponentCache {
            dir: dir.to_path_buf(),
            engine_key: format!("{:016x}", hasher.finish()),
        })
    }

    fn path(&self, digest: &str) -> PathBuf {
        self.dir.join(format!("{digest}-{}.cwasm", self.engine_key))
    }

    /// The component of `wasm`, from the cache or compiled and cached.
    /// Blocking: compilation takes a while, call it off the executor.
    pub fn load(
        &self,
        engine: &Engine,
        digest: &str,
        wasm: &[u8],
    ) -> Result<(Component, CacheOutcome)> {
        let path = self.path(digest);
        if path.exists() {
            match deserialize(engine, &path) {
                Ok(component) => return Ok((component, CacheOutcome::DiskHit)),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = %e, "unusable cached component; compiling again");
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
        let compiled = engine.precompile_component(wasm).map_err(Error::Compile)?;
        // Write then rename, so a reader never maps a half-written file.
        let partial = path.with_extension(format!("{}.partial", std::process::id()));
        std::fs::write(&partial, &compiled).map_err(io_error(&partial))?;
        std::fs::rename(&partial, &path).map_err(io_error(&path))?;
        let component = deserialize(engine, &path).map_err(Error::Compile)?;
        Ok((component, CacheOutcome::Compiled))
    }
}

/// Maps a compiled component this cache wrote.
#[allow(unsafe_code)]
fn deserialize(engine: &Engine, path: &Path) -> wasmtime::Result<Component> {
    // SAFETY: `deserialize_file` trusts its input to be the output of
    // `Engine::precompile_component` for a compatible engine. Only this cache
    // writes into its directory, always from `precompile_component`, under a
    // name that carries the engine's compatibility hash, and by an atomic
    // rename, so the file is never partial and is never rewritten in place
    // while mapped. wasmtime also checks the engine settings in the header
    // and refuses a mismatch. The directory must be writable only by this
    // host, like the database.
    unsafe { Component::deserialize_file(engine, path) }
}
