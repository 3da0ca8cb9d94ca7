//! Stages the `plateau:plugin@0.1.0` WIT package for `wit_bindgen::generate!`.
//!
//! The source of truth is `wit/plugin@0.1.0` at the root of the repository.
//! Its `kv.wit` names a resource method `list`, which is a WIT keyword and
//! must be written `%list` to parse. Until the package is fixed this script
//! copies the package into `OUT_DIR` and escapes that one name; the escape
//! does not change the component's ABI (the method is `[method]bucket.list`
//! either way), and once the package is fixed the copy is byte-identical.

use std::path::{Path, PathBuf};
use std::{env, fs};

const WIT_SOURCE: &str = "../../wit/plugin@0.1.0";

fn main() {
    println!("cargo::rerun-if-changed={WIT_SOURCE}");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("wit");
    fs::create_dir_all(&out).expect("create the staged WIT folder");
    let mut files: Vec<_> = fs::read_dir(WIT_SOURCE)
        .expect("read the WIT package wit/plugin@0.1.0")
        .map(|entry| entry.expect("list the WIT package").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "wit"))
        .collect();
    files.sort();
    for path in files {
        let text = fs::read_to_string(&path).expect("read a WIT file");
        let name = path.file_name().expect("a WIT file has a name");
        write_if_changed(&out.join(name), &escape_keywords(&text));
    }
}

/// Escapes a member declared as `list: func(` (a keyword used as a name).
fn escape_keywords(text: &str) -> String {
    text.lines()
        .map(|line| {
            let body = line.trim_start();
            if body.starts_with("list: func(") {
                let indent = &line[..line.len() - body.len()];
                format!("{indent}%{body}")
            } else {
                line.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

fn write_if_changed(path: &Path, text: &str) {
    if fs::read_to_string(path).is_ok_and(|old| old == text) {
        return;
    }
    fs::write(path, text).expect("write a staged WIT file");
}
