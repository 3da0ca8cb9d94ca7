//! What a plugin looks like in a registry: a Wasm OCI artifact in the
//! CNCF layout (TAG Runtime's "Wasm OCI Artifact layout"). An image
//! manifest whose config has media type `application/vnd.wasm.config.v0+json`
//! and whose one layer, `application/wasm`, is the component.
//!
//! The config describes the component: architecture `wasm`, os `wasip2`,
//! the layer digests, and the component's top-level imports and exports.

use oci_client::manifest::{OciDescriptor, OciImageManifest};
use serde::{Deserialize, Serialize};
use wasmparser::{Encoding, Parser, Payload};

pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
pub const LAYER_MEDIA_TYPE: &str = "application/wasm";
pub const ARCHITECTURE: &str = "wasm";
/// The `os` of a component (a core module would be `wasip1`).
pub const COMPONENT_OS: &str = "wasip2";
/// The layer annotation that names the file, as `oras pull` writes it.
pub const TITLE_ANNOTATION: &str = "org.opencontainers.image.title";

#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    #[error("not a WebAssembly component: {0}")]
    NotAComponent(String),
    #[error(
        "the manifest's media type is {0}; a plugin is an OCI image manifest ({MANIFEST_MEDIA_TYPE})"
    )]
    ManifestMediaType(String),
    #[error("the manifest is not an OCI image manifest: {0}")]
    ManifestInvalid(String),
    #[error(
        "the artifact's config media type is {0}; a plugin artifact has {CONFIG_MEDIA_TYPE} (push it with `plateau plugin push`)"
    )]
    ConfigMediaType(String),
    #[error("the artifact has {0} layers; a plugin artifact has exactly one, the component")]
    LayerCount(usize),
    #[error(
        "the artifact's layer media type is {0}; a plugin's component layer is {LAYER_MEDIA_TYPE}"
    )]
    LayerMediaType(String),
}

/// The config blob of a Wasm artifact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WasmConfig {
    /// RFC 3339 time of packaging.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    /// Always `wasm`.
    pub architecture: String,
    /// `wasip2` for a component.
    pub os: String,
    /// The manifest's layer digests, in order.
    pub layer_digests: Vec<String>,
    /// Required when `os` is `wasip2`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<ComponentWorld>,
}

/// A component's top-level imports and exports, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ComponentWorld {
    pub exports: Vec<String>,
    pub imports: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

impl WasmConfig {
    /// The config of an artifact whose one layer is `wasm`, with digest
    /// `layer_digest`.
    pub fn for_component(
        wasm: &[u8],
        layer_digest: &str,
        created: String,
    ) -> Result<Self, ArtifactError> {
        Ok(WasmConfig {
            created: Some(created),
            author: None,
            architecture: ARCHITECTURE.to_owned(),
            os: COMPONENT_OS.to_owned(),
            layer_digests: vec![layer_digest.to_owned()],
            component: Some(component_world(wasm)?),
        })
    }
}

/// Reads the top-level imports and exports of a component without
/// compiling it; refuses core modules and anything that is not Wasm.
pub fn component_world(wasm: &[u8]) -> Result<ComponentWorld, ArtifactError> {
    let mut world = ComponentWorld::default();
    // Nested modules and components each open with a header and close
    // with an end; only depth 1 is the component itself.
    let mut depth = 0usize;
    for payload in Parser::new(0).parse_all(wasm) {
        let payload = payload.map_err(|e| ArtifactError::NotAComponent(e.to_string()))?;
        match payload {
            Payload::Version { encoding, .. } => {
                if depth == 0 && encoding == Encoding::Module {
                    return Err(ArtifactError::NotAComponent(
                        "this is a core module; build the plugin for wasm32-wasip2".to_owned(),
                    ));
                }
                depth += 1;
            }
            Payload::End(_) => depth = depth.saturating_sub(1),
            Payload::ComponentImportSection(reader) if depth == 1 => {
                for import in reader {
                    let import = import.map_err(|e| ArtifactError::NotAComponent(e.to_string()))?;
                    world.imports.push(import.name.name.to_owned());
                }
            }
            Payload::ComponentExportSection(reader) if depth == 1 => {
                for export in reader {
                    let export = export.map_err(|e| ArtifactError::NotAComponent(e.to_string()))?;
                    world.exports.push(export.name.name.to_owned());
                }
            }
            _ => {}
        }
    }
    Ok(world)
}

/// The manifest of a plugin artifact: `config` and one `layer`.
pub fn manifest(config: OciDescriptor, layer: OciDescriptor) -> OciImageManifest {
    OciImageManifest {
        schema_version: 2,
        media_type: Some(MANIFEST_MEDIA_TYPE.to_owned()),
        config,
        layers: vec![layer],
        subject: None,
        artifact_type: None,
        annotations: None,
    }
}

/// Checks that `manifest` is a plugin artifact; returns its component
/// layer.
pub fn component_layer(manifest: &OciImageManifest) -> Result<&OciDescriptor, ArtifactError> {
    if let Some(media_type) = &manifest.media_type
        && media_type != MANIFEST_MEDIA_TYPE
    {
        return Err(ArtifactError::ManifestMediaType(media_type.clone()));
    }
    if manifest.config.media_type != CONFIG_MEDIA_TYPE {
        return Err(ArtifactError::ConfigMediaType(
            manifest.config.media_type.clone(),
        ));
    }
    let [layer] = manifest.layers.as_slice() else {
        return Err(ArtifactError::LayerCount(manifest.layers.len()));
    };
    if layer.media_type != LAYER_MEDIA_TYPE {
        return Err(ArtifactError::LayerMediaType(layer.media_type.clone()));
    }
    Ok(layer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn descriptor(media_type: &str) -> OciDescriptor {
        OciDescriptor {
            media_type: media_type.to_owned(),
            digest: format!("sha256:{}", "a".repeat(64)),
            size: 10,
            ..OciDescriptor::default()
        }
    }

    #[test]
    fn layouts_are_checked() {
        let good = manifest(descriptor(CONFIG_MEDIA_TYPE), descriptor(LAYER_MEDIA_TYPE));
        assert!(component_layer(&good).is_ok());
        let image = manifest(
            descriptor("application/vnd.oci.image.config.v1+json"),
            descriptor(LAYER_MEDIA_TYPE),
        );
        assert!(matches!(
            component_layer(&image),
            Err(ArtifactError::ConfigMediaType(_))
        ));
        let tar = manifest(
            descriptor(CONFIG_MEDIA_TYPE),
            descriptor("application/vnd.oci.image.layer.v1.tar"),
        );
        assert!(matches!(
            component_layer(&tar),
            Err(ArtifactError::LayerMediaType(_))
        ));
        let mut two = good.clone();
        two.layers.push(descriptor(LAYER_MEDIA_TYPE));
        assert!(matches!(
            component_layer(&two),
            Err(ArtifactError::LayerCount(2))
        ));
    }

    #[test]
    fn components_are_described_and_modules_refused() {
        let wasm = plateau_plugin_artifacts::builtin_plugins()[0].1;
        let world = component_world(wasm).unwrap();
        assert!(
            world
                .exports
                .iter()
                .any(|e| e.starts_with("plateau:handler/")),
            "{world:?}"
        );
        assert!(!world.imports.is_empty(), "{world:?}");
        // The smallest core module: magic and version 1.
        let module = b"\0asm\x01\0\0\0";
        assert!(matches!(
            component_world(module),
            Err(ArtifactError::NotAComponent(_))
        ));
        assert!(component_world(b"not wasm").is_err());
    }
}
