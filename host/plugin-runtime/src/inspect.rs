//! Load-time checks of a compiled component's imports and exports, made
//! before any of its code runs: every import must be granted and of a
//! version this host links.
//!
//! Two generations of names exist. `plateau:plugin@0.1.0` and `@0.2.0` hold
//! every interface of their version (`plateau:plugin/kv@0.2.0`), and a
//! component speaks one of them throughout. From 0.3.0 on each interface is
//! its own package (`plateau:kv/kv@0.3.0`, `plateau:handler/handler@0.3.0`)
//! whose version moves on its own; [`SPLIT_PACKAGES`] lists the versions
//! this host links. The plugin worlds those versions make up,
//! [`SUPPORTED_WORLDS`], are the support window of `wit/README.md`; an
//! import outside it is refused naming the window.

use std::collections::BTreeSet;
use std::fmt;

use semver::Version;
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::config::Capability;
use crate::error::Error;

/// The plugin worlds (`plateau:plugin/plugin@VERSION`) this host links,
/// oldest first: its support window (wit/README.md). The newest is
/// `wit/plugin.wit`, the others are kept in `wit/legacy/`. Retiring the
/// oldest removes it here, its names from [`SPLIT_PACKAGES`] (or the
/// `plateau:plugin` versions of [`WitVersion`]) and its folders from
/// `wit/legacy/`; its components are then refused at load.
pub const SUPPORTED_WORLDS: &[&str] = &["0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.2"];

/// The window as the load error names it: `0.1.0 to 0.5.2`.
pub fn supported_worlds() -> String {
    let first = SUPPORTED_WORLDS.first().expect("a world is supported");
    let last = SUPPORTED_WORLDS.last().expect("a world is supported");
    format!("{first} to {last}")
}

/// The versions of the `handler` export this host runs, newest last (the
/// worlds of 0.3.0 on all export `plateau:handler/handler@0.3.0`).
pub const SUPPORTED_WIT_VERSIONS: &[&str] = &["0.1.0", "0.2.0", "0.3.0"];

/// The WASI packages Rust's standard library needs; always linked, and
/// locked down by the store's WASI context.
const WASI_PACKAGES: &[&str] = &[
    "wasi:cli",
    "wasi:io",
    "wasi:clocks",
    "wasi:random",
    "wasi:filesystem",
];

/// The package of 0.1.0 and 0.2.0, holding every interface of its version.
const PLUGIN_PACKAGE: &str = "plateau:plugin";

/// Every package of one interface this host links, with the versions it
/// links, oldest first. Each package `plateau:NAME` holds one interface
/// `NAME`; the newest version is `wit/deps/NAME`, older lines are frozen in
/// `wit/legacy/`. A version that only adds (gated `@since`) bumps the patch
/// and replaces its line's entry here: the linker matches `0.4.0` imports
/// with a host linking `0.4.1`. A new minor version is a new line: it adds a
/// version here and its capability links both.
pub const SPLIT_PACKAGES: &[(&str, &[&str])] = &[
    ("plateau:handler", &["0.3.0"]),
    ("plateau:kv", &["0.3.0", "0.4.0"]),
    ("plateau:events", &["0.3.0"]),
    ("plateau:outbound-http", &["0.3.0", "0.4.0"]),
    ("plateau:log", &["0.3.0"]),
    ("plateau:config", &["0.3.0"]),
    ("plateau:clock", &["0.3.0"]),
    ("plateau:cursors", &["0.3.0"]),
    ("plateau:scheduler", &["0.3.0"]),
    ("plateau:smtp", &["0.3.0"]),
    ("plateau:secrets", &["0.3.0"]),
    ("plateau:runner", &["0.4.0"]),
    ("plateau:logs", &["0.5.1"]),
    ("plateau:tcp", &["0.5.1"]),
    ("plateau:app-env", &["0.5.2"]),
];

/// A supported version of the plugin world, as its `handler` export names
/// it: `plateau:plugin/handler@0.1.0`, `@0.2.0`, then
/// `plateau:handler/handler@0.3.0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WitVersion {
    V0_1,
    V0_2,
    V0_3,
}

impl WitVersion {
    /// Every supported version, oldest first.
    pub const ALL: [WitVersion; 3] = [WitVersion::V0_1, WitVersion::V0_2, WitVersion::V0_3];

