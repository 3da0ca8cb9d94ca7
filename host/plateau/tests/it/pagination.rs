//! Section 1.2: one cursor mechanism for every list.

use std::collections::BTreeSet;

use plateau_testkit::{Backend, Client};
use serde_json::{Value, json};

use crate::start;

crate::on_both_backends!(
    pages_cover_everything_once,
    pages_are_stable_under_writes,
    refuses_bad_limits_and_cursors
);

async fn all_pages(c: &Client, path: &str, limit: u32) -> (Vec<String>, Vec<Value>) {
    let mut ids = Vec::new();
    let mut pages = Vec::new();
    let sep = if path.contains('?') { '&' } else { '?' };
    let mut next = format!("{path}{sep}limit={limit}");
    loop {
        let page = c.get(&next).await;
        assert_eq!(page.status, 200, "{}", page.text());
        let page = page.json();
        for item in page["items"].as_array().unwrap() {
            ids.push(item["id"].as_str().unwrap().to_owned());
        }
        let cursor = page["nextCursor"].as_str().map(str::to_owned);
        pages.push(page);
        match cursor {
            Some(cursor) => next = format!("{path}{sep}limit={limit}&cursor={cursor}"),
            None => break,
        }
    }
    (ids, pages)
}

async fn pages_cover_everything_once(backend: Backend) {
    let s = start(backend).await;
    let c = s.client();
    for i in 0..7 {
        assert_eq!(
            c.post("/projects", json!({ "name": format!("p{i}") }))
                .await
                .status,
            201
        );
    }
    let (ids, pages) = all_pages(&c, "/projects", 3).await;
    assert_eq!(ids.len(), 8, "seven projects and the default one");
    assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), 8, "no repeats");
    assert_eq!(pages.len(), 3);
    assert!(pages.iter().all(|p| p["total"] == 8));
    assert!(pages.last().unwrap()["nextCursor"].is_null());
    // Unpaginated: the same envelope, every item, no cursor.
    let all = c.get("/projects").await.json();
    assert_eq!(all["items"].as_array().unwrap().len(), 8);
    assert_eq!(
        (all["total"].clone(), all["nextCursor"].clone()),
        (json!(8), Value::Null)
    );
    // The same mechanism on other lists: events (newest first) and tokens.
    let (events, _) = all_pages(&c, "/events", 2).await;
    assert!(events.len() >= 9);
    let mut sorted = events.clone();
    sorted.sort();
    sorted.reverse();
    assert_eq!(events, sorted, "events come newest first");
    let (tokens, _) = all_pages(&c, "/tokens", 1).await;
    assert_eq!(tokens.len(), 1);
}

async fn pages_are_stable_under_writes(backend: Backend) {
    let s = start(backend).await;
    let c = s.client();
    let mut survivors = BTreeSet::new();
    let mut doomed = Vec::new();
    for i in 0..12 {
        let r = c
            .post("/projects", json!({ "name": format!("p{i}") }))
            .await
            .json();
        let id = r["id"].as_str().unwrap().to_owned();
        if i % 3 == 0 {
            doomed.push(id);
        } else {
            survivors.insert(id);
        }
    }
    // Page through while deleting some projects and inserting new ones.
    let mut seen = Vec::new();
    let mut next = "/projects?limit=4".to_owned();
    let mut round = 0;
    loop {
        let page = c.get(&next).await.json();
        for item in page["items"].as_array().unwrap() {
            seen.push(item["id"].as_str().unwrap().to_owned());
        }
        if let Some(id) = doomed.pop() {
            assert_eq!(c.delete(&format!("/projects/{id}")).await.status, 200);
        }
        assert_eq!(
            c.post("/projects", json!({ "name": format!("new{round}") }))
                .await
                .status,
            201
        );
        round += 1;
        match page["nextCursor"].as_str() {
            Some(cursor) => next = format!("/projects?limit=4&cursor={cursor}"),
            None => break,
        }
    }
    let unique: BTreeSet<_> = seen.iter().cloned().collect();
    assert_eq!(unique.len(), seen.len(), "no item repeats");
    assert!(
        survivors.is_subset(&unique),
        "no item that existed throughout is skipped"
    );
}

async fn refuses_bad_limits_and_cursors(backend: Backend) {
    let s = start(backend).await;
    let c = s.client();
    for bad in ["0", "201", "-1", "ten"] {
        let r = c.get(&format!("/projects?limit={bad}")).await;
        assert_eq!(
            (r.status, r.code().as_str()),
            (400, "invalid_limit"),
            "{bad}"
        );
    }
    assert_eq!(c.get("/projects?limit=200").await.status, 200);
    for i in 0..3 {
        c.post("/projects", json!({ "name": format!("p{i}") }))
            .await;
    }
    let page = c.get("/projects?limit=1").await.json();
    let cursor = page["nextCursor"].as_str().unwrap().to_owned();
    assert_eq!(
        c.get(&format!("/projects?limit=1&cursor={cursor}"))
            .await
            .status,
        200
    );
    let mut edited = cursor.clone().into_bytes();
    edited[3] = if edited[3] == b'A' { b'B' } else { b'A' };
    let edited = String::from_utf8(edited).unwrap();
    let r = c.get(&format!("/projects?limit=1&cursor={edited}")).await;
    assert_eq!((r.status, r.code().as_str()), (400, "invalid_cursor"));
    // A cursor of another list, or another organisation, is foreign.
    let r = c.get(&format!("/tokens?limit=1&cursor={cursor}")).await;
    assert_eq!((r.status, r.code().as_str()), (400, "invalid_cursor"));
    let other = crate::create_org(&s, "Other", "free").await;
    let r = s
        .anonymous()
        .with_token(&other)
        .get(&format!("/projects?limit=1&cursor={cursor}"))
        .await;
    assert_eq!((r.status, r.code().as_str()), (400, "invalid_cursor"));
    let r = c.get("/projects?limit=1&cursor=garbage").await;
    assert_eq!(r.status, 400);
}
