//! The support window of `wit/README.md` as this host links it: every world
//! kept in `wit/` is inside [`SUPPORTED_WORLDS`] and every interface version
//! it imports is linked, so what the README promises and what the linker
//! answers cannot drift apart. The oldest world's components run (`load.rs`
//! loads the fixtures of `plateau:plugin@0.1.0`); a version outside the
//! window is refused naming it and the window (`load.rs`).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use plateau_plugin_runtime::{
    SPLIT_PACKAGES, SUPPORTED_WIT_VERSIONS, SUPPORTED_WORLDS, supported_worlds,
};

fn wit_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../wit")
}

/// The `.wit` files of a folder, sorted.
fn wit_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "wit"))
        .collect();
    files.sort();
    files
}

/// The `package NAME@VERSION;` of a WIT file.
fn package_of(text: &str) -> (String, String) {
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("package "))
        .expect("a package line");
    let (name, version) = line
        .trim_end_matches(';')
        .split_once('@')
        .expect("a version");
    (name.to_owned(), version.to_owned())
}

/// Whether this host links `version` of `package`.
fn linked(package: &str, version: &str) -> bool {
    SPLIT_PACKAGES
        .iter()
        .any(|(p, versions)| *p == package && versions.contains(&version))
}

/// The `plateau:` imports and exports of a world file that names its
/// interfaces by package (`import plateau:kv/kv@0.4.0;`).
fn world_items(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim();
            let name = l
                .strip_prefix("import ")
                .or_else(|| l.strip_prefix("export "))?;
            let (path, version) = name.trim_end_matches(';').split_once('@')?;
            let (package, _) = path.split_once('/')?;
            Some((package.to_owned(), version.to_owned()))
        })
        .collect()
}

#[test]
fn every_world_kept_in_wit_is_in_the_window_and_linked() {
    let wit = wit_dir();
    let mut worlds = Vec::new();
    let newest = fs::read_to_string(wit.join("plugin.wit")).expect("wit/plugin.wit");
    let mut world_files = vec![newest];
    for entry in fs::read_dir(wit.join("legacy")).expect("wit/legacy") {
        let dir = entry.expect("an entry").path();
        for file in wit_files(&dir) {
            let text = fs::read_to_string(&file).expect("readable");
            if package_of(&text).0 == "plateau:plugin" && text.contains("world plugin") {
                world_files.push(text);
            }
        }
    }
    for text in &world_files {
        let (_, version) = package_of(text);
        let items = world_items(text);
        if items.is_empty() {
            // 0.1.0 and 0.2.0: one package holds every interface, and the
            // handler's version names the world.
            assert!(
                SUPPORTED_WIT_VERSIONS.contains(&version.as_str()),
                "the whole-package world {version} is linked"
            );
        }
        for (package, item_version) in items {
            assert!(
                linked(&package, &item_version),
                "world {version} uses {package}@{item_version}, which the host does not link"
            );
        }
        worlds.push(version);
    }
    worlds.sort();
    assert_eq!(
        worlds,
        SUPPORTED_WORLDS,
        "wit/ keeps exactly the worlds of the window {}",
        supported_worlds()
    );
}

#[test]
fn the_host_links_the_newest_version_of_each_package() {
    let deps = wit_dir().join("deps");
    let mut seen = BTreeSet::new();
    for entry in fs::read_dir(&deps).expect("wit/deps") {
        let dir = entry.expect("an entry").path();
        let files = wit_files(&dir);
        assert_eq!(files.len(), 1, "one file per interface: {}", dir.display());
        let (package, version) = package_of(&fs::read_to_string(&files[0]).expect("readable"));
        let newest = SPLIT_PACKAGES
            .iter()
            .chain(plateau_plugin_runtime::EDGE_FILTER_PACKAGES)
            .find(|(p, _)| *p == package)
            .and_then(|(_, versions)| versions.last())
            .unwrap_or_else(|| panic!("{package} is linked"));
        assert_eq!(*newest, version, "the newest {package} is linked");
        seen.insert(package);
    }
    let all: BTreeSet<String> = SPLIT_PACKAGES
        .iter()
        .chain(plateau_plugin_runtime::EDGE_FILTER_PACKAGES)
        .map(|(p, _)| p.to_string())
        .collect();
    assert_eq!(seen, all, "every linked package has its folder in wit/deps");
}