    /// The version the host links, as in [`SUPPORTED_WIT_VERSIONS`].
    pub fn as_str(self) -> &'static str {
        match self {
            WitVersion::V0_1 => "0.1.0",
            WitVersion::V0_2 => "0.2.0",
            WitVersion::V0_3 => "0.3.0",
        }
    }

    /// The version the host links.
    pub fn version(self) -> Version {
        Version::parse(self.as_str()).expect("a WitVersion parses")
    }

    fn of_str(linked: &str) -> Option<WitVersion> {
        WitVersion::ALL.into_iter().find(|w| w.as_str() == linked)
    }

    /// Whether this version's interfaces all live in `plateau:plugin`.
    fn is_whole_package(self) -> bool {
        matches!(self, WitVersion::V0_1 | WitVersion::V0_2)
    }
}

impl fmt::Display for WitVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether the linker matches a component's `wanted` version with the
/// host's `linked` one (`0.1.x` with `0.1.0`).
fn compatible(linked: &Version, wanted: &Version) -> bool {
    wanted.pre.is_empty()
        && match (linked.major, wanted.major) {
            (0, 0) => {
                linked.minor == wanted.minor && (linked.minor > 0 || linked.patch == wanted.patch)
            }
            (a, b) => a == b,
        }
}

/// The first of `linked` that `wanted` is compatible with.
fn find_compatible<'a>(linked: &[&'a str], wanted: &str) -> Option<&'a str> {
    let wanted = Version::parse(wanted).ok()?;
    linked
        .iter()
        .find(|v| compatible(&Version::parse(v).expect("linked versions parse"), &wanted))
        .copied()
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

/// The `plateau:plugin` version an item of 0.1.0 or 0.2.0 speaks, or why not.
fn whole_version(name: &str, version: Option<&str>) -> Result<WitVersion, Error> {
    let whole = [WitVersion::V0_1.as_str(), WitVersion::V0_2.as_str()];
    version
        .and_then(|v| find_compatible(&whole, v))
        .and_then(WitVersion::of_str)
        .ok_or_else(|| Error::UnsupportedVersion {
            interface: name.to_string(),
            supported: whole.join(", "),
        })
}

/// Checks an item of a one-interface package (`plateau:kv/kv@0.3.0`):
/// the interface is named like its package, and the version is linked.
/// Returns the linked version.
fn split_version(
    name: &str,
    package: &str,
    interface: &str,
    version: Option<&str>,
) -> Result<&'static str, Error> {
    let Some((_, linked)) = SPLIT_PACKAGES.iter().find(|(p, _)| *p == package) else {
        return Err(Error::UnknownImport(name.to_string()));
    };
    if package.strip_prefix("plateau:") != Some(interface) {
        return Err(Error::UnknownImport(name.to_string()));
    }
    version
        .and_then(|v| find_compatible(linked, v))
        .ok_or_else(|| Error::UnsupportedVersion {
            interface: name.to_string(),
            supported: linked.join(", "),
        })
}

/// Keeps the one `plateau:plugin` version a component speaks; two different
/// ones are refused.
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

/// The version of the component's `handler` export.
fn handler_version(engine: &Engine, component: &Component) -> Result<(WitVersion, String), Error> {
    for (name, _) in component.component_type().exports(engine) {
        match split_name(name) {
            Some((PLUGIN_PACKAGE, "handler", version)) => {
                return Ok((whole_version(name, version)?, name.to_string()));
            }
            Some((package @ "plateau:handler", interface, version)) => {
                let linked = split_version(name, package, interface, version)?;
                let version =
                    WitVersion::of_str(linked).expect("every linked handler is a WitVersion");
                return Ok((version, name.to_string()));
            }
            _ => {}
        }
    }
    Err(Error::MissingHandler)
}

