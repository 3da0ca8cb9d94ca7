//! `plateau deploy [DIR] --app NAME`: packs a local directory (its
//! `Dockerfile` at the top) as a gzip-compressed tar archive, uploads it to
//! the URL `POST /apps/{id}/source-upload` gives (with a progress bar on a
//! terminal), deploys it and follows the build log until the deployment is
//! live or failed. `--create` makes the app first when it does not exist.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::Args;
use flate2::Compression;
use flate2::write::GzEncoder;
use futures::StreamExt as _;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::{Value, json};

use super::apps::{finish_deployment, follow_deployment};
use super::output::items;
use super::{Api, Global};

/// What is never packed: version control and build output.
const SKIPPED: &[&str] = &[".git", "target", "node_modules"];

/// The size of each piece of the upload the progress bar counts.
const CHUNK: usize = 64 * 1024;

#[derive(Args)]
pub struct DeployArgs {
    #[command(flatten)]
    global: Global,
    /// The directory to deploy (default: the current one).
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// The app, by id or name.
    #[arg(long)]
    app: String,
    /// Create the app (as an upload app) when none has that name.
    #[arg(long)]
    create: bool,
    /// Return once the deployment is accepted, without following the build.
    #[arg(long)]
    no_follow: bool,
}

pub async fn run(args: DeployArgs) -> Result<(), String> {
    let api = Api::from(&args.global)?;
    if !args.dir.join("Dockerfile").is_file() {
        return Err(format!(
            "{} has no Dockerfile at its top: an uploaded source is built from one (no_dockerfile)",
            args.dir.display()
        ));
    }
    let app = find_or_create(&api, &args.app, args.create).await?;
    let id = app["id"].as_str().unwrap_or_default().to_owned();
    let archive = pack(&args.dir)?;
    let ticket = api
        .post(&format!("/apps/{id}/source-upload"), json!({}))
        .await?;
    let max = ticket["maxBytes"].as_u64().unwrap_or(u64::MAX);
    if archive.len() as u64 > max {
        return Err(format!(
            "the packed directory is {} bytes, more than the {max} an upload takes (payload_too_large)",
            archive.len()
        ));
    }
    upload(&api, ticket["url"].as_str().unwrap_or_default(), archive).await?;
    let deployment = api
        .post(
            &format!("/apps/{id}/deployments"),
            json!({ "uploadId": ticket["uploadId"] }),
        )
        .await?;
    if args.no_follow {
        super::output::object(api.json, &deployment, &["id", "status"]);
        return Ok(());
    }
    let last = follow_deployment(&api, &id, &deployment).await?;
    finish_deployment(&api, &app, &last)
}

async fn find_or_create(api: &Api, name: &str, create: bool) -> Result<Value, String> {
    let list = api.get("/apps").await?;
    if let Some(app) = items(&list)
        .into_iter()
        .find(|a| a["id"] == name || a["name"] == name)
    {
        return Ok(app);
    }
    if !create {
        return Err(format!(
            "no app named {name} in your organisation; pass --create to make it (not_found)"
        ));
    }
    api.post("/apps", json!({ "name": name, "sourceType": "upload" }))
        .await
}

/// The directory as a `.tar.gz`, paths relative to it.
pub fn pack(dir: &Path) -> Result<Vec<u8>, String> {
    let fail = |e: std::io::Error| format!("cannot pack {}: {e}", dir.display());
    let mut tar = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::default()));
    tar.follow_symlinks(false);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&current)
            .map_err(fail)?
            .collect::<Result<_, _>>()
            .map_err(fail)?;
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            let path = entry.path();
            let name = entry.file_name();
            if SKIPPED.iter().any(|s| name == *s) {
                continue;
            }
            let relative = path.strip_prefix(dir).expect("below the directory");
            let kind = entry.file_type().map_err(fail)?;
            if kind.is_dir() {
                tar.append_dir(relative, &path).map_err(fail)?;
                stack.push(path);
            } else {
                tar.append_path_with_name(&path, relative).map_err(fail)?;
            }
        }
    }
    tar.into_inner().and_then(|gz| gz.finish()).map_err(fail)
}

/// PUTs the archive to the presigned URL, counting it on a terminal.
async fn upload(api: &Api, url: &str, archive: Vec<u8>) -> Result<(), String> {
    let total = archive.len() as u64;
    let bar = if std::io::stderr().is_terminal() && !api.json {
        let bar = ProgressBar::new(total);
        if let Ok(style) = ProgressStyle::with_template("uploading {bar:30} {bytes}/{total_bytes}")
        {
            bar.set_style(style);
        }
        bar
    } else {
        ProgressBar::hidden()
    };
    let counted = bar.clone();
    let pieces: Vec<Result<Vec<u8>, std::io::Error>> =
        archive.chunks(CHUNK).map(|c| Ok(c.to_vec())).collect();
    let stream = futures::stream::iter(pieces).map(move |piece| {
        if let Ok(p) = &piece {
            counted.inc(p.len() as u64);
        }
        piece
    });
    let result = api
        .put_stream(url, total, reqwest::Body::wrap_stream(stream))
        .await;
    bar.finish_and_clear();
    result.map(|_| ())
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    #[test]
    fn packs_the_directory_without_version_control() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("Dockerfile"), "FROM scratch\n").unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/main.txt"), "hello").unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".git/HEAD"), "ref").unwrap();
        let archive = pack(dir.path()).unwrap();
        let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(archive.as_slice()));
        let mut found = Vec::new();
        for entry in tar.entries().unwrap() {
            let mut entry = entry.unwrap();
            let path = entry.path().unwrap().display().to_string();
            let mut text = String::new();
            entry.read_to_string(&mut text).unwrap();
            found.push((path, text));
        }
        found.sort();
        assert_eq!(
            found,
            [
                ("Dockerfile".to_owned(), "FROM scratch\n".to_owned()),
                ("src".to_owned(), String::new()),
                ("src/main.txt".to_owned(), "hello".to_owned()),
            ]
        );
    }
}
