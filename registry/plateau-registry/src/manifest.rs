//! Manifest validation: what a pushed image manifest or image index must
//! look like, and what the registry reads out of it (references, subject,
//! artifact type, annotations). The bytes themselves are kept unchanged.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::reference::Digest;

pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
pub const DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";

/// Largest manifest accepted (the spec asks for at least 4 MB).
pub const MAX_MANIFEST_BYTES: usize = 4 * 1024 * 1024;

/// Whether a media type is an index (its children are manifests).
pub fn is_index(media_type: &str) -> bool {
    media_type == OCI_INDEX || media_type == DOCKER_LIST
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawDescriptor {
    media_type: Option<String>,
    digest: Option<String>,
    size: Option<i64>,
}

/// A descriptor, checked.
#[derive(Clone, Debug)]
pub struct Descriptor {
    pub media_type: String,
    pub digest: Digest,
    pub size: i64,
}

/// What the registry needs from a valid manifest.
#[derive(Debug)]
pub struct Parsed {
    pub media_type: String,
    /// Config and layers of an image manifest (blobs).
    pub blobs: Vec<Descriptor>,
    /// Children of an index (manifests).
    pub manifests: Vec<Descriptor>,
    pub subject: Option<Descriptor>,
    /// `artifactType`, or for an image manifest without one, the config's media type.
    pub artifact_type: Option<String>,
    pub annotations: Option<Map<String, Value>>,
}

fn invalid(message: impl Into<String>) -> Error {
    Error::ManifestInvalid(message.into())
}

fn descriptor(value: &Value, field: &str) -> Result<Descriptor> {
    let raw: RawDescriptor = serde_json::from_value(value.clone())
        .map_err(|e| invalid(format!("{field} is not a descriptor: {e}")))?;
    let media_type = raw
        .media_type
        .filter(|m| !m.is_empty())
        .ok_or_else(|| invalid(format!("{field}.mediaType is required")))?;
    let digest = raw
        .digest
        .ok_or_else(|| invalid(format!("{field}.digest is required")))?;
    let digest = Digest::parse(&digest).map_err(|e| invalid(format!("{field}.digest: {e}")))?;
    let size = raw
        .size
        .filter(|s| *s >= 0)
        .ok_or_else(|| invalid(format!("{field}.size must be a non-negative integer")))?;
    Ok(Descriptor {
        media_type,
        digest,
        size,
    })
}

fn descriptors(doc: &Map<String, Value>, field: &str) -> Result<Vec<Descriptor>> {
    match doc.get(field) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| descriptor(v, &format!("{field}[{i}]")))
            .collect(),
        Some(_) => Err(invalid(format!("{field} must be an array"))),
    }
}

