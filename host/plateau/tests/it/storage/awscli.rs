//! awscli with its defaults (CRC checksums, multipart above 8 MB).

use plateau_testkit::Backend;

use super::{S3, ok};

crate::on_both_backends!(awscli_cp_sync_ls);

async fn awscli_cp_sync_ls(backend: Backend) {
    let s3 = S3::start(backend).await;
    let bucket = s3.bucket_name().to_owned();
    let dir = tempfile::tempdir().unwrap();
    // 20 MiB: awscli uploads it in three parts.
    let big: Vec<u8> = (0..20 * 1024 * 1024u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let src = dir.path().join("big.bin");
    std::fs::write(&src, &big).unwrap();
    let target = format!("s3://{bucket}/backups/big.bin");
    ok(&s3.aws(&s3.key, &["s3", "cp", src.to_str().unwrap(), &target]));
    let back = dir.path().join("back.bin");
    ok(&s3.aws(&s3.key, &["s3", "cp", &target, back.to_str().unwrap()]));
    assert!(
        std::fs::read(&back).unwrap() == big,
        "the object came back different"
    );
    let head = ok(&s3.aws(
        &s3.key,
        &[
            "s3api",
            "head-object",
            "--bucket",
            &bucket,
            "--key",
            "backups/big.bin",
        ],
    ));
    assert!(head.contains("\"ContentLength\": 20971520"), "{head}");
    assert!(head.contains("-3\\\""), "a three-part entity tag: {head}");

    // sync: a tree up, then down into an empty directory.
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(tree.join("a/b")).unwrap();
    std::fs::write(tree.join("one.txt"), "one").unwrap();
    std::fs::write(tree.join("a/two.txt"), "two").unwrap();
    std::fs::write(tree.join("a/b/three.txt"), "three").unwrap();
    let remote = format!("s3://{bucket}/tree");
    ok(&s3.aws(&s3.key, &["s3", "sync", tree.to_str().unwrap(), &remote]));
    let down = dir.path().join("down");
    ok(&s3.aws(&s3.key, &["s3", "sync", &remote, down.to_str().unwrap()]));
    assert_eq!(
        std::fs::read_to_string(down.join("a/b/three.txt")).unwrap(),
        "three"
    );
    assert_eq!(
        std::fs::read_to_string(down.join("one.txt")).unwrap(),
        "one"
    );
    // A second sync has nothing to do.
    let again = ok(&s3.aws(&s3.key, &["s3", "sync", tree.to_str().unwrap(), &remote]));
    assert!(again.trim().is_empty(), "{again}");

    // ls: the buckets, a level, and recursively.
    let buckets = ok(&s3.aws(&s3.key, &["s3", "ls"]));
    assert!(buckets.contains(&bucket), "{buckets}");
    let level = ok(&s3.aws(&s3.key, &["s3", "ls", &format!("s3://{bucket}/tree/")]));
    assert!(
        level.contains("PRE a/") && level.contains("one.txt"),
        "{level}"
    );
    let all = ok(&s3.aws(
        &s3.key,
        &["s3", "ls", "--recursive", &format!("s3://{bucket}")],
    ));
    assert_eq!(all.lines().count(), 4, "{all}");

    // rm, and the usage drops.
    ok(&s3.aws(&s3.key, &["s3", "rm", "--recursive", &remote]));
    let usage = s3.server.client().get("/usage").await.json();
    assert_eq!(usage["storage"]["objects"], 1);
    assert_eq!(usage["storage"]["bytes"], 20 * 1024 * 1024);
}
