//! Load-time checks of a compiled component's imports and exports, made
//! before any of its code runs: every import must be granted and of a
//! supported `plateau:plugin` version.

use std::collections::BTreeSet;
use std::fmt;

use semver::Version;
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::config::Capability;
use crate::error::Error;

/// The `plateau:plugin` versions this host links, newest last.
pub const SUPPORTED_WIT_VERSIONS: &[&str] = &["0.1.0", "0.2.0"];

/// The WASI packages Rust's standard library needs; always linked, and
/// locked down by the store's WASI context.
const WASI_PACKAGES: &[&str] = &[
    "wasi:cli",
    "wasi:io",
    "wasi:clocks",
    "wasi:random",
    "wasi:filesystem",
];

const PACKAGE: &str = "plateau:plugin";

/// A supported version of the plugin WIT package.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WitVersion {
    V0_1,
    V0_2,
}

impl WitVersion {
    /// Every supported version, oldest first.
    pub const ALL: [WitVersion; 2] = [WitVersion::V0_1, WitVersion::V0_2];

    /// The version the host links.
    pub fn version(self) -> Version {
        match self {
            WitVersion::V0_1 => Version::new(0, 1, 0),
            WitVersion::V0_2 => Version::new(0, 2, 0),
        }
    }

    /// The supported version semver-compatible with `v`, as the linker
    /// matches them (`0.1.x` with `0.1.0`).
    fn compatible(v: &Version) -> Option<WitVersion> {
        WitVersion::ALL.into_iter().find(|w| {
            let host = w.version();
            v.pre.is_empty()
                && match (host.major, v.major) {
                    (0, 0) => host.minor == v.minor && (host.minor > 0 || host.patch == v.patch),
                    (a, b) => a == b,
                }
        })
    }
}

impl fmt::Display for WitVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.version())
    }
}

/// What the checks found.
#[derive(Debug, Clone)]
pub(crate) struct Inspection {
    pub version: WitVersion,
    /// Every import name, for the load report.
    pub imports: Vec<String>,
}

/// `namespace:package/interface@version` split into its parts.
fn split_name(name: &str) -> Option<(&str, &str, Option<&str>)> {
    let (path, version) = match name.split_once('@') {
        Some((p, v)) => (p, Some(v)),
        None => (name, None),
    };
    let (package, interface) = path.split_once('/')?;
    Some((package, interface, version))
}

fn supported_list() -> String {
    SUPPORTED_WIT_VERSIONS.join(", ")
}

/// The plugin version a `plateau:plugin` item speaks, or why not.
fn plugin_version(name: &str, version: Option<&str>) -> Result<WitVersion, Error> {
    let unsupported = || Error::UnsupportedVersion {
        interface: name.to_string(),
        supported: supported_list(),
    };
    let version = Version::parse(version.ok_or_else(unsupported)?).map_err(|_| unsupported())?;
    WitVersion::compatible(&version).ok_or_else(unsupported)
}

/// Keeps the one version a component speaks; two different ones are refused.
fn agree(
    seen: &mut Option<(WitVersion, String)>,
    version: WitVersion,
    name: &str,
) -> Result<(), Error> {
    match seen {
        Some((v, first)) if *v != version => {
            Err(Error::MixedVersions(first.clone(), name.to_string()))
        }
        Some(_) => Ok(()),
        None => {
            *seen = Some((version, name.to_string()));
            Ok(())
        }
    }
}

pub(crate) fn inspect(
    engine: &Engine,
    component: &Component,
    grants: &BTreeSet<Capability>,
) -> Result<Inspection, Error> {
    let ty = component.component_type();
    let mut seen: Option<(WitVersion, String)> = None;
    let mut imports = Vec::new();
    let mut needs = Vec::new();
    for (name, _) in ty.imports(engine) {
        imports.push(name.to_string());
        let Some((package, interface, version)) = split_name(name) else {
            return Err(Error::UnknownImport(name.to_string()));
        };
        if package == PACKAGE {
            agree(&mut seen, plugin_version(name, version)?, name)?;
            if let Some(capability) = Capability::of_interface(interface) {
                needs.push((name, capability));
            } else if interface != "types" {
                return Err(Error::UnknownImport(name.to_string()));
            }
        } else if !(WASI_PACKAGES.contains(&package)
            && version.is_some_and(|v| v.starts_with("0.2.")))
        {
            return Err(Error::UnknownImport(name.to_string()));
        }
    }

    let mut handler = false;
    for (name, _) in ty.exports(engine) {
        if let Some((PACKAGE, "handler", version)) = split_name(name) {
            agree(&mut seen, plugin_version(name, version)?, name)?;
            handler = true;
        }
    }
    if !handler {
        return Err(Error::MissingHandler);
    }

    for (name, capability) in needs {
        if !grants.contains(&capability) {
            return Err(Error::CapabilityNotGranted {
                interface: name.to_string(),
                capability: capability.as_str(),
            });
        }
    }
    let version = seen.map(|(v, _)| v).ok_or(Error::MissingHandler)?;
    Ok(Inspection { version, imports })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_versions_like_the_linker() {
        let cases = [
            ("0.1.0", Some(WitVersion::V0_1)),
            ("0.1.3", Some(WitVersion::V0_1)),
            ("0.2.0", Some(WitVersion::V0_2)),
            ("0.2.1", Some(WitVersion::V0_2)),
            ("0.3.0", None),
            ("0.0.1", None),
            ("1.0.0", None),
            ("0.1.0-rc.1", None),
        ];
        for (v, expected) in cases {
            assert_eq!(
                WitVersion::compatible(&Version::parse(v).unwrap()),
                expected,
                "{v}"
            );
        }
    }

    #[test]
    fn the_supported_list_names_every_version() {
        let all: Vec<String> = WitVersion::ALL.iter().map(|v| v.to_string()).collect();
        assert_eq!(all, SUPPORTED_WIT_VERSIONS);
    }

    #[test]
    fn splits_import_names() {
        assert_eq!(
            split_name("plateau:plugin/kv@0.1.0"),
            Some(("plateau:plugin", "kv", Some("0.1.0")))
        );
        assert_eq!(
            split_name("wasi:io/streams@0.2.6"),
            Some(("wasi:io", "streams", Some("0.2.6")))
        );
        assert_eq!(split_name("log"), None);
    }
}
