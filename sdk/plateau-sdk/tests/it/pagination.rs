//! Pagination: query parsing, the envelope, kv paging and keyset paging.

use std::cmp::Reverse;

use plateau_sdk::{Bucket, Page, PageQuery, Query, paginate_kv, paginate_sorted, testing};

/// A query string and the (limit, cursor) read, or the error code.
type QueryCase<'a> = (&'a str, Result<(Option<u32>, Option<&'a str>), &'a str>);

#[test]
fn limit_and_cursor_parse_like_core_lists() {
    let cases: &[QueryCase] = &[
        ("", Ok((None, None))),
        ("other=1", Ok((None, None))),
        ("limit=1", Ok((Some(1), None))),
        ("limit=200", Ok((Some(200), None))),
        ("limit=50&cursor=abc", Ok((Some(50), Some("abc")))),
        ("cursor=abc", Ok((None, Some("abc")))),
        ("limit=0", Err("invalid_limit")),
        ("limit=201", Err("invalid_limit")),
        ("limit=-1", Err("invalid_limit")),
        ("limit=1.5", Err("invalid_limit")),
        ("limit=ten", Err("invalid_limit")),
        ("limit=", Err("invalid_limit")),
        ("limit=99999999999", Err("invalid_limit")),
        ("cursor=", Err("invalid_cursor")),
    ];
    for (raw, expected) in cases {
        let got = PageQuery::parse(&Query::parse(raw));
        match (got, expected) {
            (Ok(q), Ok((limit, cursor))) => {
                assert_eq!((q.limit, q.cursor.as_deref()), (*limit, *cursor), "{raw}")
            }
            (Err(e), Err(code)) => {
                assert_eq!((e.status(), e.code().as_str()), (400, *code), "{raw}")
            }
            (got, _) => panic!("{raw}: unexpected {got:?}"),
        }
    }
    assert!(!PageQuery::default().is_paginated());
    assert_eq!(
        PageQuery {
            limit: None,
            cursor: Some("c".into())
        }
        .page_size(),
        50
    );
    assert_eq!(PageQuery::first(7).page_size(), 7);
}

#[test]
fn envelope_shape() {
    let page = Page {
        items: vec![1, 2],
        next_cursor: Some("c1".to_owned()),
        total: 9,
    };
    assert_eq!(
        serde_json::to_string(&page).unwrap(),
        r#"{"items":[1,2],"nextCursor":"c1","total":9}"#
    );
    let all = Page::all(vec!["a"]);
    assert_eq!(
        serde_json::to_string(&all).unwrap(),
        r#"{"items":["a"],"nextCursor":null,"total":1}"#
    );
    let res = Page::all(Vec::<u8>::new()).map(|n| n * 2).into_response();
    assert_eq!(
        (res.status, res.body.as_slice()),
        (
            200,
            br#"{"items":[],"nextCursor":null,"total":0}"#.as_slice()
        )
    );
}

fn seeded_bucket(n: usize) -> Bucket {
    testing::set_organization(Some("org_1"));
    let bucket = Bucket::caller().unwrap();
    for i in 0..n {
        bucket.set(&format!("item:{i:03}"), &i).unwrap();
    }
    bucket.set("other:1", &99).unwrap();
    bucket
}

fn pages_of(bucket: &Bucket, limit: &str) -> Vec<Page<usize>> {
    let mut pages = Vec::new();
    let mut query = PageQuery::parse(&Query::parse(&format!("limit={limit}"))).unwrap();
    loop {
        let page: Page<usize> = paginate_kv(bucket, "item:", &query).unwrap();
        let next = page.next_cursor.clone();
        pages.push(page);
        match next {
            Some(cursor) => query.cursor = Some(cursor),
            None => return pages,
        }
    }
}