/// Validates `body` pushed with `content_type` (parameters ignored).
pub fn parse(content_type: Option<&str>, body: &[u8]) -> Result<Parsed> {
    let doc: Value = serde_json::from_slice(body)
        .map_err(|e| invalid(format!("the manifest is not JSON: {e}")))?;
    let doc = doc
        .as_object()
        .ok_or_else(|| invalid("the manifest must be a JSON object"))?;
    if doc.get("schemaVersion").and_then(Value::as_i64) != Some(2) {
        return Err(invalid("schemaVersion must be 2"));
    }
    let declared = doc.get("mediaType").and_then(Value::as_str);
    let content_type = content_type
        .map(|c| c.split(';').next().unwrap_or("").trim())
        .filter(|c| !c.is_empty());
    let media_type = match (content_type, declared) {
        (Some(c), Some(d)) if c != d => {
            return Err(invalid(format!(
                "Content-Type {c} differs from the manifest's mediaType {d}"
            )));
        }
        (_, Some(d)) => d.to_owned(),
        (Some(c), None) => c.to_owned(),
        (None, None) if doc.contains_key("manifests") => OCI_INDEX.to_owned(),
        (None, None) => OCI_MANIFEST.to_owned(),
    };
    if ![OCI_MANIFEST, OCI_INDEX, DOCKER_MANIFEST, DOCKER_LIST].contains(&media_type.as_str()) {
        return Err(invalid(format!(
            "manifest media type {media_type} is not supported: push an OCI image manifest or index"
        )));
    }
    let subject = match doc.get("subject") {
        None | Some(Value::Null) => None,
        Some(v) => Some(descriptor(v, "subject")?),
    };
    let annotations = match doc.get("annotations") {
        None | Some(Value::Null) => None,
        Some(Value::Object(map)) => Some(map.clone()),
        Some(_) => return Err(invalid("annotations must be an object")),
    };
    let mut artifact_type = doc
        .get("artifactType")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    let (blobs, manifests) = if is_index(&media_type) {
        if !matches!(doc.get("manifests"), Some(Value::Array(_))) {
            return Err(invalid("an image index needs a manifests array"));
        }
        (Vec::new(), descriptors(doc, "manifests")?)
    } else {
        let config = doc
            .get("config")
            .ok_or_else(|| invalid("an image manifest needs a config descriptor"))?;
        let config = descriptor(config, "config")?;
        if artifact_type.is_none() {
            artifact_type = Some(config.media_type.clone());
        }
        let mut blobs = vec![config];
        if !matches!(doc.get("layers"), Some(Value::Array(_)) | None) {
            return Err(invalid("layers must be an array"));
        }
        blobs.extend(descriptors(doc, "layers")?);
        (blobs, Vec::new())
    };
    Ok(Parsed {
        media_type,
        blobs,
        manifests,
        subject,
        artifact_type,
        annotations,
    })
}

/// Whether an `Accept` header admits `media_type`; no header admits all.
pub fn accepts(accept: &[String], media_type: &str) -> bool {
    let mut any = false;
    for value in accept {
        for item in value.split(',') {
            let item = item.split(';').next().unwrap_or("").trim();
            if item.is_empty() {
                continue;
            }
            any = true;
            if item == "*/*" || item == media_type || item == "application/*" {
                return true;
            }
        }
    }
    !any
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(c: char) -> String {
        format!("sha256:{}", c.to_string().repeat(64))
    }

    #[test]
    fn image_manifest_with_subject() {
        let body = serde_json::json!({
            "schemaVersion": 2, "mediaType": OCI_MANIFEST,
            "artifactType": "application/vnd.example+json",
            "config": { "mediaType": "application/vnd.oci.empty.v1+json", "digest": d('a'), "size": 2 },
            "layers": [{ "mediaType": "text/plain", "digest": d('b'), "size": 5 }],
            "subject": { "mediaType": OCI_MANIFEST, "digest": d('c'), "size": 10 },
            "annotations": { "k": "v" }
        });
        let p = parse(Some(OCI_MANIFEST), body.to_string().as_bytes()).unwrap();
        assert_eq!(p.blobs.len(), 2);
        assert_eq!(p.subject.unwrap().digest.to_string(), d('c'));
        assert_eq!(
            p.artifact_type.as_deref(),
            Some("application/vnd.example+json")
        );
    }

    #[test]
    fn refusals() {
        let bad = [
            (
                Some(OCI_INDEX),
                r#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json"}"#,
            ),
            (None, r#"{"schemaVersion":1}"#),
            (None, "not json"),
            (Some(OCI_MANIFEST), r#"{"schemaVersion":2}"#),
            (
                Some(OCI_INDEX),
                r#"{"schemaVersion":2,"manifests":[{"digest":"x"}]}"#,
            ),
            (Some("text/plain"), r#"{"schemaVersion":2,"manifests":[]}"#),
        ];
        for (ct, body) in bad {
            assert!(
                matches!(parse(ct, body.as_bytes()), Err(Error::ManifestInvalid(_))),
                "{body}"
            );
        }
    }

    #[test]
    fn negotiation() {
        assert!(accepts(&[], OCI_INDEX));
        assert!(accepts(
            &[format!("{OCI_MANIFEST}, {OCI_INDEX};q=0.5")],
            OCI_INDEX
        ));
        assert!(!accepts(&[OCI_MANIFEST.to_owned()], OCI_INDEX));
        assert!(accepts(&["*/*".to_owned()], OCI_INDEX));
    }
}
