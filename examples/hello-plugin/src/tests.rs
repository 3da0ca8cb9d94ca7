//! Native tests of the notes plugin, driven through its router like the host
//! would, with the SDK's in-memory storage.

use plateau_sdk::serde_json::{Value, json};
use plateau_sdk::{Caller, Method, Page, Request, Response, testing};

use crate::Notes;
use crate::notes::Note;

fn writer() -> Caller {
    Caller::new("org_a", &["notes:read", "notes:write"])
}

fn send(req: Request) -> Response {
    testing::handle::<Notes>(&req)
}

fn create(caller: Caller, body: Value) -> Response {
    send(
        Request::new(Method::Post, "/notes")
            .with_caller(caller)
            .with_json(&body),
    )
}

fn created_id(res: &Response) -> String {
    assert_eq!(res.status, 201, "{}", String::from_utf8_lossy(&res.body));
    res.json_body::<Note>().unwrap().id
}

#[test]
fn description_is_consistent() {
    let description = plateau_sdk::describe::<Notes>();
    assert_eq!(description.problems(), Vec::<String>::new());
    assert_eq!(description.routes.len(), 5);
}

#[test]
fn create_then_get_and_audit() {
    testing::set_now(1_700_000_000_000);
    let res = create(writer(), json!({"title": "  Groceries ", "body": "milk"}));
    let id = created_id(&res);
    assert_eq!(
        res.header("location"),
        Some(format!("/notes/{id}").as_str())
    );

    let got = send(Request::new(Method::Get, &format!("/notes/{id}")).with_caller(writer()));
    let note: Note = got.json_body().unwrap();
    assert_eq!(
        (note.title.as_str(), note.body.as_str()),
        ("Groceries", "milk")
    );
    assert_eq!(note.created_at, "2023-11-14T22:13:20.000Z");

    let events = testing::events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].event_type, "notes.note.created");
    assert!(events[0].audit);
    assert_eq!(events[0].resource_id.as_deref(), Some(id.as_str()));
}

#[test]
fn invalid_bodies_are_refused() {
    let cases = [
        (json!({"title": ""}), 400, "validation_failed"),
        (json!({"title": "x".repeat(201)}), 400, "validation_failed"),
        (json!({"title": 3}), 400, "validation_failed"),
        (
            json!({"title": "a", "colour": "red"}),
            400,
            "validation_failed",
        ),
        (json!({}), 400, "validation_failed"),
    ];
    for (body, status, code) in cases {
        let res = create(writer(), body.clone());
        assert_eq!(res.status, status, "{body}");
        assert_eq!(res.problem().unwrap().code, code, "{body}");
    }
    let text = send(
        Request::new(Method::Post, "/notes")
            .with_caller(writer())
            .with_header("content-type", "text/plain")
            .with_body("title"),
    );
    assert_eq!(text.problem().unwrap().code, "unsupported_media_type");
    assert!(testing::events().is_empty());
}

#[test]
fn scopes_are_enforced() {
    let reader = Caller::new("org_a", &["notes:read"]);
    let res = create(reader, json!({"title": "t"}));
    assert_eq!(res.status, 403);
    assert_eq!(res.problem().unwrap().scope.as_deref(), Some("notes:write"));
}

#[test]
fn list_pages_through_notes() {
    for i in 0..5 {
        created_id(&create(writer(), json!({"title": format!("note {i}")})));
    }
    let all: Page<Note> = send(Request::new(Method::Get, "/notes").with_caller(writer()))
        .json_body()
        .unwrap();
    assert_eq!(
        (all.items.len(), all.total, all.next_cursor.as_deref()),
        (5, 5, None)
    );

    let mut titles = Vec::new();
    let mut target = "/notes?limit=2".to_owned();
    loop {
        let page: Page<Note> = send(Request::new(Method::Get, &target).with_caller(writer()))
            .json_body()
            .unwrap();
        assert_eq!(page.total, 5);
        titles.extend(page.items.into_iter().map(|n| n.title));
        match page.next_cursor {
            Some(cursor) => {
                target = format!(
                    "/notes?limit=2&cursor={}",
                    plateau_sdk::percent_encode(&cursor)
                )
            }
            None => break,
        }
    }
    assert_eq!(titles, ["note 0", "note 1", "note 2", "note 3", "note 4"]);

    let bad = send(Request::new(Method::Get, "/notes?limit=500").with_caller(writer()));
    assert_eq!(bad.problem().unwrap().code, "invalid_limit");
}

#[test]
fn organisations_do_not_see_each_other() {
    let id = created_id(&create(writer(), json!({"title": "secret"})));
    let other = Caller::new("org_b", &["notes:read"]);
    let res = send(Request::new(Method::Get, &format!("/notes/{id}")).with_caller(other));
    assert_eq!(res.status, 404);
}

#[test]
fn public_notes_are_readable_without_a_token() {
    let public = created_id(&create(writer(), json!({"title": "hello", "public": true})));
    let private = created_id(&create(writer(), json!({"title": "secret"})));

    let res = send(Request::new(
        Method::Get,
        &format!("/notes/public/{public}"),
    ));
    assert_eq!(res.status, 200);
    assert_eq!(res.json_body::<Value>().unwrap()["title"], "hello");
    let res = send(Request::new(
        Method::Get,
        &format!("/notes/public/{private}"),
    ));
    assert_eq!(res.status, 404);

    let res = send(Request::new(Method::Delete, &format!("/notes/{public}")).with_caller(writer()));
    assert_eq!(res.status, 204);
    let res = send(Request::new(
        Method::Get,
        &format!("/notes/public/{public}"),
    ));
    assert_eq!(res.status, 404);
    let kinds: Vec<String> = testing::events()
        .into_iter()
        .map(|e| e.event_type)
        .collect();
    assert_eq!(
        kinds,
        [
            "notes.note.created",
            "notes.note.created",
            "notes.note.deleted"
        ]
    );
}

#[test]
fn unknown_routes_and_methods() {
    let res = send(Request::new(Method::Get, "/notes/a/b").with_caller(writer()));
    assert_eq!(res.status, 404);
    let res = send(Request::new(Method::Put, "/notes/n1").with_caller(writer()));
    assert_eq!(res.status, 405);
    assert_eq!(res.header("allow"), Some("GET, DELETE"));
}