#[test]
fn kv_prefix_pages_in_key_order() {
    let bucket = seeded_bucket(7);
    let pages = pages_of(&bucket, "3");
    let sizes: Vec<usize> = pages.iter().map(|p| p.items.len()).collect();
    assert_eq!(sizes, [3, 3, 1]);
    assert!(pages.iter().all(|p| p.total == 7));
    let items: Vec<usize> = pages.into_iter().flat_map(|p| p.items).collect();
    assert_eq!(items, (0..7).collect::<Vec<_>>());

    let all: Page<usize> = paginate_kv(&bucket, "item:", &PageQuery::default()).unwrap();
    assert_eq!((all.items.len(), all.next_cursor, all.total), (7, None, 7));

    let exact = pages_of(&bucket, "7");
    assert_eq!((exact.len(), exact[0].next_cursor.as_deref()), (1, None));
}

#[test]
fn kv_cursors_are_checked() {
    let bucket = seeded_bucket(4);
    let first: Page<usize> = paginate_kv(&bucket, "item:", &PageQuery::first(2)).unwrap();
    let cursor = first.next_cursor.unwrap();
    for bad in [
        "garbage".to_owned(),
        format!("{cursor}0"),
        cursor.replace("6974656d3a", "6f746865723a"),
    ] {
        let query = PageQuery {
            limit: Some(2),
            cursor: Some(bad.clone()),
        };
        let error = paginate_kv::<usize>(&bucket, "item:", &query).unwrap_err();
        assert_eq!(error.code().as_str(), "invalid_cursor", "{bad}");
    }
    let query = PageQuery {
        limit: Some(2),
        cursor: Some(cursor),
    };
    let error = paginate_kv::<usize>(&bucket, "other:", &query).unwrap_err();
    assert_eq!(error.code().as_str(), "invalid_cursor");
}

#[derive(Debug, Clone, PartialEq)]
struct Run {
    id: String,
    started_at: u64,
}

fn run(id: &str, started_at: u64) -> Run {
    Run {
        id: id.to_owned(),
        started_at,
    }
}

fn newest_first(r: &Run) -> (Reverse<u64>, String) {
    (Reverse(r.started_at), r.id.clone())
}

#[test]
fn keyset_pages_in_a_custom_order() {
    let runs = vec![
        run("a", 10),
        run("b", 30),
        run("c", 20),
        run("d", 30),
        run("e", 5),
    ];
    let first = paginate_sorted("runs", runs.clone(), &PageQuery::first(2), newest_first).unwrap();
    let ids: Vec<&str> = first.items.iter().map(|r| r.id.as_str()).collect();
    assert_eq!((ids, first.total), (vec!["b", "d"], 5));

    // "c" is deleted and "f" (newer than everything) added between pages:
    // neither shifts the next page.
    let mut changed: Vec<Run> = runs.into_iter().filter(|r| r.id != "c").collect();
    changed.push(run("f", 99));
    let query = PageQuery {
        limit: Some(2),
        cursor: first.next_cursor,
    };
    let second = paginate_sorted("runs", changed.clone(), &query, newest_first).unwrap();
    let ids: Vec<&str> = second.items.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["a", "e"]);
    assert_eq!(second.next_cursor, None);

    let unpaginated =
        paginate_sorted("runs", changed, &PageQuery::default(), newest_first).unwrap();
    let ids: Vec<&str> = unpaginated.items.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(
        (ids, unpaginated.next_cursor),
        (vec!["f", "b", "d", "a", "e"], None)
    );
}

#[test]
fn keyset_cursors_are_bound_to_their_list() {
    let runs = vec![run("a", 1), run("b", 2), run("c", 3)];
    let first = paginate_sorted("runs", runs.clone(), &PageQuery::first(1), newest_first).unwrap();
    let cursor = first.next_cursor.unwrap();
    let other_list = PageQuery {
        limit: Some(1),
        cursor: Some(cursor.clone()),
    };
    let error = paginate_sorted("builds", runs.clone(), &other_list, newest_first).unwrap_err();
    assert_eq!(error.code().as_str(), "invalid_cursor");

    let position = plateau_sdk::cursors::encode("runs", "not a position");
    let wrong_shape = PageQuery {
        limit: Some(1),
        cursor: Some(position),
    };
    let error = paginate_sorted("runs", runs, &wrong_shape, newest_first).unwrap_err();
    assert_eq!(error.code().as_str(), "invalid_cursor");
}
