//! Plugins distributed through OCI registries: the artifact layout a
//! plugin has there (`artifact`, shared with `plateau plugin push`) and
//! pulling one by reference (`pull`). [`crate::PluginHost::load_reference`]
//! hands the pulled component to the same load path as an upload.

pub mod artifact;
pub mod pull;

pub use artifact::{ArtifactError, ComponentWorld, WasmConfig};
pub use pull::{OciSource, PullError, Pulled, pull, registry_client};
