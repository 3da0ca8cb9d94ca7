//! Builds the guest components for wasm32-wasip2 and writes `artifacts.rs`,
//! which `src/lib.rs` includes.
//!
//! Cargo runs in release with its own target directory under `OUT_DIR`: the
//! outer build holds the lock on its own target directory, so sharing it
//! would deadlock. Rerun triggers come from the dep-info (`.d`) files of the
//! inner build, so a change to a guest's sources, to its WIT or to its
//! manifest rebuilds it, and nothing else does.

use std::collections::{BTreeMap, BTreeSet};
use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "wasm32-wasip2";

/// One cargo package whose components we build.
struct Package {
    /// The cargo package name.
    name: &'static str,
    /// Its directory, relative to the workspace root.
    dir: &'static str,
    /// The Rust module the constants go to.
    module: &'static str,
    /// What to build.
    targets: Targets,
}

enum Targets {
    /// Every listed `[[example]]` of the package, each a component.
    Examples(&'static [&'static str]),
    /// The package's own `cdylib` library: the built-in plugins of `plugins/`.
    Lib,
}

/// The packages built whatever the features: the built-in plugins, which
/// ship inside the `plateau` binary.
const DEFAULT: &[Package] = &[
    Package {
        name: "plateau-plugin-flags",
        dir: "plugins/flags",
        module: "builtin",
        targets: Targets::Lib,
    },
    Package {
        name: "plateau-plugin-heartbeats",
        dir: "plugins/heartbeats",
        module: "builtin",
        targets: Targets::Lib,
    },
    Package {
        name: "plateau-plugin-checks",
        dir: "plugins/checks",
        module: "builtin",
        targets: Targets::Lib,
    },
    Package {
        name: "plateau-plugin-email",
        dir: "plugins/email",
        module: "builtin",
        targets: Targets::Lib,
    },
    Package {
        name: "plateau-plugin-queues",
        dir: "plugins/queues",
        module: "builtin",
        targets: Targets::Lib,
    },
    Package {
        name: "plateau-plugin-cron",
        dir: "plugins/cron",
        module: "builtin",
        targets: Targets::Lib,
    },
    Package {
        name: "plateau-plugin-workflows",
        dir: "plugins/workflows",
        module: "builtin",
        targets: Targets::Lib,
    },
    Package {
        name: "plateau-plugin-webhooks",
        dir: "plugins/webhooks",
        module: "builtin",
        targets: Targets::Lib,
    },
    Package {
        name: "plateau-plugin-log-drains",
        dir: "plugins/log-drains",
        module: "builtin",
        targets: Targets::Lib,
    },
    Package {
        name: "plateau-plugin-config",
        dir: "plugins/config",
        module: "builtin",
        targets: Targets::Lib,
    },
    Package {
        name: "plateau-plugin-errors",
        dir: "plugins/errors",
        module: "builtin",
        targets: Targets::Lib,
    },
    Package {
        name: "plateau-plugin-otel",
        dir: "plugins/otel",
        module: "builtin",
        targets: Targets::Lib,
    },
    Package {
        name: "plateau-plugin-status-pages",
        dir: "plugins/status-pages",
        module: "builtin",
        targets: Targets::Lib,
    },
    Package {
        name: "plateau-plugin-analytics",
        dir: "plugins/analytics",
        module: "builtin",
        targets: Targets::Lib,
    },
];

/// The runtime's test components and the template plugin, behind the
/// `fixtures` feature.
const FIXTURES: &[Package] = &[
    Package {
        name: "hello-plugin",
        dir: "examples/hello-plugin",
        module: "examples",
        targets: Targets::Lib,
    },
    Package {
        name: "hello-edge-filter",
        dir: "examples/hello-edge-filter",
        module: "examples",
        targets: Targets::Lib,
    },
    Package {
        name: "plateau-fixture-plugins",
        dir: "tests/fixture-plugins",
        module: "fixtures",
        targets: Targets::Examples(&[
            "echo",
            "echo-v2",
            "spin-loop",
            "alloc-bomb",
            "trap",
            "egress",
            "ungranted",
            "future-wit",
            "legacy-v0-2",
            "legacy-v0-3",
            "edge-misbehave",
        ]),
    },
    Package {
        name: "plateau-fixture-apps",
        dir: "tests/fixture-apps",
        module: "apps",
        targets: Targets::Examples(&[
            "hello-app",
            "hello-app-v2",
            "broken-app",
            "volume-app",
            "echo-command",
            "spin-app",
            "burn-app",
        ]),
    },
];

