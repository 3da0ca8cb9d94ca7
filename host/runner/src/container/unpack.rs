//! Unpacking a Linux image's layers into one root filesystem: each layer
//! (a tar, gzip-compressed or not) applied in order over the ones before,
//! with the OCI whiteouts: `.wh.NAME` deletes `NAME` of the lower layers,
//! `.wh..wh..opq` empties its directory of them.
//!
//! **Invariant:** nothing is written, linked or deleted outside the
//! rootfs: entries with `..` or through a symlink that leaves the rootfs
//! are refused, and hard links must point inside it.

use std::collections::HashSet;
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Component, Path, PathBuf};

use flate2::read::GzDecoder;

use crate::{Error, Result};

/// The whiteout prefix and the opaque marker of the OCI image spec.
const WHITEOUT: &str = ".wh.";
const OPAQUE: &str = ".wh..wh..opq";

/// Directories every container needs as mount points.
const MOUNT_POINTS: &[&str] = &["proc", "dev", "sys", "tmp", "etc"];

/// Applies one layer (`.tar` or `.tar.gz`, told apart by its first bytes)
/// over `rootfs`.
pub fn apply_layer(layer: impl Read, rootfs: &Path) -> Result<()> {
    let mut reader = BufReader::new(layer);
    let gzip = reader.fill_buf().map_err(io)?.starts_with(&[0x1f, 0x8b]);
    if gzip {
        apply_tar(GzDecoder::new(reader), rootfs)
    } else {
        apply_tar(reader, rootfs)
    }
}

/// Creates the mount points a container needs (after the last layer).
pub fn finish(rootfs: &Path) -> Result<()> {
    for dir in MOUNT_POINTS {
        let path = rootfs.join(dir);
        if fs::symlink_metadata(&path).is_err() {
            fs::create_dir_all(&path).map_err(io)?;
        }
    }
    Ok(())
}

fn apply_tar(reader: impl Read, rootfs: &Path) -> Result<()> {
    fs::create_dir_all(rootfs).map_err(io)?;
    let mut archive = tar::Archive::new(reader);
    archive.set_preserve_permissions(true);
    archive.set_overwrite(true);
    archive.set_unpack_xattrs(false);
    // What this layer wrote: an opaque marker only hides lower layers.
    let mut written: HashSet<PathBuf> = HashSet::new();
    for entry in archive.entries().map_err(io)? {
        let mut entry = entry.map_err(io)?;
        let raw = entry.path().map_err(io)?.into_owned();
        let relative = clean(&raw)?;
        let Some(name) = relative.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let parent = relative.parent().unwrap_or(Path::new("")).to_path_buf();
        if name == OPAQUE {
            let dir = inside(rootfs, &parent)?;
            empty_lower(&dir, &parent, &written)?;
            continue;
        }
        if let Some(hidden) = name.strip_prefix(WHITEOUT) {
            let target = inside(rootfs, &parent.join(hidden))?;
            remove(&target)?;
            continue;
        }
        if entry.header().entry_type().is_hard_link()
            && let Some(link) = entry.link_name().map_err(io)?
        {
            // A hard link names a file of the image, never the host's.
            inside(rootfs, &clean(&link)?)?;
        }
        let target = inside(rootfs, &relative)?;
        // A file replacing a directory (or the reverse) replaces it whole.
        if let Ok(meta) = fs::symlink_metadata(&target)
            && (meta.is_dir() != entry.header().entry_type().is_dir())
        {
            remove(&target)?;
        }
        let unpacked = entry.unpack_in(rootfs).map_err(io)?;
        if !unpacked {
            return Err(refused(&raw));
        }
        for ancestor in relative.ancestors() {
            written.insert(ancestor.to_path_buf());
        }
    }
    Ok(())
}

/// The path of an entry relative to the rootfs: leading `/` and `.` are
/// dropped, `..` is refused.
fn clean(path: &Path) -> Result<PathBuf> {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::Normal(p) => out.push(p),
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
            Component::ParentDir => return Err(refused(path)),
        }
    }
    Ok(out)
}

/// `relative` under `rootfs`, checking that no symlink among its parents
/// leads outside the rootfs.
fn inside(rootfs: &Path, relative: &Path) -> Result<PathBuf> {
    let root = rootfs.canonicalize().map_err(io)?;
    let target = root.join(relative);
    let mut existing = target.parent().map(Path::to_path_buf);
    while let Some(dir) = existing {
        if let Ok(real) = dir.canonicalize() {
            if !real.starts_with(&root) {
                return Err(refused(relative));
            }
            break;
        }
        existing = dir.parent().map(Path::to_path_buf);
    }
    Ok(target)
}

