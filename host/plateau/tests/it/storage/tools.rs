//! Sync tools with their default flags: `aws s3 sync` round-trips keys
//! with `+`, spaces, `%` and unicode (it lists with EncodingType=url), and
//! rclone copies, syncs and checks a tree (it calls CreateBucket first and
//! compares MD5s).

use std::path::Path;
use std::process::Command;

use plateau_testkit::Backend;

use super::{S3, ok, require};

/// A tree whose names exercise key encoding.
fn odd_tree(root: &Path) -> Vec<&'static str> {
    let names = vec![
        "plus+sign.txt",
        "with space/and more.txt",
        "100%/done.txt",
        "ünïcödé/日本.txt",
        "tilde~and=equals&amp.txt",
    ];
    for name in &names {
        let path = root.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("content of {name}")).unwrap();
    }
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aws_s3_sync_round_trips_odd_keys() {
    let s3 = S3::start(Backend::Sqlite).await;
    let dir = tempfile::tempdir().unwrap();
    let up = dir.path().join("up");
    let names = odd_tree(&up);
    let remote = format!("s3://{}/odd", s3.bucket_name());
    ok(&s3.aws(&s3.key, &["s3", "sync", up.to_str().unwrap(), &remote]));
    let down = dir.path().join("down");
    ok(&s3.aws(&s3.key, &["s3", "sync", &remote, down.to_str().unwrap()]));
    for name in &names {
        assert_eq!(
            std::fs::read_to_string(down.join(name)).unwrap_or_default(),
            format!("content of {name}"),
            "{name}"
        );
    }
    // Nothing differs: a second sync either way does nothing.
    let again = ok(&s3.aws(&s3.key, &["s3", "sync", up.to_str().unwrap(), &remote]));
    assert!(again.trim().is_empty(), "{again}");
    let again = ok(&s3.aws(&s3.key, &["s3", "sync", &remote, down.to_str().unwrap()]));
    assert!(again.trim().is_empty(), "{again}");
    // And deleting through the listed names leaves nothing.
    ok(&s3.aws(&s3.key, &["s3", "rm", "--recursive", &remote]));
    let left = ok(&s3.aws(
        &s3.key,
        &[
            "s3api",
            "list-objects-v2",
            "--bucket",
            s3.bucket_name(),
            "--prefix",
            "odd/",
            "--query",
            "Contents[].Key",
        ],
    ));
    assert_eq!(left.trim(), "null", "no key is left: {left}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rclone_copies_syncs_and_checks_with_default_flags() {
    require("rclone", "apt-get install -y rclone");
    let s3 = S3::start(Backend::Sqlite).await;
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    let names = odd_tree(&tree);
    std::fs::write(tree.join("big.bin"), vec![7u8; 3 * 1024 * 1024]).unwrap();
    let remote = format!("plateau:{}/tree", s3.bucket_name());
    let rclone = |args: &[&str]| {
        Command::new("rclone")
            .args(args)
            .env("RCLONE_CONFIG", "/dev/null")
            // rclone refuses a CA bundle it cannot add to its transport.
            .env_remove("AWS_CA_BUNDLE")
            .env("RCLONE_CONFIG_PLATEAU_TYPE", "s3")
            .env("RCLONE_CONFIG_PLATEAU_PROVIDER", "Other")
            .env("RCLONE_CONFIG_PLATEAU_ENDPOINT", &s3.direct)
            .env("RCLONE_CONFIG_PLATEAU_ACCESS_KEY_ID", &s3.key.access_key_id)
            .env("RCLONE_CONFIG_PLATEAU_SECRET_ACCESS_KEY", &s3.key.secret)
            .output()
            .expect("rclone runs")
    };
    let t = tree.to_str().unwrap();
    ok(&rclone(&["copy", t, &remote]));
    ok(&rclone(&["check", t, &remote]));
    // A changed and a removed file: sync makes the remote match again.
    std::fs::write(tree.join(names[0]), "changed").unwrap();
    std::fs::remove_file(tree.join(names[1])).unwrap();
    ok(&rclone(&["sync", t, &remote]));
    ok(&rclone(&["check", t, &remote]));
    let down = dir.path().join("down");
    ok(&rclone(&["copy", &remote, down.to_str().unwrap()]));
    assert_eq!(
        std::fs::read_to_string(down.join(names[0])).unwrap(),
        "changed"
    );
    assert!(!down.join(names[1]).exists());
    let listed = ok(&rclone(&["lsf", "-R", "--files-only", &remote]));
    eprintln!("rclone lists:\n{listed}");
    // One name removed, big.bin added.
    assert_eq!(listed.lines().count(), names.len(), "{listed}");
}
