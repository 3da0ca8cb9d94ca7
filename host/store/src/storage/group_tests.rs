//! [`objects::put_group`] against [`objects::put`]'s rules: replacement
//! within a group, a refusal for quota or a gone bucket that is the
//! write's alone, and exact usage.

use super::buckets::{self, Bucket};
use super::objects::{self, Object, Put};
use super::{WriteError, usage};
use crate::Db;
use crate::events::{Actor, NewEvent};
use crate::orgs::{self, Organization};

fn object(bucket_id: &str, key: &str, size: i64) -> Object {
    Object {
        bucket_id: bucket_id.to_owned(),
        key: key.to_owned(),
        size,
        etag: format!("etag-{size}"),
        blobs: format!("[[\"blob-{key}-{size}\", {size}]]"),
        headers: "{}".to_owned(),
        modified_at: 1,
        version_id: "v".to_owned(),
    }
}

fn put(org: &str, object: Object, limit: i64) -> Put {
    let event = NewEvent::audited(
        org,
        "storage.object.written",
        "storage",
        "update",
        &Actor::system(),
    );
    Put {
        org_id: org.to_owned(),
        object,
        limit,
        event,
    }
}

#[tokio::test]
async fn a_group_follows_the_rules_of_single_writes() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let db = Db::connect(&Db::sqlite_url(dir.path()))
        .await
        .expect("sqlite");
    let mut tx = db.begin().await.expect("begin");
    let org = Organization {
        id: "org_group".to_owned(),
        name: "Group".to_owned(),
        plan: "free".to_owned(),
        created_at: 1,
    };
    orgs::insert_org(&mut tx, &org).await.expect("org");
    let bucket = Bucket {
        id: "bkt_group".to_owned(),
        org_id: org.id.clone(),
        project_id: None,
        name: "group".to_owned(),
        bucket: "plt-group-group-x".to_owned(),
        bytes: 0,
        objects: 0,
        created_at: 1,
    };
    buckets::insert(&mut tx, &bucket).await.expect("bucket");
    tx.commit().await.expect("commit");

    let mut tx = db.begin().await.expect("begin");
    objects::put(
        &mut tx,
        &org.id,
        &object(&bucket.id, "a", 10),
        100,
        &put(&org.id, object(&bucket.id, "a", 10), 100).event,
    )
    .await
    .expect("first write");
    tx.commit().await.expect("commit");

    let group = [
        // Replaces the committed "a" (10 bytes): +20.
        put(&org.id, object(&bucket.id, "a", 30), 100),
        // A new key: +40, 70 in all.
        put(&org.id, object(&bucket.id, "b", 40), 100),
        // Would make 110: refused, alone.
        put(&org.id, object(&bucket.id, "c", 40), 100),
        // Replaces the group's own "b" (40): -35, 35 in all.
        put(&org.id, object(&bucket.id, "b", 5), 100),
        // Fits now: 95.
        put(&org.id, object(&bucket.id, "c", 60), 100),
        // A bucket that is gone.
        put(&org.id, object("bkt_gone", "d", 1), 100),
    ];
    let mut tx = db.begin().await.expect("begin");
    let outcomes = objects::put_group(&mut tx, &group).await.expect("group");
    tx.commit().await.expect("commit");
    let replaced: Vec<_> = outcomes
        .iter()
        .map(|o| match o {
            Ok(old) => Ok((old.count > 0).then_some(old.bytes)),
            Err(WriteError::Quota) => Err("quota"),
            Err(WriteError::Versioned) => Err("versioned"),
            Err(WriteError::Gone) => Err("gone"),
            Err(WriteError::Locked) => Err("locked"),
            Err(WriteError::Store(e)) => panic!("{e}"),
        })
        .collect();
    assert_eq!(
        replaced,
        [
            Ok(Some(10)),
            Ok(None),
            Err("quota"),
            Ok(Some(40)),
            Ok(None),
            Err("gone")
        ]
    );
    let total = usage(&db, &org.id).await.expect("usage");
    assert_eq!((total.bytes, total.objects), (95, 3));
    let stored = buckets::get(&db, &org.id, &bucket.id)
        .await
        .expect("read")
        .expect("bucket");
    assert_eq!((stored.bytes, stored.objects), (95, 3));
    for (key, size) in [("a", 30), ("b", 5), ("c", 60)] {
        let row = objects::get(&db, &bucket.id, key)
            .await
            .expect("read")
            .expect("row");
        assert_eq!(row.size, size, "{key}");
    }
    assert!(
        objects::get(&db, "bkt_gone", "d")
            .await
            .expect("read")
            .is_none()
    );
}
