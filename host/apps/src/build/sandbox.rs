//! The sandbox a build's own code runs in (a `Dockerfile`'s `RUN` steps,
//! a crate's build scripts, procedural macros and compilers): buildah's
//! OCI isolation (runc with a spec buildah generates), in new user, PID,
//! network, mount, IPC, UTS and cgroup namespaces. The build's root is
//! host uid and gid [`HOST_ID_BASE`] (and the [`IDS`] after it, none of
//! them the server's), with only [`CAPABILITIES`] (none for cargo) and
//! those within its own user namespace, the seccomp profile of
//! containers-common, no new privileges and no network at all: base
//! images are pulled by buildah itself before any step runs. Memory,
//! pids and CPU are the build step's cgroups' ([`super::run`]), which
//! hold runc's.
//!
//! **Architecture Invariant:** tenant code of a build runs only under
//! [`from_args`] and [`run_args`]' flags and the [`RUNTIME`] wrapper;
//! nothing of a build runs in the host's namespaces or as the host's root.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The first host id of a build's user namespace (its root): below the
/// ranges of running apps' containers (from `1 << 30`), above
/// distributions' users and `/etc/subuid` ranges.
pub const HOST_ID_BASE: u32 = 1 << 29;
/// How many ids a build's user namespace maps.
pub const IDS: u32 = 65_536;

/// The capabilities of a `RUN` step, in its user namespace: what package
/// managers need to own, chmod and switch to files and users of the
/// image, Docker's defaults without KILL, NET_*, SETPCAP and SYS_CHROOT.
pub const CAPABILITIES: &[&str] = &[
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETFCAP",
];

/// containers-common's seccomp profile (Docker's default), which buildah
/// depends on.
pub const SECCOMP_PROFILE: &str = "/usr/share/containers/seccomp.json";

/// Processes a build step (buildah or cargo and everything they start)
/// may have at once.
pub const PIDS: u64 = 1024;

/// buildah's runtime: runc, after setting `noNewPrivileges` in the spec
/// buildah wrote (buildah 1.28 refuses `--security-opt no-new-privileges`).
/// The spec is compact JSON that opens with `ociVersion` then `process`;
/// a step whose spec (`--bundle`) the flag could not be set in fails.
pub const RUNTIME: &str = r#"#!/bin/sh
# Written by plateau: runc for the steps of builds, with no_new_privs.
bundle= prev=
for a in "$@"; do
  [ "$prev" = --bundle ] && bundle=$a
  prev=$a
done
case " $* " in
  *" create "* | *" run "*) [ -n "$bundle" ] || { echo "plateau: runc was given no --bundle" >&2; exit 1; } ;;
esac
if [ -n "$bundle" ]; then
  spec="$bundle/config.json"
  sed -i 's/^{"ociVersion":"\([^"]*\)","process":{/{"ociVersion":"\1","process":{"noNewPrivileges":true,/' "$spec" &&
    grep -q '^{"ociVersion":"[^"]*","process":{"noNewPrivileges":true,' "$spec" ||
    { echo "plateau: no_new_privs could not be set for the build step ($spec)" >&2; exit 1; }
fi
exec runc "$@"
"#;

/// Writes [`RUNTIME`] into `dir` (by a rename, so a build running it
/// meanwhile reads one whole script); its path.
pub fn install_runtime(dir: &Path) -> Result<PathBuf, String> {
    use std::os::unix::fs::PermissionsExt as _;
    if !Path::new(SECCOMP_PROFILE).is_file() {
        return Err(format!(
            "{SECCOMP_PROFILE} is missing; install containers-common (with buildah)"
        ));
    }
    let path = dir.join("runc-no-new-privs");
    if std::fs::read_to_string(&path).is_ok_and(|s| s == RUNTIME) {
        return Ok(path);
    }
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let fresh = dir.join(format!("runc-no-new-privs.{}.{n}", std::process::id()));
    let written = std::fs::write(&fresh, RUNTIME)
        .and_then(|()| std::fs::set_permissions(&fresh, std::fs::Permissions::from_mode(0o700)))
        .and_then(|()| std::fs::rename(&fresh, &path));
    written.map_err(|e| format!("the build runtime cannot be written: {e}"))?;
    Ok(path)
}

