//! Each app's fair share of the CDN's tiers (`store`): a busy app fills
//! the cache with responses of its own and pushes out its own old ones,
//! never another app's recent responses held within its share; an app
//! alone has the whole tier; the share each app has is what the stats
//! show.

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::HeaderMap;
use http_cache_semantics::CachePolicy;

use super::store::{Limits, Share, Store, Stored, Variant};

/// A response of `len` body bytes in memory, or in a file when `disk`.
fn variant(id: u64, len: u64, disk: bool) -> Variant {
    let request = http::Request::get("/").body(()).unwrap();
    let response = http::Response::builder()
        .header("cache-control", "max-age=60")
        .body(())
        .unwrap();
    let body = if disk {
        Stored::Disk(PathBuf::from(format!("/nonexistent/{id}")))
    } else {
        Stored::Memory(Bytes::from(vec![b'x'; len as usize]))
    };
    Variant {
        id,
        policy: CachePolicy::new(&request, &response),
        status: http::StatusCode::OK,
        headers: HeaderMap::new(),
        body,
        len,
        fresh_until: SystemTime::now() + Duration::from_secs(60),
        stale_while_revalidate: Duration::ZERO,
    }
}

/// Stores `/{n}` of `app`, `len` bytes; answers the files evicted.
fn put(store: &mut Store, limits: &Limits, app: &str, n: u64, len: u64, disk: bool) -> usize {
    let id = n + if app == "busy" { 1_000_000 } else { 0 };
    let key = format!("/{n}");
    let epoch = store.epoch(app);
    store
        .insert(app, &key, epoch, variant(id, len, disk), limits, |_| false)
        .len()
}

fn held(store: &mut Store, app: &str, n: u64) -> bool {
    !store.get(app, &format!("/{n}")).is_empty()
}

#[test]
fn a_busy_app_cannot_push_out_another_apps_recent_responses() {
    // Room for about 100 responses of 1 KiB (with their heads).
    let limits = Limits::memory(128 * 1024);
    let mut store = Store::default();
    for n in 0..10 {
        put(&mut store, &limits, "quiet", n, 1024, false);
    }
    // The busy app sends a hundred times the memory through the cache.
    for n in 0..10_000 {
        put(&mut store, &limits, "busy", n, 1024, false);
    }
    let kept = (0..10).filter(|n| held(&mut store, "quiet", *n)).count();
    let busy = store.usage("busy").entries;
    let (memory, _) = store.used();
    eprintln!(
        "quiet app: {kept} of 10 responses kept; busy app: {busy} held; memory {memory} of {}",
        limits.memory_bytes
    );
    assert_eq!(kept, 10, "the quiet app's responses are within its share");
    assert!(memory <= limits.memory_bytes);
    // The busy app keeps its most recent responses, in what is left.
    assert!(held(&mut store, "busy", 9_999));
    assert!(!held(&mut store, "busy", 0));
    assert!(busy > 50, "the busy app uses the room the quiet one leaves");
}

#[test]
fn an_app_above_its_share_loses_its_own_least_recently_used_first() {
    let limits = Limits::memory(128 * 1024);
    let mut store = Store::default();
    // Alone, the first app has all of the memory.
    for n in 0..200 {
        put(&mut store, &limits, "first", n, 1024, false);
    }
    let alone = store.usage("first").entries;
    assert!(alone > 90, "alone it fills the memory: {alone}");
    // It reads its first response again: that one is recent now.
    assert!(held(&mut store, "first", 150));
    // A second app comes: its share is half, taken from the first app's
    // least recently used responses, until the first is down to its own.
    for n in 0..200 {
        put(&mut store, &limits, "busy", n, 1024, false);
    }
    let share = store.share("busy", &limits);
    let first = store.share("first", &limits);
    eprintln!("after the second app: first {first:?}, busy {share:?}");
    assert_eq!(share.memory_share_bytes, limits.memory_bytes / 2);
    assert!(
        first.memory_bytes >= limits.memory_bytes / 2 - 2048,
        "{first:?}"
    );
    assert!(
        share.memory_bytes <= limits.memory_bytes / 2 + 2048,
        "{share:?}"
    );
    assert!(held(&mut store, "first", 150), "used lately, so kept");
    assert!(held(&mut store, "first", 199));
    assert!(!held(&mut store, "first", 0), "least recently used, gone");
}

#[test]
fn the_disk_tier_is_shared_the_same_way() {
    let limits = Limits {
        memory_bytes: 1 << 20,
        disk_bytes: 64 * 1024,
        dir: Some(PathBuf::from("/nonexistent")),
    };
    let mut store = Store::default();
    for n in 0..4 {
        assert_eq!(put(&mut store, &limits, "quiet", n, 4096, true), 0);
    }
    let mut evicted = 0;
    for n in 0..1_000 {
        evicted += put(&mut store, &limits, "busy", n, 4096, true);
    }
    let kept = (0..4).filter(|n| held(&mut store, "quiet", *n)).count();
    let quiet = store.share("quiet", &limits);
    eprintln!("disk: quiet kept {kept} of 4 ({quiet:?}); the busy app's files evicted: {evicted}");
    assert_eq!(kept, 4);
    assert_eq!(
        quiet,
        Share {
            memory_bytes: 0,
            memory_share_bytes: 1 << 20,
            disk_bytes: 4 * 4096,
            disk_share_bytes: 32 * 1024,
        }
    );
    assert_eq!(evicted, 1_000 - store.usage("busy").entries as usize);
}
