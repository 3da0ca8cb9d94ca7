//! The notes handlers: validation, storage, events and the public route.

use plateau_sdk::{
    ApiError, Bucket, NewEvent, Params, Request, Response, Validator, clock, log, paginate_kv,
};
use serde::{Deserialize, Serialize};

/// The longest accepted title, in characters.
pub const MAX_TITLE: usize = 200;
/// The longest accepted body, in characters.
pub const MAX_BODY: usize = 10_000;

/// A stored note; also its JSON shape in responses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Note {
    pub id: String,
    pub title: String,
    pub body: String,
    /// Readable by anyone at `GET /notes/public/{id}`.
    pub public: bool,
    /// RFC 3339, UTC.
    pub created_at: String,
    /// `user:<id>` or `token:<id>`.
    pub created_by: Option<String>,
}

/// The body of `POST /notes`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewNote {
    pub title: String,
    #[serde(default)]
    pub body: String,
    #[serde(default)]
    pub public: bool,
}

impl NewNote {
    /// Field rules, reported all at once as `validation_failed`.
    pub fn validate(&self) -> Result<(), ApiError> {
        let mut v = Validator::new();
        v.check(!self.title.trim().is_empty(), "title", "must not be empty");
        v.check(
            self.title.chars().count() <= MAX_TITLE,
            "title",
            format!("must be at most {MAX_TITLE} characters"),
        );
        v.check(
            self.body.chars().count() <= MAX_BODY,
            "body",
            format!("must be at most {MAX_BODY} characters"),
        );
        v.finish()
    }
}

fn note_key(id: &str) -> String {
    format!("note:{id}")
}

fn public_key(id: &str) -> String {
    format!("public:{id}")
}

/// `POST /notes`
pub fn create(req: &Request, _: &Params) -> Result<Response, ApiError> {
    let input: NewNote = req.json()?;
    input.validate()?;
    let organization = req.caller.organization()?.to_owned();

    // Ids come from one global counter so that a public note's id is unique
    // across organisations; zero-padding keeps key order = creation order.
    let seq = Bucket::global()?.increment("seq", 1)?;
    let id = format!("n{seq:012}");
    let note = Note {
        id: id.clone(),
        title: input.title.trim().to_owned(),
        body: input.body,
        public: input.public,
        created_at: clock::now_rfc3339(),
        created_by: req.caller.actor.clone(),
    };
    if !Bucket::caller()?.insert_new(&note_key(&id), &note)? {
        return Err(ApiError::conflict(format!(
            "note {id} already exists: retry the request"
        )));
    }
    if note.public {
        Bucket::global()?.set(&public_key(&id), &organization)?;
    }
    NewEvent::new("notes.note.created", "create")
        .resource("note", &id)
        .data(&serde_json::json!({ "title": note.title, "public": note.public }))
        .audit()
        .emit()?;
    log::info(&format!("note {id} created"));
    Ok(Response::created(&note).with_header("location", format!("/notes/{id}")))
}

/// `GET /notes`: the envelope `{items, nextCursor, total}`.
pub fn list(req: &Request, _: &Params) -> Result<Response, ApiError> {
    let page = paginate_kv::<Note>(&Bucket::caller()?, "note:", &req.page_query()?)?;
    Ok(page.into_response())
}

/// `GET /notes/{id}`
pub fn get(_: &Request, params: &Params) -> Result<Response, ApiError> {
    let id = &params["id"];
    let note: Note = Bucket::caller()?
        .get(&note_key(id))?
        .ok_or_else(|| not_found(id))?;
    Ok(Response::ok(&note))
}

/// `DELETE /notes/{id}`
pub fn delete(_: &Request, params: &Params) -> Result<Response, ApiError> {
    let id = &params["id"];
    let bucket = Bucket::caller()?;
    let note: Note = bucket.get(&note_key(id))?.ok_or_else(|| not_found(id))?;
    bucket.delete(&note_key(id))?;
    if note.public {
        Bucket::global()?.delete(&public_key(id))?;
    }
    NewEvent::new("notes.note.deleted", "delete")
        .resource("note", id)
        .data(&serde_json::json!({ "title": note.title }))
        .audit()
        .emit()?;
    Ok(Response::no_content())
}

/// `GET /notes/public/{id}`: no token, so the organisation comes from the
/// global index. A note that is not public answers the same 404 as a note
/// that does not exist, so ids cannot be probed.
pub fn get_public(_: &Request, params: &Params) -> Result<Response, ApiError> {
    let id = &params["id"];
    let organization: String = Bucket::global()?
        .get(&public_key(id))?
        .ok_or_else(|| not_found(id))?;
    let note: Note = Bucket::organization(organization)?
        .get(&note_key(id))?
        .filter(|n: &Note| n.public)
        .ok_or_else(|| not_found(id))?;
    Ok(Response::ok(&serde_json::json!({
        "id": note.id,
        "title": note.title,
        "body": note.body,
        "createdAt": note.created_at,
    })))
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("note {id} does not exist"))
}