pub(crate) fn inspect(
    engine: &Engine,
    component: &Component,
    grants: &BTreeSet<Capability>,
) -> Result<Inspection, Error> {
    let (version, handler) = handler_version(engine, component)?;
    // Items of `plateau:plugin` agree with the handler's version; a handler
    // of 0.3.0 or later speaks the one-interface packages only.
    let mut seen = Some((version, handler.clone()));
    let ty = component.component_type();
    let mut imports = Vec::new();
    let mut needs = Vec::new();
    for (name, _) in ty.imports(engine) {
        imports.push(name.to_string());
        let Some((package, interface, item_version)) = split_name(name) else {
            return Err(Error::UnknownImport(name.to_string()));
        };
        if package == PLUGIN_PACKAGE {
            agree(&mut seen, whole_version(name, item_version)?, name)?;
            if let Some(capability) = Capability::of_interface(interface) {
                needs.push((name, capability));
            } else if interface != "types" {
                return Err(Error::UnknownImport(name.to_string()));
            }
        } else if package.starts_with("plateau:") {
            split_version(name, package, interface, item_version)?;
            if version.is_whole_package() {
                return Err(Error::MixedVersions(handler, name.to_string()));
            }
            let capability = Capability::of_interface(interface)
                .ok_or_else(|| Error::UnknownImport(name.to_string()))?;
            needs.push((name, capability));
        } else if !(WASI_PACKAGES.contains(&package)
            && item_version.is_some_and(|v| v.starts_with("0.2.")))
        {
            return Err(Error::UnknownImport(name.to_string()));
        }
    }

    for (name, capability) in needs {
        if !grants.contains(&capability) {
            return Err(Error::CapabilityNotGranted {
                interface: name.to_string(),
                capability: capability.as_str(),
            });
        }
    }
    Ok(Inspection { version, imports })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_versions_like_the_linker() {
        let linked = ["0.1.0", "0.2.0", "1.0.0"];
        let cases = [
            ("0.1.0", Some("0.1.0")),
            ("0.1.3", Some("0.1.0")),
            ("0.2.0", Some("0.2.0")),
            ("0.2.1", Some("0.2.0")),
            ("0.3.0", None),
            ("0.0.1", None),
            ("1.4.0", Some("1.0.0")),
            ("2.0.0", None),
            ("0.1.0-rc.1", None),
            ("not-a-version", None),
        ];
        for (wanted, expected) in cases {
            assert_eq!(find_compatible(&linked, wanted), expected, "{wanted}");
        }
    }

    #[test]
    fn the_supported_list_names_every_version() {
        let all: Vec<&str> = WitVersion::ALL.iter().map(|v| v.as_str()).collect();
        assert_eq!(all, SUPPORTED_WIT_VERSIONS);
        for v in WitVersion::ALL {
            assert_eq!(v.to_string(), v.as_str());
        }
    }

    #[test]
    fn whole_package_items_name_their_version() {
        let ok = whole_version("plateau:plugin/kv@0.2.1", Some("0.2.1")).unwrap();
        assert_eq!(ok, WitVersion::V0_2);
        // 0.3.0 exists only as one-interface packages.
        match whole_version("plateau:plugin/kv@0.3.0", Some("0.3.0")) {
            Err(Error::UnsupportedVersion { supported, .. }) => {
                assert_eq!(supported, "0.1.0, 0.2.0")
            }
            other => panic!("expected an unsupported version, got {other:?}"),
        }
    }

    #[test]
    fn one_interface_packages_are_checked_by_name_and_version() {
        let check = |name| {
            let (package, interface, version) = split_name(name).unwrap();
            split_version(name, package, interface, version)
        };
        assert_eq!(check("plateau:kv/kv@0.3.2").unwrap(), "0.3.0");
        assert_eq!(check("plateau:handler/handler@0.3.0").unwrap(), "0.3.0");
        assert_eq!(check("plateau:kv/kv@0.4.0").unwrap(), "0.4.0");
        assert!(matches!(
            check("plateau:kv/kv@0.5.0"),
            Err(Error::UnsupportedVersion { supported, .. }) if supported == "0.3.0, 0.4.0"
        ));
        assert!(matches!(
            check("plateau:smtp/smtp@0.4.0"),
            Err(Error::UnsupportedVersion { supported, .. }) if supported == "0.3.0"
        ));
        // The interface is named like its package.
        assert!(matches!(
            check("plateau:kv/events@0.3.0"),
            Err(Error::UnknownImport(_))
        ));
        assert!(matches!(
            check("plateau:cron/cron@0.3.0"),
            Err(Error::UnknownImport(_))
        ));
    }

    #[test]
    fn every_one_interface_package_but_the_handler_is_a_capability() {
        for (package, versions) in SPLIT_PACKAGES {
            let interface = package.strip_prefix("plateau:").unwrap();
            assert!(!versions.is_empty(), "{package}");
            assert_eq!(
                Capability::of_interface(interface).is_none(),
                interface == "handler",
                "{package}"
            );
        }
    }

    #[test]
    fn splits_import_names() {
        assert_eq!(
            split_name("plateau:plugin/kv@0.1.0"),
            Some(("plateau:plugin", "kv", Some("0.1.0")))
        );
        assert_eq!(
            split_name("plateau:kv/kv@0.3.0"),
            Some(("plateau:kv", "kv", Some("0.3.0")))
        );
        assert_eq!(
            split_name("wasi:io/streams@0.2.6"),
            Some(("wasi:io", "streams", Some("0.2.6")))
        );
        assert_eq!(split_name("log"), None);
    }
}