/// The flags of `buildah from` that make a working container's sandbox:
/// its user namespace, its capabilities (`caps`, within that namespace)
/// and its seccomp profile.
pub fn from_args(caps: &[&str]) -> Vec<OsString> {
    let map = format!("0:{HOST_ID_BASE}:{IDS}");
    let mut args: Vec<OsString> = vec!["--isolation".into(), "oci".into()];
    for (flag, value) in [
        ("--userns-uid-map", map.as_str()),
        ("--userns-gid-map", map.as_str()),
        ("--cap-drop", "ALL"),
    ] {
        args.extend([flag.into(), value.into()]);
    }
    if !caps.is_empty() {
        args.extend(["--cap-add".into(), caps.join(",").into()]);
    }
    args.extend([
        "--security-opt".into(),
        format!("seccomp={SECCOMP_PROFILE}").into(),
    ]);
    args
}

/// The flags of `buildah run` (or, with [`from_args`], `buildah bud`)
/// that make a step's namespaces, with `runtime` from
/// [`install_runtime`]. New PID and UTS namespaces are buildah's default
/// with OCI isolation: naming them (`--pid private`, `--uts private`)
/// makes buildah 1.28 give the step a CNI network despite `--network none`.
pub fn run_args(runtime: &Path) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec!["--isolation".into(), "oci".into(), "--runtime".into()];
    args.push(runtime.into());
    for (flag, value) in [
        ("--network", "none"),
        ("--ipc", "private"),
        ("--cgroupns", "private"),
    ] {
        args.extend([flag.into(), value.into()]);
    }
    args
}

/// The flags of `buildah bud` that sandbox its `RUN` steps.
pub fn bud_args(runtime: &Path) -> Vec<OsString> {
    let mut args = from_args(CAPABILITIES);
    args.extend(run_args(runtime));
    args
}

/// Where builds' own files live (buildah's bundles, a crate's source,
/// target directory and `CARGO_HOME`), one directory per build: runc
/// mounts them from inside the build's user namespace, which cannot
/// reach into the data directory (mode 0700). Root's, mode 0711.
pub const WORK_ROOT: &str = "/var/tmp/plateau-builds";

/// A new work directory for build `id` under [`WORK_ROOT`] (root's, mode
/// 0711), after checking that directory is this server's user's.
pub fn work_dir(id: &str) -> Result<PathBuf, String> {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let failed = |e: std::io::Error| format!("the build's work directory cannot be made: {e}");
    let root = Path::new(WORK_ROOT);
    std::fs::create_dir_all(root).map_err(failed)?;
    let me = std::fs::metadata("/proc/self").map_err(failed)?.uid();
    let meta = std::fs::symlink_metadata(root).map_err(failed)?;
    if !meta.is_dir() || meta.uid() != me {
        return Err(format!(
            "{WORK_ROOT} is not a directory of this server's user; remove it"
        ));
    }
    let mode = std::fs::Permissions::from_mode(0o711);
    std::fs::set_permissions(root, mode.clone()).map_err(failed)?;
    let dir = root.join(id);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).map_err(failed)?;
    std::fs::set_permissions(&dir, mode).map_err(failed)?;
    Ok(dir)
}

/// Copies the tree at `from` to `to` (links as links; nothing but files,
/// directories and links), given to the build's root.
pub fn copy_in(from: &Path, to: &Path) -> std::io::Result<()> {
    let meta = std::fs::symlink_metadata(from)?;
    if meta.is_dir() {
        std::fs::create_dir(to)?;
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            copy_in(&entry.path(), &to.join(entry.file_name()))?;
        }
    } else if meta.is_symlink() {
        std::os::unix::fs::symlink(std::fs::read_link(from)?, to)?;
    } else if meta.is_file() {
        std::fs::copy(from, to)?;
    } else {
        return Ok(());
    }
    give(to)
}

/// Gives `path` (not following a link) to the build's root, so a build
/// step may write there.
pub fn give(path: &Path) -> std::io::Result<()> {
    std::os::unix::fs::lchown(path, Some(HOST_ID_BASE), Some(HOST_ID_BASE))
}
