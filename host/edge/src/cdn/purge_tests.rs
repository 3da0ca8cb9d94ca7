//! The CDN's purges (by prefix, by a deployment going live, of a fetch
//! under way) and the bounds of its memory and disk.

use http::Request;
use http_body_util::{BodyExt, Empty};

use super::tests::{Origin, by_query, get, memory_cdn};
use super::{Cdn, Limits};
use crate::{Edge, Target};

#[tokio::test]
async fn a_purge_drops_the_paths_under_its_prefix_only() {
    let cdn = memory_cdn();
    let origin = Origin::new(by_query);
    for path in [
        "/assets/a.css?max-age=60",
        "/assets/b.js?max-age=60",
        "/index?max-age=60",
    ] {
        get(&cdn, &origin, path).await;
    }
    assert_eq!(cdn.purge("app", "/assets/"), 2);
    assert_eq!(
        get(&cdn, &origin, "/assets/a.css?max-age=60").await.cache,
        "MISS"
    );
    assert_eq!(get(&cdn, &origin, "/index?max-age=60").await.cache, "HIT");
}

#[tokio::test]
async fn a_response_fetched_before_a_purge_is_not_stored_after_it() {
    let cdn = memory_cdn();
    cdn.set_enabled("app", true);
    let origin = Origin::new(by_query);
    let req = Request::get("/slow?max-age=60")
        .body(Empty::new().map_err(|never| match never {}).boxed_unsync())
        .unwrap();
    let app = cdn.enabled("app").unwrap();
    let response = super::handle(&cdn, app, "app", origin.clone(), req)
        .await
        .unwrap();
    // The purge comes while the body is still on its way.
    cdn.purge("app", "/");
    response.into_body().collect().await.unwrap();
    assert_eq!(cdn.stats("app").stored.entries, 0);
    assert_eq!(get(&cdn, &origin, "/slow?max-age=60").await.cache, "MISS");
}

#[tokio::test]
async fn another_deployment_going_live_purges_the_app() {
    let edge = Edge::new("apps.localhost");
    let origin = Origin::new(by_query);
    edge.set("app", Target::Serving(origin.clone()));
    get(edge.cdn(), &origin, "/x?max-age=60").await;
    // The same replicas again (a scale change) keep it.
    edge.set("app", Target::Serving(origin.clone()));
    assert_eq!(get(edge.cdn(), &origin, "/x?max-age=60").await.cache, "HIT");
    edge.set("app", Target::Serving(Origin::new(by_query)));
    assert_eq!(edge.cdn().stats("app").stored.entries, 0);
    assert_eq!(
        get(edge.cdn(), &origin, "/x?max-age=60").await.cache,
        "MISS"
    );
    // Turning the CDN off drops what it stored.
    edge.set_cdn("app", false);
    assert_eq!(edge.cdn().stats("app").stored, super::Usage::default());
}

#[tokio::test]
async fn memory_and_disk_stay_within_their_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        memory_bytes: 64 << 10,
        disk_bytes: 256 << 10,
        dir: Some(dir.path().join("cdn")),
    };
    let cdn = Cdn::new(limits.clone()).unwrap();
    // 4 KiB bodies stay in memory (at most 64 KiB / 16), 12 KiB ones go to disk.
    let origin = Origin::new(|parts, _| {
        let kib = if parts.uri.path().starts_with("/big") {
            12
        } else {
            4
        };
        (
            200,
            vec![("cache-control", "max-age=600".into())],
            "x".repeat(kib << 10),
        )
    });
    // Each body is written to its file in the background: waiting for
    // the write keeps the order of use the order of the requests.
    let written = async || {
        for _ in 0..1000 {
            if cdn.writing() == 0 {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("the CDN's file writes did not end");
    };
    for i in 0..40 {
        get(&cdn, &origin, &format!("/small{i}")).await;
        get(&cdn, &origin, &format!("/big{i}")).await;
        written().await;
    }
    let files = || std::fs::read_dir(dir.path().join("cdn")).unwrap().count() as u64;
    let (memory, disk) = cdn.used();
    eprintln!(
        "cdn: {memory} bytes in memory (of {}), {disk} on disk (of {})",
        limits.memory_bytes, limits.disk_bytes
    );
    assert!(memory <= limits.memory_bytes && memory > 0, "{memory}");
    assert!(disk <= limits.disk_bytes && disk > 0, "{disk}");
    assert_eq!(
        files() * (12 << 10),
        disk,
        "each file on disk is a stored response"
    );
    // The most recent ones are hits, from memory and from disk alike.
    let small = get(&cdn, &origin, "/small39").await;
    let big = get(&cdn, &origin, "/big39").await;
    assert_eq!((small.cache.as_str(), small.body.len()), ("HIT", 4 << 10));
    assert_eq!((big.cache.as_str(), big.body.len()), ("HIT", 12 << 10));
    assert_eq!(get(&cdn, &origin, "/small0").await.cache, "MISS");
    // A purge deletes the files.
    cdn.purge("app", "/");
    assert_eq!(
        std::fs::read_dir(dir.path().join("cdn")).unwrap().count(),
        0
    );
    assert_eq!(cdn.used(), (0, 0));
}
