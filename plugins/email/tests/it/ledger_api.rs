//! `GET /email/messages`: newest first, pages like core lists, filters by
//! status and time with cursors bound to the filters, isolation.

use plateau_sdk::{Method, testing};
use serde_json::{Value, json};

use crate::{
    OTHER, advance, call, caller_of, invalid_fields, json_of, message, mock_smtp, queue, reply,
    run_due_jobs, send_as, setup,
};

/// Queues `n` messages a minute apart; returns their ids, oldest first.
fn queue_many(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            if i > 0 {
                advance(60_000);
            }
            let mut body = message();
            body["subject"] = json!(format!("message {i}"));
            queue(&body)["id"].as_str().unwrap().to_owned()
        })
        .collect()
}

fn ids(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect()
}

/// Every page of `target` (which has `limit`), following cursors.
fn all_pages(target: &str) -> (Vec<String>, Vec<u64>) {
    let (mut seen, mut totals) = (Vec::new(), Vec::new());
    let mut cursor: Option<String> = None;
    loop {
        let url = match &cursor {
            Some(c) => format!("{target}&cursor={}", plateau_sdk::percent_encode(c)),
            None => target.to_owned(),
        };
        let res = call(Method::Get, &url, None);
        assert_eq!(res.status, 200, "{}", String::from_utf8_lossy(&res.body));
        let page = json_of(&res);
        seen.extend(ids(&page));
        totals.push(page["total"].as_u64().unwrap());
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return (seen, totals),
        }
    }
}

#[test]
fn the_ledger_lists_newest_first_and_pages_like_core_lists() {
    setup();
    let mut queued = queue_many(7);
    queued.reverse();
    let all = json_of(&call(Method::Get, "/email/messages", None));
    assert_eq!(
        (ids(&all), all["total"].clone(), all["nextCursor"].clone()),
        (queued.clone(), json!(7), Value::Null)
    );
    let (paged, totals) = all_pages("/email/messages?limit=3");
    assert_eq!(paged, queued);
    assert_eq!(totals, [7, 7, 7]);
    let (paged, _) = all_pages("/email/messages?limit=7");
    assert_eq!(paged, queued, "a full last page carries no cursor");
    assert_eq!(
        json_of(&call(Method::Get, "/email/messages?limit=7", None))["nextCursor"],
        Value::Null
    );
    assert_eq!(
        json_of(&call(Method::Get, "/email/messages?limit=0", None))["code"],
        "invalid_limit"
    );
    assert_eq!(
        json_of(&call(Method::Get, "/email/messages?cursor=nope", None))["code"],
        "invalid_cursor"
    );
}

#[test]
fn filters_by_status_and_time_with_cursors_bound_to_them() {
    setup();
    mock_smtp(vec![reply(250, "ok"), reply(554, "5.7.1 refused")]);
    let ids_oldest_first = queue_many(2);
    run_due_jobs(); // The first is sent, the second fails.
    advance(60_000);
    let later = queue_many(3); // 10:02, 10:03, 10:04, still queued.
    let sent = json_of(&call(Method::Get, "/email/messages?status=sent", None));
    assert_eq!(ids(&sent), [ids_oldest_first[0].clone()]);
    let failed = json_of(&call(Method::Get, "/email/messages?status=failed", None));
    assert_eq!(ids(&failed), [ids_oldest_first[1].clone()]);
    let (queued, totals) = all_pages("/email/messages?status=queued&limit=2");
    assert_eq!(queued, later.iter().rev().cloned().collect::<Vec<_>>());
    assert_eq!(totals, [3, 3]);

    // since is inclusive, until exclusive; RFC 3339 or a date.
    let window = "/email/messages?since=2026-11-22T10:01:00Z&until=2026-11-22T11:03:00%2B01:00";
    let page = json_of(&call(Method::Get, window, None));
    assert_eq!(ids(&page), [later[0].clone(), ids_oldest_first[1].clone()]);
    assert_eq!(page["total"], 2);
    let (paged, _) = all_pages(&format!("{window}&limit=1"));
    assert_eq!(paged, ids(&page));
    let page = json_of(&call(
        Method::Get,
        "/email/messages?status=queued&since=2026-11-22T10:03:00.000Z",
        None,
    ));
    assert_eq!(ids(&page), [later[2].clone(), later[1].clone()]);
    let page = json_of(&call(Method::Get, "/email/messages?until=2026-11-22", None));
    assert_eq!(page["total"], 0);
    let page = json_of(&call(Method::Get, "/email/messages?since=2026-11-22", None));
    assert_eq!(page["total"], 5);

    // A cursor of one filter is refused by another.
    let first = json_of(&call(
        Method::Get,
        "/email/messages?status=queued&limit=1",
        None,
    ));
    let cursor = plateau_sdk::percent_encode(first["nextCursor"].as_str().unwrap());
    let res = call(
        Method::Get,
        &format!("/email/messages?status=sent&limit=1&cursor={cursor}"),
        None,
    );
    assert_eq!(json_of(&res)["code"], "invalid_cursor");

    let res = call(
        Method::Get,
        "/email/messages?status=bounced&since=yesterday",
        None,
    );
    assert_eq!(invalid_fields(&res), ["since", "status"]);
    let res = call(
        Method::Get,
        "/email/messages?since=2026-11-22&until=2026-11-21",
        None,
    );
    assert_eq!(invalid_fields(&res), ["until"]);
}

#[test]
fn organisations_never_see_each_other() {
    setup();
    let id = queue(&message())["id"].as_str().unwrap().to_owned();
    let other = caller_of(OTHER, "pro");
    let list = json_of(&send_as(
        other.clone(),
        Method::Get,
        "/email/messages",
        None,
    ));
    assert_eq!(list["total"], 0);
    let res = send_as(other, Method::Get, &format!("/email/messages/{id}"), None);
    assert_eq!(res.status, 404);
    assert_eq!(
        call(Method::Get, "/email/messages/em_nope", None).status,
        404
    );
    assert_eq!(
        call(Method::Get, &format!("/email/messages/{id}"), None).status,
        200
    );
    assert!(testing::jobs().iter().all(|(ns, _)| ns == "org:org_1"));
}
