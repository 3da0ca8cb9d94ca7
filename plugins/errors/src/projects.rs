//! Error tracking projects: create (answers the DSN), list, read, change
//! and delete (with every issue and event). A project belongs to the
//! platform project of the request (`?project=`, else the token's or the
//! organisation's default) and its id is the DSN's numeric project id,
//! unique across the host, since the ingest routes find it without a
//! caller.

use plateau_sdk::serde_json::json;
use plateau_sdk::{
    ApiError, Bucket, FieldError, NewEvent, Params, Problem, Request, Response, clock, config,
    paginate_kv_with,
};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::record::{self, DsnEntry, Project};
use crate::views::ProjectView;

/// The API base URL (`…/api/v1`) URLs handed to users start with.
pub fn base_url(req: &Request) -> String {
    config::public_base_url(req)
}

/// `{scheme}://{key}@{host}{path}/errors/ingest/{id}`: the SDKs post to
/// `{path}/errors/ingest/api/{id}/envelope/`.
pub fn dsn(base: &str, project: &Project) -> String {
    let (scheme, rest) = base.split_once("://").unwrap_or(("http", base));
    format!(
        "{scheme}://{}@{rest}/errors/ingest/{}",
        project.public_key, project.id
    )
}

/// A project as the API shows it.
pub fn view(req: &Request, p: &Project) -> ProjectView {
    ProjectView::new(&base_url(req), p)
}

/// A project's fields as sent: `name` is required on creation.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProjectInput {
    name: Option<String>,
    alert_emails: Option<Vec<String>>,
}

impl ProjectInput {
    fn check(&self, creating: bool) -> Result<(), ApiError> {
        let mut errors = Vec::new();
        let mut fail = |field: String, message: &str| {
            errors.push(FieldError {
                field,
                message: message.to_owned(),
            })
        };
        match &self.name {
            None if creating => fail("name".into(), "is required"),
            Some(n) if n.trim().is_empty() || n.chars().count() > 100 => {
                fail("name".into(), "must be 1 to 100 characters")
            }
            Some(n) if n.chars().any(char::is_control) => {
                fail("name".into(), "must not contain control characters")
            }
            _ => {}
        }
        let emails = self.alert_emails.as_deref().unwrap_or_default();
        if emails.len() > 10 {
            fail("alertEmails".into(), "at most 10 addresses");
        }
        for (i, e) in emails.iter().enumerate() {
            let plain = e.len() <= 254
                && e.split_once('@').is_some_and(|(l, d)| {
                    !l.is_empty() && d.contains('.') && !d.starts_with('.') && !d.ends_with('.')
                })
                && !e.chars().any(|c| c.is_whitespace() || "<>,;\"".contains(c));
            if !plain {
                fail(
                    format!("alertEmails[{i}]"),
                    "must be a plain local@domain address",
                );
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(ApiError::validation_errors(errors))
        }
    }
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!(
        "error tracking project {id} does not exist: list them with GET /errors/projects"
    ))
}

/// The caller's project `id`, or 404.
pub fn load(bucket: &Bucket, id: &str) -> Result<Project, ApiError> {
    if !record::is_project_id(id) {
        return Err(not_found(id));
    }
    bucket
        .get::<Project>(&record::project_key(id))?
        .ok_or_else(|| not_found(id))
}

fn plan_of(req: &Request) -> String {
    req.caller.plan.clone().unwrap_or_else(|| "free".to_owned())
}

/// `POST /errors/projects`: 201 with the project and its DSN.
pub fn create(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    let org = req.caller.organization()?.to_owned();
    let input: ProjectInput = req.json()?;
    input.check(true)?;
    let bucket = Bucket::caller()?;
    let plan = plan_of(req);
    let limit = record::project_limit(&plan);
    if bucket.count(record::PROJECTS)? >= limit {
        let problem = Problem::new(
            409,
            "plan_limit_reached",
            format!(
                "the {plan} plan allows {limit} error tracking projects: delete one or upgrade the plan"
            ),
        );
        return Ok(Response::from_problem(&problem));
    }
    let now = clock::now_millis();
    let public_key = record::new_public_key();
    let global = Bucket::global()?;
    let entry = DsnEntry {
        organization_id: org,
        public_key: public_key.clone(),
    };
    let mut id = None;
    for _ in 0..8 {
        let candidate = record::new_project_id();
        if global.insert_new(&record::dsn_key(&candidate), &entry)? {
            id = Some(candidate);
            break;
        }
    }
    let id = id.ok_or_else(|| ApiError::conflict("project ids collided: retry the request"))?;
    let project = Project {
        id,
        name: input.name.unwrap_or_default().trim().to_owned(),
        platform_project_id: req.caller.project_id.clone(),
        public_key,
        alert_emails: input.alert_emails.unwrap_or_default(),
        plan,
        created_at: now,
        updated_at: now,
    };
    bucket.set(&record::project_key(&project.id), &project)?;
    NewEvent::new("errors.project.created", "create")
        .resource("error_project", &project.id)
        .data(&json!({ "name": project.name }))
        .audit()
        .emit()?;
    Ok(Response::created(&view(req, &project))
        .with_header("location", format!("/errors/projects/{}", project.id)))
}

/// `GET /errors/projects`
pub fn list(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    let page = paginate_kv_with(
        &Bucket::caller()?,
        record::PROJECTS,
        &req.page_query()?,
        |entry| Ok(view(req, &entry.json::<Project>()?)),
    )?;
    Ok(page.into_response())
}

/// `GET /errors/projects/{id}`
pub fn get(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let project = load(&Bucket::caller()?, &params["id"])?;
    Ok(Response::ok(&view(req, &project)))
}

/// `PATCH /errors/projects/{id}`: `name`, `alertEmails`; the project takes
/// the organisation's current plan.
pub fn update(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let input: ProjectInput = req.json()?;
    input.check(false)?;
    let bucket = Bucket::caller()?;
    let mut project = load(&bucket, &params["id"])?;
    if let Some(name) = input.name {
        project.name = name.trim().to_owned();
    }
    if let Some(emails) = input.alert_emails {
        project.alert_emails = emails;
    }
    project.plan = plan_of(req);
    project.updated_at = clock::now_millis();
    bucket.set(&record::project_key(&project.id), &project)?;
    NewEvent::new("errors.project.updated", "update")
        .resource("error_project", &project.id)
        .data(&json!({ "name": project.name }))
        .audit()
        .emit()?;
    Ok(Response::ok(&view(req, &project)))
}

/// `DELETE /errors/projects/{id}`: 204; its DSN stops working and its
/// issues and events go with it.
pub fn delete(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    let bucket = Bucket::caller()?;
    let project = load(&bucket, &params["id"])?;
    Bucket::global()?.delete(&record::dsn_key(&project.id))?;
    for prefix in record::project_prefixes(&project.id) {
        for entry in bucket.list_all(&prefix)? {
            bucket.delete(&entry.key)?;
        }
    }
    bucket.delete(&record::project_key(&project.id))?;
    NewEvent::new("errors.project.deleted", "delete")
        .resource("error_project", &project.id)
        .audit()
        .emit()?;
    Ok(Response::no_content())
}