/// Deletes what lower layers left in `dir`; what this layer wrote stays.
fn empty_lower(dir: &Path, relative: &Path, written: &HashSet<PathBuf>) -> Result<()> {
    let Ok(children) = fs::read_dir(dir) else {
        return Ok(());
    };
    for child in children {
        let child = child.map_err(io)?;
        if !written.contains(&relative.join(child.file_name())) {
            remove(&child.path())?;
        }
    }
    Ok(())
}

/// Removes a file, link or directory tree; absent is fine.
fn remove(path: &Path) -> Result<()> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => fs::remove_dir_all(path).map_err(io),
        Ok(_) => fs::remove_file(path).map_err(io),
        Err(_) => Ok(()),
    }
}

fn io(e: std::io::Error) -> Error {
    Error::NotRunnable(format!("cannot unpack the image: {e}"))
}

fn refused(path: &Path) -> Error {
    Error::NotRunnable(format!(
        "the image writes outside its root filesystem ({}); rebuild the image without it",
        path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path with its contents (a file), link target, or neither (a dir).
    type Entry<'a> = (&'a str, Option<&'a [u8]>, Option<&'a str>);

    fn layer(entries: &[Entry]) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for (path, data, link) in entries {
            let mut h = tar::Header::new_gnu();
            h.set_mode(0o755);
            match (data, link) {
                (Some(data), _) => {
                    h.set_size(data.len() as u64);
                    h.set_entry_type(tar::EntryType::Regular);
                    b.append_data(&mut h, path, *data).unwrap();
                }
                (None, Some(link)) => {
                    h.set_size(0);
                    h.set_entry_type(tar::EntryType::Symlink);
                    b.append_link(&mut h, path, link).unwrap();
                }
                (None, None) => {
                    h.set_size(0);
                    h.set_entry_type(tar::EntryType::Directory);
                    b.append_data(&mut h, path, &[][..]).unwrap();
                }
            }
        }
        b.into_inner().unwrap()
    }

    #[test]
    fn whiteouts_and_opaque_directories() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("rootfs");
        let lower = layer(&[
            ("etc/", None, None),
            ("etc/a", Some(b"a"), None),
            ("etc/b", Some(b"b"), None),
            ("var/", None, None),
            ("var/old", Some(b"old"), None),
        ]);
        apply_layer(&lower[..], &root).unwrap();
        let upper = layer(&[
            ("etc/.wh.a", Some(b""), None),
            ("var/new", Some(b"new"), None),
            ("var/.wh..wh..opq", Some(b""), None),
        ]);
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &upper).unwrap();
        apply_layer(&gz.finish().unwrap()[..], &root).unwrap();
        assert!(!root.join("etc/a").exists());
        assert_eq!(fs::read(root.join("etc/b")).unwrap(), b"b");
        assert!(
            !root.join("var/old").exists(),
            "the opaque dir hides lower files"
        );
        assert_eq!(fs::read(root.join("var/new")).unwrap(), b"new");
    }

    #[test]
    fn nothing_escapes_the_rootfs() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("rootfs");
        let outside = dir.path().join("outside");
        fs::create_dir(&outside).unwrap();
        let escape = layer(&[
            ("out", None, Some(outside.to_str().unwrap())),
            ("out/owned", Some(b"x"), None),
        ]);
        assert!(apply_layer(&escape[..], &root).is_err());
        assert!(!outside.join("owned").exists());
        // An absolute symlink is kept as a link, never followed.
        let ok = layer(&[("bin/", None, None), ("bin/sh", None, Some("/bin/busybox"))]);
        apply_layer(&ok[..], &root).unwrap();
        assert_eq!(
            fs::read_link(root.join("bin/sh")).unwrap(),
            Path::new("/bin/busybox")
        );
        let mut raw = tar::Header::new_gnu();
        raw.set_size(1);
        let name = b"../up";
        raw.as_old_mut().name[..name.len()].copy_from_slice(name);
        raw.set_cksum();
        let mut bytes = raw.as_bytes().to_vec();
        bytes.extend_from_slice(&[b'x'; 512]);
        bytes.extend_from_slice(&[0; 1024]);
        assert!(apply_layer(&bytes[..], &root).is_err());
        assert!(!dir.path().join("up").exists());
    }
}