fn main() {
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let manifest_dir =
        PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest_dir
        .ancestors()
        .nth(2)
        .expect("the crate sits two levels below the workspace root")
        .to_path_buf();

    let mut packages: Vec<&Package> = DEFAULT.iter().collect();
    if env::var_os("CARGO_FEATURE_FIXTURES").is_some() {
        packages.extend(FIXTURES);
    }

    require_target();
    let mut deps = BTreeSet::new();
    let target_dir = out_dir.join("guests");
    // Several packages may put their constants in one module (`builtin`).
    let mut modules: BTreeMap<&str, String> = BTreeMap::new();
    for package in &packages {
        deps.insert(root.join(package.dir).join("Cargo.toml"));
        build(&root, &target_dir, package);
        let module = modules.entry(package.module).or_default();
        for (name, wasm) in outputs(&target_dir, package) {
            read_dep_info(&wasm.with_extension("d"), &mut deps);
            let konst = name.to_uppercase().replace('-', "_");
            writeln!(
                module,
                "    /// The `{name}` component of `{}`.\n    pub const {konst}: &[u8] = include_bytes!({wasm:?});",
                package.dir,
            )
            .unwrap();
        }
    }
    let mut code = String::from("// Generated by build.rs; do not edit.\n");
    for (name, module) in &modules {
        writeln!(code, "pub mod {name} {{\n{module}}}").unwrap();
    }
    // A new file renamed over the old one, never a write into it: a build
    // directory copied with hard links shares its files with the original.
    let staged = out_dir.join("artifacts.rs.new");
    fs::write(&staged, code).expect("write artifacts.rs");
    fs::rename(&staged, out_dir.join("artifacts.rs")).expect("rename artifacts.rs");

    println!("cargo:rerun-if-changed=build.rs");
    // The lock file pins the guests' dependencies; the cargo configuration
    // sets their linker flags.
    for input in ["Cargo.lock", ".cargo/config.toml"] {
        println!("cargo:rerun-if-changed={}", root.join(input).display());
    }
    for dep in deps {
        println!("cargo:rerun-if-changed={}", dep.display());
    }
}

/// Stops with what to run when the toolchain lacks the guests' target.
/// Without it the inner build fails deep down with "can't find crate for
/// `core`", which does not say that one command fixes it.
fn require_target() {
    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let libdir = Command::new(rustc)
        .args(["--print", "target-libdir", "--target", TARGET])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    if libdir.is_some_and(|dir| !dir.is_dir()) {
        panic!(
            "the {TARGET} Rust target is not installed, and the built-in plugins are built for it: \
             run `rustup target add {TARGET}`, or use `cargo xtask run` / `cargo xtask test`, \
             which install it"
        );
    }
}

/// Runs the inner cargo for one package.
fn build(root: &Path, target_dir: &Path, package: &Package) {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(root)
        .arg("build")
        .arg("--release")
        .arg(format!("--target={TARGET}"))
        .arg(format!("--package={}", package.name))
        .env("CARGO_TARGET_DIR", target_dir)
        // The outer build holds its build directory's lock for the whole
        // build: an inner build sharing it would wait on it forever.
        .env_remove("CARGO_BUILD_BUILD_DIR")
        // Whole-program optimisation for the guests only: it makes their
        // code markedly faster (serde and the SDK inline into the plugin),
        // and the host's own release build stays quick to link.
        .env("CARGO_PROFILE_RELEASE_LTO", "true")
        .env("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "1")
        // The outer build's flags and wrappers (clippy's among them) are for
        // the host; the guests get their own defaults.
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("RUSTFLAGS")
        .env_remove("RUSTC_WRAPPER")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CARGO_BUILD_RUSTC_WRAPPER");
    match package.targets {
        Targets::Examples(examples) => {
            cmd.arg("--features=guest");
            for example in examples {
                cmd.arg(format!("--example={example}"));
            }
        }
        Targets::Lib => {
            cmd.arg("--lib");
        }
    }
    eprintln!("running: {cmd:?}");
    let status = cmd.status().expect("run cargo for the guest components");
    assert!(
        status.success(),
        "building {} for {TARGET} failed (is the target installed? `rustup target add {TARGET}`)",
        package.name
    );
}

/// The component files one package produced, by component name.
fn outputs(target_dir: &Path, package: &Package) -> Vec<(String, PathBuf)> {
    let release = target_dir.join(TARGET).join("release");
    match package.targets {
        Targets::Examples(examples) => examples
            .iter()
            .map(|e| {
                // A library example's file has underscores, a binary's
                // keeps its name.
                let dir = release.join("examples");
                let lib = dir.join(format!("{}.wasm", e.replace('-', "_")));
                let bin = dir.join(format!("{e}.wasm"));
                let file = if lib.exists() || !bin.exists() {
                    lib
                } else {
                    bin
                };
                (e.to_string(), file)
            })
            .collect(),
        Targets::Lib => {
            let file = format!("{}.wasm", package.name.replace('-', "_"));
            vec![(package.name.to_string(), release.join(file))]
        }
    }
}

/// Adds the inputs listed in a cargo dep-info file to `deps`.
fn read_dep_info(path: &Path, deps: &mut BTreeSet<PathBuf>) {
    let contents = fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("read dep-info {}: {e}", path.display()));
    for line in contents.lines() {
        let Some((_, inputs)) = line.split_once(": ") else {
            continue;
        };
        let mut parts = inputs.split_whitespace();
        while let Some(part) = parts.next() {
            // Spaces in paths are escaped with a backslash.
            let mut file = part.to_string();
            while file.ends_with('\\') {
                file.pop();
                file.push(' ');
                file.push_str(parts.next().unwrap_or_default());
            }
            deps.insert(PathBuf::from(file));
        }
    }
}
